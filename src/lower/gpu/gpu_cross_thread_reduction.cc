// Cross-thread reductions (what CrossThreadReduction schedules): a reduction block whose
// reduce iterators use a loop bound to threadIdx. The nest from the outermost loop of its
// reduction down to the block becomes, for each thread t of T (the thread loop moved to the top):
//   partial[0] = identity
//   the other loops of the nest { if (predicate) partial[0] = combine(partial[0], value) }
//   threads[t] = partial[0]
//   if (t < T - s0) threads[t] = combine(threads[t], threads[t + s0])   (s0: largest power of 2 <
//   T) for s = s0 / 2 ... 1: if (t < s) threads[t] = combine(threads[t], threads[t + s]) out[i] =
//   threads[0]                                                  (every thread stores it)
// partial is local (one per thread), threads shared; insert_thread_barriers puts the barriers
// between the steps. Every thread stores the result, so a later statement of the same kernel
// reads it whichever thread it runs on.
//
// With warp shuffles (CUDA), a reduction over threadIdx.x from 0 whose T is a power of two up to
// 32 or a multiple of 32 combines within each warp instead: partial = combine(partial,
// shuffle_down(partial, s)) for s = width/2 ... 1, lane 0 of each segment of width = min(T, 32)
// lanes ending with its total; above 32 threads, lane 0 of each warp stores its total in shared
// memory and every warp reduces those totals again; the result is lane 0's, shuffled to all.
#include <fmt/format.h>

#include <functional>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/reducer.h"
#include "ir/var_use.h"
#include "lower/gpu/gpu_lower.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

void split_conjuncts(const ir::Expr& e, std::vector<ir::Expr>* out) {
  if (ir::is_true(e)) return;
  if (e.kind() == ir::ExprKind::kAnd) {
    split_conjuncts(e.as_binary()->a, out);
    split_conjuncts(e.as_binary()->b, out);
    return;
  }
  out->push_back(e);
}

// The terms and-ed, with `bind` substituted; undefined when there are none.
ir::Expr conjunction(const std::vector<ir::Expr>& terms,
                     const std::function<ir::Expr(const ir::Var&)>& bind) {
  ir::Expr c;
  for (const ir::Expr& t : terms)
    c = c.defined() ? (c && ir::substitute(t, bind)) : ir::substitute(t, bind);
  return c;
}

bool is_thread_loop(const ir::ForNode* f) {
  return f->for_kind == ir::ForKind::kThreadBinding && f->thread_tag.starts_with("threadIdx");
}

constexpr int64_t kWarp = 32;

class CrossThreadReductionLowerer : public ir::StmtExprMutator {
 public:
  explicit CrossThreadReductionLowerer(bool warp_shuffles) : warp_shuffles_(warp_shuffles) {}

 protected:
  ir::Stmt mutate_for(const ir::ForNode* n, const ir::Stmt& self) override {
    // The chain of loops from here down to a block realize, if the subtree is one.
    std::vector<const ir::ForNode*> chain;
    ir::Stmt s = self;
    while (auto* f = s.as<ir::ForNode>()) {
      chain.push_back(f);
      s = f->body;
    }
    auto* realize = s.as<ir::BlockRealizeNode>();
    if (!realize || !uses_reduce(realize, chain.front()) || !reduces_across_threads(realize, chain))
      return StmtExprMutator::mutate_for(n, self);
    return lower(chain, realize);
  }

 private:
  static bool uses_reduce(const ir::BlockRealizeNode* r, const ir::ForNode* loop) {
    const ir::BlockNode* b = r->block.get();
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      if (b->iter_vars[i].kind == ir::IterKind::kReduce &&
          ir::uses_var(r->iter_values[i], loop->loop_var.get()))
        return true;
    return false;
  }
  static bool uses_spatial(const ir::BlockRealizeNode* r, const ir::ForNode* loop) {
    const ir::BlockNode* b = r->block.get();
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      if (b->iter_vars[i].kind != ir::IterKind::kReduce &&
          ir::uses_var(r->iter_values[i], loop->loop_var.get()))
        return true;
    return false;
  }
  static bool reduces_across_threads(const ir::BlockRealizeNode* r,
                                     const std::vector<const ir::ForNode*>& chain) {
    for (const ir::ForNode* f : chain)
      if (is_thread_loop(f) && uses_reduce(r, f)) return true;
    return false;
  }

