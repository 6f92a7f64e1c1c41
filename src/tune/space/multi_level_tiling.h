// MultiLevelTiling as a pipeline of steps, the seam a tensor-intrinsic variant plugs into (it
// adds or replaces a step: tensorize the innermost tiles, say). A design is one choice of each
// knob (padded rows, read caches, write-cache level), enumerated in one fixed order; for each,
// the schedule is copied once and the steps run in turn, each taking a state and returning the
// states it leads to (none: the design is refused; several: the step branches further).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "tune/space/rule_util.h"
#include "tune/space/schedule_rule.h"

namespace tyche::tune {

// The knob values of one design.
struct TilingDesign {
  int64_t padded_rows =
      0;  // 0: every tile divides its loop; else the rows of a padded register tile
  bool read_cache = false;  // cache the inputs under the read-reuse level
  int write_level = 0;      // 0: no write cache; else the (1-based) level it goes under
};

// A design in progress: what the steps so far made.
struct TilingState {
  schedule::Schedule sch;
  schedule::BlockRV block;
  TilingDesign design;
  std::optional<schedule::BlockRV> write_cache;      // by add_write_cache
  std::vector<std::vector<schedule::LoopRV>> tiles;  // per level, by tile_loop_nest
  std::optional<size_t> panel;  // the packed-panel loop (its index), by tile_loop_nest
};

class MultiLevelTiling : public ScheduleRule {
 public:
  using Step = std::function<std::vector<TilingState>(TilingState)>;

  explicit MultiLevelTiling(MultiLevelTilingConfig config);
  std::string name() const override { return "MultiLevelTiling"; }
  std::vector<schedule::Schedule> apply(schedule::Schedule sch,
                                        const schedule::BlockRV& block) override;

 protected:
  // The designs to try, in order, and the steps each runs through.
  std::vector<TilingDesign> designs() const;
  virtual std::vector<Step> steps() const;
  // The schedules a design leads to through `pipeline` (none when a step refuses every branch).
  static std::vector<schedule::Schedule> run_pipeline(TilingState start,
                                                      const std::vector<Step>& pipeline);
  // A step's one resulting state (a Schedule moves, it does not copy).
  static std::vector<TilingState> single(TilingState s);

  // Samples the stages of the software pipeline of `loop`, where the shared read caches sit
  // (config's software_pipeline_stages; nothing where that is empty).
  bool annotate_software_pipeline(schedule::Schedule& sch, const schedule::LoopRV& loop) const;
  // write reuse: the block accumulates into a cache (placed by place_write_cache), in `scope`
  // (empty: the config's).
  std::vector<TilingState> add_write_cache(TilingState s, const std::string& scope = "") const;
  // Splits every loop into its levels' tiles (sampled sizes; the padded rows and the panel's
  // columns fixed) and reorders them level by level; GPU: fuses and binds the first levels.
  std::vector<TilingState> tile_loop_nest(TilingState s) const;
  // read reuse: caches of the inputs under the read-reuse level (packed into panels, or
  // annotated for cooperative fetch).
  std::vector<TilingState> add_read_caches(TilingState s) const;
  // The write cache goes under the innermost loop of its level.
  std::vector<TilingState> place_write_cache(TilingState s) const;

  const MultiLevelTilingConfig& config() const { return config_; }
  size_t levels() const { return levels_; }
  const std::vector<int>& s_levels() const {
    return s_levels_;
  }  // the structure's S levels (0-based)
  const std::vector<int>& r_levels() const { return r_levels_; }

 private:
  std::optional<size_t> padded_loop(const schedule::Schedule& sch,
                                    const std::vector<schedule::LoopRV>& loops,
                                    const std::vector<LoopIterType>& types, int64_t rows) const;
  std::optional<size_t> panel_loop(const schedule::Schedule& sch,
                                   const std::vector<schedule::LoopRV>& loops,
                                   const std::vector<LoopIterType>& types) const;
  std::string panel_layout(size_t rank) const;
  // The innermost loop of `level` (1-based) or, when it is empty, of the nearest outer one.
  std::optional<schedule::LoopRV> anchor(const TilingState& s, int level) const;

  MultiLevelTilingConfig config_;
  bool cooperative_fetch_ = false;  // annotate the shared read caches for RewriteCooperativeFetch
  size_t levels_ = 0;
  std::vector<int> s_levels_, r_levels_;
};

}  // namespace tyche::tune
