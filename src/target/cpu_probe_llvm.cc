#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include "target/cpu_probe.h"

namespace tyche::target::probe {

const std::string& host_cpu_name() {
  static const std::string name = llvm::sys::getHostCPUName().str();
  return name;
}

// LLVM omits features every x86-64 has (x87).
const std::map<std::string, bool>& host_features() {
  static const std::map<std::string, bool> m = [] {
    std::map<std::string, bool> out;
    for (const auto& f : llvm::sys::getHostCPUFeatures()) out[f.first().str()] = f.second;
    return out;
  }();
  return m;
}

bool host_is_x86() {
  return llvm::Triple(llvm::sys::getProcessTriple()).isX86();
}

std::optional<std::vector<std::string>> named_cpu_features(const std::string& name) {
  if (llvm::X86::parseArchX86(name, /*Only64Bit=*/true) == llvm::X86::CK_None) return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 64> listed;
  llvm::X86::getFeaturesForCPU(name, listed);
  // The list names the top of each family (sse4.2, avx512bw); the rest is implied.
  llvm::StringMap<bool> closure;
  for (llvm::StringRef f : listed) {
    closure[f] = true;
    llvm::X86::updateImpliedFeatures(f, true, closure);  // sets what f implies, not f
  }
  std::vector<std::string> out;
  for (const auto& f : closure)
    if (f.second) out.push_back(f.first().str());
  return out;
}

const char* known_cpu_names() {
  return "host, x86-64, x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM x86-64 CPU name such as "
         "skylake-avx512 or znver3";
}

}  // namespace tyche::target::probe
