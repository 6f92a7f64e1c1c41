// pad_einsum: rounds a block's iteration domain up to multiples (a tile the extents do not
// divide, a tensor intrinsic's 16 x 4) by computing on zero-padded copies of its buffers. Each
// read buffer indexed by a padded iterator is copied into a larger buffer, zeros past its end, by
// a stage before the block's loop nest; the block writes a padded output, which a stage after the
// nest copies back. Padded reduction steps then add nothing, which the block's update must show:
// with the padded reads zero it leaves the accumulator unchanged (a sum of products does; a max
// does not, and is refused). Padded output elements are computed and dropped.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "arith/analyzer.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

namespace {

ScheduleError pad_error(ErrorCode code, const ir::BlockNode* block, const std::string& why) {
  return ScheduleError(code, fmt::format("pad_einsum: block '{}' {}", block->name, why), block);
}

// A name no block or buffer of the function has, nor one given out before (`taken`).
std::string unused_name(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = fmt::format("{}_{}", base, k);
  taken.insert(name);
  return name;
}

// Every buffer access of the block (loads and stores, init included) as (buffer, indices).
struct Access {
  const ir::BufferNode* buffer;
  std::vector<ir::Expr> indices;
};
std::vector<Access> accesses(const ir::BlockNode* block) {
  struct Collector : ir::StmtExprVisitor {
    std::vector<Access> out;
    void visit_buffer_load(const ir::BufferLoadNode* n) override {
      out.push_back({n->buffer.get(), n->indices});
      ir::StmtExprVisitor::visit_buffer_load(n);
    }
    void visit_buffer_store(const ir::BufferStoreNode* n) override {
      out.push_back({n->buffer.get(), n->indices});
      ir::StmtExprVisitor::visit_buffer_store(n);
    }
  } collector;
  if (block->init.defined()) collector.visit_stmt(block->init);
  collector.visit_stmt(block->body);
  return collector.out;
}

// Loads and stores of the mapped buffers redirected to their padded copies (indices unchanged).
class PaddedBuffers : public ir::StmtExprMutator {
 public:
  explicit PaddedBuffers(const std::unordered_map<const ir::BufferNode*, ir::Buffer>& map)
      : map_(map) {}
  const ir::Buffer& sub(const ir::Buffer& b) const {
    auto it = map_.find(b.get());
    return it == map_.end() ? b : it->second;
  }

 protected:
  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
    std::vector<ir::Expr> idx;
    bool changed = mutate_exprs(n->indices, &idx);
    if (!changed && !map_.count(n->buffer.get())) return self;
    return ir::Expr(std::make_shared<ir::BufferLoadNode>(n->dtype, sub(n->buffer), std::move(idx)));
  }
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& self) override {
    ir::Expr v = mutate_expr(n->value);
    std::vector<ir::Expr> idx;
    bool changed = mutate_exprs(n->indices, &idx) || !v.same_as(n->value);
    if (!changed && !map_.count(n->buffer.get())) return self;
    return ir::Stmt(std::make_shared<ir::BufferStoreNode>(sub(n->buffer), v, std::move(idx)));
  }

 private:
  const std::unordered_map<const ir::BufferNode*, ir::Buffer>& map_;
};

// Whether the block's update leaves its accumulator unchanged when every load of `zeroed`
// buffers reads zero: then padded reduction steps add nothing.
bool padded_steps_add_nothing(const ir::BlockNode* block,
                              const std::unordered_set<const ir::BufferNode*>& zeroed) {
  const auto* store = block->body.as<ir::BufferStoreNode>();
  if (!store) return false;
  ir::Var acc("acc", store->value.dtype());
  class Zeroing : public ir::StmtExprMutator {
   public:
    Zeroing(const ir::BufferStoreNode* s, const ir::Var& a,
            const std::unordered_set<const ir::BufferNode*>& z)
        : store_(s), acc_(a), zeroed_(z) {}

   protected:
    ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
      if (n->buffer.get() == store_->buffer.get()) {
        bool same = n->indices.size() == store_->indices.size();
        for (size_t d = 0; same && d < n->indices.size(); ++d)
          same = n->indices[d].same_as(store_->indices[d]);
        return same ? ir::Expr(acc_) : self;
      }
      return zeroed_.count(n->buffer.get()) ? ir::make_const(n->dtype, 0) : self;
    }

   private:
    const ir::BufferStoreNode* store_;
    const ir::Var& acc_;
    const std::unordered_set<const ir::BufferNode*>& zeroed_;
  } zeroing(store, acc, zeroed);
  arith::Analyzer analyzer;
  ir::Expr update = analyzer.simplify(zeroing.mutate_expr(store->value));
  // acc + 0.0f stays unfolded (it is -0.0 for acc = -0.0), and is what a float sum leaves.
  auto zero = [](const ir::Expr& e) {
    const auto* f = e.as<ir::FloatImmNode>();
    return ir::is_const_int(e, 0) || (f && f->value == 0.0);
  };
  if (const ir::BinaryNode* add = update.as_binary(); add && add->kind == ir::ExprKind::kAdd)
    if ((add->a.same_as(acc) && zero(add->b)) || (add->b.same_as(acc) && zero(add->a))) return true;
  return analyzer.can_prove_equal(update, acc);
}

