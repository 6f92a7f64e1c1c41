// MultiLevelTilingWithIntrin (MetaSchedule's rule of that name, for the CPUs' dot-product and
// tile intrinsics): a multiply-accumulate whose types an intrinsic takes (u8 x s8 -> s32 for VNNI
// and AMX, bfloat16 -> float32 for AVX512-BF16 and AMX) gets its innermost tile shaped as the
// intrinsic (N output columns by G reduction steps for a dot; M rows by N columns by K steps for a
// tile) and tensorized; the rest is tiled as MultiLevelTiling tiles it.
//
// Steps of a design (multi_level_tiling.h's pipeline, with the intrinsic's steps added):
// - pack the weights: the operand that holds both the output's last index j and the reduction
//   index k is copied into [.., j // N, k // G, j % N, k % G], so every N x G tile is one
//   contiguous vector, and a tile's K/G x N x G weights consecutive rows (a layout-free weight is
//   packed once, when it is loaded; any other operand at every call, as oneDNN packs a matmul's
//   B), the copy walking the packed layout in order;
// - tile: j split by N and k by the intrinsic's K (G for a dot), and a tile's i by M, innermost;
//   the other loops and the outer parts tiled into the structure's levels (sampled sizes), with
//   the write cache as MultiLevelTiling places it;
// - tensorize the innermost tile with the intrinsic.
// Extents that the intrinsic's shape does not divide are padded first (pad_einsum): the block
// computes on zero-padded copies, the padded weights' copy being their packing. Of the intrinsics
// that take the block's types, the one that computes least, padding included, is used (C2D's 8
// output channels: the 8-lane form, not the 16-lane one half idle), AMX's tiles counting an
// eighth of their work (IntrinMatch::cost: a matrix-vector product is VNNI's, its one row
// padded to 16). Blocks whose types no intrinsic takes are left to MultiLevelTiling.
#include "tune/space/multi_level_tiling_with_intrin.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/layout_free.h"
#include "schedule/analysis.h"
#include "schedule/tensor_intrin.h"
#include "tune/space/rule_util.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::LoopRV;
using schedule::Schedule;

namespace {

int dim_of(const ir::BufferRegion& r, const ir::VarNode* v) {
  for (size_t d = 0; d < r.region.size(); ++d)
    if (point_var(r.region[d]) == v) return static_cast<int>(d);
  return -1;
}

}  // namespace

