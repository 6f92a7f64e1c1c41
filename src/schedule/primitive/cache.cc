// cache_read, cache_write, set_scope, storage_align and transform_layout: primitives that
// introduce or re-declare buffers. The cache primitives add a copy stage at the top level of the
// block's scope (before or after the loop nest that holds the block) and redirect the block's
// accesses; the others replace an intermediate buffer by a re-declared one in every use.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "schedule/analysis.h"
#include "schedule/index_map.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"

namespace tyche::schedule {

namespace {

bool is_valid_scope(const std::string& scope) {
  static const std::array<const char*, 11> kScopes = {
      "global",       "shared",        "local",          "shared.dyn",
      "warp",         "wmma.matrix_a", "wmma.matrix_b",  "wmma.accumulator",
      "mma.matrix_a", "mma.matrix_b",  "mma.accumulator"};
  return std::any_of(kScopes.begin(), kScopes.end(), [&](const char* s) { return scope == s; });
}

std::optional<ScheduleError> check_scope(const char* primitive, const std::string& scope,
                                         const ir::StmtNode* where) {
  if (is_valid_scope(scope)) return std::nullopt;
  return ScheduleError(
      ErrorCode::kUnknownName,
      fmt::format("{}: unknown storage scope '{}' (expected global, shared, shared.dyn, local, "
                  "warp, wmma.* or mma.* matrix_a/matrix_b/accumulator)",
                  primitive, scope),
      where);
}

// Replaces one buffer by another (by identity) in loads, stores, access regions, alloc_buffers and
// allocations, and records each rebuilt block so its sref continues. With a layout, the indices
// and regions of the old buffer are mapped into the new one's.
class BufferReplacer : public ir::StmtExprMutator {
 public:
  BufferReplacer(ir::Buffer from, ir::Buffer to, const IndexMap* layout = nullptr)
      : from_(std::move(from)), to_(std::move(to)), layout_(layout) {}
  BlockReuse reuse;

 protected:
  const ir::Buffer& sub(const ir::Buffer& b) const { return b.same_as(from_) ? to_ : b; }
  std::vector<ir::Expr> indices(const ir::Buffer& b, std::vector<ir::Expr> idx) const {
    return layout_ && b.same_as(from_) ? layout_->map_indices(idx) : idx;
  }

  ir::Expr mutate_buffer_load(const ir::BufferLoadNode* n, const ir::Expr& self) override {
    std::vector<ir::Expr> idx;
    bool changed = mutate_exprs(n->indices, &idx);
    if (!changed && !n->buffer.same_as(from_)) return self;
    return ir::Expr(std::make_shared<ir::BufferLoadNode>(n->dtype, sub(n->buffer),
                                                         indices(n->buffer, std::move(idx))));
  }
  ir::Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const ir::Stmt& self) override {
    ir::Expr v = mutate_expr(n->value);
    std::vector<ir::Expr> idx;
    bool changed = mutate_exprs(n->indices, &idx) || !v.same_as(n->value);
    if (!changed && !n->buffer.same_as(from_)) return self;
    return ir::Stmt(std::make_shared<ir::BufferStoreNode>(sub(n->buffer), v,
                                                          indices(n->buffer, std::move(idx))));
  }
  ir::Stmt mutate_allocate(const ir::AllocateNode* n, const ir::Stmt& self) override {
    ir::Stmt body = mutate_stmt(n->body);
    if (body.same_as(n->body) && !n->buffer.same_as(from_)) return self;
    return ir::allocate(sub(n->buffer), body);
  }
  ir::Stmt mutate_block(const ir::BlockNode* n, const ir::Stmt& self) override {
    ir::Stmt base = StmtExprMutator::mutate_block(n, self);
    auto* b = base.as<ir::BlockNode>();
    auto mentions = [&](const std::vector<ir::BufferRegion>& rs) {
      return std::any_of(rs.begin(), rs.end(),
                         [&](const ir::BufferRegion& r) { return r.buffer.same_as(from_); });
    };
    bool allocates = std::any_of(b->alloc_buffers.begin(), b->alloc_buffers.end(),
                                 [&](const ir::Buffer& x) { return x.same_as(from_); });
    if (!mentions(b->reads) && !mentions(b->writes) && !allocates) {
      if (b != n) reuse[b] = n;
      return base;
    }
    auto regions = [&](const std::vector<ir::BufferRegion>& rs) {
      std::vector<ir::BufferRegion> out;
      for (const ir::BufferRegion& r : rs)
        out.emplace_back(sub(r.buffer), layout_ && r.buffer.same_as(from_)
                                            ? layout_->map_region(r.region)
                                            : r.region);
      return out;
    };
    std::vector<ir::Buffer> allocs;
    for (const ir::Buffer& x : b->alloc_buffers) allocs.push_back(sub(x));
    ir::Block nb = ir::make_block(b->name, b->iter_vars, regions(b->reads), regions(b->writes),
                                  b->init, b->body, std::move(allocs), b->annotations);
    reuse[nb.get()] = n;
    return nb;
  }

