// What the Builder's and Runner's tests share: the worker program and a scratch folder.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace tyche::tune::testing {

inline std::string worker_path() {
  return std::string(TYCHE_BINARY_DIR) + "/tools/tyche-worker";
}

// A folder of this process under the tests' temporary directory.
inline std::string temp_dir(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / fmt::format("tyche_{}_{}", name, getpid()))
      .string();
}

}  // namespace tyche::tune::testing
