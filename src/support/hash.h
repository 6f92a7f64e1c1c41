#pragma once

#include <cstddef>
#include <cstdint>

namespace tyche {

// Order-dependent combination (boost-style, 64-bit constant).
inline uint64_t hash_combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

}  // namespace tyche

#include <string_view>

namespace tyche {

// FNV-1a: the same value on every platform (std::hash is not), so hashes can key saved files.
inline uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace tyche
