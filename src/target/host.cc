#include "target/host.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace tyche::target {

namespace {

std::string read_word(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  in >> text;
  return text;
}

}  // namespace

std::vector<CacheInfo> cpu_caches() {
  std::vector<CacheInfo> out;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::string size = read_word(dir + "size");
    if (size.empty()) continue;
    CacheInfo c;
    size_t unit = size.back() == 'K'   ? 1024
                  : size.back() == 'M' ? 1024 * 1024
                  : size.back() == 'G' ? size_t{1} << 30
                                       : 1;
    c.bytes = std::strtoull(size.c_str(), nullptr, 10) * unit;
    c.level = std::atoi(read_word(dir + "level").c_str());
    c.type = read_word(dir + "type");
    if (c.bytes > 0) out.push_back(c);
  }
  return out;
}

size_t data_cache_bytes(int level, size_t fallback) {
  for (const CacheInfo& c : cpu_caches())
    if (c.level == level && c.type != "Instruction") return c.bytes;
  return fallback;
}

size_t last_level_cache_bytes(size_t fallback) {
  size_t largest = 0;
  for (const CacheInfo& c : cpu_caches()) largest = std::max(largest, c.bytes);
  return largest ? largest : fallback;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

}  // namespace tyche::target
