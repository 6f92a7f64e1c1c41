// tensorize (TVM's semantics).
//
// tensorize(loop, intrin): plans the blockize, matches the inner loops and block against the
// intrinsic's description (modulo renaming of variables and buffers; desc buffers bind regions
// of the program's buffers), and only then replaces the outer block's body by the intrinsic's
// implementation with its buffers rebound to those regions. Every refusal happens before the
// state is touched.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/linear.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"
#include "schedule/analysis.h"
#include "schedule/instruction_impl.h"
#include "schedule/primitive/blockize.h"
#include "schedule/primitive/primitive.h"
#include "schedule/schedule.h"
#include "schedule/tensor_intrin.h"

namespace tyche::schedule {

namespace {

using ir::Expr;
using ir::Stmt;
using ir::Var;

// Where a desc (or impl) buffer lies in the program: `buffer` at `offsets`, whose first `lead`
// dimensions have extent 1 and are not dimensions of the intrinsic's buffer.
struct BufferBinding {
  ir::Buffer buffer;
  std::vector<Expr> offsets;
  size_t lead = 0;
};
// Matches the planned inner loops and block against an intrinsic's description.
class IntrinMatcher {
 public:
  explicit IntrinMatcher(const BlockizePlan& plan) : plan_(plan) {
    for (const IterSplit& s : plan.splits)
      if (s.has_outer) a_.bind(s.outer_iv.var, s.outer_iv.dom);
  }

  // Empty on a match, else what differs.
  std::string match(const ir::PrimFunc& desc) {
    auto* droot = desc->body.as<ir::BlockRealizeNode>();
    Stmt ds = droot->block->body;
    std::vector<const ir::ForNode*> dloops;
    while (auto* f = ds.as<ir::ForNode>()) {
      dloops.push_back(f);
      ds = f->body;
    }
    auto* drealize = ds.as<ir::BlockRealizeNode>();
    if (!drealize) return "the intrinsic's description is not a loop nest around one block";
    if (dloops.size() != plan_.loops.size())
      return fmt::format("the loop nest has {} loops, the intrinsic's has {}", plan_.loops.size(),
                         dloops.size());
    for (size_t i = 0; i < dloops.size(); ++i) {
      const ir::ForNode* p = plan_.loops[i];
      const ir::ForNode* d = dloops[i];
      auto dext = ir::as_const_int(d->extent), dmin = ir::as_const_int(d->min);
      if (!dext || !dmin || *dext != *ir::as_const_int(p->extent) ||
          *dmin != *ir::as_const_int(p->min))
        return fmt::format(
            "loop '{}' has range [{}, {}), the intrinsic's loop '{}' has [{}, {} + {})",
            p->loop_var.name(), ir::to_string(p->min),
            *ir::as_const_int(p->min) + *ir::as_const_int(p->extent), d->loop_var.name(),
            ir::to_string(d->min), ir::to_string(d->min), ir::to_string(d->extent));
      vars_[d->loop_var.get()] = p->loop_var;
      a_.bind(p->loop_var, ir::Range(p->min, p->extent));
    }
    const ir::BlockNode* pb = plan_.inner.get();
    const ir::BlockNode* db = drealize->block.get();
    auto* prealize = plan_.inner_realize.as<ir::BlockRealizeNode>();
    if (pb->iter_vars.size() != db->iter_vars.size())
      return fmt::format(
          "block '{}' has {} iterators inside the loop, the intrinsic's block has {}", pb->name,
          pb->iter_vars.size(), db->iter_vars.size());
    for (size_t k = 0; k < pb->iter_vars.size(); ++k) {
      const ir::IterVar& p = pb->iter_vars[k];
      const ir::IterVar& d = db->iter_vars[k];
      if (p.kind != d.kind)
        return fmt::format("iterator {} of block '{}' is {}, the intrinsic's is {}", k, pb->name,
                           ir::iter_kind_name(p.kind), ir::iter_kind_name(d.kind));
      if (!prove_equal(p.dom.min, d.dom.min) || !prove_equal(p.dom.extent, d.dom.extent))
        return fmt::format("iterator {} of block '{}' has extent {}, the intrinsic's has {}", k,
                           pb->name, ir::to_string(p.dom.extent), ir::to_string(d.dom.extent));
      if (!prove_equal(prealize->iter_values[k], d_translate(drealize->iter_values[k])))
        return fmt::format("iterator {} of block '{}' is bound to {}, the intrinsic's to {}", k,
                           pb->name, ir::to_string(prealize->iter_values[k]),
                           ir::to_string(drealize->iter_values[k]));
      vars_[d.var.get()] = p.var;
      a_.bind(p.var, p.dom);
    }
    if (!ir::is_true(drealize->predicate)) return "the intrinsic's block has a predicate";
    if (pb->init.defined() != db->init.defined())
      return pb->init.defined() ? fmt::format(
                                      "block '{}' keeps its init inside the loop (the reduction "
                                      "does not extend outside "
                                      "it), the intrinsic's block has none",
                                      pb->name)
                                : "the intrinsic's block has an init, the program's block has none";
    if (pb->init.defined() && !match_stmt(pb->init, db->init)) return why_;
    if (!match_stmt(pb->body, db->body)) return why_;
    for (const ir::Buffer& b : desc->params)
      if (!buffers_.count(b.get()))
        return fmt::format("the intrinsic's buffer '{}' is not accessed", b->name);
    return "";
  }