std::optional<IntrinMatch> match_dot_intrin(const Schedule& sch, const BlockRV& block,
                                            const schedule::TensorIntrin& intrin) {
  const ir::BlockNode* b = block_node(sch, block);
  if (!b || b->writes.size() != 1 || b->reads.size() < 2 || !b->init.defined()) return std::nullopt;
  // A dot: A[G], B[N, G], C[N]. A tile: A[M, K], B[K/G, N, G], C[M, N].
  const std::vector<ir::Buffer>& p = intrin.desc->params;
  if (p.size() != 3) return std::nullopt;
  const bool tile = p[2]->shape.size() == 2;
  const ir::BufferRegion& out = b->writes[0];
  if (out.buffer->dtype != p[2]->dtype || out.region.size() < (tile ? 2u : 1u)) return std::nullopt;
  const ir::VarNode* j = point_var(out.region.back());
  const ir::IterVar* j_iv = j ? iter_of(b, j) : nullptr;
  if (!j_iv || j_iv->kind != ir::IterKind::kSpatial) return std::nullopt;
  IntrinMatch m;
  if (tile) {
    m.rows = ir::const_shape(p[2])[0];
    m.lanes = ir::const_shape(p[2])[1];
    m.depth = ir::const_shape(p[0])[1];
    m.group = ir::const_shape(p[1])[2];
  } else {
    m.lanes = ir::const_shape(p[1])[0];
    m.group = m.depth = ir::const_shape(p[1])[1];
  }
  // The rows: the output's second-last iterator (a tile's M; a dot's repetitions).
  const ir::VarNode* i =
      out.region.size() >= 2 ? point_var(out.region[out.region.size() - 2]) : nullptr;
  const ir::IterVar* i_iv = i ? iter_of(b, i) : nullptr;
  if (i_iv && i_iv->kind != ir::IterKind::kSpatial) i_iv = nullptr;
  if (auto e = i_iv ? ir::as_const_int(i_iv->dom.extent) : std::nullopt) m.i_extent = *e;
  if (tile && !i_iv) return std::nullopt;
  // A: the activations, read along a reduce iterator k (its last index) and not along j.
  for (size_t r = 0; r < b->reads.size(); ++r) {
    const ir::BufferRegion& a = b->reads[r];
    if (a.buffer.get() == out.buffer.get() || a.buffer->dtype != p[0]->dtype || a.region.empty())
      continue;
    const ir::VarNode* k = point_var(a.region.back());
    const ir::IterVar* k_iv = k ? iter_of(b, k) : nullptr;
    if (!k_iv || k_iv->kind != ir::IterKind::kReduce || dim_of(a, j) >= 0) continue;
    // A tile's rows are the activations' second-last dimension.
    if (tile && (a.region.size() < 2 || point_var(a.region[a.region.size() - 2]) != i)) continue;
    // B: the weights, read along both j and k.
    for (size_t w = 0; w < b->reads.size(); ++w) {
      const ir::BufferRegion& wr = b->reads[w];
      if (w == r || wr.buffer->dtype != p[1]->dtype) continue;
      int jd = dim_of(wr, j), kd = dim_of(wr, k);
      if (jd < 0 || kd < 0 || (tile && dim_of(wr, i) >= 0)) continue;
      auto j_extent = ir::as_const_int(j_iv->dom.extent),
           k_extent = ir::as_const_int(k_iv->dom.extent);
      if (!j_extent || !k_extent) return std::nullopt;
      m.j_extent = *j_extent;
      m.k_extent = *k_extent;
      m.j_iter = static_cast<size_t>(j_iv - b->iter_vars.data());
      m.k_iter = static_cast<size_t>(k_iv - b->iter_vars.data());
      m.weights = w;
      m.weight_j = jd;
      m.weight_k = kd;
      m.j = j;
      m.k = k;
      if (tile) {
        m.i = i;
        m.i_iter = static_cast<size_t>(i_iv - b->iter_vars.data());
      }
      return m;
    }
  }
  return std::nullopt;
}

MultiLevelTilingWithIntrin::MultiLevelTilingWithIntrin(std::vector<std::string> intrins,
                                                       MultiLevelTilingConfig config)
    : MultiLevelTiling(std::move(config)), intrins_(std::move(intrins)) {}

std::vector<Schedule> MultiLevelTilingWithIntrin::apply(Schedule sch, const BlockRV& block) {
  std::vector<Schedule> out;
  if (!needs_multi_level_tiling(sch, block)) {
    out.push_back(std::move(sch));
    return out;
  }
  const std::string* best = nullptr;
  std::optional<IntrinMatch> match;
  for (const std::string& name : intrins_) {
    const schedule::TensorIntrin* intrin = schedule::find_tensor_intrin(name);
    auto m = intrin ? match_dot_intrin(sch, block, *intrin) : std::nullopt;
    if (m && (!match || m->cost() < match->cost())) {
      best = &name;
      match = m;
    }
  }
  if (match && match->needs_padding()) {
    std::vector<int64_t> padding(block_node(sch, block)->iter_vars.size(), 1);
    padding[match->j_iter] = match->lanes;
    padding[match->k_iter] = match->depth;
    if (match->rows) padding[match->i_iter] = match->rows;
    Schedule padded = sch.copy();
    if (padded.pad_einsum(block, padding).ok()) {
      sch = std::move(padded);
      match = match_dot_intrin(sch, block, *schedule::find_tensor_intrin(*best));
    } else {
      match.reset();  // a block pad_einsum refuses (an index mixing j or k): MultiLevelTiling's
    }
  }
  if (match) {
    for (const TilingDesign& design : designs()) {
      if (design.padded_rows || design.read_cache)
        continue;  // the packing is this rule's read cache
      for (Schedule& s :
           run_pipeline(TilingState{sch.copy(), block, design, std::nullopt, {}, std::nullopt},
                        intrin_steps(*match, *best)))
        out.push_back(std::move(s));
    }
    if (!out.empty()) return out;
  }
  out.push_back(std::move(sch));  // no intrinsic: MultiLevelTiling's business
  return out;
}

