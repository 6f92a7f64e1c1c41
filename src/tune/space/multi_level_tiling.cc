// MultiLevelTiling: tiles a block with data reuse (a reduction some of whose inputs ignore some
// spatial iterator, like GMM or a convolution) into the levels of a structure string, e.g.
// "SSRSRS": every spatial loop is split into as many tiles as the string has S, every reduction
// loop into as many as it has R (sizes from sample_perfect_tile), and the tiles are reordered
// level by level. Caches give data reuse: a write cache placed under a tile level (the block
// accumulates into a copy that goes back per tile, or, on a CPU, its element-wise consumer runs
// there on the tile) and read caches of the inputs.
//
// The rule is a pipeline of steps (multi_level_tiling.h): write cache -> tile the loop nest -> read
// caches -> place the write cache.
//
// GPU (tile_binds): the first levels' loops are fused and bound to the given thread axes. A
// "shared" read cache placed inside the threadIdx-bound level would be copied whole by every
// thread; as in TVM, it is annotated meta_schedule.cooperative_fetch with a sampled vector length
// and RewriteCooperativeFetch (a postprocessor) spreads the copy over the thread block's threads.
#include <fmt/format.h>

#include "ir/annotation_keys.h"
#include "support/error.h"
#include "tune/space/multi_level_tiling.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::LoopRV;
using schedule::Schedule;

namespace {

// Read `i` of the block has the output's last index as its own last index: the operand the
// vector lanes run along.
bool along_output_row(const Schedule& sch, const BlockRV& block, size_t i) {
  const ir::BlockNode* b = block_node(sch, block);
  const std::vector<ir::Range>& out = b->writes[0].region;
  const std::vector<ir::Range>& in = b->reads[i].region;
  if (out.empty() || in.empty()) return false;
  const auto* v = out.back().min.as<ir::VarNode>();
  return v && in.back().min.as<ir::VarNode>() == v;
}

// The single consumer of `block` when it is element-wise on its output (TVM's "consumer fusion"):
// spatial iterators only, reading the block's output and writing its own at the same point, the
// iterators in the order of the output's axes and over its whole shape. Placed under a tile
// level it is the write cache: an epilogue (bias, ReLU) runs on the tile while it is hot, and
// the intermediate shrinks to the tile.
std::optional<BlockRV> elementwise_consumer(Schedule& sch, const BlockRV& block) {
  auto consumers = sch.get_consumers(block);
  if (!consumers.ok() || consumers.value().size() != 1) return std::nullopt;
  const BlockRV& consumer = consumers.value()[0];
  const ir::BlockNode* c = block_node(sch, consumer);
  const ir::Buffer& out = block_node(sch, block)->writes[0].buffer;
  if (c->writes.size() != 1 || c->iter_vars.size() != out->shape.size() || c->init.defined())
    return std::nullopt;
  auto at_own_point = [&](const std::vector<ir::Range>& region) {
    if (region.size() != c->iter_vars.size()) return false;
    for (size_t d = 0; d < region.size(); ++d) {
      const auto* v = region[d].min.as<ir::VarNode>();
      const auto* one = region[d].extent.as<ir::IntImmNode>();
      if (!v || v != c->iter_vars[d].var.get() || !one || one->value != 1) return false;
    }
    return true;
  };
  for (size_t d = 0; d < c->iter_vars.size(); ++d) {
    const ir::IterVar& iv = c->iter_vars[d];
    const auto* min = iv.dom.min.as<ir::IntImmNode>();
    const auto* extent = iv.dom.extent.as<ir::IntImmNode>();
    const auto* dim = out->shape[d].as<ir::IntImmNode>();
    if (iv.kind != ir::IterKind::kSpatial || !min || min->value != 0 || !extent || !dim ||
        extent->value != dim->value)
      return std::nullopt;
  }
  if (!at_own_point(c->writes[0].region)) return std::nullopt;
  bool reads_output = false;
  for (const ir::BufferRegion& r : c->reads)
    if (r.buffer.get() == out.get()) {
      if (!at_own_point(r.region)) return std::nullopt;
      reads_output = true;
    }
  if (!reads_output) return std::nullopt;
  return consumer;
}

}  // namespace

