#include "tune/trial/timing.h"

#include <fmt/format.h>

#include "support/error.h"

namespace tyche::tune {

runtime::TimeOptions warm_timing() {
  return {.warmup = 0,
          .number = 1,
          .repeat = 3,
          .min_repeat_ms = 20,
          .flush_cache = false,
          .flush_ranges = {}};
}

runtime::TimeOptions cold_timing() {
  return {.warmup = 0,
          .number = 1,
          .repeat = 10,
          .min_repeat_ms = 0,
          .flush_cache = true,
          .flush_ranges = {}};
}

runtime::TimeOptions llc_timing() {
  runtime::TimeOptions t = cold_timing();
  t.keep_in_llc = true;
  return t;
}

runtime::TimeOptions mixed_timing() {
  runtime::TimeOptions t = llc_timing();
  t.flush_constants = true;
  return t;
}

runtime::TimeOptions timing_named(const std::string& name) {
  if (name == "cold") return cold_timing();
  if (name == "llc") return llc_timing();
  if (name == "mixed") return mixed_timing();
  if (name == "warm") return warm_timing();
  throw InputError(fmt::format("unknown timing '{}' (expected cold, llc, mixed or warm)", name));
}

std::string timing_name(const runtime::TimeOptions& time) {
  if (!time.flush_cache) return "";
  if (!time.keep_in_llc) return "cold";
  return time.flush_constants ? "mixed" : "llc";
}

std::string timing_label(const runtime::TimeOptions& time) {
  std::string name = timing_name(time);
  return name.empty() ? "warm" : name;
}

}  // namespace tyche::tune
