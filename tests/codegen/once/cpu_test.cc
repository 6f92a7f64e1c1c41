// CPU names and levels: what each level has, what this host can run, and the refusals.
#include <gmock/gmock.h>

#include <algorithm>
#include <cstdio>

#include "codegen/llvm/llvm_codegen.h"
#include "lower/lower.h"
#include "target/cpu.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

TEST(Cpu, LevelsNamesAndRefusals) {
  std::vector<std::string> levels = target::host_levels();
  ASSERT_GE(levels.size(), 2u);  // x86-64 and -v2 at least: every CPU in use today
  EXPECT_EQ(levels[0], "x86-64");
  EXPECT_EQ(target::resolve_cpu("x86-64-v2").vector_bits(), 128);
  EXPECT_EQ(target::resolve_cpu("x86-64-v3").vector_bits(), 256);
  EXPECT_TRUE(target::resolve_cpu("x86-64-v3").has("fma"));
  EXPECT_FALSE(target::resolve_cpu("x86-64-v3").has("avx512f"));
  EXPECT_EQ(target::resolve_cpu("x86-64-v4").vector_bits(), 512);
  EXPECT_THAT([] { target::resolve_cpu("pentium-9000"); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("unknown CPU 'pentium-9000'")));
  // A level this host cannot run is refused before any code runs; another vendor's CPU too.
  bool v4 = std::find(levels.begin(), levels.end(), "x86-64-v4") != levels.end();
  if (v4) {
    EXPECT_EQ(target::resolve_cpu("host").vector_bits(), 512);
  }
  const target::Cpu& other =
      target::resolve_cpu(target::resolve_cpu("host").has("sse4a") ? "sapphirerapids" : "znver3");
  EXPECT_FALSE(target::missing_on_host(other).empty());
  ir::PrimFunc lowered =
      lower::lower(workloads::scaled_down(workloads::get_preset("GMM-1")).func).func;
  EXPECT_THAT([&] { compile(lowered, {.cpu = other.name}); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("cannot run code for CPU '" +
                                                                   other.name + "' on this host")));
  if (!v4) {
    EXPECT_THROW(compile(lowered, {.cpu = "x86-64-v4"}), Error);
  }
  // Objects for such a CPU can still be made (to ship elsewhere).
  std::string path = ::testing::TempDir() + "/tyche_other_cpu.o";
  EXPECT_NO_THROW(compile_to_object(lowered, path, {.cpu = other.name}));
  std::remove(path.c_str());
}

TEST(Cpu, TheDefaultComesFromTycheCpu) {
  const char* old = std::getenv("TYCHE_CPU");
  std::string saved = old ? old : "";
  setenv("TYCHE_CPU", "x86-64-v2", 1);
  EXPECT_EQ(target::default_cpu_name(), "x86-64-v2");
  EXPECT_EQ(target::resolve_cpu("").name, "x86-64-v2");
  EXPECT_EQ(target::resolve_cpu("host").name, "host");
  setenv("TYCHE_CPU", "", 1);
  EXPECT_EQ(target::default_cpu_name(), "host");
  if (old)
    setenv("TYCHE_CPU", saved.c_str(), 1);
  else
    unsetenv("TYCHE_CPU");
}

}  // namespace
}  // namespace tyche::codegen
