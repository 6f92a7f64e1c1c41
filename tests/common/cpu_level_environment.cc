// Linked into the test binaries that ctest runs once per CPU level (tests/CMakeLists.txt): when
// TYCHE_CPU names a CPU this host cannot run, every test of the binary is skipped, saying why.
// A skip must not hide a level the host runs: for the x86-64 levels the decision (LLVM's host
// probe) is checked against the flags the kernel reports in /proc/cpuinfo, and a disagreement, or
// a TYCHE_CPU that names no CPU, fails the binary instead of skipping it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/error.h"
#include "target/cpu.h"

namespace {

// The flags of the first CPU in /proc/cpuinfo; empty where there is none.
std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// The /proc/cpuinfo flags each x86-64 level adds to the one below (the psABI's lists).
const std::map<std::string, std::vector<std::string>>& level_flags() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}},
      {"x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}},
      {"x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}};
  return m;
}

// Whether the kernel's flags say this host runs `level` (nullopt: not a level, or no flags).
std::optional<bool> cpuinfo_runs(const std::string& level) {
  if (!level_flags().count(level)) return std::nullopt;
  std::set<std::string> flags = cpuinfo_flags();
  if (flags.empty()) return std::nullopt;
  for (const auto& [name, needed] : level_flags()) {
    if (name > level) break;  // the levels sort in order
    for (const std::string& f : needed)
      if (!flags.count(f)) return false;
  }
  return true;
}

class CpuLevelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* level = std::getenv("TYCHE_CPU");
    if (!level || !*level) return;
    std::vector<std::string> missing;
    try {
      missing = tyche::target::missing_on_host(tyche::target::resolve_cpu(level));
    } catch (const tyche::Error& e) {
      FAIL() << "TYCHE_CPU=" << level << ": " << e.what();
    }
    if (std::optional<bool> runs = cpuinfo_runs(level)) {
      ASSERT_EQ(*runs, missing.empty())
          << "LLVM's probe and /proc/cpuinfo disagree on whether this host runs " << level
          << (missing.empty() ? "" : " (LLVM says it lacks " + missing.front() + ")");
    }
    if (!missing.empty())
      GTEST_SKIP() << "this host cannot run code for " << level << " (it lacks " << missing.front()
                   << ", ...)";
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new CpuLevelEnvironment);

}  // namespace