  ir::Stmt lower(const std::vector<const ir::ForNode*>& chain,
                 const ir::BlockRealizeNode* realize) {
    const ir::BlockNode* b = realize->block.get();
    auto fail = [&](const std::string& why) {
      return Error(
          fmt::format("GPU lowering: the cross-thread reduction of block '{}' {}", b->name, why));
    };
    std::string why;
    std::optional<ir::Reducer> reducer = ir::match_reducer(b, &why);
    if (!reducer) throw fail(why);
    const ir::ForNode* thread = nullptr;
    ir::VarSet chain_vars;
    for (const ir::ForNode* f : chain) {
      chain_vars.insert(f->loop_var.get());
      if (uses_spatial(realize, f))
        throw fail(fmt::format("has loop '{}' of a spatial iterator inside its reduction",
                               f->loop_var.name()));
      if (f->for_kind == ir::ForKind::kThreadBinding && !is_thread_loop(f))
        throw fail(fmt::format("has loop '{}' bound to {} inside its reduction", f->loop_var.name(),
                               f->thread_tag));
      if (!is_thread_loop(f)) continue;
      if (thread) throw fail("has two loops bound to threads");
      thread = f;
    }
    auto extent = ir::as_const_int(thread->extent);
    if (!extent) throw fail("has a thread loop of non-constant extent");
    for (const ir::ForNode* f : chain)
      if (ir::uses_any(f->min, chain_vars) || ir::uses_any(f->extent, chain_vars))
        throw fail(fmt::format("has loop '{}' whose range depends on another loop of the reduction",
                               f->loop_var.name()));

    ir::Var t(thread->loop_var.name(), thread->loop_var.dtype());
    std::unordered_map<const ir::VarNode*, ir::Expr>
        binding;  // iter vars (and the thread loop's) -> in terms of t
    auto thread_to_t = [&](const ir::Var& v) {
      return v.get() == thread->loop_var.get() ? ir::Expr(t) : ir::Expr();
    };
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      binding[b->iter_vars[i].var.get()] = ir::substitute(realize->iter_values[i], thread_to_t);
    binding[thread->loop_var.get()] = t;
    auto bind = [&](const ir::Var& v) -> ir::Expr {
      auto it = binding.find(v.get());
      return it == binding.end() ? ir::Expr() : it->second;
    };
    // The predicate's terms on the reduction's loops guard each update; the others the store.
    std::vector<ir::Expr> terms, inner, outer;
    split_conjuncts(realize->predicate, &terms);
    for (const ir::Expr& c : terms) (ir::uses_any(c, chain_vars) ? inner : outer).push_back(c);
    for (const ir::Expr& c : inner) {
      ir::VarSet outside;
      ir::uses_var(c, [&](const ir::VarNode* v) {
        if (!chain_vars.count(v)) outside.insert(v);
        return false;
      });
      if (!outside.empty())
        throw fail(fmt::format("has a predicate term mixing its reduction with other loops: {}",
                               ir::to_string(c)));
    }

    DataType dtype = reducer->update->value.dtype();
    ir::Buffer partial = ir::make_buffer(b->name + "_partial", dtype, {ir::make_int(1)}, "local");
    ir::Buffer threads =
        ir::make_buffer(b->name + "_threads", dtype, {ir::make_int(*extent)}, "shared");
    ir::Expr zero = ir::make_int(0);
    auto combine = [&](ir::Expr a, ir::Expr v) {
      return ir::make_binary(reducer->combine, std::move(a), std::move(v));
    };

    ir::Stmt update = ir::buffer_store(
        partial, combine(ir::buffer_load(partial, {zero}), ir::substitute(reducer->value, bind)),
        {zero});
    ir::Expr inner_cond = conjunction(inner, bind);
    if (inner_cond.defined()) update = ir::if_then_else(inner_cond, update);
    ir::Stmt nest = update;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const ir::ForNode* f = *it;
      if (f == thread) continue;
      nest = ir::for_loop(f->loop_var, f->min, f->extent, f->for_kind, nest, f->thread_tag,
                          f->annotations);
    }

