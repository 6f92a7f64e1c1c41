// A build without LLVM (TYCHE_WITH_LLVM=OFF, a GPU-only Tyche): the host's features from
// /proc/cpuinfo's flags under LLVM's names, and the x86-64 levels as the only named CPUs. No CPU
// code is generated in such a build; the features still describe the host.
#include <fstream>
#include <sstream>

#include "target/cpu_probe.h"

namespace tyche::target::probe {

namespace {

// /proc/cpuinfo's flag -> LLVM's feature name, for the features Tyche reads or the levels list.
const std::map<std::string, std::string>& flag_names() {
  static const std::map<std::string, std::string> m = {{"cmov", "cmov"},
                                                       {"cx8", "cx8"},
                                                       {"fxsr", "fxsr"},
                                                       {"mmx", "mmx"},
                                                       {"sse", "sse"},
                                                       {"sse2", "sse2"},
                                                       {"cx16", "cx16"},
                                                       {"popcnt", "popcnt"},
                                                       {"lahf_lm", "sahf"},
                                                       {"pni", "sse3"},
                                                       {"ssse3", "ssse3"},
                                                       {"sse4_1", "sse4.1"},
                                                       {"sse4_2", "sse4.2"},
                                                       {"avx", "avx"},
                                                       {"avx2", "avx2"},
                                                       {"bmi1", "bmi"},
                                                       {"bmi2", "bmi2"},
                                                       {"f16c", "f16c"},
                                                       {"fma", "fma"},
                                                       {"abm", "lzcnt"},
                                                       {"movbe", "movbe"},
                                                       {"xsave", "xsave"},
                                                       {"avx512f", "avx512f"},
                                                       {"avx512bw", "avx512bw"},
                                                       {"avx512cd", "avx512cd"},
                                                       {"avx512dq", "avx512dq"},
                                                       {"avx512vl", "avx512vl"},
                                                       {"avx512_vnni", "avx512vnni"},
                                                       {"avx_vnni", "avxvnni"},
                                                       {"avx512_bf16", "avx512bf16"},
                                                       {"avx512_fp16", "avx512fp16"},
                                                       {"amx_tile", "amx-tile"},
                                                       {"amx_int8", "amx-int8"},
                                                       {"amx_bf16", "amx-bf16"}};
  return m;
}

const std::vector<std::vector<std::string>>& levels() {
  static const std::vector<std::vector<std::string>> l = {
      {"cmov", "cx8", "fxsr", "mmx", "sse", "sse2"},
      {"cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3"},
      {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"},
      {"avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"}};
  return l;
}

}  // namespace

const std::string& host_cpu_name() {
  static const std::string name = "x86-64";
  return name;
}

const std::map<std::string, bool>& host_features() {
  static const std::map<std::string, bool> m = [] {
    std::map<std::string, bool> out;
    for (const auto& [flag, name] : flag_names()) out[name] = false;
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("flags")) continue;
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;)
        if (auto it = flag_names().find(w); it != flag_names().end()) out[it->second] = true;
      break;
    }
    return out;
  }();
  return m;
}

bool host_is_x86() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

std::optional<std::vector<std::string>> named_cpu_features(const std::string& name) {
  const char* names[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  for (size_t l = 0; l < levels().size(); ++l) {
    if (name != names[l]) continue;
    std::vector<std::string> out;
    for (size_t k = 0; k <= l; ++k) out.insert(out.end(), levels()[k].begin(), levels()[k].end());
    return out;
  }
  return std::nullopt;
}

const char* known_cpu_names() {
  return "host, x86-64, x86-64-v2, x86-64-v3 or x86-64-v4: this Tyche was built without LLVM";
}

}  // namespace tyche::target::probe
