// Buffers and the regions of them that blocks read and write.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace tyche::ir {

// storage_align's request: the stride of `axis` is `offset` past a multiple of `factor`.
struct DimAlign {
  int axis = 0;
  int64_t factor = 1, offset = 0;
};

struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: compact row-major
  std::string scope = "global";
  int alignment = 64;  // bytes
  // The requests `strides` satisfy (storage_align), kept so that a pass shrinking the buffer
  // (compact_buffers) lays out its new shape the same way.
  std::vector<DimAlign> dim_aligns;
};

// The strides of `shape` under `aligns`, applied in order: each padded axis gets the smallest
// stride at least its compact one that satisfies the request, the axes outside it compact over
// it (as TVM's storage flattening pads them). Nullopt past 2^40 elements.
std::optional<std::vector<int64_t>> aligned_strides(const std::vector<int64_t>& shape,
                                                    const std::vector<DimAlign>& aligns);

// Creates a fresh buffer (a new identity).
Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape,
                   std::string scope = "global");
// A copy of `buffer` with another name/scope: a different buffer.
Buffer with_name(const Buffer& buffer, std::string name);
Buffer with_scope(const Buffer& buffer, std::string scope);
// Shape as constants; throws if a dimension is not constant.
std::vector<int64_t> const_shape(const Buffer& buffer);

// Tensor-core fragment scopes: a warp's 16 x 16 tiles held in its threads' registers, laid out
// for WMMA ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator") or for mma.sync m16n8k16
// ("mma.matrix_a", ...). A fragment is only touched by its family's intrinsics.
inline bool is_fragment_scope(const std::string& scope) {
  return scope.starts_with("wmma.") || scope.starts_with("mma.");
}
// "matrix_a", "matrix_b" or "accumulator" for a fragment scope; "" otherwise.
inline std::string fragment_role(const std::string& scope) {
  return is_fragment_scope(scope) ? scope.substr(scope.find('.') + 1) : std::string();
}

// The bytes each version of a software-pipelined shared buffer of `bytes` takes (rounded up to
// 64, so that every version starts as aligned as the first): the lowering lays the versions out
// so, VerifyGPUCode counts them so.
inline int64_t pipeline_version_bytes(int64_t bytes) {
  return (bytes + 63) / 64 * 64;
}

struct BufferRegion {
  Buffer buffer;
  std::vector<Range> region;
  BufferRegion() = default;
  BufferRegion(Buffer b, std::vector<Range> r) : buffer(std::move(b)), region(std::move(r)) {}
  // The whole buffer.
  static BufferRegion full(const Buffer& buffer);
};

}  // namespace tyche::ir
