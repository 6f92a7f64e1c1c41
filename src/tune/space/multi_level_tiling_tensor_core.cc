// MultiLevelTilingTensorCore: a float16 / bfloat16 matrix product accumulated in float32 tiled
// around a 16 x 16 x 16 tensor-core tile (extents padded to multiples of 16 first, pad_einsum), as
// TVM's cuda-tensorcore space tiles it, once per intrinsic family (mma.sync, WMMA: the fragments'
// scopes and the intrinsics' names are the family's):
// - the block accumulates into <family>.accumulator fragments (write cache), filled before the
//   reduction (decompose_reduction), written back per warp;
// - i, j and k are split by 16, the outer parts tiled into the structure's levels (sampled sizes),
//   the first three levels fused and bound to blockIdx.y, blockIdx.x and threadIdx.y (a warp
//   each: the instructions are warp-wide, threadIdx.x is the warp's 32 lanes);
// - each operand is staged in shared memory at the read-reuse level (a cooperative fetch by all
//   the block's threads, rows padded by 16 bytes against bank conflicts: storage_align; the
//   loop it sits in software-pipelined over 1 to 3 stages, cp.async on sm_80+) and
//   loaded into <family>.matrix_a / matrix_b fragments at the last R level (mma: with ldmatrix);
// - the fill, the loads, the update and the write-back are tensorized with the family's
//   intrinsics (cuda_wmma_*, cuda_mma_*).
// Blocks this rule does not take are left to MultiLevelTiling (the block keeps no annotation).
#include "tune/space/multi_level_tiling_tensor_core.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "ir/annotation_keys.h"
#include "schedule/analysis.h"
#include "support/error.h"
#include "tune/space/rule_util.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::LoopRV;
using schedule::Schedule;

namespace {

constexpr int64_t kTile = 16;

// The last two dimensions of a region as (row, column) iterators.
std::pair<const ir::VarNode*, const ir::VarNode*> last_two(const ir::BufferRegion& r) {
  if (r.region.size() < 2) return {nullptr, nullptr};
  return {point_var(r.region[r.region.size() - 2]), point_var(r.region.back())};
}

// Splits `block`'s last two loops (rows, columns: multiples of 16) into tiles of 16 x 16,
// tensorized with `intrin`.
bool tensorize_tiles(Schedule& sch, const BlockRV& block, const std::string& intrin) {
  auto loops = sch.get_loops(block);
  if (!loops.ok() || loops.value().size() < 2) return false;
  const std::vector<LoopRV>& l = loops.value();
  auto c = sch.split(l.back(), {std::nullopt, schedule::ExprArg(kTile)});
  if (!c.ok()) return false;
  auto r = sch.split(l[l.size() - 2], {std::nullopt, schedule::ExprArg(kTile)});
  if (!r.ok()) return false;
  return sch.reorder({r.value()[0], c.value()[0], r.value()[1], c.value()[1]}).ok() &&
         sch.tensorize(r.value()[1], intrin).ok();
}

}  // namespace

int cuda_compute_capability(const target::Target& target) {
  return target.compute_capability();
}

