// Linked into the test binaries that ctest runs once per CPU level (tests/CMakeLists.txt): when
// TYCHE_CPU names a CPU this host cannot run, every test of the binary is skipped, saying why.
#include <gtest/gtest.h>

#include <cstdlib>

#include "target/cpu.h"

namespace {

class CpuLevelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* level = std::getenv("TYCHE_CPU");
    if (!level || !*level) return;
    std::vector<std::string> missing = tyche::target::missing_on_host(tyche::target::resolve_cpu(level));
    if (!missing.empty()) GTEST_SKIP() << "this host cannot run code for " << level << " (it lacks " << missing.front() << ", ...)";
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment = ::testing::AddGlobalTestEnvironment(new CpuLevelEnvironment);

}  // namespace