std::vector<TilingState> MultiLevelTiling::single(TilingState s) {
  std::vector<TilingState> out;
  out.push_back(std::move(s));
  return out;
}

std::vector<Schedule> MultiLevelTiling::run_pipeline(TilingState start,
                                                     const std::vector<Step>& pipeline) {
  std::vector<TilingState> states = single(std::move(start));
  for (const Step& step : pipeline) {
    std::vector<TilingState> next;
    for (TilingState& s : states)
      for (TilingState& t : step(std::move(s))) next.push_back(std::move(t));
    states = std::move(next);
  }
  std::vector<Schedule> out;
  for (TilingState& s : states) out.push_back(std::move(s.sch));
  return out;
}

MultiLevelTiling::MultiLevelTiling(MultiLevelTilingConfig config) : config_(std::move(config)) {
  for (char c : config_.structure) {
    if (c == 'S')
      s_levels_.push_back(static_cast<int>(levels_++));
    else if (c == 'R')
      r_levels_.push_back(static_cast<int>(levels_++));
    else
      throw InputError(
          fmt::format("MultiLevelTiling: structure '{}' may hold only S and R", config_.structure));
  }
  if (s_levels_.empty())
    throw InputError("MultiLevelTiling: the structure needs at least one S level");
  auto check_levels = [&](const ReuseConfig& r, const char* what) {
    for (int l : r.levels)
      if (l < 1 || l > static_cast<int>(levels_))
        throw InputError(fmt::format("MultiLevelTiling: {} level {} is outside the structure '{}'",
                                     what, l, config_.structure));
  };
  check_levels(config_.reuse_read, "read reuse");
  check_levels(config_.reuse_write, "write reuse");
  // Read reuse is at one level: every input (or the one along the output's rows) gets its
  // cache under the innermost loop of that level; "may" adds the design without caches.
  const ReuseConfig& r = config_.reuse_read;
  if (r.levels.size() > 1 || (r.req != ReuseConfig::Kind::kNo && r.levels.empty()))
    throw InputError(
        fmt::format("MultiLevelTiling: read reuse takes one level, not {}", r.levels.size()));
  if (config_.tile_binds.size() > levels_)
    throw InputError("MultiLevelTiling: more tile bindings than tile levels");
  // Cooperative fetch when the shared read cache lies inside the threadIdx-bound loop: the
  // cache goes under the innermost loop of (1-based) level r, so the bound level's 0-based
  // index must be < r.
  if (r.req == ReuseConfig::Kind::kMust && r.scope == "shared")
    for (size_t i = 0; i < config_.tile_binds.size(); ++i)
      cooperative_fetch_ |=
          config_.tile_binds[i].starts_with("threadIdx") && static_cast<int>(i) < r.levels[0];
}

std::vector<TilingDesign> MultiLevelTiling::designs() const {
  // Write reuse: one design without a cache ("may") and one per level with it.
  // Read reuse: without caches ("no", "may") and with them ("may", "must").
  std::vector<int> write_levels;  // 0: no write cache
  const ReuseConfig& w = config_.reuse_write;
  if (w.req != ReuseConfig::Kind::kMust || w.levels.empty()) write_levels.push_back(0);
  if (w.req != ReuseConfig::Kind::kNo)
    write_levels.insert(write_levels.end(), w.levels.begin(), w.levels.end());
  std::vector<bool> read_caches;
  const ReuseConfig& r = config_.reuse_read;
  if (r.req != ReuseConfig::Kind::kMust) read_caches.push_back(false);
  if (r.req != ReuseConfig::Kind::kNo) read_caches.push_back(true);
  std::vector<int64_t> rows = {0};
  rows.insert(rows.end(), config_.padded_rows.begin(), config_.padded_rows.end());
  std::vector<TilingDesign> out;
  for (int64_t padded : rows)
    for (bool read_cache : read_caches)
      for (int level : write_levels) out.push_back({padded, read_cache, level});
  return out;
}