std::optional<TensorCoreMatch> match_tensor_core(const Schedule& sch, const BlockRV& block,
                                                 int sm) {
  if (sm < 70) return std::nullopt;
  const ir::BlockNode* b = block_node(sch, block);
  if (!b || !b->init.defined() || b->writes.size() != 1 || b->writes[0].buffer->dtype != kFloat32)
    return std::nullopt;
  const ir::BufferRegion& out = b->writes[0];
  auto [i, j] = last_two(out);
  const ir::IterVar *i_iv = i ? iter_of(b, i) : nullptr, *j_iv = j ? iter_of(b, j) : nullptr;
  if (!i_iv || !j_iv || i_iv->kind != ir::IterKind::kSpatial ||
      j_iv->kind != ir::IterKind::kSpatial)
    return std::nullopt;
  // The update: C + float(A) * float(B) (or with the product first).
  auto* store = b->body.as<ir::BufferStoreNode>();
  const ir::BinaryNode* add = store ? store->value.as_binary() : nullptr;
  if (!add || add->kind != ir::ExprKind::kAdd) return std::nullopt;
  const ir::BinaryNode* mul = add->b.as_binary();
  if (!mul || mul->kind != ir::ExprKind::kMul) mul = add->a.as_binary();
  if (!mul || mul->kind != ir::ExprKind::kMul) return std::nullopt;
  TensorCoreMatch m;
  m.i = i;
  m.j = j;
  std::vector<size_t> operands;
  for (size_t r = 0; r < b->reads.size(); ++r)
    if (b->reads[r].buffer.get() != out.buffer.get()) operands.push_back(r);
  if (operands.size() != 2) return std::nullopt;
  const DataType t = b->reads[operands[0]].buffer->dtype;
  if (b->reads[operands[1]].buffer->dtype != t || !t.is_float() || t.bits() != 16)
    return std::nullopt;
  m.type = t.is_bfloat16() ? "bf16" : "f16";
  if (t.is_bfloat16() && sm < 80) return std::nullopt;
  for (size_t x : {0, 1}) {
    auto [ar, ac] = last_two(b->reads[operands[x]]);
    auto [br, bc] = last_two(b->reads[operands[1 - x]]);
    if (ar == i && bc == j && ac && ac == br) {
      m.a = operands[x];
      m.b = operands[1 - x];
      m.k = ac;
    }
  }
  const ir::IterVar* k_iv = m.k ? iter_of(b, m.k) : nullptr;
  if (!k_iv || k_iv->kind != ir::IterKind::kReduce) return std::nullopt;
  // Any other iterator is a spatial one indexing leading dimensions only (a batch).
  for (const ir::IterVar& iv : b->iter_vars) {
    if (&iv == i_iv || &iv == j_iv || &iv == k_iv) continue;
    if (iv.kind != ir::IterKind::kSpatial) return std::nullopt;
  }
  for (const ir::IterVar* iv : {i_iv, j_iv, k_iv}) {
    auto e = ir::as_const_int(iv->dom.extent);
    if (!e) return std::nullopt;
    m.padded |= *e % kTile != 0;
  }
  return m;
}

MultiLevelTilingTensorCore::MultiLevelTilingTensorCore(MultiLevelTilingConfig config, int sm,
                                                       std::vector<std::string> families)
    : MultiLevelTiling(std::move(config)), sm_(sm), families_(std::move(families)) {
  if (families_.empty())
    families_ =
        sm >= 80 ? std::vector<std::string>{"mma", "wmma"} : std::vector<std::string>{"wmma"};
  for (const std::string& f : families_) {
    if (f != "mma" && f != "wmma")
      throw InputError(fmt::format(
          "MultiLevelTilingTensorCore: unknown tensor-core family '{}' (mma, wmma)", f));
    if (f == "mma" && sm < 80)
      throw InputError(fmt::format(
          "MultiLevelTilingTensorCore: mma.sync m16n8k16 needs sm_80 or later, not sm_{}", sm));
  }
  if (s_levels().size() < 3 || r_levels().empty())
    throw InputError(
        fmt::format("MultiLevelTilingTensorCore: structure '{}' needs three S levels (blocks, "
                    "warps) and an R level",
                    this->config().structure));
}

std::vector<Schedule> MultiLevelTilingTensorCore::apply(Schedule sch, const BlockRV& block) {
  std::vector<Schedule> out;
  std::optional<TensorCoreMatch> match =
      needs_multi_level_tiling(sch, block) ? match_tensor_core(sch, block, sm_) : std::nullopt;
  if (match && match->padded) {
    const ir::BlockNode* b = block_node(sch, block);
    std::vector<int64_t> padding(b->iter_vars.size(), 1);
    for (size_t n = 0; n < b->iter_vars.size(); ++n) {
      const ir::VarNode* v = b->iter_vars[n].var.get();
      if (v == match->i || v == match->j || v == match->k) padding[n] = kTile;
    }
    Schedule padded = sch.copy();
    match = padded.pad_einsum(block, padding).ok() ? match_tensor_core(padded, block, sm_)
                                                   : std::nullopt;
    if (match) sch = std::move(padded);
  }
  if (!match) {
    out.push_back(std::move(sch));  // MultiLevelTiling's business
    return out;
  }
  const TensorCoreMatch m = *match;
  for (const std::string& family : families_) {
    std::vector<Step> pipeline = {
        [this, family](TilingState s) {
          return add_write_cache(std::move(s), family + ".accumulator");
        },
        [this, m](TilingState s) { return tile(std::move(s), m); },
        [this, m, family](TilingState s) { return stage_operands(std::move(s), m, family); },
        [this, m, family](TilingState s) { return tensorize(std::move(s), m, family); }};
    TilingDesign design{.padded_rows = 0, .read_cache = true, .write_level = 3};
    Schedule annotated = sch.copy();
    (void)annotated.annotate(block, ir::ann::kTilingStructure, config().structure);
    for (Schedule& s : run_pipeline(
             TilingState{std::move(annotated), block, design, std::nullopt, {}, std::nullopt},
             pipeline))
      out.push_back(std::move(s));
  }
  if (out.empty()) out.push_back(std::move(sch));
  return out;
}

