// Vector indices that are one ramp in disguise. A tensor intrinsic reads a 2-d tile as one vector:
// its row and column indices are floordiv and floormod of one ramp, and once the buffer is
// flattened (row * width + column) the lanes are consecutive again. fold_vector_index finds that,
// so the backend emits one contiguous load instead of a gather.
#pragma once

#include <optional>

#include "ir/expr.h"

namespace tyche::arith {

// `index` (an integer vector) as ramp(base, stride, lanes) when every lane is base plus a
// constant that grows by the same stride from lane to lane (broadcast when the stride is 0);
// `index` unchanged when it is not, or when that cannot be shown.
ir::Expr fold_vector_index(const ir::Expr& index);

// A vector index that reads rows of consecutive elements (a 2-d tile of a larger array): lane
// r * width + c is base + r * row_stride + c.
struct TileIndex {
  ir::Expr base;
  int rows = 0, width = 0;
  int64_t row_stride = 0;
};
// `index` as such a tile with rows of `width` lanes (0: as long as its first run of consecutive
// lanes), or nullopt when it is not one or that cannot be shown.
std::optional<TileIndex> tile_index(const ir::Expr& index, int width = 0);

}  // namespace tyche::arith