// An integer division or remainder by something other than a constant: a zero read from padding
// could trap there.
bool divides_by_a_variable(const ir::BlockNode* block) {
  struct Finder : ir::StmtExprVisitor {
    bool found = false;
    void visit_binary(const ir::BinaryNode* n) override {
      bool division = n->kind == ir::ExprKind::kDiv || n->kind == ir::ExprKind::kFloorDiv ||
                      n->kind == ir::ExprKind::kFloorMod;
      found |= division && n->dtype.is_integer() && !ir::as_const_int(n->b).has_value();
      ir::StmtExprVisitor::visit_binary(n);
    }
  } finder;
  finder.visit_stmt(block->body);
  return finder.found;
}

// for v...: with block(name): X_pad[v] = if_then_else(v < extent of X..., X[v], 0)
ir::Stmt make_pad_stage(const std::string& name, const ir::Buffer& src, const ir::Buffer& dst) {
  std::vector<ir::Var> loops;
  std::vector<ir::IterVar> iters;
  std::vector<ir::Expr> bindings, indices;
  std::vector<ir::Range> point;
  ir::Expr inside;
  for (size_t d = 0; d < dst->shape.size(); ++d) {
    DataType t = dst->shape[d].dtype();
    loops.emplace_back(fmt::format("ax{}", d), t);
    ir::Var v(fmt::format("v{}", d), t);
    iters.push_back(
        ir::IterVar{v, ir::Range(ir::make_int(0, t), dst->shape[d]), ir::IterKind::kSpatial});
    bindings.push_back(loops.back());
    indices.push_back(v);
    point.emplace_back(v, ir::make_int(1, t));
    if (ir::as_const_int(dst->shape[d]) != ir::as_const_int(src->shape[d]))
      inside = inside.defined() ? (inside && v < src->shape[d]) : (v < src->shape[d]);
  }
  ir::Expr value =
      ir::if_then_else(inside, ir::buffer_load(src, indices), ir::make_const(src->dtype, 0));
  ir::Block block = ir::make_block(name, std::move(iters), {ir::BufferRegion(src, point)},
                                   {ir::BufferRegion(dst, point)}, ir::Stmt(),
                                   ir::buffer_store(dst, value, indices));
  ir::Stmt stmt = ir::block_realize(std::move(bindings), ir::make_bool(true), block);
  for (size_t d = dst->shape.size(); d-- > 0;)
    stmt = ir::for_loop(loops[d], ir::make_int(0, dst->shape[d].dtype()), dst->shape[d],
                        ir::ForKind::kSerial, stmt);
  return stmt;
}

