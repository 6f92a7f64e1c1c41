// Element types in index notation: the dtypes argument, the conversions each statement makes
// (golden IR), the canonical dtypes string, and a one-line error for each refusal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "support/error.h"
#include "te/index_notation.h"

namespace tyche::te {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view formula, std::string_view extents, std::string_view dtypes) {
  try {
    parse_index_notation(formula, extents, dtypes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(IndexNotationTypes, TensorsTakeTheirTypesAndTheRestStayFloat32) {
  auto p = parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=4,j=4,k=8",
                                " A = uint8 , B=int8,C=int32 ");
  EXPECT_EQ(p.tensor("A").dtype, DataType::UInt(8));
  EXPECT_EQ(p.tensor("B").dtype, DataType::Int(8));
  EXPECT_EQ(p.tensor("C").dtype, kInt32);
  EXPECT_EQ(dtypes_string(p), "C=int32,A=uint8,B=int8");  // tensor order: first appearance
  auto q = parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=4,j=4,k=8", dtypes_string(p));
  EXPECT_EQ(dtypes_string(q), dtypes_string(p));
  EXPECT_EQ(dtypes_string(parse_index_notation("C[i] = A[i]", "i=4", "A=float32")), "");
}

// u8 x s8 -> s32: both operands widened to int32 before the multiply-accumulate, an int32 zero
// init.
TEST(IndexNotationTypes, OperandsAreWidenedToTheOutputType) {
  auto p =
      parse_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=4,j=4,k=8", "A=uint8,B=int8,C=int32");
  EXPECT_EQ(ir::to_string(to_prim_func(p)), R"(@prim_func
def main(A: Buffer((4, 8), "uint8"), B: Buffer((8, 4), "int8"), C: Buffer((4, 4), "int32")):
  # outputs: C
  with block("root"):
    for i in range(4):
      for j in range(4):
        for k in range(8):
          with block("C"):
            vi = axis.spatial(4, i)
            vj = axis.spatial(4, j)
            vk = axis.reduce(8, k)
            reads(A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            with init():
              C[vi, vj] = 0
            C[vi, vj] = C[vi, vj] + int32(A[vi, vk]) * int32(B[vk, vj])
)");
}

// bfloat16 in, float32 out: widened; a bfloat16 output is computed in float32 and rounded once.
TEST(IndexNotationTypes, SixteenBitFloatsComputeInFloat32) {
  auto p = parse_index_notation("T[i,j] += A[i,k] * B[k,j]; C[i,j] = T[i,j] * 2.0", "i=4,j=4,k=8",
                                "A=bfloat16,B=bfloat16,C=bfloat16");
  std::string ir = ir::to_string(to_prim_func(p));
  EXPECT_THAT(ir, HasSubstr("T = alloc_buffer((4, 4), \"float32\")"));
  EXPECT_THAT(ir, HasSubstr("T[vi, vj] = T[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])"));
  EXPECT_THAT(ir, HasSubstr("C[vi_1, vj_1] = bfloat16(T[vi_1, vj_1] * 2.0f)"));
}

TEST(IndexNotationTypes, IntegerStatementsTakeIntegerConstantsMaxMinAbs) {
  auto p = parse_index_notation("C[i] = max(abs(A[i]) - 3, 0)", "i=4", "A=int8,C=int32");
  std::string ir = ir::to_string(to_prim_func(p));
  EXPECT_THAT(ir, HasSubstr("C[vi] = max(abs(int32(A[vi])) - 3, 0)"));
}

TEST(IndexNotationTypes, BadTypesAreOneLineErrors) {
  const char* mm = "C[i,j] += A[i,k] * B[k,j]";
  const char* ext = "i=4,j=4,k=4";
  EXPECT_EQ(error_of(mm, ext, "A=uint9"),
            "dtypes column 3: unknown element type 'uint9' for 'A' (formulas take int8, uint8, "
            "int16, int32, float16, "
            "bfloat16, float32)");
  EXPECT_THAT(error_of(mm, ext, "A=float64"), HasSubstr("unknown element type 'float64'"));
  EXPECT_THAT(error_of(mm, ext, "A=int8x4"), HasSubstr("unknown element type 'int8x4'"));
  EXPECT_THAT(error_of(mm, ext, "A=int8;B=int8"),
              HasSubstr("dtypes column 7: expected ',' between types, found ';'"));
  EXPECT_EQ(error_of(mm, ext, "X=int8"),
            "dtypes column 1: the formula has no tensor 'X' (its tensors: C, A, B)");
  EXPECT_EQ(error_of(mm, ext, "A=int8, A=int8"), "dtypes column 9: 'A' is given a type twice");
  EXPECT_EQ(error_of(mm, ext, "A"), "dtypes column 2: expected '=' after 'A', found end of dtypes");
  EXPECT_EQ(error_of(mm, ext, "A="),
            "dtypes column 3: expected an element type for 'A', found end of dtypes");
  EXPECT_EQ(error_of(mm, ext, "=int8"), "dtypes column 1: expected a tensor name, found '='");
}

TEST(IndexNotationTypes, StatementsThatCannotBeTypedAreOneLineErrors) {
  EXPECT_EQ(error_of("C[i,j] += A[i,k] * B[k,j]", "i=4,j=4,k=4", "C=int32"),
            "formula column 11: 'A' is float32 and 'C' is int32: index notation never converts a "
            "float to an integer");
  EXPECT_EQ(error_of("C[i] = A[i] / 2", "i=4", "A=int32,C=int32"),
            "formula column 13: '/' needs a float result, and 'C' is int32");
  EXPECT_EQ(error_of("C[i] = sqrt(A[i])", "i=4", "A=int32,C=int32"),
            "formula column 8: sqrt needs a float result, and 'C' is int32");
  EXPECT_EQ(error_of("C[i] = A[i] * 0.5", "i=4", "A=int8,C=int32"),
            "formula column 15: 0.5 is not an int32 constant, and 'C' is int32");
  EXPECT_THAT(error_of("C[i] += A[i,k]", "i=4,k=4", "C=float16"),
              HasSubstr("formula column 1: 'C' is float16: reduce into a float32 tensor"));
  // What each refusal leaves possible.
  EXPECT_EQ(error_of("C[i] = float32_view[i] * 0.5", "i=4", "C=float16"), "");
  EXPECT_EQ(error_of("C[i] += A[i,k]", "i=4,k=4", "A=int8,C=int16"), "");
}

}  // namespace
}  // namespace tyche::te
