// Shared helpers for schedule tests: workloads on small shapes, golden files, and the check
// that a scheduled program still computes the reference result.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "interp/interpreter.h"
#include "ir/printer.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "workloads/workloads.h"

namespace tyche::schedule::testing {

inline workloads::Workload small(const std::string& preset) {
  return workloads::scaled_down(workloads::get_preset(preset));
}

inline std::string block_name(const Schedule& sch, const BlockRV& b) {
  return sch.block_sref(b).value()->as_block()->name;
}

// Compares `text` with tests/golden/<folder>/<name>.txt; TYCHE_UPDATE_GOLDEN=1 rewrites it.
inline void expect_golden(const std::string& name, const std::string& text,
                          const std::string& folder = "schedule") {
  std::string path =
      std::string(TYCHE_SOURCE_DIR) + "/tests/golden/" + folder + "/" + name + ".txt";
  if (std::getenv("TYCHE_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(text, ss.str()) << "golden mismatch for " << name;
}

// The scheduled function computes the workload's reference result.
inline ::testing::AssertionResult computes_reference(const workloads::Workload& w,
                                                     const ir::PrimFunc& scheduled,
                                                     uint64_t seed = 11) {
  auto inputs = workloads::make_inputs(w.func, seed);
  std::vector<runtime::NDArray> actual;
  try {
    actual = interp::run_on_inputs(scheduled, inputs);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "interpreter: " << e.what() << "\n"
                                         << ir::to_string(scheduled);
  }
  auto expected = w.reference(inputs);
  for (size_t i = 0; i < actual.size(); ++i) {
    runtime::Comparison c = runtime::compare(actual[i], expected[i]);
    if (!c.ok)
      return ::testing::AssertionFailure() << c.message << "\n" << ir::to_string(scheduled);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tyche::schedule::testing
