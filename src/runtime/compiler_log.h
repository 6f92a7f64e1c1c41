// What to say of a run-time compiler's log (OpenCL's, NVRTC's) in a one-line error.
#pragma once

#include <sstream>
#include <string>

namespace tyche::runtime {

// The first line that reports an error, else the first nonempty line, else `none`.
inline std::string first_error_line(const std::string& log,
                                    const std::string& none = "no compiler log") {
  std::istringstream in(log);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first.empty() ? none : first;
}

}  // namespace tyche::runtime