 private:
  ir::Buffer from_, to_;
  const IndexMap* layout_;
};

// Replaces one statement (by identity) by another inside a loop nest, without entering blocks.
// The statement directly in `scope`'s body (a For or the block's BlockRealize) that holds `block`.
SRefNode* top_level_sref(const SRefNode* block, const SRefNode* scope) {
  SRefNode* p = const_cast<SRefNode*>(block);
  while (p->parent != scope) p = p->parent;
  return p;
}

// A name for the cache buffer and block not used by any block or buffer of the function.
std::string fresh_name(const ScheduleState& state, const std::string& buffer_name,
                       const std::string& scope) {
  std::string suffix = scope;
  std::replace(suffix.begin(), suffix.end(), '.', '_');
  std::unordered_set<std::string> taken = names_in_use(state);
  std::string base = buffer_name + "_" + suffix, name = base;
  for (int k = 1; taken.count(name); ++k) name = fmt::format("{}_{}", base, k);
  return name;
}

// The region of `buffer` that `block` accesses through `regions` over all its executions in the
// loop nest under its scope, clipped to the buffer's bounds. A dimension that is neither constant
// (then clipped) nor provably in bounds becomes the whole dimension: copying more is harmless.
std::vector<ir::Range> accessed_region(const ScheduleState& state, const SRefNode* block_sref,
                                       const std::vector<ir::BufferRegion>& regions,
                                       const ir::Buffer& buffer) {
  const ir::BlockNode* block = block_sref->as_block();
  const SRefNode* scope = scope_block(block_sref);
  arith::Analyzer analyzer;
  for (const ir::IterVar& iv : scope->as_block()->iter_vars) analyzer.bind(iv.var, iv.dom);
  arith::VarRangeMap dom;
  for (SRefNode* p = block_sref->parent; p != scope; p = p->parent)
    if (auto* f = p->as_for()) dom[f->loop_var] = ir::Range(f->min, f->extent);
  const ir::BlockRealizeNode* realize = state.realize_of(block_sref);
  auto binding = [&](const ir::Var& v) -> ir::Expr {
    for (size_t i = 0; i < block->iter_vars.size(); ++i)
      if (block->iter_vars[i].var.same_as(v)) return realize->iter_values[i];
    return ir::Expr();
  };
  const size_t rank = buffer->shape.size();
  std::vector<ir::BufferRegion> relaxed;
  for (const ir::BufferRegion& r : regions) {
    if (!r.buffer.same_as(buffer) || r.region.size() != rank) continue;
    std::vector<ir::Range> ranges;
    for (const ir::Range& rg : r.region)
      ranges.emplace_back(ir::substitute(rg.min, binding), ir::substitute(rg.extent, binding));
    relaxed.push_back(arith::relax_region(ir::BufferRegion(buffer, ranges), dom, &analyzer));
  }
  std::vector<ir::Range> out;
  for (size_t d = 0; d < rank; ++d) {
    const ir::Expr& dim = buffer->shape[d];
    DataType t = dim.dtype();
    ir::Range full(ir::make_int(0, t), dim);
    if (relaxed.empty()) {
      out.push_back(full);
      continue;
    }
    bool constant = true;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const ir::BufferRegion& r : relaxed) {
      auto mn = ir::as_const_int(r.region[d].min), ext = ir::as_const_int(r.region[d].extent);
      if (!mn || !ext) {
        constant = false;
        break;
      }
      lo = std::min(lo, *mn);
      hi = std::max(hi, *mn + *ext);
    }
    if (constant) {
      auto n = ir::as_const_int(dim);
      lo = std::max<int64_t>(lo, 0);
      if (n) hi = std::min(hi, *n);
      bool in_bounds = n || analyzer.can_prove(ir::make_int(hi, t) <= dim);
      out.push_back(in_bounds && hi > lo ? ir::Range(ir::make_int(lo, t), ir::make_int(hi - lo, t))
                                         : full);
      continue;
    }
    const ir::Range& r = relaxed[0].region[d];
    if (relaxed.size() == 1 && analyzer.can_prove(r.min >= ir::make_int(0, r.min.dtype())) &&
        analyzer.can_prove(r.min + r.extent <= dim))
      out.push_back(r);
    else
      out.push_back(full);
  }
  return out;
}

