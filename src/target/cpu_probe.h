// Private to src/target/: what the host CPU is and what a named CPU has, asked of LLVM
// (cpu_probe_llvm.cc) or, in a build without LLVM, of /proc/cpuinfo (cpu_probe_cpuinfo.cc).
// Feature names are LLVM's ("avx512vnni", "amx-tile").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tyche::target::probe {

// The host's CPU name (LLVM's, "znver4"; "x86-64" without LLVM) and its features, each on or off.
const std::string& host_cpu_name();
const std::map<std::string, bool>& host_features();
bool host_is_x86();
// A named x86-64 CPU's features with all they imply; nullopt when the name is unknown.
std::optional<std::vector<std::string>> named_cpu_features(const std::string& name);
// What named CPUs this build knows, for the refusal of an unknown one.
const char* known_cpu_names();

}  // namespace tyche::target::probe
