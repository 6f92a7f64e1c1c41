// Per-store features: what the cost model sees of a candidate. One fixed-length vector for every
// buffer store of the program that would be compiled (the scheduled, postprocessed function with
// its blocks lowered to loops and its intermediates compacted), in the spirit of TVM's
// PerStoreFeature:
//   arith.*      operations of the stored value, its indices and the conditions around it, by kind,
//                times the iterations of the loops around the store;
//   loop.*       vectorized / unrolled / parallel loops around it (how many, product and innermost
//                extent, where the innermost sits), GPU block and thread extents;
//   bufN.*       up to five buffers it reads or writes (largest first): access type, bytes and
//                unique bytes, cache lines and unique lines, reuse (type, distance in iterations
//                and bytes, count), the stride of the innermost loop that moves the access,
//                the bytes the innermost 1, 2, 3 and 4 loops touch (register and cache tiles);
//   intensity.*  operations per unique byte touched inside each loop level, resampled to ten
//                points from the innermost loop outward;
//   alloc.*      for a store into an intermediate: its size and how often it is allocated;
//   outer.*      product of all loop extents, number of loops, auto-unroll step.
// Counts, sizes and products go through log2(1 + x); one-hot and flag entries are 0 or 1. Nothing
// depends on names, so renaming buffers or loops changes no feature.
//
// The layout (names and order) has a version; a saved model records it and refuses features of
// another layout.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/function.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"

namespace tyche::tune {

// Bump whenever a feature is added, removed, reordered or computed differently.
inline constexpr int kFeatureLayoutVersion = 1;
inline constexpr int kFeatureBuffers = 5;
inline constexpr int kIntensityPoints = 10;

// Every feature's name, in vector order ("arith.float_mad", "buf0.bytes", ...).
const std::vector<std::string>& feature_names();
int feature_count();
// The position of a named feature; throws tyche::Error for an unknown name.
int feature_index(const std::string& name);
// Identifies the layout: version and names. Models store it.
uint64_t feature_layout_hash();

// Rows of features, one per buffer store, row-major.
struct FeatureRows {
  int rows = 0;
  std::vector<float> values;  // rows * feature_count()
  std::vector<std::string>
      stores;  // the buffer each row stores into (for people; no feature uses it)
  const float* row(int i) const { return values.data() + static_cast<size_t>(i) * feature_count(); }
  float at(int i, const std::string& name) const { return row(i)[feature_index(name)]; }
};

struct FeatureOptions {
  bool is_gpu = false;  // thread-bound loops are GPU blocks/threads (else serial on the CPU)
};

// The features of `scheduled` (a scheduled and postprocessed PrimFunc, blocks and all).
FeatureRows per_store_features(const ir::PrimFunc& scheduled, const FeatureOptions& options = {});
// The same of a program already lowered to loops (lower::lower_loops, thread bindings kept for a
// GPU program).
FeatureRows features_of_loops(const ir::PrimFunc& loops, const FeatureOptions& options = {});

// A candidate program lowered to loops with its intermediates compacted, and its features: each
// computed once, on first use, by whichever needs it first (the cost model scoring or learning
// from the candidate, the builder compiling it, which goes on lowering from there). Threads may
// share one. The loops are those of the program's main part (lower::split_layout_rewrites): its
// layout rewrites run once at load.
class LoweredProgram {
 public:
  explicit LoweredProgram(ir::PrimFunc program, bool is_gpu = false);
  const ir::PrimFunc& program() const { return program_; }
  // What the program's main part leaves to load time (lower::split_layout_rewrites).
  const std::vector<lower::LayoutRewrite>& rewrites() const { return split_.rewrites; }
  bool is_gpu() const { return is_gpu_; }
  const lower::Lowered& loops() const;
  const FeatureRows& features() const;

 private:
  ir::PrimFunc program_;
  lower::SplitProgram split_;
  bool is_gpu_;
  mutable std::once_flag loops_once_, features_once_;
  mutable lower::Lowered loops_;
  mutable FeatureRows features_;
};
using LoweredProgramPtr = std::shared_ptr<const LoweredProgram>;

}  // namespace tyche::tune