std::vector<MultiLevelTiling::Step> MultiLevelTiling::steps() const {
  return {[this](TilingState s) { return add_write_cache(std::move(s)); },
          [this](TilingState s) { return tile_loop_nest(std::move(s)); },
          [this](TilingState s) { return add_read_caches(std::move(s)); },
          [this](TilingState s) { return place_write_cache(std::move(s)); }};
}

std::vector<Schedule> MultiLevelTiling::apply(Schedule sch, const BlockRV& block) {
  std::vector<Schedule> out;
  if (!needs_multi_level_tiling(sch, block)) {
    out.push_back(std::move(sch));
    return out;
  }
  (void)sch.annotate(block, ir::ann::kTilingStructure, config_.structure);
  const std::vector<Step> pipeline = steps();
  for (const TilingDesign& design : designs())
    for (Schedule& s : run_pipeline(
             TilingState{sch.copy(), block, design, std::nullopt, {}, std::nullopt}, pipeline))
      out.push_back(std::move(s));
  if (out.empty()) out.push_back(std::move(sch));  // every design refused: leave the block as it is
  return out;
}

// The loop a padded register tile splits: the spatial one just outside the innermost spatial
// loop, when `rows` does not divide its extent, which is over `rows`, and the padding is at most
// 1/8 of it. Nullopt otherwise (the design is not made).
std::optional<size_t> MultiLevelTiling::padded_loop(const Schedule& sch,
                                                    const std::vector<LoopRV>& loops,
                                                    const std::vector<LoopIterType>& types,
                                                    int64_t rows) const {
  std::vector<size_t> spatial;
  for (size_t i = 0; i < loops.size(); ++i)
    if (types[i] == LoopIterType::kSpatial) spatial.push_back(i);
  if (spatial.size() < 2 || s_levels_.size() < 2) return std::nullopt;
  size_t i = spatial[spatial.size() - 2];
  auto extent = ir::as_const_int(sch.loop_sref(loops[i]).value()->as_for()->extent);
  if (!extent || *extent <= rows || *extent % rows == 0) return std::nullopt;
  int64_t padding = (*extent + rows - 1) / rows * rows - *extent;
  if (padding * 8 > *extent) return std::nullopt;
  return i;
}

// The innermost spatial loop (the one the vector lanes run along) when the panel width divides
// its extent and is below it; nullopt otherwise (its tiles are sampled and no layout changes).
std::optional<size_t> MultiLevelTiling::panel_loop(const Schedule& sch,
                                                   const std::vector<LoopRV>& loops,
                                                   const std::vector<LoopIterType>& types) const {
  if (config_.panel_width <= 0 || s_levels_.size() < 2) return std::nullopt;
  for (size_t i = loops.size(); i-- > 0;) {
    if (types[i] != LoopIterType::kSpatial) continue;
    auto extent = ir::as_const_int(sch.loop_sref(loops[i]).value()->as_for()->extent);
    if (!extent || *extent <= config_.panel_width || *extent % config_.panel_width != 0)
      return std::nullopt;
    return i;
  }
  return std::nullopt;
}
// [.., j] -> [j // w, .., j % w]: the panel of w columns becomes one contiguous run per row.
std::string MultiLevelTiling::panel_layout(size_t rank) const {
  std::string in, out;
  for (size_t d = 0; d < rank; ++d) in += fmt::format("{}a{}", d ? ", " : "", d);
  out = fmt::format("a{} // {}", rank - 1, config_.panel_width);
  for (size_t d = 0; d + 1 < rank; ++d) out += fmt::format(", a{}", d);
  out += fmt::format(", a{} % {}", rank - 1, config_.panel_width);
  return fmt::format("lambda {}: ({})", in, out);
}