  // desc param i -> where it lies in the program (after a successful match).
  const BufferBinding& binding(const ir::Buffer& desc_param) const {
    return buffers_.at(desc_param.get());
  }

 private:
  bool fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return false;
  }
  bool prove_equal(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return false;
    if (a.dtype() != b.dtype())
      return a_.can_prove_equal(a_.simplify(ir::cast(kInt64, a)), a_.simplify(ir::cast(kInt64, b)));
    return a_.can_prove_equal(a, b);
  }
  // A desc expression in program variables; undefined if it uses a variable without a match.
  Expr d_translate(const Expr& e) {
    bool unmatched = false;
    Expr out = ir::substitute(e, [&](const Var& v) -> Expr {
      auto it = vars_.find(v.get());
      if (it == vars_.end()) {
        unmatched = true;
        return Expr();
      }
      return it->second;
    });
    return unmatched ? Expr() : out;
  }

  bool bind_buffer(const ir::Buffer& p, const ir::Buffer& d) {
    if (auto it = buffers_.find(d.get()); it != buffers_.end()) {
      if (it->second.buffer.same_as(p)) return true;
      return fail(fmt::format("the intrinsic's buffer '{}' stands for both '{}' and '{}'", d->name,
                              it->second.buffer->name, p->name));
    }
    for (const auto& [dn, b] : buffers_)
      if (b.buffer.same_as(p))
        return fail(fmt::format("buffer '{}' stands for both '{}' and '{}' of the intrinsic",
                                p->name, dn->name, d->name));
    if (p->dtype != d->dtype)
      return fail(fmt::format("buffer '{}' is {}, the intrinsic's '{}' is {}", p->name,
                              p->dtype.str(), d->name, d->dtype.str()));
    const ir::BufferRegion* region = nullptr;
    for (const auto* list : {&plan_.outer->writes, &plan_.outer->reads})
      for (const ir::BufferRegion& r : *list)
        if (!region && r.buffer.same_as(p)) region = &r;
    if (!region) return fail(fmt::format("buffer '{}' has no region in the outer block", p->name));
    std::vector<int64_t> shape = ir::const_shape(d);
    auto describe = [&] {
      std::vector<std::string> dims;
      for (const ir::Range& r : region->region)
        dims.push_back(fmt::format("{}:+{}", ir::to_string(r.min), ir::to_string(r.extent)));
      return fmt::format("the region {}[{}] does not fit the intrinsic's buffer '{}' of shape ({})",
                         p->name, fmt::join(dims, ", "), d->name, fmt::join(shape, ", "));
    };
    if (region->region.size() < shape.size()) return fail(describe());
    BufferBinding b{p, {}, region->region.size() - shape.size()};
    for (size_t i = 0; i < region->region.size(); ++i) {
      int64_t want = i < b.lead ? 1 : shape[i - b.lead];
      if (!ir::is_const_int(region->region[i].extent, want)) return fail(describe());
      b.offsets.push_back(region->region[i].min);
    }
    buffers_[d.get()] = std::move(b);
    return true;
  }