// for ax...: with block(name): v... = axis.spatial(region); dst[v...] = src[v...]
ir::Stmt make_copy_stage(const std::string& name, const ir::Buffer& src, const ir::Buffer& dst,
                         const std::vector<ir::Range>& region) {
  std::vector<ir::Var> loops;
  std::vector<ir::IterVar> iters;
  std::vector<ir::Expr> bindings, indices;
  std::vector<ir::Range> point;
  arith::Analyzer analyzer;
  for (size_t d = 0; d < region.size(); ++d) {
    DataType t = region[d].extent.dtype();
    loops.emplace_back(fmt::format("ax{}", d), t);
    ir::Var v(fmt::format("v{}", d), t);
    iters.push_back(ir::IterVar{v, region[d], ir::IterKind::kSpatial});
    analyzer.bind(loops.back(), ir::Range(ir::make_int(0, t), region[d].extent));
    bindings.push_back(analyzer.simplify(region[d].min + loops.back()));
    indices.push_back(v);
    point.emplace_back(v, ir::make_int(1, t));
  }
  ir::Stmt body = ir::buffer_store(dst, ir::buffer_load(src, indices), indices);
  ir::Block block = ir::make_block(name, std::move(iters), {ir::BufferRegion(src, point)},
                                   {ir::BufferRegion(dst, point)}, ir::Stmt(), body);
  ir::Stmt stmt = ir::block_realize(std::move(bindings), ir::make_bool(true), block);
  for (size_t d = region.size(); d-- > 0;)
    stmt = ir::for_loop(loops[d], ir::make_int(0, region[d].extent.dtype()), region[d].extent,
                        ir::ForKind::kSerial, stmt);
  return stmt;
}

struct ScopeRewrite {
  ir::Stmt stage;    // the copy loop nest
  bool stage_after;  // cache_write: after the block's nest; cache_read: before
  ir::Buffer cache;  // appended to the scope's alloc_buffers
  ir::Buffer from;   // the buffer the block stops accessing
};

// Rewrites the block's accesses of `from` to `cache`, inserts the stage beside the block's
// top-level loop nest and allocates the cache in the scope; returns the stage block's sref.
Result<SRef> apply_scope_rewrite(ScheduleState& state, const SRef& block_sref,
                                 const ScopeRewrite& rw) {
  SRefNode* scope = scope_block(block_sref.get());
  SRefNode* top_sref = top_level_sref(block_sref.get(), scope);
  const ir::BlockNode* scope_block_node = scope->as_block();
  ir::Stmt top = outer_stmt(state, top_sref);

  BufferReplacer replacer(rw.from, rw.cache);
  ir::Stmt new_block = replacer.mutate_stmt(state.stmt_of(block_sref.get()));
  const ir::BlockRealizeNode* realize = state.realize_of(block_sref.get());
  ir::Stmt new_realize =
      ir::block_realize(realize->iter_values, realize->predicate,
                        ir::Block(std::static_pointer_cast<const ir::BlockNode>(new_block.ptr())));
  ir::Stmt new_top = new_realize;
  if (top.get() != realize) {
    new_top = replace_child(top, realize, new_realize, /*through_loops=*/true);
    TYCHE_CHECK(new_top.defined(), "block realize not found under its top-level loop");
  }
  ir::Stmt pair = rw.stage_after ? ir::seq({new_top, rw.stage}) : ir::seq({rw.stage, new_top});
  // The top-level statement sits in the scope body, possibly inside a sequence or a condition.
  ir::Stmt body = replace_child(scope_block_node->body, top.get(), pair);
  if (!body.defined())
    return ScheduleError(
        ErrorCode::kUnsupported,
        fmt::format("the loop nest of block '{}' is not in the body of its scope block '{}'",
                    block_sref->as_block()->name, scope_block_node->name),
        block_sref->stmt);
  std::vector<ir::Buffer> allocs = scope_block_node->alloc_buffers;
  allocs.push_back(rw.cache);
  ir::Block new_scope =
      ir::make_block(scope_block_node->name, scope_block_node->iter_vars, scope_block_node->reads,
                     scope_block_node->writes, scope_block_node->init, body, std::move(allocs),
                     scope_block_node->annotations);
  BlockReuse reuse = replacer.reuse;
  reuse[new_scope.get()] = scope_block_node;
  const ir::StmtNode* stage_block = realizes_under(rw.stage).front()->block.get();
  state.replace(state.get_sref(scope->stmt), new_scope, reuse);
  return state.get_sref(stage_block);
}

