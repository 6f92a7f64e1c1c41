// MultiLevelTiling: tiles a block with data reuse (a reduction some of whose inputs ignore some
// spatial iterator, like GMM or a convolution) into the levels of a structure string, e.g.
// "SSRSRS": every spatial loop is split into as many tiles as the string has S, every reduction
// loop into as many as it has R (sizes from sample_perfect_tile), and the tiles are reordered
// level by level. Caches give data reuse: a write cache placed under a tile level (the block
// accumulates into a copy that goes back per tile) and read caches of the inputs.
#include <fmt/format.h>

#include "arith/linear.h"
#include "schedule/block_scope.h"
#include "support/error.h"
#include "tune/space/annotations.h"
#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

using schedule::BlockRV;
using schedule::LoopRV;
using schedule::Schedule;

namespace {

// TVM's condition: a block that is not purely spatial, writes one buffer, binds its iterators
// affinely, and has an input that does not depend on some spatial iterator (so a tile of the
// output reuses it).
bool needs_tiling(const Schedule& sch, const BlockRV& block) {
  const ir::BlockNode* b = block_node(sch, block);
  if (!b || b->annotations.count(ann::kTilingStructure) || b->writes.size() != 1 || b->reads.empty()) return false;
  bool has_reduce = false;
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kOpaque) return false;
    has_reduce |= iv.kind == ir::IterKind::kReduce;
  }
  if (!has_reduce) return false;
  const schedule::SRef sref = sch.block_sref(block).value();
  if (!schedule::has_affine_bindings(sch.state(), sref.get())) return false;
  const ir::BufferNode* written = b->writes[0].buffer.get();
  int unused = 0;
  for (const ir::BufferRegion& r : b->reads) {
    if (r.buffer.get() == written) continue;
    for (const ir::IterVar& iv : b->iter_vars) {
      auto ext = ir::as_const_int(iv.dom.extent);
      if (iv.kind != ir::IterKind::kSpatial || (ext && *ext == 1)) continue;
      bool used = false;
      for (const ir::Range& range : r.region)
        used |= arith::uses_var(range.min, [&](const ir::VarNode* v) { return v == iv.var.get(); });
      unused += !used;
    }
  }
  return unused >= 1;
}

class MultiLevelTiling : public ScheduleRule {
 public:
  explicit MultiLevelTiling(MultiLevelTilingConfig config) : config_(std::move(config)) {
    for (char c : config_.structure) {
      if (c == 'S') s_levels_.push_back(static_cast<int>(levels_++));
      else if (c == 'R') r_levels_.push_back(static_cast<int>(levels_++));
      else throw InputError(fmt::format("MultiLevelTiling: structure '{}' may hold only S and R", config_.structure));
    }
    if (s_levels_.empty()) throw InputError("MultiLevelTiling: the structure needs at least one S level");
    auto check_levels = [&](const ReuseConfig& r, const char* what) {
      for (int l : r.levels)
        if (l < 1 || l > static_cast<int>(levels_))
          throw InputError(fmt::format("MultiLevelTiling: {} level {} is outside the structure '{}'", what, l, config_.structure));
    };
    check_levels(config_.reuse_read, "read reuse");
    check_levels(config_.reuse_write, "write reuse");
    if (config_.tile_binds.size() > levels_)
      throw InputError("MultiLevelTiling: more tile bindings than tile levels");
  }
  std::string name() const override { return "MultiLevelTiling"; }

  std::vector<Schedule> apply(Schedule sch, const BlockRV& block) override {
    std::vector<Schedule> out;
    if (!needs_tiling(sch, block)) {
      out.push_back(std::move(sch));
      return out;
    }
    (void)sch.annotate(block, ann::kTilingStructure, config_.structure);
    // Write reuse: one design without a cache ("may") and one per level with it.
    std::vector<std::pair<Schedule, int>> designs;  // schedule, write-cache level (0: none)
    const ReuseConfig& w = config_.reuse_write;
    if (w.req != ReuseConfig::Kind::kMust || w.levels.empty()) designs.emplace_back(sch.copy(), 0);
    if (w.req != ReuseConfig::Kind::kNo)
      for (int level : w.levels) designs.emplace_back(sch.copy(), level);
    for (auto& [d, level] : designs)
      if (auto done = tile(std::move(d), block, level)) out.push_back(std::move(*done));
    if (out.empty()) out.push_back(std::move(sch));  // every design refused: leave the block as it is
    return out;
  }