  bool match_access(const ir::Buffer& p, const std::vector<Expr>& pidx, const ir::Buffer& d,
                    const std::vector<Expr>& didx) {
    if (!bind_buffer(p, d)) return false;
    const BufferBinding& b = buffers_.at(d.get());
    if (pidx.size() != b.offsets.size() || didx.size() + b.lead != pidx.size())
      return fail(
          fmt::format("buffer '{}' is accessed with {} indices, the intrinsic's '{}' with {}",
                      p->name, pidx.size(), d->name, didx.size()));
    for (size_t i = 0; i < pidx.size(); ++i) {
      Expr want = b.offsets[i];
      if (i >= b.lead) {
        Expr t = d_translate(didx[i - b.lead]);
        if (!t.defined())
          return fail(
              fmt::format("an index of '{}' in the intrinsic uses an unknown variable", d->name));
        want = want + t;
      }
      if (!prove_equal(pidx[i], want))
        return fail(fmt::format("index {} of '{}' is {}, the intrinsic's access to '{}' needs {}",
                                i, p->name, ir::to_string(pidx[i]), d->name, ir::to_string(want)));
    }
    return true;
  }

  bool match_expr(const Expr& p, const Expr& d) {
    auto differ = [&] {
      return fail(
          fmt::format("{} does not match the intrinsic's {}", ir::to_string(p), ir::to_string(d)));
    };
    if (p.kind() != d.kind() || p.dtype() != d.dtype()) return differ();
    switch (p.kind()) {
      case ir::ExprKind::kIntImm:
        return p.as<ir::IntImmNode>()->value == d.as<ir::IntImmNode>()->value || differ();
      case ir::ExprKind::kFloatImm:
        return p.as<ir::FloatImmNode>()->value == d.as<ir::FloatImmNode>()->value || differ();
      case ir::ExprKind::kVar: {
        auto it = vars_.find(d.as<ir::VarNode>());
        return (it != vars_.end() && it->second.same_as(p)) || differ();
      }
      case ir::ExprKind::kNot:
        return match_expr(p.as<ir::NotNode>()->a, d.as<ir::NotNode>()->a);
      case ir::ExprKind::kCast:
        return match_expr(p.as<ir::CastNode>()->value, d.as<ir::CastNode>()->value);
      case ir::ExprKind::kSelect: {
        auto *x = p.as<ir::SelectNode>(), *y = d.as<ir::SelectNode>();
        return match_expr(x->condition, y->condition) && match_expr(x->true_value, y->true_value) &&
               match_expr(x->false_value, y->false_value);
      }
      case ir::ExprKind::kCall: {
        auto *x = p.as<ir::CallNode>(), *y = d.as<ir::CallNode>();
        if (x->op != y->op || x->args.size() != y->args.size()) return differ();
        for (size_t i = 0; i < x->args.size(); ++i)
          if (!match_expr(x->args[i], y->args[i])) return false;
        return true;
      }
      case ir::ExprKind::kBufferLoad: {
        auto *x = p.as<ir::BufferLoadNode>(), *y = d.as<ir::BufferLoadNode>();
        return match_access(x->buffer, x->indices, y->buffer, y->indices);
      }
      default:
        if (auto* x = p.as_binary())
          return match_expr(x->a, d.as_binary()->a) && match_expr(x->b, d.as_binary()->b);
        return fail(
            fmt::format("{} is not supported in a tensorized computation", ir::to_string(p)));
    }
  }

  bool match_stmt(const Stmt& p, const Stmt& d) {
    if (p.kind() != d.kind())
      return fail(fmt::format("statement '{}' does not match the intrinsic's '{}'", first_line(p),
                              first_line(d)));
    switch (p.kind()) {
      case ir::StmtKind::kBufferStore: {
        auto *x = p.as<ir::BufferStoreNode>(), *y = d.as<ir::BufferStoreNode>();
        return match_access(x->buffer, x->indices, y->buffer, y->indices) &&
               match_expr(x->value, y->value);
      }
      case ir::StmtKind::kSeqStmt: {
        auto *x = p.as<ir::SeqStmtNode>(), *y = d.as<ir::SeqStmtNode>();
        if (x->seq.size() != y->seq.size())
          return fail(fmt::format("{} statements do not match the intrinsic's {}", x->seq.size(),
                                  y->seq.size()));
        for (size_t i = 0; i < x->seq.size(); ++i)
          if (!match_stmt(x->seq[i], y->seq[i])) return false;
        return true;
      }
      case ir::StmtKind::kIfThenElse: {
        auto *x = p.as<ir::IfThenElseNode>(), *y = d.as<ir::IfThenElseNode>();
        if (x->else_case.defined() != y->else_case.defined())
          return fail("an if/else does not match the intrinsic's");
        return match_expr(x->condition, y->condition) && match_stmt(x->then_case, y->then_case) &&
               (!x->else_case.defined() || match_stmt(x->else_case, y->else_case));
      }
      case ir::StmtKind::kEvaluate:
        return match_expr(p.as<ir::EvaluateNode>()->value, d.as<ir::EvaluateNode>()->value);
      default:
        return fail(fmt::format("statement '{}' is not supported in a tensorized computation",
                                first_line(p)));
    }
  }

