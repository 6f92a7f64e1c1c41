// MultiLevelTiling on the GPU (cuda defaults): the shared read caches inside the threadIdx-bound
// tile are annotated for cooperative fetch (RewriteCooperativeFetch, a postprocessor, acts on it:
// see tests/tune/postproc), the vector length is a traced sample, and the configuration
// refusals. The designs still compute the reference (the interpreter runs bound loops serially).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../schedule/schedule_test_util.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "support/error.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using schedule::Schedule;
using schedule::testing::computes_reference;
using schedule::testing::small;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<Schedule> gpu_designs(const workloads::Workload& w, std::vector<ScheduleRulePtr> rules,
                                  const target::Target& t, int64_t seed = 3) {
  return post_order_apply(std::move(rules))->generate(TuneContext{w.func, t}, seed);
}

// name -> the block's cooperative_fetch value, for every block that has one.
std::map<std::string, int64_t> cooperative_blocks(const ir::PrimFunc& f) {
  std::map<std::string, int64_t> out;
  ir::post_order_visit(f->body, [&](const ir::Stmt& s) {
    const auto* b = s.as<ir::BlockNode>();
    if (!b) return;
    auto it = b->annotations.find(ir::ann::kCooperativeFetch);
    if (it != b->annotations.end()) out[b->name] = std::get<int64_t>(it->second);
  });
  return out;
}

// The cuda default MultiLevelTiling, with changes.
MultiLevelTilingConfig gpu_mlt() {
  return {.structure = "SSSRRSRS",
          .tile_binds = {"blockIdx.x", "vthread.x", "threadIdx.x"},
          .max_innermost_factor = 64,
          .reuse_read = {.req = ReuseConfig::Kind::kMust, .levels = {4}, .scope = "shared"},
          .reuse_write = {.req = ReuseConfig::Kind::kMust, .levels = {3}, .scope = "local"}};
}

TEST(GpuMultiLevelTiling, SharedReadCachesAreAnnotatedForCooperativeFetch) {
  auto w = small("GMM-1");
  target::Target cuda = target::Target::parse("cuda");
  for (int64_t seed : {1, 2, 3, 4, 5}) {
    SCOPED_TRACE(seed);
    auto designs = gpu_designs(w, default_rules(cuda), cuda, seed);
    ASSERT_EQ(designs.size(), 1u);
    auto coop = cooperative_blocks(designs[0].func());
    ASSERT_EQ(coop.size(), 2u) << ir::to_string(designs[0].func());
    for (const char* cache : {"X_shared", "Y_shared"}) {
      ASSERT_TRUE(coop.count(cache)) << cache;
      EXPECT_THAT((std::vector<int64_t>{1, 2, 4}), ::testing::Contains(coop[cache]));
    }
    // The vector length is a traced sample per cache, so replays and mutators can redraw it.
    std::string trace = designs[0].trace()->to_text();
    EXPECT_THAT(
        trace,
        HasSubstr("sch.sample_categorical(candidates=[1, 2, 4], probs=[0.3333333333333333, "));
    EXPECT_THAT(trace, HasSubstr("ann_key=\"meta_schedule.cooperative_fetch\""));
    EXPECT_TRUE(computes_reference(w, designs[0].func()));
  }
}

TEST(GpuMultiLevelTiling, NoCooperativeFetchWithoutThreadsAroundTheCache) {
  auto w = small("GMM-1");
  target::Target cuda = target::Target::parse("cuda");
  // No threadIdx binding at all.
  MultiLevelTilingConfig blocks_only = gpu_mlt();
  blocks_only.tile_binds = {"blockIdx.x"};
  // The cache under level 2 (vthread), outside the threadIdx-bound level 3.
  MultiLevelTilingConfig outside = gpu_mlt();
  outside.reuse_read.levels = {2};
  // Local read caches are one thread's: nothing to share.
  MultiLevelTilingConfig local = gpu_mlt();
  local.reuse_read.scope = "local";
  for (const MultiLevelTilingConfig& c : {blocks_only, outside, local}) {
    auto designs = gpu_designs(w, {multi_level_tiling(c)}, cuda);
    ASSERT_EQ(designs.size(), 1u);
    EXPECT_THAT(designs[0].trace()->to_text(), HasSubstr("cache_read"));
    EXPECT_TRUE(cooperative_blocks(designs[0].func()).empty());
    EXPECT_THAT(designs[0].trace()->to_text(), Not(HasSubstr("sample_categorical")));
    EXPECT_TRUE(computes_reference(w, designs[0].func()));
  }
}

TEST(GpuMultiLevelTiling, ConvolutionCachesAreAnnotatedToo) {
  auto w = small("C2D-1");
  target::Target cuda = target::Target::parse("cuda");
  auto designs = gpu_designs(w, default_rules(cuda), cuda);
  ASSERT_FALSE(designs.empty());
  EXPECT_EQ(cooperative_blocks(designs[0].func()).size(), 2u) << ir::to_string(designs[0].func());
  EXPECT_TRUE(computes_reference(w, designs[0].func()));
}

TEST(GpuMultiLevelTiling, ReadReuseRefusals) {
  auto refused = [](MultiLevelTilingConfig c) -> std::string {
    try {
      (void)multi_level_tiling(std::move(c));
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  MultiLevelTilingConfig may = gpu_mlt();
  may.reuse_read.req = ReuseConfig::Kind::kMay;
  may.reuse_read.levels = {};
  EXPECT_THAT(refused(may), HasSubstr("read reuse takes one level, not 0"));
  MultiLevelTilingConfig two = gpu_mlt();
  two.reuse_read.levels = {4, 5};
  EXPECT_THAT(refused(two), HasSubstr("read reuse takes one level, not 2"));
  MultiLevelTilingConfig none = gpu_mlt();
  none.reuse_read.levels = {};
  EXPECT_THAT(refused(none), HasSubstr("read reuse takes one level, not 0"));
  MultiLevelTilingConfig outside = gpu_mlt();
  outside.reuse_read.levels = {9};
  EXPECT_THAT(refused(outside),
              HasSubstr("read reuse level 9 is outside the structure 'SSSRRSRS'"));
  // Write reuse keeps its "may" (TVM's CPU default), and "no" read reuse needs no level.
  MultiLevelTilingConfig ok = gpu_mlt();
  ok.reuse_write.req = ReuseConfig::Kind::kMay;
  ok.reuse_read = {};
  EXPECT_EQ(refused(ok), "accepted");
}

}  // namespace
}  // namespace tyche::tune
