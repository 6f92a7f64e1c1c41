#include "target/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "support/error.h"

namespace tyche::target {

namespace {

// The options after the kind, as (key, value) pairs: `-key=value` or `-key value`.
std::vector<std::pair<std::string, std::string>> parse_options(
    const std::vector<std::string>& words) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 2 || w[0] != '-')
      throw InputError(fmt::format("target: expected an option (-key=value), got '{}'", w));
    size_t eq = w.find('=');
    if (eq != std::string::npos) {
      if (eq + 1 == w.size())
        throw InputError(fmt::format("target: option '{}' has no value", w.substr(0, eq)));
      out.emplace_back(w.substr(0, eq), w.substr(eq + 1));
    } else {
      if (i + 1 >= words.size())
        throw InputError(fmt::format("target: option '{}' has no value", w));
      out.emplace_back(w, words[++i]);
    }
  }
  return out;
}

int64_t positive(const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    int64_t value = std::stoll(text, &used);
    if (used == text.size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  throw InputError(
      fmt::format("target: option '{}' needs a positive integer, got '{}'", key, text));
}

void set_llvm_option(Target& t, const std::string& key, const std::string& value) {
  if (key == "-mcpu") {
    t.cpu = value;
  } else if (key == "-num-cores") {
    int64_t n = positive(key, value);
    if (n > 4096) throw InputError(fmt::format("target: -num-cores {} is more than 4096", n));
    t.num_cores = static_cast<int>(n);
  } else {
    throw InputError(
        fmt::format("target: unknown option '{}' for llvm (expected -mcpu or -num-cores)", key));
  }
}

void set_gpu_option(Target& t, const std::string& key, const std::string& value) {
  if (key == "-arch" && t.kind == "cuda") {
    if (!std::regex_match(value, std::regex("sm_[0-9]{2,3}[a-z]?")))
      throw InputError(
          fmt::format("target: -arch needs a compute capability such as sm_90, got '{}'", value));
    t.arch = value;
  } else if (key == "-max-threads-per-block") {
    t.max_threads_per_block = positive(key, value);
  } else if (key == "-max-shared-memory-per-block") {
    t.max_shared_memory_per_block = positive(key, value);
  } else {
    throw InputError(
        fmt::format("target: unknown option '{}' for {} (expected {}-max-threads-per-block or "
                    "-max-shared-memory-per-block)",
                    key, t.kind, t.kind == "cuda" ? "-arch, " : ""));
  }
}

}  // namespace

const Cpu& Target::cpu_info() const {
  if (is_gpu()) throw Error(fmt::format("target '{}' has no CPU", str()));
  return resolve_cpu(cpu);
}

Target Target::host() {
  Target t;
  t.num_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return t;
}

Target Target::parse(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty())
    throw InputError("target: empty description (expected 'llvm', 'cuda' or 'opencl')");
  Target t;
  if (words[0] == "llvm") {
    t = host();
  } else if (words[0] == "cuda" || words[0] == "opencl") {
    t.kind = words[0];
  } else {
    throw InputError(
        fmt::format("target: unknown kind '{}' (expected 'llvm', 'cuda' or 'opencl')", words[0]));
  }
  for (const auto& [key, value] : parse_options(words))
    (t.is_gpu() ? set_gpu_option : set_llvm_option)(t, key, value);
  return t;
}

std::string Target::str() const {
  if (!is_gpu())
    return fmt::format("llvm{} -num-cores={}", cpu.empty() ? "" : " -mcpu=" + cpu, num_cores);
  return fmt::format("{}{} -max-threads-per-block={} -max-shared-memory-per-block={}", kind,
                     arch.empty() ? "" : " -arch=" + arch, max_threads_per_block,
                     max_shared_memory_per_block);
}

int Target::compute_capability() const {
  if (arch.size() < 5 || !arch.starts_with("sm_") ||
      !std::isdigit(static_cast<unsigned char>(arch[3])))
    return 80;
  return std::atoi(arch.c_str() + 3);
}

}  // namespace tyche::target