std::optional<LoopRV> MultiLevelTiling::anchor(const TilingState& s, int level) const {
  for (int l = level - 1; l >= 0; --l)
    if (!s.tiles[l].empty()) return s.tiles[l].back();
  return std::nullopt;
}

std::vector<TilingState> MultiLevelTiling::add_write_cache(TilingState s,
                                                           const std::string& scope) const {
  if (s.design.write_level > 0) {
    // "may" (CPU): an element-wise consumer is the cache; "must" (GPU: registers) always copies.
    // Should the consumer refuse to move under the tile (place_write_cache), the design is
    // dropped: with "may", the design without a cache remains.
    if (config_.reuse_write.req == ReuseConfig::Kind::kMay) {
      if (auto consumer = elementwise_consumer(s.sch, s.block)) {
        s.write_cache = *consumer;
        return single(std::move(s));
      }
    }
    auto c = s.sch.cache_write(s.block, 0, scope.empty() ? config_.reuse_write.scope : scope);
    if (!c.ok()) return {};
    s.write_cache = c.value();
  }
  return single(std::move(s));
}

std::vector<TilingState> MultiLevelTiling::tile_loop_nest(TilingState s) const {
  Schedule& sch = s.sch;
  const BlockRV& block = s.block;
  auto loops = sch.get_loops(block);
  if (!loops.ok()) return {};
  const schedule::SRef block_sref = sch.block_sref(block).value();
  std::vector<LoopIterType> types;
  for (const LoopRV& loop : loops.value()) {
    types.push_back(
        loop_iter_type(sch.state(), block_sref.get(), sch.loop_sref(loop).value().get()));
    if (types.back() == LoopIterType::kMixed) return {};
  }
  const int64_t padded_rows = s.design.padded_rows;
  std::optional<size_t> padded;
  if (padded_rows > 0) {
    padded = padded_loop(sch, loops.value(), types, padded_rows);
    if (!padded) return {};
    if (s.design.read_cache) s.panel = panel_loop(sch, loops.value(), types);
  }
  const std::optional<size_t>& panel = s.panel;
  std::vector<std::vector<LoopRV>>& tiles = s.tiles;
  tiles.assign(levels_, {});
  for (size_t li = 0; li < loops.value().size(); ++li) {
    const LoopRV& loop = loops.value()[li];
    LoopIterType type = types[li];
    const std::vector<int>& idx = type == LoopIterType::kSpatial ? s_levels_ : r_levels_;
    if (idx.empty()) return {};  // a reduction loop but no R level
    if (idx.size() == 1) {
      tiles[idx[0]].push_back(loop);
      continue;
    }
    LoopRV outer = loop;
    size_t n = idx.size();
    // The rows, and the panel's columns: a fixed innermost tile, the rest sampled.
    if ((padded && li == *padded) || (panel && li == *panel)) {
      int64_t fixed = padded && li == *padded ? padded_rows : config_.panel_width;
      auto parts = sch.split(loop, {std::nullopt, schedule::ExprArg(fixed)});
      if (!parts.ok()) return {};
      outer = parts.value()[0];
      tiles[idx.back()].push_back(parts.value()[1]);
      if (--n == 1) {
        tiles[idx[0]].push_back(outer);
        continue;
      }
    }
    int64_t limit = type == LoopIterType::kReduce && config_.max_innermost_reduction_factor > 0
                        ? config_.max_innermost_reduction_factor
                        : config_.max_innermost_factor;
    auto factors = sch.sample_perfect_tile(outer, static_cast<int>(n), limit);
    if (!factors.ok()) return {};
    std::vector<std::optional<schedule::ExprArg>> fs;
    for (const schedule::ExprRV& f : factors.value()) fs.emplace_back(f);
    auto parts = sch.split(outer, fs);
    if (!parts.ok()) return {};
    for (size_t i = 0; i < n; ++i) tiles[idx[i]].push_back(parts.value()[i]);
  }
  std::vector<LoopRV> order;
  for (const auto& t : tiles) order.insert(order.end(), t.begin(), t.end());
  if (order.size() > 1 && !sch.reorder(order).ok()) return {};
  for (size_t i = 0; i < config_.tile_binds.size(); ++i) {
    if (tiles[i].empty()) return {};
    LoopRV fused = tiles[i][0];
    if (tiles[i].size() > 1) {
      auto f = sch.fuse(tiles[i]);
      if (!f.ok()) return {};
      fused = f.value();
    }
    if (!sch.bind(fused, config_.tile_binds[i]).ok()) return {};
    tiles[i] = {fused};
  }
  return single(std::move(s));
}

