#include "target/cpu.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "support/error.h"

namespace tyche::target {

namespace {

constexpr const char* kLevels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};

// What the host reports: feature -> enabled. LLVM omits features every x86-64 has (x87).
const llvm::StringMap<bool>& host_feature_map() {
  static const llvm::StringMap<bool> m = llvm::sys::getHostCPUFeatures();
  return m;
}

std::string join_features(const std::vector<std::string>& on, const std::vector<std::string>& off) {
  std::vector<std::string> all;
  for (const std::string& f : on) all.push_back("+" + f);
  for (const std::string& f : off) all.push_back("-" + f);
  std::sort(all.begin(), all.end(), [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  return fmt::format("{}", fmt::join(all, ","));
}

Cpu host_cpu() {
  Cpu c;
  c.name = "host";
  c.llvm_cpu = llvm::sys::getHostCPUName().str();
  std::vector<std::string> off;
  for (const auto& f : host_feature_map()) (f.second ? c.features : off).push_back(f.first().str());
  std::sort(c.features.begin(), c.features.end());
  c.feature_string = join_features(c.features, off);
  return c;
}

Cpu named_cpu(const std::string& name) {
  if (!llvm::Triple(llvm::sys::getProcessTriple()).isX86())
    throw Error(fmt::format("unknown CPU '{}': on this architecture only 'host' is supported", name));
  if (llvm::X86::parseArchX86(name, /*Only64Bit=*/true) == llvm::X86::CK_None)
    throw Error(fmt::format("unknown CPU '{}' (expected host, x86-64, x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM "
                            "x86-64 CPU name such as skylake-avx512 or znver3)",
                            name));
  llvm::SmallVector<llvm::StringRef, 64> listed;
  llvm::X86::getFeaturesForCPU(name, listed);
  // The list names the top of each family (sse4.2, avx512bw); the rest is implied.
  llvm::StringMap<bool> closure;
  for (llvm::StringRef f : listed) {
    closure[f] = true;
    llvm::X86::updateImpliedFeatures(f, true, closure);  // sets what f implies, not f
  }
  Cpu c;
  c.name = name;
  c.llvm_cpu = name;
  for (const auto& f : closure)
    if (f.second) c.features.push_back(f.first().str());
  std::sort(c.features.begin(), c.features.end());
  c.feature_string = join_features(c.features, {});
  return c;
}

}  // namespace

bool Cpu::has(std::string_view feature) const { return std::binary_search(features.begin(), features.end(), feature); }

int Cpu::vector_bits() const {
  if (has("avx512f")) return 512;
  if (has("avx")) return 256;
  return 128;
}

int Cpu::vector_registers() const { return has("avx512f") ? 32 : 16; }

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
  const llvm::StringMap<bool>& host = host_feature_map();
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
                          llvm::sys::getHostCPUName().str(), fmt::join(missing, ", ")));
}

std::vector<std::string> host_levels() {
  std::vector<std::string> out;
  if (!llvm::Triple(llvm::sys::getProcessTriple()).isX86()) return out;
  for (const char* level : kLevels)
    if (missing_on_host(resolve_cpu(level)).empty()) out.push_back(level);
  return out;
}

}  // namespace tyche::target