// Checks shared by cache_read and cache_write: a non-root block, an index into `regions`, a scope.
Result<ir::Buffer> cache_target(const char* primitive, const SRefNode* block_sref,
                                const std::vector<ir::BufferRegion>& regions, const char* kind,
                                int index, const std::string& storage_scope) {
  const ir::BlockNode* block = block_sref->as_block();
  if (!block_sref->parent)
    return ScheduleError(ErrorCode::kUnsupported,
                         fmt::format("{}: the root block has no buffer to cache", primitive),
                         block);
  if (index < 0 || static_cast<size_t>(index) >= regions.size())
    return ScheduleError(ErrorCode::kOutOfRange,
                         fmt::format("{}: block '{}' {} {} buffer(s); index {} is out of range",
                                     primitive, block->name, kind, regions.size(), index),
                         block);
  if (auto e = check_scope(primitive, storage_scope, block)) return *e;
  return regions[static_cast<size_t>(index)].buffer;
}

// True when `block` loads `buffer` outside every block (itself or nested) that has an init and
// writes the buffer: such a load sees the buffer's earlier contents, which a fresh cache lacks.
bool reads_before_init(const ir::Stmt& block, const ir::Buffer& buffer) {
  class Finder : public ir::StmtExprVisitor {
   public:
    explicit Finder(const ir::Buffer& b) : b_(b) {}
    bool found = false;

   protected:
    void visit_buffer_load(const ir::BufferLoadNode* n) override {
      found |= covering_ == 0 && n->buffer.same_as(b_);
      StmtExprVisitor::visit_buffer_load(n);
    }
    void visit_block(const ir::BlockNode* n) override {
      int covers = n->init.defined() && writes_buffer(n, b_.get()) ? 1 : 0;
      covering_ += covers;
      StmtExprVisitor::visit_block(n);
      covering_ -= covers;
    }

   private:
    const ir::Buffer& b_;
    int covering_ = 0;
  };
  Finder f(buffer);
  f.visit_stmt(block);
  return f.found;
}

// The written buffer an intermediate-only primitive (set_scope, storage_align) works on.
Result<ir::Buffer> intermediate_target(const ScheduleState& state, const char* primitive,
                                       const char* what, const SRefNode* block_sref, int index) {
  const ir::BlockNode* block = block_sref->as_block();
  if (index < 0 || static_cast<size_t>(index) >= block->writes.size())
    return ScheduleError(ErrorCode::kOutOfRange,
                         fmt::format("{}: block '{}' writes {} buffer(s); index {} is out of range",
                                     primitive, block->name, block->writes.size(), index),
                         block);
  ir::Buffer buffer = block->writes[static_cast<size_t>(index)].buffer;
  if (is_param_buffer(state, buffer.get()))
    return ScheduleError(
        ErrorCode::kParameterBuffer,
        fmt::format("{}: cannot change the {} of function parameter '{}' (written by block '{}')",
                    primitive, what, buffer->name, block->name),
        block);
  return buffer;
}

// The buffer's extents, which re-declaring primitives need as constants.
Result<std::vector<int64_t>> constant_shape(const char* primitive, const ir::Buffer& buffer,
                                            const ir::BlockNode* block) {
  std::vector<int64_t> shape;
  for (const ir::Expr& d : buffer->shape) {
    auto v = ir::as_const_int(d);
    if (!v)
      return ScheduleError(
          ErrorCode::kNonConstantExtent,
          fmt::format("{}: buffer '{}' has a non-constant shape", primitive, buffer->name), block);
    shape.push_back(*v);
  }
  return shape;
}