// for v in the block's written region: with block(name): C[v] = C_pad[v]
ir::Stmt make_unpad_stage(const std::string& name, const ir::Buffer& src, const ir::Buffer& dst,
                          const std::vector<ir::Range>& region) {
  std::vector<ir::Var> loops;
  std::vector<ir::IterVar> iters;
  std::vector<ir::Expr> bindings, indices;
  std::vector<ir::Range> point;
  for (size_t d = 0; d < region.size(); ++d) {
    DataType t = region[d].extent.dtype();
    loops.emplace_back(fmt::format("ax{}", d), t);
    ir::Var v(fmt::format("v{}", d), t);
    iters.push_back(ir::IterVar{v, region[d], ir::IterKind::kSpatial});
    bindings.push_back(ir::is_const_int(region[d].min, 0) ? ir::Expr(loops.back())
                                                          : region[d].min + loops.back());
    indices.push_back(v);
    point.emplace_back(v, ir::make_int(1, t));
  }
  ir::Block block = ir::make_block(name, std::move(iters), {ir::BufferRegion(src, point)},
                                   {ir::BufferRegion(dst, point)}, ir::Stmt(),
                                   ir::buffer_store(dst, ir::buffer_load(src, indices), indices));
  ir::Stmt stmt = ir::block_realize(std::move(bindings), ir::make_bool(true), block);
  for (size_t d = region.size(); d-- > 0;)
    stmt = ir::for_loop(loops[d], ir::make_int(0, region[d].extent.dtype()), region[d].extent,
                        ir::ForKind::kSerial, stmt);
  return stmt;
}

}  // namespace