 private:
  std::optional<Schedule> tile(Schedule sch, const BlockRV& block, int write_level) {
    std::optional<BlockRV> write_cache;
    if (write_level > 0) {
      auto c = sch.cache_write(block, 0, config_.reuse_write.scope);
      if (!c.ok()) return std::nullopt;
      write_cache = c.value();
    }
    auto loops = sch.get_loops(block);
    if (!loops.ok()) return std::nullopt;
    const schedule::SRef block_sref = sch.block_sref(block).value();
    std::vector<std::vector<LoopRV>> tiles(levels_);
    for (const LoopRV& loop : loops.value()) {
      LoopIterType type = loop_iter_type(sch.state(), block_sref.get(), sch.loop_sref(loop).value().get());
      if (type == LoopIterType::kMixed) return std::nullopt;
      const std::vector<int>& idx = type == LoopIterType::kSpatial ? s_levels_ : r_levels_;
      if (idx.empty()) return std::nullopt;  // a reduction loop but no R level
      if (idx.size() == 1) {
        tiles[idx[0]].push_back(loop);
        continue;
      }
      auto factors = sch.sample_perfect_tile(loop, static_cast<int>(idx.size()), config_.max_innermost_factor);
      if (!factors.ok()) return std::nullopt;
      std::vector<std::optional<schedule::ExprArg>> fs;
      for (const schedule::ExprRV& f : factors.value()) fs.emplace_back(f);
      auto parts = sch.split(loop, fs);
      if (!parts.ok()) return std::nullopt;
      for (size_t i = 0; i < idx.size(); ++i) tiles[idx[i]].push_back(parts.value()[i]);
    }
    std::vector<LoopRV> order;
    for (const auto& t : tiles) order.insert(order.end(), t.begin(), t.end());
    if (order.size() > 1 && !sch.reorder(order).ok()) return std::nullopt;
    for (size_t i = 0; i < config_.tile_binds.size(); ++i) {
      if (tiles[i].empty()) return std::nullopt;
      LoopRV fused = tiles[i][0];
      if (tiles[i].size() > 1) {
        auto f = sch.fuse(tiles[i]);
        if (!f.ok()) return std::nullopt;
        fused = f.value();
      }
      if (!sch.bind(fused, config_.tile_binds[i]).ok()) return std::nullopt;
      tiles[i] = {fused};
    }
    // The cache goes under the innermost loop of its level (an empty level: the nearest outer one).
    auto anchor = [&](int level) -> std::optional<LoopRV> {
      for (int l = level - 1; l >= 0; --l)
        if (!tiles[l].empty()) return tiles[l].back();
      return std::nullopt;
    };
    const ReuseConfig& r = config_.reuse_read;
    if (r.req != ReuseConfig::Kind::kNo && !r.levels.empty()) {
      auto at = anchor(r.levels[0]);
      size_t n_reads = block_node(sch, block)->reads.size();
      const ir::BufferNode* written = block_node(sch, block)->writes[0].buffer.get();
      for (size_t i = 0; at && i < n_reads; ++i) {
        if (block_node(sch, block)->reads[i].buffer.get() == written) continue;
        auto c = sch.cache_read(block, static_cast<int>(i), r.scope);
        if (!c.ok() || !sch.compute_at(c.value(), *at, true).ok()) {
          if (r.req == ReuseConfig::Kind::kMust) return std::nullopt;
        }
      }
    }
    if (write_cache) {
      auto at = anchor(write_level);
      if (!at || !sch.reverse_compute_at(*write_cache, *at, true).ok()) return std::nullopt;
    }
    return sch;
  }

  MultiLevelTilingConfig config_;
  size_t levels_ = 0;
  std::vector<int> s_levels_, r_levels_;
};

}  // namespace

ScheduleRulePtr multi_level_tiling(MultiLevelTilingConfig config) {
  return std::make_shared<MultiLevelTiling>(std::move(config));
}

}  // namespace tyche::tune