    ir::Expr index = t - thread->min;
    std::vector<ir::Stmt> steps;
    steps.push_back(ir::buffer_store(partial, reducer->init->value, {zero}));
    steps.push_back(nest);
    std::vector<ir::Expr> out_index;
    for (const ir::Expr& i : reducer->update->indices) out_index.push_back(ir::substitute(i, bind));
    ir::Expr outer_cond = conjunction(outer, bind);
    auto store_result = [&](ir::Expr value) {
      ir::Stmt store = ir::buffer_store(reducer->update->buffer, std::move(value), out_index);
      steps.push_back(outer_cond.defined() ? ir::if_then_else(outer_cond, store) : store);
    };

    if (warp_shuffles_ && thread->thread_tag == "threadIdx.x" && ir::is_const_int(thread->min, 0) &&
        ((*extent <= kWarp && (*extent & (*extent - 1)) == 0) || *extent % kWarp == 0)) {
      // Within each warp (segments of `width` lanes): lane 0 of a segment ends with its total.
      auto warp_reduce = [&](int64_t width) {
        for (int64_t off = width / 2; off >= 1; off /= 2) {
          ir::Expr p = ir::buffer_load(partial, {zero});
          ir::Expr other =
              ir::call(ir::CallOp::kWarpShuffleDown, {p, ir::make_int(off), ir::make_int(width)});
          steps.push_back(ir::buffer_store(partial, combine(p, other), {zero}));
        }
      };
      int64_t width = std::min(*extent, kWarp);
      warp_reduce(width);
      ir::Stmt per_thread;
      if (*extent >
          kWarp) {  // the warps' totals through shared memory, then one more warp reduction
        int64_t warps = *extent / kWarp;
        ir::Buffer totals =
            ir::make_buffer(b->name + "_warps", dtype, {ir::make_int(warps)}, "shared");
        ir::Expr lane_index = ir::floormod(t, ir::make_int(kWarp));
        steps.push_back(ir::if_then_else(lane_index == zero,
                                         ir::buffer_store(totals, ir::buffer_load(partial, {zero}),
                                                          {ir::floordiv(t, ir::make_int(kWarp))})));
        steps.push_back(ir::buffer_store(
            partial,
            ir::if_then_else(lane_index < ir::make_int(warps),
                             ir::buffer_load(totals, {lane_index}), reducer->init->value),
            {zero}));
        warp_reduce(kWarp);
        store_result(ir::call(ir::CallOp::kWarpShuffle,
                              {ir::buffer_load(partial, {zero}), zero, ir::make_int(kWarp)}));
        per_thread = ir::allocate(partial, ir::seq(std::move(steps)));
        return ir::allocate(
            totals, ir::for_loop(t, thread->min, thread->extent, ir::ForKind::kThreadBinding,
                                 per_thread, thread->thread_tag, thread->annotations));
      }
      store_result(ir::call(ir::CallOp::kWarpShuffle,
                            {ir::buffer_load(partial, {zero}), zero, ir::make_int(width)}));
      per_thread = ir::allocate(partial, ir::seq(std::move(steps)));
      return ir::for_loop(t, thread->min, thread->extent, ir::ForKind::kThreadBinding, per_thread,
                          thread->thread_tag, thread->annotations);
    }

    steps.push_back(ir::buffer_store(threads, ir::buffer_load(partial, {zero}), {index}));
    auto fold = [&](int64_t below, int64_t offset) {
      ir::Expr other = ir::buffer_load(threads, {index + ir::make_int(offset)});
      steps.push_back(ir::if_then_else(
          index < ir::make_int(below),
          ir::buffer_store(threads, combine(ir::buffer_load(threads, {index}), other), {index})));
    };
    int64_t s0 = 1;
    while (s0 * 2 < *extent) s0 *= 2;
    if (*extent > 1) fold(*extent - s0, s0);
    for (int64_t s = s0 / 2; s >= 1; s /= 2) fold(s, s);
    store_result(ir::buffer_load(threads, {zero}));

    // partial is allocated in the thread loop (one per thread), threads around it (one per block).
    ir::Stmt per_thread = ir::allocate(partial, ir::seq(std::move(steps)));
    return ir::allocate(threads,
                        ir::for_loop(t, thread->min, thread->extent, ir::ForKind::kThreadBinding,
                                     per_thread, thread->thread_tag, thread->annotations));
  }

  bool warp_shuffles_;
};

}  // namespace

ir::PrimFunc lower_cross_thread_reductions(const ir::PrimFunc& func, bool warp_shuffles) {
  return func.with_body(CrossThreadReductionLowerer(warp_shuffles).mutate_stmt(func->body));
}

}  // namespace tyche::lower