// i, j and k split by 16 (the intrinsic's tile, innermost in that order); the outer parts and any
// batch loop tiled into the structure's levels; the first three levels fused and bound.
std::vector<TilingState> MultiLevelTilingTensorCore::tile(TilingState s,
                                                          const TensorCoreMatch& m) const {
  Schedule& sch = s.sch;
  auto loops = sch.get_loops(s.block);
  if (!loops.ok()) return {};
  const ir::BlockNode* b = block_node(sch, s.block);
  const schedule::SRef block_sref = sch.block_sref(s.block).value();
  const ir::BlockRealizeNode* realize = sch.state().realize_of(block_sref.get());
  // The loop binding each iterator (the block is untiled: one loop per iterator, by its var).
  auto loop_of = [&](const ir::VarNode* iter) -> std::optional<size_t> {
    for (size_t n = 0; n < b->iter_vars.size(); ++n) {
      if (b->iter_vars[n].var.get() != iter) continue;
      const auto* v = realize->iter_values[n].as<ir::VarNode>();
      for (size_t l = 0; v && l < loops.value().size(); ++l)
        if (sch.loop_sref(loops.value()[l]).value()->as_for()->loop_var.get() == v) return l;
    }
    return std::nullopt;
  };
  auto il = loop_of(m.i), jl = loop_of(m.j), kl = loop_of(m.k);
  if (!il || !jl || !kl) return {};
  std::vector<LoopRV> inner(3);
  std::vector<LoopRV> outer = loops.value();
  for (auto [l, slot] : {std::pair{*il, 0}, std::pair{*jl, 1}, std::pair{*kl, 2}}) {
    auto parts = sch.split(loops.value()[l], {std::nullopt, schedule::ExprArg(kTile)});
    if (!parts.ok()) return {};
    outer[l] = parts.value()[0];
    inner[static_cast<size_t>(slot)] = parts.value()[1];
  }
  std::vector<std::vector<LoopRV>>& tiles = s.tiles;
  tiles.assign(levels(), {});
  for (size_t l = 0; l < outer.size(); ++l) {
    const std::vector<int>& idx = l == *kl ? r_levels() : s_levels();
    if (idx.size() == 1) {
      tiles[idx[0]].push_back(outer[l]);
      continue;
    }
    auto factors = sch.sample_perfect_tile(outer[l], static_cast<int>(idx.size()),
                                           config().max_innermost_factor);
    if (!factors.ok()) return {};
    std::vector<std::optional<schedule::ExprArg>> fs;
    for (const schedule::ExprRV& f : factors.value()) fs.emplace_back(f);
    auto parts = sch.split(outer[l], fs);
    if (!parts.ok()) return {};
    for (size_t n = 0; n < idx.size(); ++n) tiles[idx[n]].push_back(parts.value()[n]);
  }
  std::vector<LoopRV> order;
  for (const auto& t : tiles) order.insert(order.end(), t.begin(), t.end());
  order.insert(order.end(), inner.begin(), inner.end());
  if (!sch.reorder(order).ok()) return {};
  for (size_t n = 0; n < config().tile_binds.size(); ++n) {
    LoopRV fused = tiles[n][0];
    if (tiles[n].size() > 1) {
      auto f = sch.fuse(tiles[n]);
      if (!f.ok()) return {};
      fused = f.value();
    }
    if (!sch.bind(fused, config().tile_binds[n]).ok()) return {};
    tiles[n] = {fused};
  }
  tiles.push_back(inner);  // the intrinsic's tile, past the structure's levels
  return single(std::move(s));
}

