// Layout rewrites split off a scheduled program: each root-level stage block annotated
// meta_schedule.layout_rewrite_preproc (the tuner's RewriteLayout) copies a layout-free param W
// (a model's weight) into a buffer P of the layout its reader walks. The main program takes P in
// W's place and no longer copies; each rewrite's preproc program computes P from W, once, when the
// weights are loaded (TVM splits its layout_rewrite_preproc blocks off the same way). P has W's
// type; it may hold more elements than W (a padded packing, zeros past W's ends): callers
// allocate it with the preproc's output shape.
#pragma once

#include <cstddef>
#include <vector>

#include "ir/function.h"

namespace tyche::lower {

struct LayoutRewrite {
  size_t param;          // the index of W (and P, in main)
  ir::PrimFunc preproc;  // (W) -> (P), named "<main's name>_pack<param>"
};

struct SplitProgram {
  ir::PrimFunc main;  // `scheduled` itself when it has no stage to split off
  std::vector<LayoutRewrite> rewrites;
};

// Splits off every root-level layout_rewrite_preproc stage that reads a param and writes a buffer
// the root allocates; any other such stage stays where it is (and runs at every call). A program
// without a root block (loops already) is returned as it is.
SplitProgram split_layout_rewrites(const ir::PrimFunc& scheduled);

}  // namespace tyche::lower