std::vector<MultiLevelTiling::Step> MultiLevelTilingWithIntrin::intrin_steps(
    const IntrinMatch& m, const std::string& name) const {
  return {[this](TilingState s) { return add_write_cache(std::move(s)); },
          [this, m](TilingState s) { return pack_weights(std::move(s), m); },
          [this, m](TilingState s) { return tile_for_intrin(std::move(s), m); },
          [this](TilingState s) { return place_write_cache(std::move(s)); },
          [name, m](TilingState s) -> std::vector<TilingState> {
            // The intrinsic's tile: the innermost two loops (j % N, k % G), or three (i % M too).
            const size_t inner = m.rows ? 3 : 2;
            auto loops = s.sch.get_loops(s.block);
            if (!loops.ok() || loops.value().size() < inner) return {};
            const LoopRV tile = loops.value()[loops.value().size() - inner];
            if (!s.sch.tensorize(tile, name).ok()) return {};
            return single(std::move(s));
          }};
}

std::vector<TilingState> MultiLevelTilingWithIntrin::pack_weights(TilingState s,
                                                                  const IntrinMatch& m) const {
  Schedule& sch = s.sch;
  const ir::BlockNode* b = block_node(sch, s.block);
  ir::Buffer weights = b->reads[m.weights].buffer;
  const size_t rank = b->reads[m.weights].region.size();
  // Padded weights (pad_einsum) already have their copy, which becomes the packing; else a cache.
  std::optional<schedule::BlockRV> stage;
  if (auto producers = sch.get_producers(s.block); producers.ok())
    for (const schedule::BlockRV& p : producers.value()) {
      const ir::BlockNode* pb = block_node(sch, p);
      if (pb->writes.size() == 1 && pb->writes[0].buffer.get() == weights.get() &&
          pb->reads.size() == 1) {
        stage = p;
        weights = pb->reads[0].buffer;
      }
    }
  if (!stage) {
    auto cache = sch.cache_read(s.block, static_cast<int>(m.weights), "global");
    if (!cache.ok()) return {};
    stage = cache.value();
  }
  const schedule::BlockRV& packing = *stage;
  // (a0, .., an) -> (the other dims in order, aj // N, ak // G, aj % N, ak % G)
  std::string in, outer, out;
  for (size_t d = 0; d < rank; ++d) {
    in += fmt::format("{}a{}", d ? ", " : "", d);
    if (static_cast<int>(d) != m.weight_j && static_cast<int>(d) != m.weight_k)
      outer += fmt::format("a{}, ", d);
  }
  out = fmt::format("{}a{} // {}, a{} // {}, a{} % {}, a{} % {}", outer, m.weight_j, m.lanes,
                    m.weight_k, m.group, m.weight_j, m.lanes, m.weight_k, m.group);
  if (!sch.transform_layout(packing, 0, fmt::format("lambda {}: ({})", in, out)).ok()) return {};
  // The copy walks the packed layout in order: its writes are contiguous, the innermost loop reads
  // G rows at once (GMM-4-U8S8, packing at every call: 2.8 ms against 3.0 in B's order, Zen 4).
  auto copy_loops = sch.get_loops(packing);
  if (!copy_loops.ok() || copy_loops.value().size() != rank) return {};
  auto j_parts =
      sch.split(copy_loops.value()[m.weight_j], {std::nullopt, schedule::ExprArg(m.lanes)});
  auto k_parts =
      sch.split(copy_loops.value()[m.weight_k], {std::nullopt, schedule::ExprArg(m.group)});
  if (!j_parts.ok() || !k_parts.ok()) return {};
  std::vector<LoopRV> order;
  for (size_t d = 0; d < rank; ++d)
    if (static_cast<int>(d) != m.weight_j && static_cast<int>(d) != m.weight_k)
      order.push_back(copy_loops.value()[d]);
  for (const LoopRV& l :
       {j_parts.value()[0], k_parts.value()[0], j_parts.value()[1], k_parts.value()[1]})
    order.push_back(l);
  if (!sch.reorder(order).ok()) return {};
  // A model's weights: packed once, when they are loaded (lower/layout_rewrite.h), padded ones too
  // (their packed copy is larger: callers allocate it as the preproc's output).
  std::vector<size_t> constant = ir::layout_free_params(sch.func());
  for (size_t p : constant)
    if (p < sch.func()->params.size() && sch.func()->params[p].get() == weights.get())
      (void)sch.annotate(packing, ir::ann::kLayoutRewritePreproc, int64_t{1});
  return single(std::move(s));
}

