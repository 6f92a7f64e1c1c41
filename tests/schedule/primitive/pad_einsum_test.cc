// pad_einsum: golden IR, numerics against the reference on extents the padding does not divide
// (integers exact), and each refusal.
#include <gmock/gmock.h>

#include "../schedule_test_util.h"
#include "workloads/workloads.h"

namespace tyche::schedule {
namespace {

using testing::computes_reference;
using testing::expect_golden;
using ::testing::HasSubstr;

workloads::Workload u8s8(const std::string& extents) {
  return workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", extents,
                                        "A=uint8,B=int8,C=int32");
}

std::string error_of(Status s) {
  return s.ok() ? "" : s.error().reason();
}

// The intrinsic's shape, 16 columns by 4 reduction steps, on a 5 x 20 x 10 product: A and B are
// copied with zeros past their ends, C computed 5 x 32 and copied back.
TEST(PadEinsum, PadsReadsAndTheOutput) {
  auto w = u8s8("i=5,j=20,k=10");
  Schedule sch(w.func);
  BlockRV c = sch.get_block("C").value();
  ASSERT_TRUE(sch.pad_einsum(c, {1, 16, 4}).ok());
  expect_golden("pad_einsum_u8s8", ir::to_string(sch.func()));
  EXPECT_TRUE(computes_reference(w, sch.func()));
  // The padded block tiles evenly: 32 = 2 x 16, 12 = 3 x 4.
  auto loops = sch.get_loops(c).value();
  ASSERT_TRUE(sch.split(loops[1], {std::nullopt, 16}).ok());
  ASSERT_TRUE(sch.split(loops[2], {std::nullopt, 4}).ok());
  EXPECT_TRUE(computes_reference(w, sch.func()));
  EXPECT_EQ(
      sch.trace()->to_text().find("pad_einsum(block=b0, padding=[1, 16, 4])") != std::string::npos,
      true)
      << sch.trace()->to_text();
}

// Only the reduction padded: the output keeps its shape (no copy back); only spatial: the reads
// along k stay as they are.
TEST(PadEinsum, PadsOnlyWhatTheIteratorsIndex) {
  auto w = u8s8("i=6,j=16,k=10");
  Schedule k_only(w.func);
  ASSERT_TRUE(k_only.pad_einsum(k_only.get_block("C").value(), {1, 1, 4}).ok());
  std::string text = ir::to_string(k_only.func());
  EXPECT_THAT(text, HasSubstr("A_pad"));
  EXPECT_THAT(text, HasSubstr("B_pad"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("C_pad")));
  EXPECT_TRUE(computes_reference(w, k_only.func()));

  auto f32 = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=7,j=9,k=5");
  Schedule ij(f32.func);
  ASSERT_TRUE(ij.pad_einsum(ij.get_block("C").value(), {4, 8, 1}).ok());
  text = ir::to_string(ij.func());
  EXPECT_THAT(text, HasSubstr("C_unpad"));
  EXPECT_TRUE(computes_reference(f32, ij.func()));
}

TEST(PadEinsum, MultiplesAlreadyAreLeftAlone) {
  auto w = u8s8("i=4,j=32,k=8");
  Schedule sch(w.func);
  std::string before = ir::to_string(sch.func());
  ASSERT_TRUE(sch.pad_einsum(sch.get_block("C").value(), {1, 16, 4}).ok());
  EXPECT_EQ(ir::to_string(sch.func()), before);
}

TEST(PadEinsum, Refusals) {
  auto w = u8s8("i=5,j=20,k=10");
  {
    Schedule sch(w.func);
    EXPECT_THAT(error_of(sch.pad_einsum(sch.get_block("C").value(), {16, 4})),
                HasSubstr("has 3 iterators but 2 paddings"));
    EXPECT_THAT(error_of(sch.pad_einsum(sch.get_block("C").value(), {1, 0, 4})),
                HasSubstr("multiple of 0"));
    EXPECT_THAT(error_of(sch.pad_einsum(sch.get_block("root").value(), {})),
                HasSubstr("is the root block"));
  }
  {
    // Split first: the iterator is no longer bound to one whole loop.
    Schedule sch(w.func);
    BlockRV c = sch.get_block("C").value();
    ASSERT_TRUE(sch.split(sch.get_loops(c).value()[1], {std::nullopt, 4}).ok());
    EXPECT_THAT(error_of(sch.pad_einsum(c, {1, 16, 1})),
                HasSubstr("is not bound to a whole loop of its own"));
    EXPECT_TRUE(computes_reference(w, sch.func()));  // refused: unchanged
  }
  {
    // A max: padded zeros would win over negative values.
    auto mx = workloads::from_index_notation("C[i] max= A[i,k]", "i=4,k=10");
    Schedule sch(mx.func);
    EXPECT_THAT(error_of(sch.pad_einsum(sch.get_block("C").value(), {1, 4})),
                HasSubstr("not a sum that zeros leave unchanged"));
    // Along i only, a max is padded (the extra rows are dropped).
    ASSERT_TRUE(sch.pad_einsum(sch.get_block("C").value(), {8, 1}).ok());
    EXPECT_TRUE(computes_reference(mx, sch.func()));
  }
  {
    // A convolution's input is read at h + r: padding r would shift what it reads.
    auto conv = workloads::from_index_notation("O[h,c] += I[h+r,k] * W[r,k,c]", "h=6,r=3,k=5,c=8");
    Schedule sch(conv.func);
    BlockRV o = sch.get_block("O").value();
    EXPECT_THAT(error_of(sch.pad_einsum(o, {1, 1, 4, 1})),
                HasSubstr("mixes a padded iterator into an expression"));
    ASSERT_EQ(error_of(sch.pad_einsum(o, {1, 16, 1, 4})), "");
    EXPECT_TRUE(computes_reference(conv, sch.func()));
  }
}

}  // namespace
}  // namespace tyche::schedule
