#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/error.h"
#include "tune/measure/runner.h"
#include "tune/model/model_tasks.h"

namespace tyche::tune {
namespace {

using ::testing::HasSubstr;

graph::Graph one_mib_of_weights() {
  graph::Graph g;
  g.values.push_back({"w", {1024, 256}, DataType::Float(32), runtime::NDArray({1024, 256}, DataType::Float(32))});
  g.values.push_back({"x", {1, 1024}, DataType::Float(32), {}});  // an activation: not a weight
  return g;
}

TEST(ModelTiming, AutoTimesFromTheLastLevelCacheOnlyWhereTheWeightsFitInHalfOfIt) {
  graph::Graph g = one_mib_of_weights();
  EXPECT_EQ(model_weight_bytes(g), size_t{1} << 20);
  EXPECT_EQ(timing_name(model_timing("auto", g, size_t{2} << 20)), "llc");
  EXPECT_EQ(timing_name(model_timing("auto", g, (size_t{2} << 20) - 1)), "cold");
  EXPECT_EQ(timing_name(model_timing("auto", g, 0)), "cold");  // sysfs names no cache
  // A named timing is taken as named.
  EXPECT_EQ(timing_name(model_timing("llc", g, 0)), "llc");
  EXPECT_EQ(timing_name(model_timing("cold", g, size_t{1} << 30)), "cold");
  EXPECT_EQ(timing_name(model_timing("warm", g, size_t{1} << 30)), "");
  EXPECT_THAT([&] { model_timing("tepid", g, size_t{1} << 30); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("unknown timing 'tepid' (expected auto, llc, cold or warm)")));
}

}  // namespace
}  // namespace tyche::tune