// Substitutes `to` for `from` in the whole function (mapping its indices by `layout`, if given).
void replace_buffer_everywhere(ScheduleState& state, const ir::Buffer& from, const ir::Buffer& to,
                               const IndexMap* layout = nullptr) {
  BufferReplacer replacer(from, to, layout);
  ir::Stmt body = replacer.mutate_stmt(state.func()->body);
  state.replace_root(body, replacer.reuse);
}

// A refusal naming the first block realized in the top-level loop nest of `block_sref` (itself
// included) that `conflicts` with the copy `primitive` would add around that nest: the block
// "<does>" the buffer, and `why` that breaks the copy.
template <typename Pred>
std::optional<ScheduleError> nest_conflict(const ScheduleState& state, const SRef& block_sref,
                                           const Pred& conflicts, std::string_view primitive,
                                           std::string_view does, const ir::Buffer& buffer,
                                           std::string_view why) {
  ir::Stmt top = outer_stmt(state, top_level_sref(block_sref.get(), scope_block(block_sref.get())));
  for (const ir::BlockRealizeNode* r : realizes_under(top))
    if (conflicts(r->block.get()))
      return ScheduleError(
          ErrorCode::kDependenceViolated,
          fmt::format("{}: block '{}' {} '{}' inside the loop nest of block '{}'{}", primitive,
                      r->block->name, does, buffer->name, block_sref->as_block()->name, why),
          block_sref->as_block());
  return std::nullopt;
}

// The cache of `buffer` in `storage_scope` and its copy stage, which runs before the block's
// loop nest (read) or after it (write); returns the stage's sref.
Result<SRef> add_cache(ScheduleState& state, const SRef& block_sref, const ir::Buffer& buffer,
                       const std::string& storage_scope, bool write) {
  const ir::BlockNode* block = block_sref->as_block();
  std::string name = fresh_name(state, buffer->name, storage_scope);
  ir::Buffer cache = ir::make_buffer(name, buffer->dtype, buffer->shape, storage_scope);
  std::vector<ir::Range> region =
      accessed_region(state, block_sref.get(), write ? block->writes : block->reads, buffer);
  ir::Stmt stage = write ? make_copy_stage(name, cache, buffer, region)
                         : make_copy_stage(name, buffer, cache, region);
  return apply_scope_rewrite(state, block_sref, ScopeRewrite{stage, write, cache, buffer});
}

}  // namespace

std::unordered_set<std::string> names_in_use(const ScheduleState& state) {
  std::unordered_set<std::string> taken;
  for (const ir::Buffer& b : state.func()->params) taken.insert(b->name);
  ir::post_order_visit(state.func()->body, [&](const ir::Stmt& s) {
    if (auto* b = s.as<ir::BlockNode>()) {
      taken.insert(b->name);
      for (const ir::Buffer& x : b->alloc_buffers) taken.insert(x->name);
    } else if (auto* a = s.as<ir::AllocateNode>()) {
      taken.insert(a->buffer->name);
    }
  });
  return taken;
}

Result<SRef> cache_read(ScheduleState& state, const SRef& block_sref, int read_buffer_index,
                        const std::string& storage_scope) {
  const ir::BlockNode* block = block_sref->as_block();
  TYCHE_TRY_ASSIGN(buffer, cache_target("cache_read", block_sref.get(), block->reads, "reads",
                                        read_buffer_index, storage_scope));
  if (writes_buffer(block, buffer.get()))
    return ScheduleError(
        ErrorCode::kDependenceViolated,
        fmt::format(
            "cache_read: block '{}' also writes '{}', so a copy taken before it would be stale",
            block->name, buffer->name),
        block);
  // The copy runs just before the block's top-level loop nest: nothing in that nest may write
  // the buffer (a producer there would run after the copy).
  auto writes = [&](const ir::BlockNode* b) { return writes_buffer(b, buffer.get()); };
  if (auto e = nest_conflict(state, block_sref, writes, "cache_read", "writes", buffer,
                             "; the cache would be copied before it is produced"))
    return *e;
  return add_cache(state, block_sref, buffer, storage_scope, /*write=*/false);
}

