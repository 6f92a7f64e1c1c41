#include "target/cpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "support/error.h"
#include "target/cpu_probe.h"

namespace tyche::target {

namespace {

constexpr const char* kLevels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};

std::string join_features(const std::vector<std::string>& on, const std::vector<std::string>& off) {
  std::vector<std::string> all;
  for (const std::string& f : on) all.push_back("+" + f);
  for (const std::string& f : off) all.push_back("-" + f);
  std::sort(all.begin(), all.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  return fmt::format("{}", fmt::join(all, ","));
}

Cpu host_cpu() {
  Cpu c;
  c.name = "host";
  c.llvm_cpu = probe::host_cpu_name();
  std::vector<std::string> off;
  for (const auto& [feature, on] : probe::host_features())
    (on ? c.features : off).push_back(feature);
  std::sort(c.features.begin(), c.features.end());
  c.feature_string = join_features(c.features, off);
  return c;
}

Cpu named_cpu(const std::string& name) {
  if (!probe::host_is_x86())
    throw Error(
        fmt::format("unknown CPU '{}': on this architecture only 'host' is supported", name));
  std::optional<std::vector<std::string>> features = probe::named_cpu_features(name);
  if (!features)
    throw Error(fmt::format("unknown CPU '{}' (expected {})", name, probe::known_cpu_names()));
  Cpu c;
  c.name = name;
  c.llvm_cpu = name;
  c.features = std::move(*features);
  std::sort(c.features.begin(), c.features.end());
  c.feature_string = join_features(c.features, {});
  return c;
}

}  // namespace

bool Cpu::has(std::string_view feature) const {
  return std::binary_search(features.begin(), features.end(), feature);
}

int Cpu::vector_bits() const {
  if (has("avx512f")) return 512;
  if (has("avx")) return 256;
  return 128;
}

int Cpu::vector_registers() const {
  return has("avx512f") ? 32 : 16;
}

std::string Cpu::describe() const {
  std::string shown = name == llvm_cpu ? name : fmt::format("{}: {}", name, llvm_cpu);
  return fmt::format("{} ({}-bit vectors)", shown, vector_bits());
}

std::string default_cpu_name() {
  const char* env = std::getenv("TYCHE_CPU");
  return env && *env ? env : "host";
}

const Cpu& resolve_cpu(const std::string& asked) {
  std::string name = asked.empty() ? default_cpu_name() : asked;
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Cpu>> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(name);
  if (it != known.end()) return *it->second;
  std::unique_ptr<Cpu> cpu;
  try {
    cpu = std::make_unique<Cpu>(name == "host" ? host_cpu() : named_cpu(name));
  } catch (const Error& e) {
    if (asked.empty()) throw Error(fmt::format("TYCHE_CPU: {}", e.what()));
    throw;
  }
  return *known.emplace(name, std::move(cpu)).first->second;
}

std::vector<std::string> missing_on_host(const Cpu& cpu) {
  std::vector<std::string> missing;
  const std::map<std::string, bool>& host = probe::host_features();
  for (const std::string& f : cpu.features) {
    auto it = host.find(f);
    if (it != host.end() && !it->second) missing.push_back(f);
  }
  return missing;
}

void check_runs_on_host(const Cpu& cpu) {
  std::vector<std::string> missing = missing_on_host(cpu);
  if (missing.empty()) return;
  throw Error(fmt::format("cannot run code for CPU '{}' on this host ({}): it lacks {}", cpu.name,
                          probe::host_cpu_name(), fmt::join(missing, ", ")));
}

std::vector<std::string> host_levels() {
  std::vector<std::string> out;
  if (!probe::host_is_x86()) return out;
  for (const char* level : kLevels)
    if (missing_on_host(resolve_cpu(level)).empty()) out.push_back(level);
  return out;
}

}  // namespace tyche::target
