// lower_warp_matrix_ops (CUDA): the tensor-core intrinsics' loop nests (annotated warp_matrix by
// schedule/intrin/cuda_wmma.cc) become the warp-wide instructions, and fragment buffers become
// arrays of 16 x 16 tiles.
//
// A nest is 16 x 16 (x 16) loops around one store. Its operands are read off the store's indices
// with the nest's variables at 0 (the tile's origin): a fragment's last two indices must be
// multiples of 16 there (its tile: the leading indices, then the row and column tile, row-major);
// a memory operand's columns must be its last dimension, contiguous, and its rows another, whose
// stride is the instruction's leading dimension (a multiple of 16 bytes, and the origin 32-byte
// aligned, as WMMA requires). Every thread of a warp must issue the instruction with the same
// operands, so a kernel using them launches threadIdx.x as exactly one warp's 32 lanes (a kernel
// with no threadIdx.x loop gets one: every lane runs the body, as TVM's warp execution) and the
// operands may not depend on the lane.
#include <fmt/format.h>

#include <unordered_map>

#include "arith/analyzer.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "lower/gpu/gpu_lower.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

constexpr int64_t kTile = 16;
constexpr int64_t kWarp = 32;

bool is_fragment(const ir::Buffer& b) {
  return ir::is_fragment_scope(b->scope);
}

// A fragment buffer [..., R, C] as the array of its tiles.
struct FragmentArray {
  ir::Buffer array;
  std::vector<int64_t> shape;
};

const ir::ForNode* warp_matrix_nest(const ir::Stmt& s) {
  auto* f = s.as<ir::ForNode>();
  return f && f->annotations.count(ir::ann::kWarpMatrix) ? f : nullptr;
}

bool has_warp_matrix(const ir::Stmt& s) {
  bool found = false;
  ir::post_order_visit(s, [&](const ir::Stmt& x) { found |= warp_matrix_nest(x) != nullptr; });
  return found;
}

class WarpMatrixLowerer : public ir::StmtExprMutator {
 public:
  ir::Stmt kernel(const ir::Stmt& s) {
    if (!has_warp_matrix(s)) return s;
    lane_ = nullptr;
    return mutate_stmt(with_warp_lanes(s));
  }

