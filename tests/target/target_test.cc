// The target description: its text form (both option spellings), what print gives back, the
// refusals, and the facts the rules read of a CPU.
#include <gmock/gmock.h>

#include <algorithm>

#include "support/error.h"
#include "target/cpu.h"
#include "target/host.h"
#include "target/target.h"

namespace tyche::target {
namespace {

TEST(Target, ParsesBothOptionSpellings) {
  EXPECT_EQ(Target::parse("llvm -num-cores 3").num_cores, 3);
  EXPECT_EQ(Target::parse("llvm -num-cores=3").num_cores, 3);
  Target v3 = Target::parse("llvm -mcpu x86-64-v3 -num-cores 2");
  EXPECT_EQ(v3.cpu, "x86-64-v3");
  EXPECT_EQ(v3.num_cores, 2);
  EXPECT_EQ(v3.str(), "llvm -mcpu=x86-64-v3 -num-cores=2");
  Target same = Target::parse("llvm -mcpu=x86-64-v3 -num-cores=2");
  EXPECT_EQ(same.str(), v3.str());
  EXPECT_EQ(Target::parse("llvm").cpu, "");  // the default CPU
  EXPECT_EQ(Target::parse("llvm -mcpu=znver5").cpu, "znver5");
}

TEST(Target, PrintsWhatParsesBack) {
  for (const char* text :
       {"llvm", "llvm -mcpu=x86-64-v4 -num-cores=7", "cuda", "cuda -arch=sm_90",
        "cuda -arch=sm_80 -max-threads-per-block=256 -max-shared-memory-per-block=1024", "opencl",
        "opencl -max-threads-per-block=64 -max-shared-memory-per-block=32768"}) {
    Target t = Target::parse(text);
    Target again = Target::parse(t.str());
    EXPECT_EQ(again.str(), t.str()) << text;
    EXPECT_EQ(again.kind, t.kind);
    EXPECT_EQ(again.num_cores, t.num_cores);
    EXPECT_EQ(again.cpu, t.cpu);
    EXPECT_EQ(again.arch, t.arch);
    EXPECT_EQ(again.max_threads_per_block, t.max_threads_per_block);
    EXPECT_EQ(again.max_shared_memory_per_block, t.max_shared_memory_per_block);
  }
}

TEST(Target, CudaArchitectureAndLimits) {
  Target gpu = Target::parse(
      "cuda -arch=sm_90 -max-threads-per-block 256 -max-shared-memory-per-block 1024");
  EXPECT_TRUE(gpu.is_gpu());
  EXPECT_EQ(gpu.arch, "sm_90");
  EXPECT_EQ(gpu.max_threads_per_block, 256);
  EXPECT_EQ(gpu.max_shared_memory_per_block, 1024);
  EXPECT_EQ(gpu.str(),
            "cuda -arch=sm_90 -max-threads-per-block=256 -max-shared-memory-per-block=1024");
  EXPECT_THAT([&] { gpu.cpu_info(); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("has no CPU")));
}

TEST(Target, OpenClIsAGpuWithLimitsAndNoArchitecture) {
  Target cl = Target::parse("opencl -max-threads-per-block 128");
  EXPECT_TRUE(cl.is_gpu());
  EXPECT_EQ(cl.kind, "opencl");
  EXPECT_EQ(cl.max_threads_per_block, 128);
  EXPECT_EQ(cl.str(), "opencl -max-threads-per-block=128 -max-shared-memory-per-block=49152");
  EXPECT_THAT([&] { cl.cpu_info(); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("has no CPU")));
  EXPECT_THAT([] { Target::parse("opencl -arch=sm_90"); },
              ::testing::ThrowsMessage<InputError>(::testing::HasSubstr(
                  "unknown option '-arch' for opencl (expected -max-threads")));
}

TEST(Target, RefusesWhatItDoesNotKnow) {
  for (const char* bad :
       {"", "vulkan", "opencl -num-cores 2", "opencl -mcpu x86-64-v3", "llvm -num-cores",
        "llvm -num-cores x", "llvm -num-cores 0", "llvm -num-cores=", "llvm -num-cores=5000",
        "cuda -num-cores 2", "llvm -max-threads-per-block 4", "llvm -mcpu", "cuda -mcpu x86-64-v3",
        "cuda -arch=90", "cuda -arch sm90", "llvm znver5"})
    EXPECT_THROW(Target::parse(bad), InputError) << bad;
  EXPECT_THAT([] { Target::parse("llvm -mcpu=x -num-cores 0"); },
              ::testing::ThrowsMessage<InputError>(::testing::HasSubstr("positive integer")));
}

TEST(Target, ResolvesItsCpu) {
  Target t = Target::parse("llvm -mcpu=x86-64-v3");
  EXPECT_EQ(t.cpu_info().vector_bits(), 256);
  EXPECT_EQ(t.cpu_info().vector_registers(), 16);
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64-v4").cpu_info().vector_registers(), 32);
  EXPECT_THROW(Target::parse("llvm -mcpu=pentium-9000").cpu_info(), Error);
  EXPECT_GE(Target::host().num_cores, 1);
}

TEST(Host, CachesAreConsistentWhateverTheHostReports) {
  std::vector<CacheInfo> caches = cpu_caches();
  size_t largest = 0;
  for (const CacheInfo& c : caches) {
    EXPECT_GE(c.level, 1);
    EXPECT_GT(c.bytes, 0u);
    largest = std::max(largest, c.bytes);
    if (c.type != "Instruction") {
      EXPECT_EQ(data_cache_bytes(c.level, 1), c.bytes);
    }
  }
  EXPECT_EQ(last_level_cache_bytes(7), caches.empty() ? 7 : largest);
  EXPECT_EQ(data_cache_bytes(99, 5), 5u);  // not reported: the fallback
  // An outer level is never smaller than an inner one.
  for (int level = 2; level <= 4; ++level) {
    size_t inner = data_cache_bytes(level - 1, 0), outer = data_cache_bytes(level, 0);
    if (inner && outer) {
      EXPECT_GE(outer, inner) << "L" << level;
    }
  }
}

}  // namespace
}  // namespace tyche::target
