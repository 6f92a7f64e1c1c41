// User-facing errors. Anything a user can get wrong (a name, a formula, a shape) throws
// tyche::Error with a one-line message; the CLI prints it and exits with code 2.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tyche {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// An input the user wrote could not be understood (parse errors, unknown names).
class InputError : public Error {
 public:
  explicit InputError(const std::string& msg) : Error(msg) {}
};

// An invariant of Tyche itself was broken: a bug, never the user's fault.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& msg) : Error("internal error: " + msg) {}
};

template <typename... Args>
[[noreturn]] void throw_error(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// For what the user got wrong (a malformed definition, an unknown name).
template <typename... Args>
[[noreturn]] void throw_input_error(fmt::format_string<Args...> f, Args&&... args) {
  throw InputError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tyche

#define TYCHE_CHECK(cond, ...)                                                                     \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      throw ::tyche::InternalError(fmt::format("{}:{}: check `{}` failed: {}", __FILE__, __LINE__, \
                                               #cond, fmt::format(__VA_ARGS__)));                  \
  } while (0)
