// Random schedules through the whole back end: every accepted random primitive sequence is
// lowered, interpreted after lowering, and (one in eight) compiled with LLVM; each result must
// match the reference. This is what checks lowering and codegen against the full variety of
// IR the primitives produce (predicates, fused/split indices, caches, inlining, rfactor...).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "../schedule/random_scheduler.h"
#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

runtime::NDArray flat_copy(const runtime::NDArray& a, int64_t size) {
  runtime::NDArray out({size}, a.dtype());
  std::memcpy(out.data(), a.data(), std::min(a.nbytes(), out.nbytes()));
  return out;
}

TEST(BackendProperty, RandomSchedulesLowerAndCompileCorrectly) {
  constexpr int kSequencesPerFamily = 120;
  // Lowering and the interpreter do not depend on the CPU: the runs at other levels (TYCHE_CPU
  // set, tests/CMakeLists.txt) only compile, one program in sixteen, other ones than the host's.
  const char* level = std::getenv("TYCHE_CPU");
  const bool interpret = !level || !*level;
  auto compiled_here = [&](int seq) { return interpret ? seq % 8 == 0 : seq % 16 == 4; };
  std::mt19937_64 rng(20261130);
  int interpreted = 0, compiled = 0;
  for (const auto& [op, params] : schedule::testing::tiny_workloads()) {
    workloads::Workload w = workloads::make_workload(op, params);
    auto inputs = workloads::make_inputs(w.func, 5);
    auto expected = w.reference(inputs);
    for (int seq = 0; seq < kSequencesPerFamily; ++seq) {
      schedule::Schedule sch(w.func, schedule::ScheduleOptions{.seed = seq, .trace = true});
      schedule::testing::RandomScheduler random(sch, rng);
      for (int s = 0; s < 4; ++s) random.step();
      if (!interpret && !compiled_here(seq)) continue;  // drawn all the same: the same programs
      std::string trace = sch.trace()->to_text();
      lower::Lowered lowered;
      ASSERT_NO_THROW(lowered = lower::lower(sch.func())) << op << "\n" << trace;
      if (interpret) {
        // The lowered function in the interpreter, on flat copies of the inputs.
        std::vector<runtime::NDArray> args;
        for (size_t i = 0; i < lowered.func->params.size(); ++i) {
          int64_t size = ir::const_shape(lowered.func->params[i])[0];
          args.push_back(i < inputs.size()
                             ? flat_copy(inputs[i], size)
                             : runtime::NDArray({size}, expected[i - inputs.size()].dtype()));
        }
        ASSERT_NO_THROW(interp::run(lowered.func, args)) << op << "\n"
                                                         << trace << ir::to_string(lowered.func);
        for (size_t i = 0; i < expected.size(); ++i) {
          runtime::Comparison c =
              runtime::compare(flat_copy(args[inputs.size() + i], expected[i].numel()),
                               flat_copy(expected[i], expected[i].numel()));
          ASSERT_TRUE(c.ok) << op << ": " << c.message << "\n"
                            << trace << ir::to_string(lowered.func);
        }
        ++interpreted;
      }
      if (!compiled_here(seq)) continue;
      // Compiled: the same inputs through LLVM.
      std::unique_ptr<CompiledKernel> kernel;
      ASSERT_NO_THROW(kernel = compile(lowered.func)) << op << "\n" << trace;
      std::vector<runtime::NDArray> kargs = inputs;
      for (const auto& e : expected) kargs.push_back(runtime::NDArray(e.shape(), e.dtype()));
      kernel->run(kargs);
      for (size_t i = 0; i < expected.size(); ++i) {
        runtime::Comparison c = runtime::compare(kargs[inputs.size() + i], expected[i]);
        ASSERT_TRUE(c.ok) << op << " (compiled): " << c.message << "\n"
                          << trace << ir::to_string(lowered.func);
      }
      ++compiled;
    }
  }
  std::printf("random schedules: %d lowered and interpreted, %d compiled\n", interpreted, compiled);
}

}  // namespace
}  // namespace tyche::codegen
