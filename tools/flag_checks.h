// Checks of the numeric flags of `tyche` that say what is wrong in words a person reads. CLI11's
// range validators print their bounds as 309-digit numbers ("Value 0 not in range 0.000000 to
// 1797693...") and prefix the option's name; these throw tyche::InputError instead, which CLI11
// lets through its parser, so the CLI prints the message as the whole line and exits 2.
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::tools {

// The whole text as an integer; nullopt when it is not one. `too_large` is set when it is one
// but does not fit in 64 bits.
inline std::optional<int64_t> parse_whole(const std::string& text, bool& too_large) {
  too_large = false;
  int64_t v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;  // from_chars takes no '+'
  auto [end, ec] = std::from_chars(first, last, v);
  if (end != last || first == last) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    too_large = *first != '-';
    return std::nullopt;
  }
  if (ec != std::errc()) return std::nullopt;
  return v;
}

// More than 4 x the CPUs is a mistake, not a setting: 2147483647 threads would be spawned until
// the kernel refuses ("Resource temporarily unavailable" after 15 s). `what` is "--threads 64"
// or "TYCHE_NUM_THREADS=64".
inline std::string too_many_threads(const std::string& what) {
  int cap = max_threads();
  return fmt::format("{} is more than 4 x the {} CPUs ({})", what, cap / 4, cap);
}

// An int flag of at least `min` (and at most INT_MAX: the variable is an int).
inline CLI::Option* at_least(CLI::Option* option, int64_t min) {
  std::string name = option->get_name();
  option->check(CLI::Validator(
      [name, min](std::string& text) -> std::string {
        bool too_large = false;
        std::optional<int64_t> v = parse_whole(text, too_large);
        if (!v && !too_large) throw_input_error("{} takes a whole number (got '{}')", name, text);
        if (too_large || *v > INT_MAX)
          throw_input_error("{} must be at most {} (got {})", name, INT_MAX, text);
        if (*v < min) throw_input_error("{} must be at least {} (got {})", name, min, text);
        return "";
      },
      fmt::format("INT>={}", min), "at_least"));
  return option;
}

// --threads: from 1 to max_threads(), checked before any thread is started.
inline CLI::Option* thread_count(CLI::Option* option) {
  std::string name = option->get_name();
  option->check(CLI::Validator(
      [name](std::string& text) -> std::string {
        bool too_large = false;
        std::optional<int64_t> v = parse_whole(text, too_large);
        if (!v && !too_large) throw_input_error("{} takes a whole number (got '{}')", name, text);
        if (!too_large && *v < 1) throw_input_error("{} must be at least 1 (got {})", name, text);
        if (too_large || *v > max_threads())
          throw_input_error("{}", too_many_threads(fmt::format("{} {}", name, text)));
        return "";
      },
      "THREADS", "thread_count"));
  return option;
}

// Seconds: more than 0, at most a day (a larger double overflows the clocks' durations).
inline CLI::Option* seconds(CLI::Option* option) {
  std::string name = option->get_name();
  option->check(CLI::Validator(
      [name](std::string& text) -> std::string {
        char* end = nullptr;
        double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
          throw_input_error("{} takes a number of seconds (got '{}')", name, text);
        if (!(v > 0)) throw_input_error("{} must be more than 0 seconds (got {})", name, text);
        if (v > 86400)
          throw_input_error("{} must be at most 86400 seconds, a day (got {})", name, text);
        return "";
      },
      "SECONDS", "seconds"));
  return option;
}

// TYCHE_NUM_THREADS, which sizes the thread pool when it starts: refused in one line when it is
// not a whole number from 1 to max_threads() (the pool itself would clamp it silently).
inline void check_thread_environment() {
  const char* env = std::getenv("TYCHE_NUM_THREADS");
  if (env == nullptr || *env == '\0') return;
  std::string text = env;
  bool too_large = false;
  std::optional<int64_t> v = parse_whole(text, too_large);
  if (!v && !too_large)
    throw_input_error("TYCHE_NUM_THREADS takes a whole number (got '{}')", text);
  if (!too_large && *v < 1)
    throw_input_error("TYCHE_NUM_THREADS must be at least 1 (got {})", text);
  if (too_large || *v > max_threads())
    throw_input_error("{}", too_many_threads("TYCHE_NUM_THREADS=" + text));
}

}  // namespace tyche::tools
