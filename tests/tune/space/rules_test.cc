// Each built-in rule on its own: what it does to the blocks it applies to, that it leaves others
// alone, its branches, and its refusals; user rules as lambdas; ScheduleFn and Union.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../schedule/schedule_test_util.h"
#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "support/error.h"
#include "tune/space/multi_level_tiling.h"
#include "tune/space/rule_util.h"
#include "tune/space/space_generator.h"

namespace tyche::tune {
namespace {

using schedule::BlockRV;
using schedule::Schedule;
using schedule::testing::computes_reference;
using schedule::testing::small;
using ::testing::HasSubstr;
using ::testing::Not;

// AVX-512 named, so default_rules gives TVM's CPU list on any host (AVX2 adds designs).
target::Target cpu() {
  target::Target t;
  t.num_cores = 2;
  t.cpu = "x86-64-v4";
  return t;
}

std::vector<Schedule> generate(const workloads::Workload& w, std::vector<ScheduleRulePtr> rules,
                               const target::Target& t = cpu()) {
  return post_order_apply(std::move(rules))->generate(TuneContext{w.func, t}, 3);
}

std::string ir_of(const Schedule& s) {
  return ir::to_string(s.func());
}

TEST(ScheduleCopy, HandlesCarryOverAndScheduleAreIndependent) {
  auto w = small("GMM-1");
  Schedule a(w.func, schedule::ScheduleOptions{.seed = 1});
  BlockRV z = a.get_block("Z").value();
  auto loops = a.get_loops(z).value();
  auto parts = a.split(loops[1], {std::nullopt, 4}).value();  // loops[1] is now stale
  Schedule b = a.copy();
  EXPECT_EQ(b.trace()->to_text(), a.trace()->to_text());
  EXPECT_EQ(b.loop_sref(loops[1]).error().code(), schedule::ErrorCode::kStaleHandle);
  ASSERT_TRUE(b.vectorize(parts[1]).ok());  // a handle of `a`, valid in `b`
  EXPECT_THAT(ir_of(b), HasSubstr("vectorized"));
  EXPECT_THAT(ir_of(a), Not(HasSubstr("vectorized")));
  EXPECT_EQ(a.trace()->size() + 1, b.trace()->size());
  EXPECT_TRUE(computes_reference(w, b.func()));
}

TEST(AutoInline, InlinesTheElementwiseChainButNotPaddingOrOutputs) {
  auto w = small("CBR-1");
  auto designs = generate(w, {auto_inline()});
  ASSERT_EQ(designs.size(), 1u);
  std::string text = ir_of(designs[0]);
  for (const char* gone : {"block(\"bias_add\")", "block(\"bn_mul\")", "block(\"bn_add\")"})
    EXPECT_THAT(text, Not(HasSubstr(gone)));
  for (const char* kept : {"block(\"pad\")", "block(\"conv2d\")", "block(\"relu\")"})
    EXPECT_THAT(text, HasSubstr(kept));
  EXPECT_TRUE(computes_reference(w, designs[0].func()));
  // Allowing if_then_else inlines the padding into the convolution too.
  auto with_pad = generate(w, {auto_inline({.disallow_if_then_else = false})});
  EXPECT_THAT(ir_of(with_pad[0]), Not(HasSubstr("block(\"pad\")")));
  EXPECT_TRUE(computes_reference(w, with_pad[0].func()));
  // into_producer folds the output ReLU into the convolution's nest instead.
  auto into_producer = generate(
      w,
      {auto_inline({.into_producer = true, .into_consumer = false, .require_injective = false})});
  EXPECT_THAT(ir_of(into_producer[0]), Not(HasSubstr("block(\"relu\")")));
  EXPECT_TRUE(computes_reference(w, into_producer[0].func()));
}

TEST(AutoInline, DisallowedOpsStay) {
  auto w = small("SFM-1");
  auto plain = generate(w, {auto_inline()});
  EXPECT_THAT(ir_of(plain[0]), Not(HasSubstr("block(\"row_exp\")")));
  auto kept = generate(w, {auto_inline({.disallow_op = {"exp"}})});
  EXPECT_THAT(ir_of(kept[0]), HasSubstr("block(\"row_exp\")"));
  EXPECT_TRUE(computes_reference(w, plain[0].func()));
}

TEST(MultiLevelTiling, MustReuseAndGpuBindings) {
  auto w = small("GMM-1");
  auto must = generate(
      w, {multi_level_tiling({.reuse_write = {.req = ReuseConfig::Kind::kMust, .levels = {2}}})});
  ASSERT_EQ(must.size(), 1u);
  EXPECT_THAT(must[0].trace()->to_text(), HasSubstr("cache_write"));
  EXPECT_TRUE(computes_reference(w, must[0].func()));
  auto none = generate(w, {multi_level_tiling({.structure = "SRS"})});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_THAT(none[0].trace()->to_text(), Not(HasSubstr("cache_write")));
  auto gpu =
      generate(w, default_rules(target::Target::parse("cuda")), target::Target::parse("cuda"));
  ASSERT_EQ(gpu.size(), 1u);
  std::string text = ir_of(gpu[0]);
  for (const char* axis : {"blockIdx.x", "vthread.x", "threadIdx.x", "\"shared\"", "\"local\""})
    EXPECT_THAT(text, HasSubstr(axis));
  EXPECT_TRUE(computes_reference(w, gpu[0].func()));
}

// Packing on a CPU: read reuse "may" gives a design without caches and one that caches, under
// the second spatial tile level, only the operand the output's rows run along (B of a matmul,
// the weights of a convolution), for each write-reuse choice.
TEST(MultiLevelTiling, MayPackTheOperandAlongTheOutputRows) {
  auto w = small("GMM-1");  // Z[b, i, j] += X[b, i, k] * Y[b, k, j]
  auto designs = generate(
      w, {multi_level_tiling({.reuse_read = {.req = ReuseConfig::Kind::kMay,
                                             .levels = {2},
                                             .only_along_output_row = true},
                              .reuse_write = {.req = ReuseConfig::Kind::kMay, .levels = {1, 2}}})});
  ASSERT_EQ(designs.size(), 6u);
  int packed = 0;
  for (const Schedule& d : designs) {
    std::string text = d.trace()->to_text();
    EXPECT_THAT(text, Not(HasSubstr("read_buffer_index=0")));
    if (text.find("cache_read(block=b0, read_buffer_index=1") != std::string::npos) {
      ++packed;
      EXPECT_THAT(ir_of(d), HasSubstr("Y_global"));
    }
    EXPECT_TRUE(computes_reference(w, d.func()));
  }
  EXPECT_EQ(packed, 3);
  auto conv =
      small("C2D-1");  // conv2d[n, h, w, co] += pad[n, h*2+rh, w*2+rw, ci] * W[rh, rw, ci, co]
  auto conv_designs =
      generate(conv, {auto_inline({.disallow_op = {"exp"}}),
                      multi_level_tiling({.reuse_read = {.req = ReuseConfig::Kind::kMust,
                                                         .levels = {2},
                                                         .only_along_output_row = true}})});
  ASSERT_FALSE(conv_designs.empty());
  for (const Schedule& d : conv_designs) {
    std::string ir = ir_of(d);
    EXPECT_THAT(ir, HasSubstr("W_global"));  // "must": every design
    EXPECT_THAT(ir, Not(HasSubstr("I_global")));
    EXPECT_THAT(ir, Not(HasSubstr("pad_global")));
    EXPECT_TRUE(computes_reference(conv, d.func()));
  }
}

// Padded rows: one more design, whose rows loop (the spatial loop outside the vectorized one)
// has a fixed innermost tile that need not divide it; only where it does not divide, the extent
// is over it, and the padding is within 1/8 of the extent.
TEST(MultiLevelTiling, PaddedRowsAddADesignWhoseRegisterTileNeedNotDivideItsLoop) {
  auto designs_for = [](const std::string& extents) {
    auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", extents);
    auto designs = generate(w, {multi_level_tiling({.padded_rows = {6}})});
    for (const Schedule& d : designs) EXPECT_TRUE(computes_reference(w, d.func())) << extents;
    return designs;
  };
  auto designs = designs_for("i=50,j=32,k=16");  // 50 rows: 9 tiles of 6, 4 padding rows
  ASSERT_EQ(designs.size(), 2u);
  EXPECT_THAT(designs[0].trace()->to_text(), Not(HasSubstr("None, 6")));
  std::string padded = designs[1].trace()->to_text();
  EXPECT_THAT(padded, HasSubstr("l5, l6 = sch.split(loop=l2, factors=[None, 6])"));
  EXPECT_THAT(
      padded,
      HasSubstr("sample_perfect_tile(loop=l5, n=3"));   // the 9 row tiles, at the outer levels
  EXPECT_EQ(designs_for("i=48,j=32,k=16").size(), 1u);  // 6 divides 48: the perfect tiles reach it
  EXPECT_EQ(designs_for("i=14,j=32,k=16").size(), 1u);  // 4 padding rows of 14: too many
  EXPECT_EQ(designs_for("i=5,j=32,k=16").size(), 1u);   // fewer rows than the tile
}

// A CPU with 16 vector registers (AVX2) gets padded rows and packing in its default rules; one
// with AVX-512's 32 does not (power-of-two tiles already hold 16 accumulators there).
TEST(MultiLevelTiling, DefaultRulesPadAndPackOnSixteenRegisterCpusOnly) {
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=50,j=32,k=16");
  auto texts = [&](const std::string& cpu) {
    target::Target t = target::Target::parse("llvm -num-cores 2 -mcpu " + cpu);
    std::vector<std::string> out;
    for (const Schedule& d : generate(w, default_rules(t), t)) out.push_back(d.trace()->to_text());
    return out;
  };
  auto count = [](const std::vector<std::string>& v, const char* s) {
    return std::count_if(v.begin(), v.end(),
                         [&](const std::string& t) { return t.find(s) != std::string::npos; });
  };
  auto avx2 = texts("x86-64-v3"), avx512 = texts("x86-64-v4");
  EXPECT_EQ(avx2.size(), 4 * avx512.size());  // x (padded or not) x (packed or not)
  EXPECT_EQ(count(avx2, "factors=[None, 6]"), static_cast<long>(avx2.size() / 2));
  EXPECT_EQ(count(avx2, "cache_read"), static_cast<long>(avx2.size() / 2));
  // Padded and packed: 2-vector panels (16 float32 lanes), the cache laid out by panel.
  EXPECT_EQ(count(avx2, "factors=[None, 16]"), static_cast<long>(avx2.size() / 4));
  EXPECT_EQ(count(avx2, "index_map=\"lambda a0, a1: (a1 // 16, a0, a1 % 16)\""),
            static_cast<long>(avx2.size() / 4));
  EXPECT_EQ(count(avx512, "transform_layout"), 0);
  EXPECT_EQ(count(avx512, "factors=[None, 6]"), 0);
  EXPECT_EQ(count(avx512, "cache_read"), 0);
  // The reduction tile may reach 256 there (k here is 16: the limit is recorded, not reached).
  EXPECT_EQ(count(avx2, "n=2, max_innermost_factor=256"), static_cast<long>(avx2.size()));
  EXPECT_EQ(count(avx512, "max_innermost_factor=256"), 0);
}

// Panels: in the padded-rows design with a read cache, the vectorized loop's innermost tile is
// fixed at the panel width and the cache is laid out panel by panel; only where the width
// divides that loop and is below it.
TEST(MultiLevelTiling, PackedPanelsFixTheColumnsAndLayOutTheCache) {
  auto designs_for = [](const std::string& extents) {
    auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", extents);
    auto designs = generate(w, {multi_level_tiling({.reuse_read = {.req = ReuseConfig::Kind::kMay,
                                                                   .levels = {2},
                                                                   .only_along_output_row = true},
                                                    .padded_rows = {6},
                                                    .panel_width = 8})});
    std::vector<std::string> texts;
    for (const Schedule& d : designs) {
      EXPECT_TRUE(computes_reference(w, d.func())) << extents << "\n" << d.trace()->to_text();
      texts.push_back(d.trace()->to_text());
    }
    return texts;
  };
  auto texts = designs_for("i=50,j=32,k=16");
  ASSERT_EQ(texts.size(), 4u);  // (padded or not) x (packed or not)
  int panels = 0;
  for (const std::string& t : texts) {
    bool padded = t.find("factors=[None, 6]") != std::string::npos,
         packed = t.find("cache_read") != std::string::npos;
    bool panel = t.find("transform_layout(block=b") != std::string::npos;
    EXPECT_EQ(panel, padded && packed) << t;
    if (!panel) continue;
    ++panels;
    EXPECT_THAT(t, HasSubstr("factors=[None, 8]"));
    EXPECT_THAT(t, HasSubstr("index_map=\"lambda a0, a1: (a1 // 8, a0, a1 % 8)\""));
  }
  EXPECT_EQ(panels, 1);
  for (const char* extents :
       {"i=50,j=36,k=16", "i=50,j=8,k=16"})  // 8 does not divide 36; 8 columns only
    for (const std::string& t : designs_for(extents))
      EXPECT_THAT(t, Not(HasSubstr("transform_layout"))) << extents;
}

TEST(MultiLevelTiling, TheReductionTileMayHaveItsOwnLimit) {
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=32,j=32,k=64");
  auto designs = generate(
      w, {multi_level_tiling({.max_innermost_factor = 16, .max_innermost_reduction_factor = 4})});
  ASSERT_EQ(designs.size(), 1u);
  std::string text = designs[0].trace()->to_text();
  EXPECT_THAT(text, HasSubstr("sample_perfect_tile(loop=l4, n=2, max_innermost_factor=4"));   // k
  EXPECT_THAT(text, HasSubstr("sample_perfect_tile(loop=l2, n=4, max_innermost_factor=16"));  // i
  EXPECT_TRUE(computes_reference(w, designs[0].func()));
}

// A variant plugs a step into the pipeline, as a tensor-intrinsic variant would: here, after
// tiling, each design branches into one that unrolls its innermost tile and one that does not.
class UnrollInnermostOrNot : public MultiLevelTiling {
 public:
  using MultiLevelTiling::MultiLevelTiling;