  static std::string first_line(const Stmt& s) {
    std::string text = ir::to_string(s);
    size_t a = text.find_first_not_of(' ');
    size_t b = text.find('\n', a);
    return text.substr(a == std::string::npos ? 0 : a,
                       b == std::string::npos ? std::string::npos : b - a);
  }

  const BlockizePlan& plan_;
  arith::Analyzer a_;
  std::unordered_map<const ir::VarNode*, Var> vars_;  // desc variable -> program variable
  std::unordered_map<const ir::BufferNode*, BufferBinding> buffers_;
  std::string why_;
};
// The impl body with its params rebound into the program and fresh variables, buffers and block
// names (an intrinsic may be used many times in one program).
class ImplRewriter : public ir::StmtExprMutator {
 public:
  ImplRewriter(std::unordered_map<const ir::BufferNode*, BufferBinding> params, BlockNames* names)
      : params_(std::move(params)), names_(names) {}

  ir::Buffer clone_alloc(const ir::Buffer& b) {
    ir::Buffer c = ir::with_name(b, b->name);
    allocs_[b.get()] = c;
    return c;
  }

 protected:
  Expr mutate_var(const ir::VarNode* n, const Expr& self) override {
    auto it = vars_.find(n);
    return it == vars_.end() ? self : it->second;
  }
  Var fresh(const Var& v) {
    Var f(v.name(), v.dtype());
    vars_[v.get()] = f;
    return f;
  }
  std::vector<Expr> map_indices(const ir::Buffer& b, std::vector<Expr> idx) {
    auto it = params_.find(b.get());
    if (it == params_.end()) return idx;
    const BufferBinding& bb = it->second;
    std::vector<Expr> out;
    for (size_t i = 0; i < bb.offsets.size(); ++i)
      out.push_back(i < bb.lead ? bb.offsets[i] : a_.simplify(bb.offsets[i] + idx[i - bb.lead]));
    return out;
  }
  ir::Buffer map_buffer(const ir::Buffer& b) {
    if (auto it = params_.find(b.get()); it != params_.end()) return it->second.buffer;
    if (auto it = allocs_.find(b.get()); it != allocs_.end()) return it->second;
    return b;
  }
  ir::BufferRegion map_region(const ir::BufferRegion& r) {
    ir::BufferRegion m = mutate_region(r);
    auto it = params_.find(r.buffer.get());
    if (it == params_.end()) return ir::BufferRegion(map_buffer(r.buffer), m.region);
    const BufferBinding& bb = it->second;
    std::vector<ir::Range> out;
    for (size_t i = 0; i < bb.offsets.size(); ++i) {
      if (i < bb.lead)
        out.emplace_back(bb.offsets[i], ir::make_int(1, bb.offsets[i].dtype()));
      else
        out.emplace_back(a_.simplify(bb.offsets[i] + m.region[i - bb.lead].min),
                         m.region[i - bb.lead].extent);
    }
    return ir::BufferRegion(bb.buffer, std::move(out));
  }
  Expr mutate_buffer_load(const ir::BufferLoadNode* n, const Expr&) override {
    std::vector<Expr> idx;
    mutate_exprs(n->indices, &idx);
    return ir::buffer_load(map_buffer(n->buffer), map_indices(n->buffer, std::move(idx)));
  }
  Stmt mutate_buffer_store(const ir::BufferStoreNode* n, const Stmt&) override {
    std::vector<Expr> idx;
    mutate_exprs(n->indices, &idx);
    return ir::buffer_store(map_buffer(n->buffer), mutate_expr(n->value),
                            map_indices(n->buffer, std::move(idx)));
  }
  Stmt mutate_for(const ir::ForNode* n, const Stmt&) override {
    Expr mn = mutate_expr(n->min), ext = mutate_expr(n->extent);
    Var v = fresh(n->loop_var);
    return ir::for_loop(v, mn, ext, n->for_kind, mutate_stmt(n->body), n->thread_tag,
                        n->annotations);
  }
  Expr mutate_let(const ir::LetNode* n, const Expr&) override {
    Expr value = mutate_expr(n->value);
    Var v = fresh(n->var);
    return ir::let(v, value, mutate_expr(n->body));
  }
  Stmt mutate_block(const ir::BlockNode* n, const Stmt&) override {
    std::vector<ir::IterVar> ivs;
    for (const ir::IterVar& iv : n->iter_vars) {
      ir::Range dom = mutate_range(iv.dom);
      ivs.push_back(ir::IterVar{fresh(iv.var), dom, iv.kind});
    }
    std::vector<ir::Buffer> allocs;
    for (const ir::Buffer& b : n->alloc_buffers) allocs.push_back(clone_alloc(b));
    std::vector<ir::BufferRegion> reads, writes;
    for (const ir::BufferRegion& r : n->reads) reads.push_back(map_region(r));
    for (const ir::BufferRegion& r : n->writes) writes.push_back(map_region(r));
    Stmt init = n->init.defined() ? mutate_stmt(n->init) : Stmt();
    return ir::make_block(names_->fresh(n->name), std::move(ivs), std::move(reads),
                          std::move(writes), init, mutate_stmt(n->body), std::move(allocs),
                          n->annotations);
  }