std::vector<TilingState> MultiLevelTilingWithIntrin::tile_for_intrin(TilingState s,
                                                                     const IntrinMatch& m) const {
  Schedule& sch = s.sch;
  auto loops = sch.get_loops(s.block);
  if (!loops.ok()) return {};
  const schedule::SRef block_sref = sch.block_sref(s.block).value();
  const ir::BlockNode* b = block_node(sch, s.block);
  const ir::BlockRealizeNode* realize = nullptr;
  for (const ir::BlockRealizeNode* r :
       schedule::realizes_under(sch.loop_sref(loops.value().back()).value()->as_for()->body))
    if (r->block.get() == b) realize = r;
  if (!realize) return {};
  // The loop that binds an iterator (untiled: each loop binds one iterator by its var).
  auto binding_loop = [&](const ir::VarNode* iter) -> std::optional<size_t> {
    const ir::VarNode* v = nullptr;
    for (size_t i = 0; i < b->iter_vars.size(); ++i)
      if (b->iter_vars[i].var.get() == iter) v = realize->iter_values[i].as<ir::VarNode>();
    for (size_t i = 0; v && i < loops.value().size(); ++i)
      if (sch.loop_sref(loops.value()[i]).value()->as_for()->loop_var.get() == v) return i;
    return std::nullopt;
  };
  auto jl = binding_loop(m.j), kl = binding_loop(m.k);
  if (!jl || !kl) return {};
  size_t i_loop = loops.value().size();  // past the last loop when there is no i (a dot)
  if (m.rows) {
    auto found = binding_loop(m.i);
    if (!found) return {};
    i_loop = *found;
  }
  std::vector<LoopIterType> types;
  for (const LoopRV& loop : loops.value()) {
    types.push_back(
        loop_iter_type(sch.state(), block_sref.get(), sch.loop_sref(loop).value().get()));
    if (types.back() == LoopIterType::kMixed) return {};
  }
  auto j_parts = sch.split(loops.value()[*jl], {std::nullopt, schedule::ExprArg(m.lanes)});
  auto k_parts = sch.split(loops.value()[*kl], {std::nullopt, schedule::ExprArg(m.depth)});
  if (!j_parts.ok() || !k_parts.ok()) return {};
  std::optional<std::vector<LoopRV>> i_parts;
  if (m.rows) {
    auto parts = sch.split(loops.value()[i_loop], {std::nullopt, schedule::ExprArg(m.rows)});
    if (!parts.ok()) return {};
    i_parts = parts.value();
  }
  std::vector<std::vector<LoopRV>>& tiles = s.tiles;
  tiles.assign(levels(), {});
  for (size_t li = 0; li < loops.value().size(); ++li) {
    LoopRV loop = li == *jl      ? j_parts.value()[0]
                  : li == *kl    ? k_parts.value()[0]
                  : li == i_loop ? (*i_parts)[0]
                                 : loops.value()[li];
    const std::vector<int>& idx = types[li] == LoopIterType::kSpatial ? s_levels() : r_levels();
    if (idx.empty()) return {};
    if (idx.size() == 1) {
      tiles[idx[0]].push_back(loop);
      continue;
    }
    auto factors =
        sch.sample_perfect_tile(loop, static_cast<int>(idx.size()), config().max_innermost_factor);
    if (!factors.ok()) return {};
    std::vector<std::optional<schedule::ExprArg>> fs;
    for (const schedule::ExprRV& f : factors.value()) fs.emplace_back(f);
    auto parts = sch.split(loop, fs);
    if (!parts.ok()) return {};
    for (size_t i = 0; i < idx.size(); ++i) tiles[idx[i]].push_back(parts.value()[i]);
  }
  std::vector<LoopRV> order;
  for (const auto& t : tiles) order.insert(order.end(), t.begin(), t.end());
  if (i_parts) order.push_back((*i_parts)[1]);
  order.push_back(j_parts.value()[1]);
  order.push_back(k_parts.value()[1]);
  if (!sch.reorder(order).ok()) return {};
  return single(std::move(s));
}