 protected:
  std::vector<Step> steps() const override {
    std::vector<Step> s = MultiLevelTiling::steps();
    s.insert(s.begin() + 2, [](TilingState st) {
      std::vector<TilingState> out;
      TilingState unrolled{st.sch.copy(), st.block, st.design, st.write_cache, st.tiles, st.panel};
      if (unrolled.sch.unroll(unrolled.tiles.back().back()).ok())
        out.push_back(std::move(unrolled));
      out.push_back(std::move(st));
      return out;
    });
    return s;
  }
};

TEST(MultiLevelTiling, AVariantAddsAStepThatBranches) {
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=32,j=32,k=64");
  MultiLevelTilingConfig config{.reuse_write = {.req = ReuseConfig::Kind::kMay, .levels = {2}}};
  auto plain = generate(w, {multi_level_tiling(config)});
  auto variant = generate(w, {std::make_shared<UnrollInnermostOrNot>(config)});
  ASSERT_EQ(plain.size(), 2u);  // without and with the write cache
  ASSERT_EQ(variant.size(), 4u);
  for (size_t i = 0; i < variant.size(); ++i) {
    std::string text = variant[i].trace()->to_text();
    EXPECT_EQ(text.find("sch.unroll(") != std::string::npos, i % 2 == 0) << text;
    EXPECT_EQ(text.find("cache_write") != std::string::npos, i >= 2) << text;
    EXPECT_TRUE(computes_reference(w, variant[i].func()));
  }
}

// With write reuse "may", an element-wise consumer (CBR's epilogue after AutoInline, DENSE_RELU's
// ReLU) is the write cache: it goes under the tile level and no copy is made; "must" (GPU
// registers) still copies, and a block whose consumer is not element-wise gets a copy.
TEST(MultiLevelTiling, MayFuseAnElementwiseConsumerAsTheWriteCache) {
  for (const char* name : {"CBR-1", "DENSE_RELU-1"}) {
    SCOPED_TRACE(name);
    auto w = small(name);
    auto designs = generate(
        w, {auto_inline(),
            multi_level_tiling({.reuse_write = {.req = ReuseConfig::Kind::kMay, .levels = {2}}})});
    ASSERT_EQ(designs.size(), 2u);
    std::string text = designs[1].trace()->to_text();
    EXPECT_THAT(text, HasSubstr("sch.get_consumers("));
    EXPECT_THAT(text, HasSubstr("sch.reverse_compute_at("));
    EXPECT_THAT(text, Not(HasSubstr("cache_write")));
    // The epilogue now runs inside the tiled nest: its block is nested deeper than in the
    // design without reuse, where it has a loop nest of its own at the root.
    const std::string epilogue = std::string(name) == "CBR-1" ? "block(\"relu\")" : "block(\"C\")";
    auto depth = [&](const Schedule& s) {
      std::string ir = ir_of(s);
      size_t at = ir.find(epilogue);
      EXPECT_NE(at, std::string::npos) << ir;
      return at - ir.rfind('\n', at);  // the indentation of its line
    };
    EXPECT_GT(depth(designs[1]), depth(designs[0]) + 2 * 3);  // at least three loops deeper
    EXPECT_TRUE(computes_reference(w, designs[1].func()));
    EXPECT_THAT(designs[0].trace()->to_text(), Not(HasSubstr("get_consumers")));
    auto must = generate(
        w, {auto_inline(),
            multi_level_tiling({.reuse_write = {.req = ReuseConfig::Kind::kMust, .levels = {2}}})});
    ASSERT_EQ(must.size(), 1u);
    EXPECT_THAT(must[0].trace()->to_text(), HasSubstr("cache_write"));
  }
  // GMM's output has no consumer: the may-design copies.
  auto gmm = generate(
      small("GMM-1"),
      {multi_level_tiling({.reuse_write = {.req = ReuseConfig::Kind::kMay, .levels = {2}}})});
  ASSERT_EQ(gmm.size(), 2u);
  EXPECT_THAT(gmm[1].trace()->to_text(), HasSubstr("cache_write"));
}

TEST(MultiLevelTiling, LeavesBlocksWithoutReuseAlone) {
  auto w = small("SFM-1");  // reductions whose input uses every spatial iterator
  auto designs = generate(w, {multi_level_tiling()});
  ASSERT_EQ(designs.size(), 1u);
  EXPECT_THAT(designs[0].trace()->to_text(), Not(HasSubstr("split")));
}

TEST(MultiLevelTiling, RefusesBadConfigurations) {
  EXPECT_THROW(multi_level_tiling({.structure = "SXR"}), InputError);
  EXPECT_THROW(multi_level_tiling({.structure = "RR"}), InputError);
  EXPECT_THROW(multi_level_tiling({.reuse_write = {.req = ReuseConfig::Kind::kMay, .levels = {7}}}),
               InputError);
}

TEST(ParallelVectorizeUnroll, AnnotatesTheRootOnly) {
  auto w = small("GMM-1");
  auto designs = generate(
      w, {parallel_vectorize_unroll({.unroll_max_steps = {0, 8}, .unroll_explicit = false})});
  ASSERT_EQ(designs.size(), 1u);
  std::string trace = designs[0].trace()->to_text();
  EXPECT_THAT(trace,
              HasSubstr("ann_key=\"meta_schedule.parallel\", ann_val=32"));  // 16 jobs x 2 cores
  EXPECT_THAT(trace, HasSubstr("meta_schedule.unroll_implicit"));
  EXPECT_THAT(trace, HasSubstr("sample_categorical(candidates=[0, 8]"));
  EXPECT_EQ(designs[0].trace()->size(),
            6u);  // get_block Z, get_block root, 2 annotations, sample, annotation
}

TEST(RandomComputeLocation, MovesProducersToSampledLoops) {
  auto w = small("CBR-1");
  std::set<std::string> programs;
  for (int64_t seed = 0; seed < 12; ++seed) {
    auto designs =
        post_order_apply({random_compute_location()})->generate(TuneContext{w.func, cpu()}, seed);
    ASSERT_EQ(designs.size(), 1u);
    EXPECT_THAT(designs[0].trace()->to_text(), HasSubstr("sample_compute_location"));
    EXPECT_TRUE(computes_reference(w, designs[0].func()));
    programs.insert(ir_of(designs[0]));
  }
  EXPECT_GT(programs.size(), 3u);  // different locations were drawn
}

TEST(AddRFactor, BranchesIntoFactoredDesigns) {
  auto w = small("NRM-1");  // one output element, a long reduction
  auto designs = generate(w, {add_rfactor(16, 64)});
  ASSERT_EQ(designs.size(), 3u);
  EXPECT_THAT(designs[0].trace()->to_text(), Not(HasSubstr("rfactor")));
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_THAT(designs[i].trace()->to_text(), HasSubstr("rfactor"));
    EXPECT_TRUE(computes_reference(w, designs[i].func()));
  }
  auto gmm = generate(small("GMM-1"), {add_rfactor()});  // plenty of spatial work
  EXPECT_EQ(gmm.size(), 1u);
}

TEST(CrossThreadReduction, BindsTheReductionToThreadsOnGpuOnly) {
  auto w = small("NRM-1");
  target::Target gpu = target::Target::parse("cuda");
  auto designs = generate(w, {cross_thread_reduction()}, gpu);
  ASSERT_EQ(designs.size(), 2u);
  EXPECT_THAT(ir_of(designs[1]), HasSubstr("threadIdx.x"));
  EXPECT_TRUE(computes_reference(w, designs[1].func()));
  EXPECT_EQ(generate(w, {cross_thread_reduction()}, cpu()).size(), 1u);
  target::Target small_gpu = target::Target::parse("cuda -max-threads-per-block 64");
  auto capped = generate(w, {cross_thread_reduction()}, small_gpu);
  ASSERT_EQ(capped.size(), 2u);
  EXPECT_THAT(capped[1].trace()->to_text(), HasSubstr("candidates=[4, 8, 16, 32, 64]"));
}

TEST(AutoBind, BindsEveryKernel) {
  auto w = small("SFM-1");
  target::Target gpu = target::Target::parse("cuda");
  auto designs = generate(w, {auto_bind()}, gpu);
  ASSERT_EQ(designs.size(), 1u);
  std::string trace = designs[0].trace()->to_text();
  size_t binds = 0;
  for (size_t at = trace.find("blockIdx.x"); at != std::string::npos;
       at = trace.find("blockIdx.x", at + 1))
    ++binds;
  EXPECT_EQ(binds, 4u);  // four kernels
  EXPECT_TRUE(computes_reference(w, designs[0].func()));
  EXPECT_THAT(generate(w, {auto_bind()}, cpu())[0].trace()->to_text(), Not(HasSubstr("bind")));
}

TEST(UserRules, LambdaRulesComposeWithBuiltins) {
  auto w = small("GMM-1");
  int calls = 0;
  auto vectorize_inner = make_rule("VectorizeInnermost", [&](Schedule sch, const BlockRV& block) {
    ++calls;
    auto loops = sch.get_loops(block);
    if (loops.ok() && !loops.value().empty() && block_node(sch, block)->name == "Z")
      (void)sch.vectorize(loops.value()[2]);  // j (k is a reduction)
    std::vector<Schedule> out;
    out.push_back(std::move(sch));
    return out;
  });
  auto designs = generate(w, {vectorize_inner, parallel_vectorize_unroll()});
  ASSERT_EQ(designs.size(), 1u);
  EXPECT_EQ(calls, 2);  // Z, then root
  EXPECT_THAT(ir_of(designs[0]), HasSubstr("vectorized"));
  EXPECT_EQ(vectorize_inner->name(), "VectorizeInnermost");
}

TEST(ScheduleFn, TemplatesAndUnion) {
  auto w = small("GMM-1");
  auto hand = schedule_fn([](Schedule& sch) -> schedule::Status {
    auto z = sch.get_block("Z").value();
    auto loops = sch.get_loops(z).value();
    auto tiles = sch.sample_perfect_tile(loops[2], 2, 16).value();  // an AutoTVM-style knob
    auto parts = sch.split(loops[2], {tiles[0], tiles[1]}).value();
    return sch.vectorize(parts[1]);
  });
  auto both = space_union({hand, post_order_apply(default_rules(cpu()))});
  auto designs = both->generate(TuneContext{w.func, cpu()}, 5);
  ASSERT_EQ(designs.size(), 4u);
  EXPECT_THAT(designs[0].trace()->to_text(),
              HasSubstr("sample_perfect_tile(loop=l3, n=2, max_innermost_factor=16"));
  EXPECT_TRUE(computes_reference(w, designs[0].func()));
  auto broken = schedule_fn([](Schedule& sch) -> schedule::Status {
    auto b = sch.get_block("nope");
    if (!b.ok()) return b.error();
    return schedule::ok_status();
  });
  try {
    broken->generate(TuneContext{w.func, cpu()}, 0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("schedule function failed"));
    EXPECT_THAT(e.what(), HasSubstr("nope"));
  }
  auto throwing = schedule_fn([](Schedule& sch) -> schedule::Status {
    sch.get_block("missing").value();  // value() of a refusal throws; the generator reports it
    return schedule::ok_status();
  });
  EXPECT_THROW(throwing->generate(TuneContext{w.func, cpu()}, 0), InputError);
}

}  // namespace
}  // namespace tyche::tune
