#include "arith/vector_index.h"

#include <optional>
#include <vector>

#include "arith/analyzer.h"
#include "ir/op.h"
#include "support/int_division.h"

namespace tyche::arith {

namespace {

using ir::Expr;
using ir::ExprKind;

// Lane l of the vector is base + offsets[l].
struct LaneAffine {
  Expr base;
  std::vector<int64_t> offsets;
};

std::optional<int64_t> const_of(const Expr& e) {
  if (auto* b = e.as<ir::BroadcastNode>()) return ir::as_const_int(b->value);
  return ir::as_const_int(e);
}

std::optional<LaneAffine> lane_affine(const Expr& e, int lanes, Analyzer& analyzer) {
  if (auto* b = e.as<ir::BroadcastNode>())
    return LaneAffine{b->value, std::vector<int64_t>(lanes, 0)};
  if (auto* r = e.as<ir::RampNode>()) {
    auto s = ir::as_const_int(r->stride);
    if (!s) return std::nullopt;
    LaneAffine out{r->base, {}};
    for (int l = 0; l < lanes; ++l) out.offsets.push_back(*s * l);
    return out;
  }
  if (!ir::is_binary(e.kind())) return std::nullopt;
  auto* n = static_cast<const ir::BinaryNode*>(e.get());
  ExprKind k = e.kind();
  if (k == ExprKind::kAdd || k == ExprKind::kSub) {
    auto a = lane_affine(n->a, lanes, analyzer), b = lane_affine(n->b, lanes, analyzer);
    if (!a || !b) return std::nullopt;
    for (int l = 0; l < lanes; ++l)
      a->offsets[l] += k == ExprKind::kAdd ? b->offsets[l] : -b->offsets[l];
    a->base = k == ExprKind::kAdd ? a->base + b->base : a->base - b->base;
    return a;
  }
  auto c = const_of(n->b);
  if (!c) return std::nullopt;
  auto a = lane_affine(n->a, lanes, analyzer);
  if (!a) return std::nullopt;
  if (k == ExprKind::kMul) {
    for (int64_t& o : a->offsets) o *= *c;
    a->base = a->base * ir::make_int(*c, a->base.dtype());
    return a;
  }
  // floordiv and floormod by c distribute over base + offset when c divides the base.
  if ((k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod) && *c > 0) {
    Expr c_expr = ir::make_int(*c, a->base.dtype());
    if (!analyzer.can_prove_equal(ir::floormod(a->base, c_expr), ir::make_int(0, a->base.dtype())))
      return std::nullopt;
    for (int64_t& o : a->offsets)
      o = k == ExprKind::kFloorDiv ? tyche::floordiv(o, *c) : tyche::floormod(o, *c);
    a->base =
        k == ExprKind::kFloorDiv ? ir::floordiv(a->base, c_expr) : ir::make_int(0, a->base.dtype());
    return a;
  }
  return std::nullopt;
}

}  // namespace

Expr fold_vector_index(const Expr& index) {
  const int lanes = index.dtype().lanes();
  if (lanes < 2 || !index.dtype().is_integer() || index.as<ir::RampNode>() ||
      index.as<ir::BroadcastNode>())
    return index;
  Analyzer analyzer;
  auto la = lane_affine(index, lanes, analyzer);
  if (!la) return index;
  const int64_t stride = la->offsets[1] - la->offsets[0];
  for (int l = 2; l < lanes; ++l)
    if (la->offsets[l] - la->offsets[l - 1] != stride) return index;
  Expr base = analyzer.simplify(la->base + ir::make_int(la->offsets[0], la->base.dtype()));
  if (stride == 0) return ir::broadcast(base, lanes);
  return ir::ramp(base, ir::make_int(stride, base.dtype()), lanes);
}

std::optional<TileIndex> tile_index(const Expr& index, int width) {
  const int lanes = index.dtype().lanes();
  if (lanes < 2 || !index.dtype().is_integer()) return std::nullopt;
  Analyzer analyzer;
  auto la = lane_affine(index, lanes, analyzer);
  if (!la) return std::nullopt;
  const std::vector<int64_t>& o = la->offsets;
  if (width == 0)
    for (width = 1; width < lanes && o[width] == o[width - 1] + 1;) ++width;
  if (width < 1 || lanes % width) return std::nullopt;
  const int rows = lanes / width;
  const int64_t stride = rows > 1 ? o[width] - o[0] : width;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < width; ++c)
      if (o[r * width + c] != o[0] + r * stride + c) return std::nullopt;
  Expr base = analyzer.simplify(la->base + ir::make_int(o[0], la->base.dtype()));
  return TileIndex{base, rows, width, stride};
}

}  // namespace tyche::arith