std::vector<std::string> cpu_dot_intrins(const std::vector<std::string>& features) {
  std::vector<std::string> out;
  for (const char* name :
       {"x86_amx_tile_16x16x64_u8s8", "x86_amx_tile_16x16x32_bf16", "x86_avx512_vnni_dot_16x4_u8s8",
        "x86_avx_vnni_dot_8x4_u8s8", "x86_avx2_dot_8x4_u8s8", "x86_avx512_bf16_dot_16x2_bf16",
        "x86_avx512_bf16_dot_8x2_bf16"}) {
    const schedule::TensorIntrin* t = schedule::find_tensor_intrin(name);
    if (!t || !t->available_on(features)) continue;
    // AVX2's portable form only where no VNNI form takes u8 x s8.
    if (std::string(name).find("avx2") != std::string::npos && !out.empty() &&
        out.back().find("u8s8") != std::string::npos)
      continue;
    out.emplace_back(name);
  }
  return out;
}

ScheduleRulePtr multi_level_tiling_with_intrin(std::vector<std::string> intrins,
                                               MultiLevelTilingConfig config) {
  return std::make_shared<MultiLevelTilingWithIntrin>(std::move(intrins), std::move(config));
}

}  // namespace tyche::tune

namespace tyche::tune {

namespace {

// Whether some multiply-accumulate block of `func` has `intrin`'s types (shape aside).
bool has_block_for(const ir::PrimFunc& func, const schedule::TensorIntrin& intrin) {
  const std::vector<ir::Buffer>& p = intrin.desc->params;
  struct Finder : ir::StmtExprVisitor {
    const std::vector<ir::Buffer>* p;
    bool found = false;
    void visit_block(const ir::BlockNode* b) override {
      if (b->init.defined() && b->writes.size() == 1 &&
          b->writes[0].buffer->dtype == (*p)[2]->dtype) {
        bool a = false, w = false;
        for (const ir::BufferRegion& r : b->reads) {
          if (r.buffer.get() == b->writes[0].buffer.get()) continue;
          a |= r.buffer->dtype == (*p)[0]->dtype;
          w |= r.buffer->dtype == (*p)[1]->dtype;
        }
        found |= a && w;
      }
      ir::StmtExprVisitor::visit_block(b);
    }
  } finder;
  finder.p = &p;
  finder.visit_stmt(func->body);
  return finder.found;
}

std::string requirement(const schedule::TensorIntrin& t) {
  std::vector<std::string> alternatives;
  for (const auto& all : t.requires_any)
    alternatives.push_back(fmt::format("{}", fmt::join(all, "+")));
  return fmt::format("{}", fmt::join(alternatives, " or "));
}

}  // namespace

std::string intrinsic_note(const ir::PrimFunc& func, const std::string& cpu_name,
                           const std::vector<std::string>& features) {
  std::vector<std::string> lacking;
  std::string used;
  std::vector<std::string> available = cpu_dot_intrins(features);
  for (const std::string& name : schedule::tensor_intrin_names()) {
    if (name.rfind("x86_", 0) != 0) continue;
    const schedule::TensorIntrin* t = schedule::find_tensor_intrin(name);
    if (!has_block_for(func, *t)) continue;
    if (!t->available_on(features))
      lacking.push_back(fmt::format("{} ({})", name, requirement(*t)));
    else if (used.empty() && std::find(available.begin(), available.end(), name) != available.end())
      used = name;
  }
  if (lacking.empty()) return "";
  return fmt::format("note: the CPU ({}) lacks {}; {}", cpu_name, fmt::join(lacking, ", "),
                     used.empty() ? "plain vector code computes it" : "using " + used + " instead");
}

}  // namespace tyche::tune
