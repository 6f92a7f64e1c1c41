#include "support/tensor_size.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include "support/error.h"

namespace tyche {

std::optional<int64_t> checked_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  // A zero anywhere makes the tensor empty, whatever the other dimensions (an overflow before
  // the zero was already refused: such a shape is malformed either way).
  return n;
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

uint64_t item_bytes(DataType dtype) {
  uint64_t lanes = dtype.lanes() > 0 ? static_cast<uint64_t>(dtype.lanes()) : 1;
  uint64_t scalar = dtype.is_bool() ? 1 : static_cast<uint64_t>(dtype.bytes());
  return scalar * lanes;
}

std::string shape_string(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string bytes_string(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

namespace {

std::atomic<uint64_t> g_limit_override{0};

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{1} << 40;  // unknown: 1 TiB
  return checked_mul(static_cast<uint64_t>(pages), static_cast<uint64_t>(page))
      .value_or(UINT64_MAX);
}

// "4096", "512M", "2G": the environment's limit; a malformed one is refused in one line.
uint64_t parse_limit(const char* text) {
  std::string s(text);
  uint64_t scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        scale = uint64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        scale = uint64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        scale = uint64_t{1} << 30;
        break;
      case 'T':
      case 't':
        scale = uint64_t{1} << 40;
        break;
      default:
        break;
    }
    if (scale != 1) s.pop_back();
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long v = s.empty() || s[0] == '-' ? 0 : std::strtoull(s.c_str(), &end, 10);
  std::optional<uint64_t> bytes = checked_mul(v, scale);
  if (s.empty() || s[0] == '-' || errno != 0 || *end != '\0' || v == 0 || !bytes)
    throw_input_error("TYCHE_MAX_TENSOR_BYTES='{}' is not a size in bytes (e.g. 1073741824 or 1G)",
                      text);
  return *bytes;
}

uint64_t default_limit() {
  static const uint64_t limit = [] {
    const char* env = std::getenv("TYCHE_MAX_TENSOR_BYTES");
    return env && *env ? parse_limit(env) : physical_memory();
  }();
  return limit;
}

}  // namespace

uint64_t tensor_byte_limit() {
  uint64_t o = g_limit_override.load(std::memory_order_relaxed);
  return o ? o : default_limit();
}

void set_tensor_byte_limit(uint64_t bytes) {
  g_limit_override.store(bytes, std::memory_order_relaxed);
}

TensorSize tensor_size(std::string_view what, std::span<const int64_t> shape, DataType dtype) {
  for (int64_t d : shape)
    if (d < 0)
      throw_input_error("{} has a negative dimension: shape {}", what, shape_string(shape));
  std::optional<int64_t> n = checked_numel(shape);
  if (!n)
    throw_input_error("{} has more elements than 64 bits count: shape {}", what,
                      shape_string(shape));
  std::optional<uint64_t> bytes = checked_mul(static_cast<uint64_t>(*n), item_bytes(dtype));
  if (!bytes)
    throw_input_error("{} of shape {} {} needs more bytes than 64 bits count", what,
                      shape_string(shape), dtype.str());
  uint64_t limit = tensor_byte_limit();
  if (*bytes > limit)
    throw_input_error(
        "{} of shape {} {} needs {} ({} bytes), over the limit of {} (TYCHE_MAX_TENSOR_BYTES; "
        "default: this machine's memory)",
        what, shape_string(shape), dtype.str(), bytes_string(*bytes), *bytes, bytes_string(limit));
  return {*n, *bytes};
}

int max_threads() {
  int cpus = 0;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
#endif
  if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(4, 4 * std::max(cpus, 1));
}

}  // namespace tyche