 private:
  std::unordered_map<const ir::BufferNode*, BufferBinding> params_;
  BlockNames* names_;
  std::unordered_map<const ir::VarNode*, Expr> vars_;
  std::unordered_map<const ir::BufferNode*, ir::Buffer> allocs_;
  arith::Analyzer a_;
};

}  // namespace

Status tensorize(ScheduleState& state, const SRef& loop, const std::string& intrin_name) {
  if (Status st = check_loop(loop, "tensorize"); !st) return st.error();
  const TensorIntrin* intrin = find_tensor_intrin(intrin_name);
  if (!intrin)
    return ScheduleError(ErrorCode::kUnknownName,
                         fmt::format("tensorize: unknown tensor intrinsic '{}' (known: {})",
                                     intrin_name, fmt::join(tensor_intrin_names(), ", ")),
                         loop->stmt);
  TYCHE_TRY_ASSIGN(plan, plan_blockize(state, loop.get(), "tensorize"));
  IntrinMatcher matcher(plan);
  std::string why = matcher.match(intrin->desc);
  if (!why.empty())
    return ScheduleError(
        ErrorCode::kIntrinsicMismatch,
        fmt::format("tensorize: the computation under loop '{}' does not match intrinsic '{}': {}",
                    loop->as_for()->loop_var.name(), intrin_name, why),
        loop->stmt);
  // impl param i stands for desc param i.
  std::unordered_map<const ir::BufferNode*, BufferBinding> params;
  for (size_t i = 0; i < intrin->impl->params.size(); ++i)
    params[intrin->impl->params[i].get()] = matcher.binding(intrin->desc->params[i]);
  BlockNames names(state.func());
  ImplRewriter rewriter(std::move(params), &names);
  const ir::BlockNode* impl_root = intrin->impl->body.as<ir::BlockRealizeNode>()->block.get();
  std::vector<ir::Buffer> allocs = plan.outer->alloc_buffers;
  for (const ir::Buffer& b : impl_root->alloc_buffers) allocs.push_back(rewriter.clone_alloc(b));
  Stmt body = rewriter.mutate_stmt(impl_root->body);
  const ir::BlockNode* o = plan.outer.get();
  ir::Block outer = ir::make_block(o->name, o->iter_vars, o->reads, o->writes, o->init, body,
                                   allocs, o->annotations);
  auto* realize = plan.outer_realize.as<ir::BlockRealizeNode>();
  state.replace(loop, ir::block_realize(realize->iter_values, realize->predicate, outer));
  return ok_status();
}

// ---- instructions ----

namespace {

Status apply_tensorize(InstructionContext& ctx, LoopRV loop, std::string tensor_intrin) {
  TYCHE_TRY_ASSIGN(sref, ctx.sref(loop));
  return tensorize(ctx.state(), sref, tensor_intrin);
}

}  // namespace

TYCHE_INSTRUCTION(tensorize, apply_tensorize, {{"loop"}, {"tensor_intrin"}})

Status Schedule::tensorize(const LoopRV& loop, const std::string& tensor_intrin) {
  return tensorize_kind()(*this, loop, tensor_intrin);
}

}  // namespace tyche::schedule
