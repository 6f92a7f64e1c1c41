// The one overflow-checked size function: elements and bytes of a shape, refused with the
// tensor's name when they pass 64 bits or the tensor limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string error_of(std::vector<int64_t> shape, DataType dtype = kFloat32) {
  try {
    tensor_size("tensor 'W'", shape, dtype);
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }
  return "no error";
}

TEST(TensorSize, CountsElementsAndBytes) {
  std::vector<int64_t> shape{2, 3, 4};
  TensorSize s = tensor_size("t", shape, kFloat32);
  EXPECT_EQ(s.elements, 24);
  EXPECT_EQ(s.bytes, 96u);
  EXPECT_EQ(tensor_size("t", shape, kBool).bytes, 24u);
  EXPECT_EQ(tensor_size("t", shape, DataType::Float(32, 8)).bytes, 24u * 32);
  EXPECT_EQ(tensor_size("t", {}, kFloat64).bytes, 8u);  // a scalar
  std::vector<int64_t> empty{0, int64_t{1} << 40};
  EXPECT_EQ(tensor_size("t", empty, kFloat32).bytes, 0u);
}

TEST(TensorSize, RefusesWhatWrapsOrIsNegative) {
  int64_t g = int64_t{1} << 30;
  // 2^62 elements fit int64, their 2^64 bytes do not: the case that used to wrap to 0.
  EXPECT_THAT(error_of({g, g, 4}),
              AllOf(HasSubstr("tensor 'W'"), HasSubstr("[1073741824, 1073741824, 4]"),
                    HasSubstr("64 bits")));
  EXPECT_THAT(error_of({2, int64_t{1} << 61}), HasSubstr("more bytes than 64 bits"));
  EXPECT_THAT(error_of({4, int64_t{1} << 62}), HasSubstr("more elements than 64 bits"));
  EXPECT_THAT(error_of({int64_t{1} << 40, int64_t{1} << 40}),
              HasSubstr("more elements than 64 bits"));
  EXPECT_THAT(error_of({4, -1}), HasSubstr("negative dimension"));
  EXPECT_FALSE(checked_numel(std::vector<int64_t>{INT64_MAX, 2}).has_value());
  EXPECT_FALSE(checked_mul(UINT64_MAX, 2).has_value());
  EXPECT_FALSE(checked_add(UINT64_MAX, 1).has_value());
  EXPECT_EQ(checked_add(1, 2), 3u);
}

TEST(TensorSize, RefusesWhatPassesTheLimit) {
  set_tensor_byte_limit(1000);
  EXPECT_THAT(error_of({250}), HasSubstr("no error"));
  EXPECT_THAT(error_of({251}),
              AllOf(HasSubstr("needs 1004 bytes"), HasSubstr("over the limit of 1000 bytes")));
  set_tensor_byte_limit(0);
  EXPECT_GT(tensor_byte_limit(), uint64_t{1} << 26);  // the machine's memory
  EXPECT_GE(max_threads(), 4);
  EXPECT_EQ(bytes_string(1536), "1.5 KiB");
  EXPECT_EQ(bytes_string(uint64_t{3} << 30), "3.0 GiB");
}

}  // namespace
}  // namespace tyche