Result<SRef> cache_write(ScheduleState& state, const SRef& block_sref, int write_buffer_index,
                         const std::string& storage_scope) {
  const ir::BlockNode* block = block_sref->as_block();
  TYCHE_TRY_ASSIGN(buffer, cache_target("cache_write", block_sref.get(), block->writes, "writes",
                                        write_buffer_index, storage_scope));
  SRefNode* scope = scope_block(block_sref.get());
  // A scope block below the root runs many times and re-poisons the cache each time, so copying
  // back more than the block wrote could clobber earlier results: keep to the root scope.
  if (scope->parent)
    return ScheduleError(
        ErrorCode::kUnsupported,
        fmt::format(
            "cache_write: block '{}' is nested in block '{}'; only blocks of the root scope are "
            "supported",
            block->name, scope->as_block()->name),
        block);
  auto others = other_writers(state, block_sref.get(), buffer.get());
  if (!others.empty())
    return ScheduleError(
        ErrorCode::kDependenceViolated,
        fmt::format(
            "cache_write: block '{}' is not the only writer of '{}' (block '{}' writes it too)",
            block->name, buffer->name, others[0]->as_block()->name),
        block);
  // The block may read back what it writes only as a reduction whose init fills the cache first.
  if (reads_before_init(state.stmt_of(block_sref.get()), buffer))
    return ScheduleError(
        ErrorCode::kDependenceViolated,
        fmt::format("cache_write: block '{}' reads '{}' before writing it (no init)", block->name,
                    buffer->name),
        block);
  // The copy back runs after the block's top-level loop nest: nothing else there may use the
  // buffer.
  auto uses = [&](const ir::BlockNode* b) {
    return b != block && (reads_buffer(b, buffer.get()) || writes_buffer(b, buffer.get()));
  };
  if (auto e = nest_conflict(state, block_sref, uses, "cache_write", "uses", buffer,
                             ", before the cache would be written back"))
    return *e;
  return add_cache(state, block_sref, buffer, storage_scope, /*write=*/true);
}

Status set_scope(ScheduleState& state, const SRef& block_sref, int buffer_index,
                 const std::string& storage_scope) {
  TYCHE_TRY_ASSIGN(
      buffer, intermediate_target(state, "set_scope", "scope", block_sref.get(), buffer_index));
  if (auto e = check_scope("set_scope", storage_scope, block_sref->stmt)) return *e;
  if (buffer->scope == storage_scope) return ok_status();
  replace_buffer_everywhere(state, buffer, ir::with_scope(buffer, storage_scope));
  return ok_status();
}

Status storage_align(ScheduleState& state, const SRef& block_sref, int buffer_index, int axis,
                     int factor, int offset) {
  const ir::BlockNode* block = block_sref->as_block();
  TYCHE_TRY_ASSIGN(buffer, intermediate_target(state, "storage_align", "strides", block_sref.get(),
                                               buffer_index));
  const int rank = static_cast<int>(buffer->shape.size());
  if (axis < 0 || axis >= rank)
    return ScheduleError(
        ErrorCode::kOutOfRange,
        fmt::format("storage_align: axis {} is out of range for the {}-d buffer '{}'", axis, rank,
                    buffer->name),
        block);
  if (factor <= 0)
    return ScheduleError(ErrorCode::kInvalidFactors,
                         fmt::format("storage_align: factor {} is not positive", factor), block);
  if (offset < 0 || offset >= factor)
    return ScheduleError(
        ErrorCode::kInvalidFactors,
        fmt::format("storage_align: offset {} is not in [0, factor {})", offset, factor), block);
  TYCHE_TRY_ASSIGN(shape, constant_shape("storage_align", buffer, block));
  // Earlier requests stay (axes inside `axis` keep their strides); the layout is recomputed from
  // all of them, as compact_buffers does for the buffer's compacted shape.
  std::vector<ir::DimAlign> aligns = buffer->dim_aligns;
  aligns.push_back({axis, factor, offset});
  auto strides = ir::aligned_strides(shape, aligns);
  if (!strides)
    return ScheduleError(ErrorCode::kInvalidFactors,
                         fmt::format("storage_align: strides of '{}' overflow", buffer->name),
                         block);
  auto node = std::make_shared<ir::BufferNode>(*buffer);
  node->dim_aligns = std::move(aligns);
  node->strides.clear();
  for (int64_t s : *strides) node->strides.push_back(ir::make_int(s, buffer->shape[0].dtype()));
  replace_buffer_everywhere(state, buffer, ir::Buffer(std::move(node)));
  return ok_status();
}

