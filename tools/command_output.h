// What the workload and tuning commands of `tyche` share in their output: the --json file, the
// refusals' summary, and where tyche-worker is.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"

namespace tyche::tools {

// The --json file, opened before any work so that an unwritable path fails first (closed when
// there is no --json).
inline std::ofstream open_json_output(const std::string& json_file) {
  std::ofstream out;
  if (json_file.empty()) return out;
  out.open(json_file);
  if (!out) throw Error(fmt::format("cannot write '{}'", json_file));
  return out;
}

// Refusals by reason, the most frequent first: "replay: dependence_violated (41), ...".
template <typename Count>
std::string refusal_text(const std::map<std::string, Count>& counts) {
  std::vector<std::pair<std::string, Count>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [reason, n] : sorted) parts.push_back(fmt::format("{} ({})", reason, n));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

// --dtypes' help, on every command that takes a formula.
inline constexpr const char* kDtypesHelp =
    "element types of a formula's tensors (default float32), e.g. A=uint8,B=int8,C=int32";

// Set by SIGINT while a tune runs (on_interrupt): the tune stops once what it measured is saved.
inline std::atomic<bool>& interrupted() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline void on_interrupt(int) {
  interrupted() = true;
}

// The directory of this program: tyche-worker sits beside it.
inline std::string program_dir() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

}  // namespace tyche::tools
