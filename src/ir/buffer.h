// Buffers and the regions of them that blocks read and write.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"

namespace tyche::ir {

struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: compact row-major
  std::string scope = "global";
  int alignment = 64;  // bytes
};

// Creates a fresh buffer (a new identity).
Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape,
                   std::string scope = "global");
// A copy of `buffer` with another name/scope: a different buffer.
Buffer with_name(const Buffer& buffer, std::string name);
Buffer with_scope(const Buffer& buffer, std::string scope);
// Shape as constants; throws if a dimension is not constant.
std::vector<int64_t> const_shape(const Buffer& buffer);

struct BufferRegion {
  Buffer buffer;
  std::vector<Range> region;
  BufferRegion() = default;
  BufferRegion(Buffer b, std::vector<Range> r) : buffer(std::move(b)), region(std::move(r)) {}
  // The whole buffer.
  static BufferRegion full(const Buffer& buffer);
};

}  // namespace tyche::ir
