// Seeded property test: random sequences of primitives on every op family. Each primitive either
// refuses with a ScheduleError (the state unchanged) or yields a program that still computes the
// reference result; nothing may throw, crash or hang. A quarter of the traces are also written
// as text, parsed back and replayed onto a fresh schedule, which must give the same program.
#include <map>
#include <random>

#include "interp/interpreter.h"
#include "ir/structural.h"
#include "random_scheduler.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "schedule_test_util.h"

namespace tyche::schedule {
namespace {

using testing::RandomScheduler;
using testing::tiny_workloads;

TEST(ScheduleProperty, RandomSequencesPreserveSemantics) {
  constexpr int kSequencesPerFamily = 2000;
  constexpr int kStepsPerSequence = 4;
  std::mt19937_64 rng(20261129);
  int accepted_total = 0, refused_total = 0, replayed = 0;
  std::map<int, int> accepted_by_choice;
  for (const auto& [op, params] : tiny_workloads()) {
    workloads::Workload w = workloads::make_workload(op, params);
    auto inputs = workloads::make_inputs(w.func, 5);
    auto expected = w.reference(inputs);
    int accepted = 0;
    for (int seq = 0; seq < kSequencesPerFamily; ++seq) {
      Schedule sch(w.func, /*debug_verify=*/seq % 50 == 0);
      RandomScheduler random(sch, rng);
      random.accepted_by_choice = &accepted_by_choice;
      bool changed = false;
      for (int s = 0; s < kStepsPerSequence; ++s) {
        std::string before = seq % 97 == 0 ? ir::to_string(sch.func()) : "";
        ir::PrimFunc func_before = sch.func();
        bool ok = false;
        ASSERT_NO_THROW(ok = random.step()) << op << " sequence " << seq;
        if (ok) {
          ++accepted;
          changed = true;
          continue;
        }
        ++refused_total;
        // A refusal leaves the program untouched.
        ASSERT_TRUE(sch.func().same_as(func_before)) << op;
        if (!before.empty()) {
          ASSERT_EQ(ir::to_string(sch.func()), before);
        }
      }
      if (!changed) continue;
      if (seq % 4 == 0) {
        // The recorded trace (refusals left out) replays, through its text form, to the same
        // program.
        Schedule replay(w.func);
        Trace trace = Trace::parse_text(sch.trace()->to_text());
        auto st = trace.apply_to(replay);
        ASSERT_TRUE(st.ok()) << op << ": " << st.error().reason() << "\n" << sch.trace()->to_text();
        ASSERT_TRUE(ir::structural_equal(replay.func(), sch.func())) << op << "\n"
                                                                     << sch.trace()->to_text();
        ++replayed;
      }
      std::vector<runtime::NDArray> actual;
      ASSERT_NO_THROW(actual = interp::run_on_inputs(sch.func(), inputs))
          << op << "\n"
          << ir::to_string(sch.func());
      for (size_t i = 0; i < actual.size(); ++i) {
        runtime::Comparison c = runtime::compare(actual[i], expected[i]);
        ASSERT_TRUE(c.ok) << op << ": " << c.message << "\n" << ir::to_string(sch.func());
      }
    }
    EXPECT_GT(accepted, kSequencesPerFamily / 2)
        << op << ": too few accepted primitives to mean anything";
    accepted_total += accepted;
  }
  EXPECT_GT(refused_total, 1000);  // the refusal paths are exercised too
  EXPECT_GT(replayed, 1000);
  std::printf("accepted %d primitives, refused %d, replayed %d traces\n", accepted_total,
              refused_total, replayed);
  // Choices 0..19: split, split, fuse, reorder, reorder, parallel, vectorize, unroll, annotate,
  // add_unit_loop, cross-nest reorder (always refused), bind, compute_at, reverse_compute_at,
  // compute_inline, reverse_compute_inline, blockize, tensorize, split by 4, cache_read,
  // cache_write, set_scope, storage_align, decompose_reduction, rfactor.
  for (int c : {0, 2, 3, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 20, 21, 22, 23, 24, 25, 26}) {
    EXPECT_GT(accepted_by_choice[c], 0) << "primitive choice " << c << " was never accepted";
    std::printf("  choice %2d accepted %d\n", c, accepted_by_choice[c]);
  }
}

}  // namespace
}  // namespace tyche::schedule
