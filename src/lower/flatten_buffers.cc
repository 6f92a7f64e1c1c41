// N-d buffers -> 1-d. The flat index is sum(index[d] * stride[d]) with the buffer's strides
// (storage_align pads them) or compact row-major ones; the flat size covers the last element.
#include <fmt/format.h>

#include <unordered_map>

#include "arith/vector_index.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "lower/lower.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

std::vector<ir::Expr> strides_of(const ir::BufferNode& b) {
  if (!b.strides.empty()) return b.strides;
  std::vector<ir::Expr> strides(b.shape.size());
  ir::Expr s = ir::make_int(1, kInt64);
  for (size_t d = b.shape.size(); d-- > 0;) {
    strides[d] = s;
    s = s * ir::cast(kInt64, b.shape[d]);
  }
  return strides;
}

class Flattener : public ir::StmtExprMutator {
 public:
  ir::Buffer flat(const ir::Buffer& b) {
    auto it = flat_.find(b.get());
    if (it != flat_.end()) return it->second;
    if (b->shape.size() == 1 && b->strides.empty())
      return flat_[b.get()] = b;  // a 0-d buffer becomes 1-d too
    std::vector<ir::Expr> strides = strides_of(*b);
    ir::Expr size = ir::make_int(1, kInt64);  // 1 + the offset of the last element
    for (size_t d = 0; d < b->shape.size(); ++d)
      size = size + (ir::cast(kInt64, b->shape[d]) - 1) * ir::cast(kInt64, strides[d]);
    auto node = std::make_shared<ir::BufferNode>(*b);
    node->shape = {size};
    node->strides = {};
    ir::Buffer out(node);
    strides_[out.get()] = strides;
    return flat_[b.get()] = out;
  }

 protected:
  ir::Expr flat_index(const ir::Buffer& original, const ir::Buffer& flat_buffer,
                      const std::vector<ir::Expr>& indices) {
    if (flat_buffer.same_as(original)) return indices.empty() ? ir::make_int(0) : indices[0];
    const std::vector<ir::Expr>& strides = strides_.at(flat_buffer.get());
    TYCHE_CHECK(strides.size() == indices.size(), "buffer '{}' indexed with {} indices",
                original->name, indices.size());
    ir::Expr index;
    for (size_t d = 0; d < indices.size(); ++d) {
      ir::Expr term = ir::is_const_int(strides[d], 1) ? indices[d] : indices[d] * strides[d];
      index = index.defined() ? index + term : term;
    }
    if (!index.defined()) return ir::make_int(0);
    return index.dtype().lanes() > 1 ? arith::fold_vector_index(index) : index;
  }

  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr&) override {
    std::vector<ir::Expr> idx;
    mutate_exprs(n->indices, &idx);
    ir::Buffer fb = flat(n->buffer);
    ir::Expr index = flat_index(n->buffer, fb, idx);
    return ir::Expr(
        std::make_shared<ir::BufferLoadNode>(n->dtype, fb, std::vector<ir::Expr>{index}));
  }

  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt&) override {
    std::vector<ir::Expr> idx;
    mutate_exprs(n->indices, &idx);
    ir::Buffer fb = flat(n->buffer);
    return ir::buffer_store(fb, mutate_expr(n->value), {flat_index(n->buffer, fb, idx)});
  }

  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt&) override {
    return ir::allocate(flat(n->buffer), mutate_stmt(n->body));
  }

  ir::Stmt mutate_block(const ir::BlockNode* n, const ir::Stmt&) override {
    throw InternalError(fmt::format("flatten_buffers: block '{}' was not lowered", n->name));
  }

 private:
  std::unordered_map<const ir::BufferNode*, ir::Buffer> flat_;
  std::unordered_map<const ir::BufferNode*, std::vector<ir::Expr>> strides_;
};

}  // namespace

ir::PrimFunc flatten_buffers(const ir::PrimFunc& func) {
  Flattener f;
  std::vector<ir::Buffer> params;
  for (const ir::Buffer& p : func->params) params.push_back(f.flat(p));
  ir::Stmt body = f.mutate_stmt(func->body);
  return ir::PrimFunc(func->name, params, func->num_outputs, body);
}

}  // namespace tyche::lower