Status pad_einsum(ScheduleState& state, const SRef& block_sref,
                  const std::vector<int64_t>& padding) {
  const ir::BlockNode* block = block_sref->as_block();
  if (!block_sref->parent) return pad_error(ErrorCode::kUnsupported, block, "is the root block");
  if (padding.size() != block->iter_vars.size())
    return pad_error(ErrorCode::kInvalidArgument, block,
                     fmt::format("has {} iterators but {} paddings were given",
                                 block->iter_vars.size(), padding.size()));
  for (int64_t p : padding)
    if (p < 1)
      return pad_error(ErrorCode::kInvalidArgument, block,
                       fmt::format("cannot be padded to a multiple of {}", p));
  if (!block->alloc_buffers.empty() || block->writes.size() != 1)
    return pad_error(ErrorCode::kUnsupported, block, "must write one buffer and allocate none");
  bool nested = false;
  ir::post_order_visit(block->body,
                       [&](const ir::Stmt& s) { nested |= s.as<ir::BlockNode>() != nullptr; });
  if (nested) return pad_error(ErrorCode::kUnsupported, block, "holds other blocks");

  // The loop nest: the block alone under loops that each bind one iterator, whole.
  SRefNode* scope = scope_block(block_sref.get());
  SRefNode* top = block_sref.get();
  while (top->parent != scope) top = top->parent;
  const ir::Stmt top_stmt = outer_stmt(state, top);
  if (realizes_under(top_stmt).size() != 1)
    return pad_error(ErrorCode::kUnsupported, block, "shares its loop nest with other blocks");
  const ir::BlockRealizeNode* realize = state.realize_of(block_sref.get());
  if (!ir::is_true(realize->predicate))
    return pad_error(ErrorCode::kUnsupported, block, "has a predicate");
  std::unordered_map<const ir::VarNode*, const ir::ForNode*> loop_of_var;
  for (const ir::ForNode* f : loops_under(top_stmt)) {
    if (!f->body.as<ir::ForNode>() && !f->body.as<ir::BlockRealizeNode>())
      return pad_error(ErrorCode::kUnsupported, block, "sits in a loop nest with other statements");
    loop_of_var[f->loop_var.get()] = f;
  }

  const size_t n_iters = block->iter_vars.size();
  std::vector<int64_t> extent(n_iters), padded(n_iters);
  std::unordered_map<const ir::VarNode*, size_t> changed;  // iterator var -> its index
  std::unordered_map<const ir::VarNode*, int64_t> new_loop_extent;
  for (size_t i = 0; i < n_iters; ++i) {
    const ir::IterVar& iv = block->iter_vars[i];
    auto mn = ir::as_const_int(iv.dom.min), ext = ir::as_const_int(iv.dom.extent);
    if (!mn || !ext || *mn != 0)
      return pad_error(
          ErrorCode::kNonConstantExtent, block,
          fmt::format("iterator '{}' does not range over a constant [0, n)", iv.var->name));
    extent[i] = *ext;
    padded[i] = (*ext + padding[i] - 1) / padding[i] * padding[i];
    if (padded[i] == extent[i]) continue;
    const auto* loop_var = realize->iter_values[i].as<ir::VarNode>();
    auto f = loop_var ? loop_of_var.find(loop_var) : loop_of_var.end();
    if (f == loop_of_var.end() || !ir::is_const_int(f->second->min, 0) ||
        !ir::is_const_int(f->second->extent, extent[i]) || new_loop_extent.count(loop_var))
      return pad_error(
          ErrorCode::kUnsupported, block,
          fmt::format(
              "iterator '{}' is not bound to a whole loop of its own (pad before splitting)",
              iv.var->name));
    new_loop_extent[loop_var] = padded[i];
    changed[iv.var.get()] = i;
  }
  if (changed.empty()) return ok_status();

  // Each buffer dimension an access indexes by a padded iterator: exactly that iterator, over the
  // whole dimension; the padded copy extends the dimension to the padded extent.
  const ir::Buffer& out = block->writes[0].buffer;
  std::map<std::pair<const ir::BufferNode*, size_t>, int64_t> padded_dims;
  std::unordered_set<const ir::BufferNode*> along_reduce;  // buffers padded along a reduce iterator
  for (const Access& a : accesses(block)) {
    for (size_t d = 0; d < a.indices.size(); ++d) {
      if (!ir::uses_var(a.indices[d], [&](const ir::VarNode* v) { return changed.count(v) > 0; }))
        continue;
      const auto* v = a.indices[d].as<ir::VarNode>();
      if (!v)
        return pad_error(
            ErrorCode::kUnsupported, block,
            fmt::format("indexes '{}' by {} in dimension {}, which mixes a padded iterator into an "
                        "expression",
                        a.buffer->name, ir::to_string(a.indices[d]), d));
      size_t i = changed.at(v);
      if (!ir::is_const_int(a.buffer->shape[d], extent[i]))
        return pad_error(
            ErrorCode::kUnsupported, block,
            fmt::format("indexes dimension {} of '{}' (extent {}) by iterator '{}' of extent {}", d,
                        a.buffer->name, ir::to_string(a.buffer->shape[d]), v->name, extent[i]));
      auto [it, fresh] = padded_dims.emplace(std::make_pair(a.buffer, d), padded[i]);
      if (!fresh && it->second != padded[i])
        return pad_error(ErrorCode::kUnsupported, block,
                         fmt::format("indexes dimension {} of '{}' by iterators padded differently",
                                     d, a.buffer->name));
      if (block->iter_vars[i].kind == ir::IterKind::kReduce && a.buffer != out.get())
        along_reduce.insert(a.buffer);
    }
  }
  if (!along_reduce.empty() && !padded_steps_add_nothing(block, along_reduce))
    return pad_error(
        ErrorCode::kUnsupported, block,
        "pads a reduction whose update is not a sum that zeros leave unchanged (a max or a product "
        "would change)");
  if (divides_by_a_variable(block))
    return pad_error(ErrorCode::kUnsupported, block,
                     "divides integers by a value: padding zeros could trap there");
  const bool pads_output = std::any_of(padded_dims.begin(), padded_dims.end(),
                                       [&](const auto& kv) { return kv.first.first == out.get(); });
  if (pads_output && !other_writers(state, block_sref.get(), out.get()).empty())
    return pad_error(ErrorCode::kDependenceViolated, block,
                     fmt::format("is not the only writer of '{}'", out->name));

  // The padded buffers, in the block's order of reads then the write.
  std::unordered_set<std::string> taken = names_in_use(state);
  std::unordered_map<const ir::BufferNode*, ir::Buffer> pad_of;
  std::vector<ir::Buffer> order;
  auto add = [&](const ir::Buffer& b) {
    if (pad_of.count(b.get())) return;
    std::vector<ir::Expr> shape = b->shape;
    bool any = false;
    for (size_t d = 0; d < shape.size(); ++d)
      if (auto it = padded_dims.find({b.get(), d}); it != padded_dims.end()) {
        shape[d] = ir::make_int(it->second, shape[d].dtype());
        any = true;
      }
    if (!any) return;
    pad_of[b.get()] =
        ir::make_buffer(unused_name(b->name + "_pad", taken), b->dtype, shape, b->scope);
    order.push_back(b);
  };
  for (const ir::BufferRegion& r : block->reads) add(r.buffer);
  add(out);

  // The block over the padded domain, reading and writing the padded copies.
  PaddedBuffers sub(pad_of);
  std::vector<ir::IterVar> iters = block->iter_vars;
  for (size_t i = 0; i < n_iters; ++i)
    iters[i].dom =
        ir::Range(iters[i].dom.min, ir::make_int(padded[i], iters[i].dom.extent.dtype()));
  auto regions = [&](const std::vector<ir::BufferRegion>& rs) {
    std::vector<ir::BufferRegion> r2;
    for (const ir::BufferRegion& r : rs) r2.emplace_back(sub.sub(r.buffer), r.region);
    return r2;
  };
  ir::Block new_block =
      ir::make_block(block->name, std::move(iters), regions(block->reads), regions(block->writes),
                     block->init.defined() ? sub.mutate_stmt(block->init) : ir::Stmt(),
                     sub.mutate_stmt(block->body), {}, block->annotations);
  std::function<ir::Stmt(const ir::Stmt&)> rebuild = [&](const ir::Stmt& s) -> ir::Stmt {
    if (const ir::ForNode* f = s.as<ir::ForNode>()) {
      auto it = new_loop_extent.find(f->loop_var.get());
      ir::Expr ext =
          it == new_loop_extent.end() ? f->extent : ir::make_int(it->second, f->extent.dtype());
      return ir::for_loop(f->loop_var, f->min, ext, f->for_kind, rebuild(f->body), f->thread_tag,
                          f->annotations);
    }
    const ir::BlockRealizeNode* r = s.as<ir::BlockRealizeNode>();
    TYCHE_CHECK(r == realize,
                "pad_einsum: the loop nest holds something besides its loops and the block");
    return ir::block_realize(r->iter_values, r->predicate, new_block);
  };
  std::vector<ir::Stmt> seq;
  for (const ir::Buffer& b : order)
    if (b.get() != out.get())
      seq.push_back(make_pad_stage(pad_of.at(b.get())->name, b, pad_of.at(b.get())));
  seq.push_back(rebuild(top_stmt));
  if (pad_of.count(out.get())) {
    std::vector<ir::Range> written;
    for (size_t d = 0; d < out->shape.size(); ++d) {
      const ir::Range& r = block->writes[0].region[d];
      const auto* v = r.min.as<ir::VarNode>();
      auto it = v ? changed.find(v) : changed.end();
      if (it != changed.end()) {
        written.emplace_back(ir::make_int(0, r.min.dtype()),
                             ir::make_int(extent[it->second], r.min.dtype()));
        continue;
      }
      // An unpadded dimension: what the block writes of it over its domain, or all of it.
      bool whole = true;
      for (size_t i = 0; v && i < n_iters; ++i)
        if (block->iter_vars[i].var.get() == v && ir::is_const_int(r.extent, 1)) {
          written.push_back(block->iter_vars[i].dom);
          whole = false;
        }
      if (whole) written.emplace_back(ir::make_int(0, out->shape[d].dtype()), out->shape[d]);
    }
    seq.push_back(make_unpad_stage(unused_name(out->name + "_unpad", taken), pad_of.at(out.get()),
                                   out, written));
  }

  const ir::BlockNode* scope_node = scope->as_block();
  ir::Stmt body = replace_child(scope_node->body, top_stmt.get(), ir::seq(std::move(seq)));
  if (!body.defined())
    return pad_error(ErrorCode::kUnsupported, block, "is not in the body of its scope block");
  std::vector<ir::Buffer> allocs = scope_node->alloc_buffers;
  for (const ir::Buffer& b : order) allocs.push_back(pad_of.at(b.get()));
  ir::Block new_scope =
      ir::make_block(scope_node->name, scope_node->iter_vars, scope_node->reads, scope_node->writes,
                     scope_node->init, body, std::move(allocs), scope_node->annotations);
  state.replace(state.get_sref(scope->stmt), new_scope,
                {{new_block.get(), block}, {new_scope.get(), scope_node}});
  return ok_status();
}

namespace {

Status apply_pad_einsum(InstructionContext& ctx, BlockRV block, std::vector<int64_t> padding) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  return pad_einsum(ctx.state(), sref, padding);
}

}  // namespace

TYCHE_INSTRUCTION(pad_einsum, apply_pad_einsum, {{"block"}, {"padding"}})

Status Schedule::pad_einsum(const BlockRV& block, const std::vector<int64_t>& padding) {
  return pad_einsum_kind()(*this, block, padding);
}

}  // namespace tyche::schedule
