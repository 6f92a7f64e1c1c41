// Running a command as a user's shell runs it, and the files and folders such tests write.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tyche::testing {

struct Shell {
  int code;         // the exit status, -1 if the command did not exit
  std::string out;  // stdout and stderr
};

inline Shell shell(const std::string& cmd) {
  Shell r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::filesystem::path& p, const void* data, size_t bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// An empty folder of this process's own under the test temporary folder.
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& what) {
  std::filesystem::path d =
      std::filesystem::path(::testing::TempDir()) / fmt::format("{}_{}_{}", prefix, what, getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace tyche::testing