std::vector<TilingState> MultiLevelTiling::add_read_caches(TilingState s) const {
  if (!s.design.read_cache) return single(std::move(s));
  Schedule& sch = s.sch;
  const BlockRV& block = s.block;
  const ReuseConfig& r = config_.reuse_read;
  auto at = anchor(s, r.levels[0]);
  if (!at) return {};
  size_t n_reads = block_node(sch, block)->reads.size();
  const ir::BufferNode* written = block_node(sch, block)->writes[0].buffer.get();
  std::vector<size_t> cached;
  for (size_t i = 0; i < n_reads; ++i)
    if (block_node(sch, block)->reads[i].buffer.get() != written &&
        (!r.only_along_output_row || along_output_row(sch, block, i)))
      cached.push_back(i);
  if (cached.empty()) return {};  // the design without caches covers it
  // Each cache_read adds its block but keeps the reads' order: indices stay valid.
  for (size_t i : cached) {
    auto c = sch.cache_read(block, static_cast<int>(i), r.scope);
    if (!c.ok() || !sch.compute_at(c.value(), *at, true).ok()) return {};
    if (s.panel && along_output_row(sch, block, i) &&
        !sch.transform_layout(c.value(), 0,
                              panel_layout(block_node(sch, block)->reads[i].region.size()))
             .ok())
      return {};
    if (cooperative_fetch_) {
      // TVM samples from vector_load_lens {1, 2, 3, 4, 8, 16}; {1, 2, 4} keep 32-bit
      // elements within one 16-byte access and divide most tiles (RewriteCooperativeFetch
      // falls back to 1 when the length does not divide the copy; VerifyGPUCode refuses
      // wider-than-16-byte vectors).
      auto len = sch.sample_categorical({1, 2, 4}, uniform_probs(3));
      if (!len.ok() || !sch.annotate(c.value(), ir::ann::kCooperativeFetch, len.value()).ok())
        return {};
    }
  }
  if (!annotate_software_pipeline(sch, *at)) return {};
  return single(std::move(s));
}

bool MultiLevelTiling::annotate_software_pipeline(Schedule& sch, const LoopRV& loop) const {
  const std::vector<int64_t>& stages = config_.software_pipeline_stages;
  if (stages.empty()) return true;
  auto n = sch.sample_categorical(stages, uniform_probs(stages.size()));
  return n.ok() && sch.annotate(loop, ir::ann::kSoftwarePipelineStages, n.value()).ok();
}

std::vector<TilingState> MultiLevelTiling::place_write_cache(TilingState s) const {
  if (s.write_cache) {
    auto at = anchor(s, s.design.write_level);
    if (!at || !s.sch.reverse_compute_at(*s.write_cache, *at, true).ok()) return {};
  }
  return single(std::move(s));
}

ScheduleRulePtr multi_level_tiling(MultiLevelTilingConfig config) {
  return std::make_shared<MultiLevelTiling>(std::move(config));
}

}  // namespace tyche::tune