// A and B: shared-memory copies at the read-reuse level (cooperative, padded rows), fragments
// at the last R level.
std::vector<TilingState> MultiLevelTilingTensorCore::stage_operands(
    TilingState s, const TensorCoreMatch& m, const std::string& family) const {
  Schedule& sch = s.sch;
  const LoopRV shared_at =
      s.tiles[static_cast<size_t>(config().reuse_read.levels.at(0) - 1)].back();
  const LoopRV fragment_at = s.tiles[static_cast<size_t>(r_levels().back())].back();
  for (auto [read, scope] :
       {std::pair{m.a, family + ".matrix_a"}, std::pair{m.b, family + ".matrix_b"}}) {
    auto fragment = sch.cache_read(s.block, static_cast<int>(read), scope);
    if (!fragment.ok() || !sch.compute_at(fragment.value(), fragment_at).ok()) return {};
    auto shared = sch.cache_read(fragment.value(), 0, "shared");
    if (!shared.ok() || !sch.compute_at(shared.value(), shared_at).ok()) return {};
    const int rank = static_cast<int>(block_node(sch, shared.value())->writes[0].region.size());
    // Rows 16 bytes past a multiple of 64: consecutive rows start in other banks, and every
    // tile a fragment loads stays 32-byte aligned.
    if (!sch.storage_align(shared.value(), 0, rank - 2, 32, 8).ok()) return {};
    auto len = sch.sample_categorical({1, 2, 4, 8}, uniform_probs(4));
    if (!len.ok() || !sch.annotate(shared.value(), ir::ann::kCooperativeFetch, len.value()).ok() ||
        !sch.annotate(shared.value(), ir::ann::kWarpExecution, int64_t{1}).ok())
      return {};
  }
  if (!annotate_software_pipeline(sch, shared_at)) return {};
  return single(std::move(s));
}

std::vector<TilingState> MultiLevelTilingTensorCore::tensorize(TilingState s,
                                                               const TensorCoreMatch& m,
                                                               const std::string& family) const {
  Schedule& sch = s.sch;
  // The accumulator goes back per warp, after the reduction; its fill goes before it.
  const LoopRV warp = s.tiles[2].back();
  const LoopRV first_reduce = s.tiles[static_cast<size_t>(r_levels().front())].front();
  if (!s.write_cache || !sch.reverse_compute_at(*s.write_cache, warp).ok()) return {};
  auto init = sch.decompose_reduction(s.block, first_reduce);
  if (!init.ok()) return {};
  auto producers = sch.get_producers(s.block);
  if (!producers.ok()) return {};
  for (const BlockRV& p : producers.value()) {
    const std::string role = ir::fragment_role(block_node(sch, p)->writes[0].buffer->scope);
    if (role == "matrix_a" || role == "matrix_b") {
      std::string intrin =
          fmt::format("cuda_{}_load_{}_16x16_{}", family, role == "matrix_a" ? "a" : "b", m.type);
      if (!tensorize_tiles(sch, p, intrin)) return {};
    }
  }
  if (!tensorize_tiles(sch, init.value(), fmt::format("cuda_{}_fill_16x16_f32", family))) return {};
  const char* update = family == "mma" ? "sync" : "mma";
  if (!sch.tensorize(s.tiles.back()[0],
                     fmt::format("cuda_{}_{}_16x16x16_{}f32", family, update, m.type))
           .ok())
    return {};
  if (!tensorize_tiles(sch, *s.write_cache, fmt::format("cuda_{}_store_16x16_f32", family)))
    return {};
  return single(std::move(s));
}

MultiLevelTilingConfig tensor_core_tiling() {
  return {
      .structure = "SSSRRSRS",
      .tile_binds = {"blockIdx.y", "blockIdx.x", "threadIdx.y"},
      .max_innermost_factor = 4,
      .reuse_read = {.req = ReuseConfig::Kind::kMust, .levels = {4}, .scope = "shared"},
      .reuse_write = {.req = ReuseConfig::Kind::kMust, .levels = {3}, .scope = "wmma.accumulator"},
      .software_pipeline_stages = {1, 2, 3}};
}

ScheduleRulePtr multi_level_tiling_tensor_core(int sm, MultiLevelTilingConfig config,
                                               std::vector<std::string> families) {
  return std::make_shared<MultiLevelTilingTensorCore>(std::move(config), sm, std::move(families));
}

}  // namespace tyche::tune
