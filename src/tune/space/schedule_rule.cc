#include "tune/space/schedule_rule.h"

#include "tune/space/multi_level_tiling_tensor_core.h"
#include "tune/space/multi_level_tiling_with_intrin.h"

namespace tyche::tune {

namespace {
class FunctionRule : public ScheduleRule {
 public:
  FunctionRule(std::string name, RuleFunction fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::vector<schedule::Schedule> apply(schedule::Schedule sch,
                                        const schedule::BlockRV& block) override {
    return fn_(std::move(sch), block);
  }

 private:
  std::string name_;
  RuleFunction fn_;
};
}  // namespace

ScheduleRulePtr make_rule(std::string name, RuleFunction apply) {
  return std::make_shared<FunctionRule>(std::move(name), std::move(apply));
}

std::vector<ScheduleRulePtr> default_rules(const target::Target& target) {
  if (!target.is_gpu()) {
    // 16 vector registers (SSE, AVX2) against AVX-512's 32: see
    // MultiLevelTilingConfig::padded_rows.
    const auto& cpu = target.cpu_info();
    bool sixteen_registers = cpu.vector_registers() == 16;
    MultiLevelTilingConfig tiling{
        .structure = "SSRSRS",
        .max_innermost_factor = 64,
        .reuse_write = {.req = ReuseConfig::Kind::kMay, .levels = {1, 2}, .scope = "global"}};
    if (sixteen_registers) {
      tiling.padded_rows = {6};
      // A register tile that goes back to memory every 64 k steps loses ~5 % to its prologue
      // and epilogue (GMM-4, 6 x 16 tile: 128 steps ran 5 % faster, one thread, AMD EPYC).
      tiling.max_innermost_reduction_factor = 256;
      tiling.reuse_read = {.req = ReuseConfig::Kind::kMay,
                           .levels = {3},
                           .scope = "global",
                           .only_along_output_row = true};
      tiling.panel_width = 2 * cpu.vector_bits() / 32;  // float32 lanes
    }
    // Multiply-accumulates of the types a tensor intrinsic of this CPU takes (u8 x s8 -> s32,
    // bfloat16 -> float32) tile around it; the rest as before.
    std::vector<ScheduleRulePtr> rules = {auto_inline({.disallow_op = {"exp"}}),
                                          add_rfactor(16, 64)};
    if (std::vector<std::string> intrins = cpu_dot_intrins(cpu.features); !intrins.empty()) {
      MultiLevelTilingConfig with_intrin = tiling;
      with_intrin.padded_rows = {};
      with_intrin.reuse_read = {};
      rules.push_back(multi_level_tiling_with_intrin(std::move(intrins), with_intrin));
    }
    for (ScheduleRulePtr r :
         {multi_level_tiling(tiling), parallel_vectorize_unroll(), random_compute_location()})
      rules.push_back(r);
    return rules;
  }
  std::vector<ScheduleRulePtr> rules;
  // float16 / bfloat16 matrix products on the tensor cores (CUDA: OpenCL has no WMMA); the rest,
  // and those on an architecture without them, as before.
  if (target.kind == "cuda")
    rules.push_back(multi_level_tiling_tensor_core(cuda_compute_capability(target)));
  for (ScheduleRulePtr r : {
           multi_level_tiling({.structure = "SSSRRSRS",
          .tile_binds = {"blockIdx.x", "vthread.x", "threadIdx.x"},
          .max_innermost_factor = 64,
          .reuse_read = {.req = ReuseConfig::Kind::kMust, .levels = {4}, .scope = "shared"},
          .reuse_write = {.req = ReuseConfig::Kind::kMust, .levels = {3}, .scope = "local"},
          .software_pipeline_stages = {1, 2}}),
           auto_inline({.into_producer = true,
           .into_consumer = true,
           .inline_const_tensor = true,
           .disallow_if_then_else = false,
           .require_injective = false,
           .require_ordered = false}),
           cross_thread_reduction(),
           parallel_vectorize_unroll({.max_jobs_per_core = -1,
           .max_vectorize_extent = -1,
           .unroll_max_steps = {0, 16, 64, 512, 1024}}),
           auto_bind(),
       })
    rules.push_back(r);
  return rules;
}

}  // namespace tyche::tune