 protected:
  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt& s) override {
    if (!is_fragment(n->buffer)) return StmtExprMutator::mutate_allocate(n, s);
    std::vector<int64_t> shape = ir::const_shape(n->buffer);
    if (shape.size() < 2 || shape[shape.size() - 2] % kTile || shape.back() % kTile)
      throw Error(fmt::format("GPU lowering: fragment '{}' is {}, not tiles of 16 x 16",
                              n->buffer->name, fmt::join(shape, " x ")));
    int64_t tiles = 1;
    for (int64_t e : shape) tiles *= e;
    tiles /= kTile * kTile;
    ir::Buffer array =
        ir::make_buffer(n->buffer->name, n->buffer->dtype, {ir::make_int(tiles)}, n->buffer->scope);
    fragments_[n->buffer.get()] = FragmentArray{array, shape};
    return ir::allocate(array, mutate_stmt(n->body));
  }

  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& s) override {
    if (n->for_kind == ir::ForKind::kThreadBinding && n->thread_tag == "threadIdx.x")
      lane_ = n->loop_var.get();
    if (auto it = n->annotations.find(ir::ann::kWarpMatrix); it != n->annotations.end())
      return nest(n, s, std::get<std::string>(it->second));
    return StmtExprMutator::mutate_for(n, s);
  }

  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& e) override {
    refuse_fragment(n->buffer);
    return StmtExprMutator::mutate_buffer_load(n, e);
  }
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& s) override {
    refuse_fragment(n->buffer);
    return StmtExprMutator::mutate_buffer_store(n, s);
  }

 private:
  void refuse_fragment(const ir::Buffer& b) const {
    if (is_fragment(b))
      throw Error(
          fmt::format("GPU lowering: fragment '{}' is accessed outside a tensor-core instruction "
                      "(tensorize its copies "
                      "with the cuda_wmma intrinsics)",
                      b->name));
  }

  // The launch nest with threadIdx.x as one warp's lanes.
  ir::Stmt with_warp_lanes(const ir::Stmt& s) {
    auto* f = s.as<ir::ForNode>();
    if (f && f->for_kind == ir::ForKind::kThreadBinding && f->thread_tag == "threadIdx.x") {
      if (!ir::is_const_int(f->extent, kWarp))
        throw Error(
            fmt::format("GPU lowering: a kernel using tensor cores launches threadIdx.x as one "
                        "warp's 32 lanes, not {}",
                        ir::to_string(f->extent)));
      return s;
    }
    if (f && f->for_kind == ir::ForKind::kThreadBinding && f->thread_tag.starts_with("blockIdx"))
      return ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, with_warp_lanes(f->body),
                          f->thread_tag, f->annotations);
    return ir::for_loop(ir::Var("threadIdx_x", kInt32), ir::make_int(0), ir::make_int(kWarp),
                        ir::ForKind::kThreadBinding, s, "threadIdx.x");
  }

  ir::Expr at_origin(const ir::Expr& e) const {
    return analyzer_.simplify(ir::substitute(e, [&](const ir::Var& v) -> ir::Expr {
      for (const ir::Var& n : vars_)
        if (n.same_as(v)) return ir::make_int(0, v.dtype());
      return ir::Expr();
    }));
  }

  // Whether e - e(origin) is exactly `v`.
  bool is_offset_by(const ir::Expr& e, const ir::Var& v) const {
    return analyzer_.can_prove_equal(analyzer_.simplify(e - at_origin(e)), ir::cast(e.dtype(), v));
  }

  bool uses_nest(const ir::Expr& e, const ir::Var* except = nullptr) const {
    for (const ir::Var& v : vars_)
      if ((!except || !v.same_as(*except)) && ir::uses_var(e, v.get())) return true;
    return false;
  }

  void uniform(const ir::Expr& e) const {
    if (lane_ && ir::uses_var(e, lane_))
      throw Error(
          fmt::format("GPU lowering: a tensor-core operand at {} depends on the lane "
                      "(threadIdx.x); a warp's lanes issue "
                      "it together",
                      ir::to_string(e)));
  }

  // The fragment array element holding the 16 x 16 tile that `indices` address with rows `row`
  // and columns `col`.
  ir::Expr tile(const ir::Buffer& b, const std::vector<ir::Expr>& indices, const ir::Var& row,
                const ir::Var& col) {
    auto it = fragments_.find(b.get());
    if (!is_fragment(b) || it == fragments_.end())
      throw Error(fmt::format("GPU lowering: tensor-core operand '{}' ({}) is not a fragment",
                              b->name, b->scope));
    const std::vector<int64_t>& shape = it->second.shape;
    const size_t r = indices.size() - 2, c = indices.size() - 1;
    if (!is_offset_by(indices[r], row) || !is_offset_by(indices[c], col))
      throw Error(
          fmt::format("GPU lowering: fragment '{}' is not accessed as one 16 x 16 tile", b->name));
    ir::Expr flat;  // int32: a fragment array holds a few tiles
    for (size_t d = 0; d < indices.size(); ++d) {
      ir::Expr origin = at_origin(indices[d]);
      const DataType t = origin.dtype();
      if (uses_nest(indices[d], d == r ? &row : d == c ? &col : nullptr) && d != r && d != c)
        throw Error(fmt::format("GPU lowering: fragment '{}' is not accessed as one 16 x 16 tile",
                                b->name));
      uniform(origin);
      int64_t extent = shape[d];
      if (d >= r) {
        if (!analyzer_.can_prove(ir::floormod(origin, ir::make_int(kTile, t)) ==
                                 ir::make_int(0, t)))
          throw Error(
              fmt::format("GPU lowering: fragment '{}' is accessed at {}, not at a multiple of 16",
                          b->name, ir::to_string(origin)));
        origin = ir::floordiv(origin, ir::make_int(kTile, t));
        extent /= kTile;
      }
      origin = ir::cast(kInt32, origin);
      flat = flat.defined() ? flat * ir::make_int(extent) + origin : origin;
    }
    return ir::buffer_load(it->second.array, {analyzer_.simplify(flat)});
  }

  // A memory operand: its element at the tile's origin and the rows' distance (in elements).
  std::pair<ir::Expr, ir::Expr> memory(const ir::Buffer& b, const std::vector<ir::Expr>& indices,
                                       const ir::Var& row, const ir::Var& col) {
    if (is_fragment(b))
      throw Error(
          fmt::format("GPU lowering: tensor-core memory operand '{}' is a fragment", b->name));
    std::vector<int64_t> shape = ir::const_shape(b);
    auto refuse = [&] {
      return Error(
          fmt::format("GPU lowering: '{}' is not read or written by a tensor-core instruction as "
                      "rows of 16 contiguous "
                      "elements",
                      b->name));
    };
    int row_dim = -1;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (d + 1 == indices.size()) {
        if (!is_offset_by(indices[d], col) || uses_nest(indices[d], &col)) throw refuse();
        continue;
      }
      if (uses_nest(indices[d], &row)) throw refuse();
      if (!ir::uses_var(indices[d], row.get())) continue;
      if (row_dim >= 0 || !is_offset_by(indices[d], row)) throw refuse();
      row_dim = static_cast<int>(d);
    }
    if (row_dim < 0) throw refuse();
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * shape[d + 1];
    if (!b->strides.empty()) {
      for (size_t d = 0; d < shape.size(); ++d) {
        auto s = ir::as_const_int(b->strides[d]);
        if (!s)
          throw Error(fmt::format("GPU lowering: '{}' has strides that are not constant", b->name));
        strides[d] = *s;
      }
    }
    const int64_t bytes = b->dtype.bytes(), ld = strides[static_cast<size_t>(row_dim)];
    if (ld * bytes % 16 != 0)
      throw Error(
          fmt::format("GPU lowering: '{}' has rows {} bytes apart; tensor cores read and write "
                      "rows a multiple of 16 "
                      "bytes apart",
                      b->name, ld * bytes));
    std::vector<ir::Expr> origin;
    ir::Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      origin.push_back(at_origin(indices[d]));
      uniform(origin.back());
      ir::Expr term = origin.back() * ir::make_int(strides[d], origin.back().dtype());
      flat = d ? flat + term : term;
    }
    const DataType t = flat.dtype();
    if (!analyzer_.can_prove(ir::floormod(analyzer_.simplify(flat), ir::make_int(32 / bytes, t)) ==
                             ir::make_int(0, t)))
      throw Error(fmt::format(
          "GPU lowering: a tensor-core tile of '{}' starts at element {}, not 32-byte aligned",
          b->name, ir::to_string(analyzer_.simplify(flat))));
    return {ir::buffer_load(b, origin), ir::make_int(ld)};
  }

  ir::Stmt nest(const ir::ForNode* outer, ir::Stmt s, const std::string& op) {
    vars_.clear();
    while (auto* f = s.as<ir::ForNode>()) {
      if (!ir::is_const_int(f->extent, kTile) || !ir::is_const_int(f->min, 0))
        throw Error(fmt::format("GPU lowering: tensor-core loop '{}' runs {} times, not 16",
                                f->loop_var.name(), ir::to_string(f->extent)));
      vars_.push_back(f->loop_var);
      s = f->body;
    }
    auto* store = s.as<ir::BufferStoreNode>();
    const size_t want = op == "mma" ? 3 : 2;
    if (!store || vars_.size() != want)
      throw Error(fmt::format(
          "GPU lowering: the {} nest of loop '{}' is not {} loops of 16 around one store", op,
          outer->loop_var.name(), want));
    const ir::Var &i = vars_[0], &j = vars_[1];
    auto call = [](ir::CallOp o, std::vector<ir::Expr> args) {
      return ir::evaluate(ir::call(o, std::move(args)));
    };
    if (op == "fill") {
      if (uses_nest(store->value))
        throw Error("GPU lowering: a tensor-core fill stores a value that varies over the tile");
      return call(ir::CallOp::kWarpMatrixFill,
                  {tile(store->buffer, store->indices, i, j), store->value});
    }
    if (op == "load_a" || op == "load_b") {
      auto* src = store->value.as<ir::BufferLoadNode>();
      if (!src) throw Error(fmt::format("GPU lowering: the {} nest does not copy a buffer", op));
      auto [origin, ld] = memory(src->buffer, src->indices, i, j);
      return call(ir::CallOp::kWarpMatrixLoad,
                  {tile(store->buffer, store->indices, i, j), origin, ld});
    }
    if (op == "store") {
      auto* src = store->value.as<ir::BufferLoadNode>();
      if (!src) throw Error("GPU lowering: the store nest does not copy a fragment");
      auto [origin, ld] = memory(store->buffer, store->indices, i, j);
      return call(ir::CallOp::kWarpMatrixStore,
                  {origin, tile(src->buffer, src->indices, i, j), ld});
    }
    if (op == "mma") {
      const ir::Var& k = vars_[2];
      struct Operands : ir::StmtExprVisitor {
        const ir::BufferLoadNode *a = nullptr, *b = nullptr;
        void visit_buffer_load(const ir::BufferLoadNode* l) override {
          if (ir::fragment_role(l->buffer->scope) == "matrix_a") a = l;
          if (ir::fragment_role(l->buffer->scope) == "matrix_b") b = l;
          ir::StmtExprVisitor::visit_buffer_load(l);
        }
      } operands;
      operands.visit_expr(store->value);
      const ir::BufferLoadNode *a = operands.a, *b = operands.b;
      if (!a || !b)
        throw Error("GPU lowering: the mma nest does not read a matrix_a and a matrix_b fragment");
      return call(ir::CallOp::kWarpMatrixMma,
                  {tile(store->buffer, store->indices, i, j), tile(a->buffer, a->indices, i, k),
                   tile(b->buffer, b->indices, k, j)});
    }
    throw Error(fmt::format("GPU lowering: unknown tensor-core instruction '{}'", op));
  }

  std::unordered_map<const ir::BufferNode*, FragmentArray> fragments_;
  std::vector<ir::Var> vars_;
  const ir::VarNode* lane_ = nullptr;
  mutable arith::Analyzer analyzer_;
};

}  // namespace

namespace {

// Each kernel (a launch nest) under the function's sequence and intermediates' allocations.
ir::Stmt lower_kernels(const ir::Stmt& s, WarpMatrixLowerer& lowerer) {
  if (auto* q = s.as<ir::SeqStmtNode>()) {
    std::vector<ir::Stmt> out;
    for (const ir::Stmt& c : q->seq) out.push_back(lower_kernels(c, lowerer));
    return ir::seq(std::move(out));
  }
  if (auto* a = s.as<ir::AllocateNode>(); a && !is_fragment(a->buffer))
    return ir::allocate(a->buffer, lower_kernels(a->body, lowerer));
  return lowerer.kernel(s);
}

}  // namespace

ir::PrimFunc lower_warp_matrix_ops(const ir::PrimFunc& func) {
  WarpMatrixLowerer lowerer;
  return func.with_body(lower_kernels(func->body, lowerer));
}

}  // namespace tyche::lower