Status transform_layout(ScheduleState& state, const SRef& block_sref, int buffer_index,
                        const std::string& index_map) {
  const ir::BlockNode* block = block_sref->as_block();
  TYCHE_TRY_ASSIGN(buffer, intermediate_target(state, "transform_layout", "layout",
                                               block_sref.get(), buffer_index));
  auto parsed = IndexMap::parse(index_map);
  if (auto* why = std::get_if<std::string>(&parsed))
    return ScheduleError(ErrorCode::kInvalidArgument, "transform_layout: " + *why, block);
  const IndexMap& map = std::get<IndexMap>(parsed);
  if (!buffer->strides.empty())
    return ScheduleError(
        ErrorCode::kUnsupported,
        fmt::format("transform_layout: buffer '{}' has strides from storage_align; transform its "
                    "layout before aligning it",
                    buffer->name),
        block);
  TYCHE_TRY_ASSIGN(shape, constant_shape("transform_layout", buffer, block));
  if (std::string why = map.check_shape(shape); !why.empty())
    return ScheduleError(ErrorCode::kExtentMismatch,
                         fmt::format("transform_layout: buffer '{}': {}", buffer->name, why),
                         block);
  std::vector<ir::Expr> new_shape;
  for (int64_t d : map.map_shape(shape))
    new_shape.push_back(ir::make_int(d, buffer->shape[0].dtype()));
  ir::Buffer laid_out = ir::make_buffer(buffer->name, buffer->dtype, new_shape, buffer->scope);
  replace_buffer_everywhere(state, buffer, laid_out, &map);
  return ok_status();
}

// ---- Schedule forwarding ----

// ---- instructions ----

namespace {

template <Result<SRef> (*F)(ScheduleState&, const SRef&, int, const std::string&)>
Result<BlockRV> apply_cache(InstructionContext& ctx, BlockRV block, int buffer_index,
                            std::string storage_scope) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  TYCHE_TRY_ASSIGN(stage, F(ctx.state(), sref, buffer_index, storage_scope));
  return ctx.issue_block(stage);
}

Status apply_set_scope(InstructionContext& ctx, BlockRV block, int buffer_index,
                       std::string storage_scope) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  return set_scope(ctx.state(), sref, buffer_index, storage_scope);
}

Status apply_storage_align(InstructionContext& ctx, BlockRV block, int buffer_index, int axis,
                           int factor, int offset) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  return storage_align(ctx.state(), sref, buffer_index, axis, factor, offset);
}

Status apply_transform_layout(InstructionContext& ctx, BlockRV block, int buffer_index,
                              std::string index_map) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(block));
  return transform_layout(ctx.state(), sref, buffer_index, index_map);
}

}  // namespace

TYCHE_INSTRUCTION(cache_read, apply_cache<cache_read>,
                  {{"block"}, {"read_buffer_index"}, {"storage_scope"}})
TYCHE_INSTRUCTION(cache_write, apply_cache<cache_write>,
                  {{"block"}, {"write_buffer_index"}, {"storage_scope"}})
TYCHE_INSTRUCTION(set_scope, apply_set_scope, {{"block"}, {"buffer_index"}, {"storage_scope"}})
TYCHE_INSTRUCTION(storage_align, apply_storage_align,
                  {{"block"}, {"buffer_index"}, {"axis"}, {"factor"}, {"offset"}})
TYCHE_INSTRUCTION(transform_layout, apply_transform_layout,
                  {{"block"}, {"buffer_index"}, {"index_map"}})

Result<BlockRV> Schedule::cache_read(const BlockRV& block, int read_buffer_index,
                                     const std::string& storage_scope) {
  return cache_read_kind()(*this, block, read_buffer_index, storage_scope);
}
Result<BlockRV> Schedule::cache_write(const BlockRV& block, int write_buffer_index,
                                      const std::string& storage_scope) {
  return cache_write_kind()(*this, block, write_buffer_index, storage_scope);
}
Status Schedule::set_scope(const BlockRV& block, int buffer_index,
                           const std::string& storage_scope) {
  return set_scope_kind()(*this, block, buffer_index, storage_scope);
}
Status Schedule::storage_align(const BlockRV& block, int buffer_index, int axis, int factor,
                               int offset) {
  return storage_align_kind()(*this, block, buffer_index, axis, factor, offset);
}
Status Schedule::transform_layout(const BlockRV& block, int buffer_index,
                                  const std::string& index_map) {
  return transform_layout_kind()(*this, block, buffer_index, index_map);
}

}  // namespace tyche::schedule
