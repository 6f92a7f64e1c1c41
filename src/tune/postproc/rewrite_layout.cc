// RewriteLayout (after TVM's postprocessor of that name): a layout-free parameter (a model's
// weight, ir/layout_free.h) read by one block is stored in the order that block's loop nest walks
// it. Each loop driving an index of the weight becomes one dimension of the new layout, in loop
// order, so a register tile's weights for successive reduction steps lie in one contiguous run
// rather than one row of a large matrix apart. Loops that do not touch the weight are left out.
//
// The rewrite is a cache_read of the weight at the root, re-laid out by transform_layout (one
// split per piece a dimension is cut into, then one permutation) and annotated
// meta_schedule.layout_rewrite_preproc; lower/layout_rewrite.h splits that stage off so it runs
// once when the weights are loaded. Left alone (still correct, read in the original layout):
// a weight read by several blocks, through a region rather than a point, through an index that
// is not a sum of whole loop variables (a fused loop, a division), by loops that do not tile its
// dimensions exactly (a padded split), or already read in order; and a weight whose one reader
// is a layout rewrite already (MultiLevelTilingWithIntrin's packing).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "arith/linear.h"
#include "ir/annotation_keys.h"
#include "ir/functor.h"
#include "ir/layout_free.h"
#include "ir/op.h"
#include "schedule/analysis.h"
#include "tune/postproc/postproc.h"

namespace tyche::tune {

namespace {

using schedule::Schedule;
using schedule::Status;

// One part of a weight dimension: the index's digit of `stride` with `extent` values, driven by
// the loop at `loop` (its position in the reader's nest).
struct Piece {
  size_t dim;
  int64_t stride;
  int64_t extent;
  size_t loop;
};

std::string lambda_text(size_t rank, const std::vector<std::string>& outputs) {
  std::string in;
  for (size_t d = 0; d < rank; ++d) in += fmt::format("{}a{}", d ? ", " : "", d);
  return fmt::format("lambda {}: ({}{})", in, fmt::join(outputs, ", "),
                     outputs.size() == 1 ? "," : "");
}

// The pieces of each dimension of `buffer` as `block` reads it (read index `read`), in loop
// order with neighbours of one dimension merged; nullopt when the read does not qualify.
std::optional<std::vector<Piece>> layout_pieces(const Schedule& sch,
                                                const schedule::SRef& block_sref, size_t read) {
  const ir::BlockNode* block = block_sref->as_block();
  const ir::BlockRealizeNode* realize = sch.state().realize_of(block_sref.get());
  const ir::BufferRegion& region = block->reads[read];
  std::map<const ir::VarNode*, ir::Expr> binding;
  for (size_t k = 0; k < block->iter_vars.size(); ++k)
    binding[block->iter_vars[k].var.get()] = realize->iter_values[k];
  std::map<const ir::VarNode*, std::pair<size_t, int64_t>> loop_of;  // var -> (position, extent)
  std::vector<schedule::SRef> loops = schedule::get_loops(sch.state(), block_sref);
  for (size_t i = 0; i < loops.size(); ++i) {
    const ir::ForNode* f = loops[i]->as_for();
    auto extent = ir::as_const_int(f->extent);
    auto min = ir::as_const_int(f->min);
    if (!extent || !min || *min != 0) return std::nullopt;
    loop_of[f->loop_var.get()] = {i, *extent};
  }
  std::vector<Piece> pieces;
  std::vector<bool> loop_used(loops.size(), false);
  for (size_t d = 0; d < region.region.size(); ++d) {
    auto point = ir::as_const_int(region.region[d].extent);
    auto dim_extent = ir::as_const_int(region.buffer->shape[d]);
    if (!point || *point != 1 || !dim_extent) return std::nullopt;
    ir::Expr index = ir::substitute(region.region[d].min, [&](const ir::Var& v) -> ir::Expr {
      auto it = binding.find(v.get());
      return it == binding.end() ? ir::Expr() : it->second;
    });
    arith::LinearSum sum = arith::to_linear(index);
    if (sum.constant != 0) return std::nullopt;
    std::vector<Piece> dim;
    for (const arith::LinearTerm& t : sum.terms) {
      const auto* var = t.atom.as<ir::VarNode>();
      auto it = var ? loop_of.find(var) : loop_of.end();
      if (it == loop_of.end() || t.coeff <= 0 || loop_used[it->second.first]) return std::nullopt;
      loop_used[it->second.first] = true;
      if (it->second.second > 1) dim.push_back({d, t.coeff, it->second.second, it->second.first});
    }
    // A dense mixed-radix number: the strides, largest first, each the product of the extents
    // below it, covering exactly the dimension.
    std::sort(dim.begin(), dim.end(),
              [](const Piece& a, const Piece& b) { return a.stride > b.stride; });
    int64_t expected = 1;
    for (size_t k = dim.size(); k-- > 0;) {
      if (dim[k].stride != expected) return std::nullopt;
      expected *= dim[k].extent;
    }
    if (expected != *dim_extent) return std::nullopt;
    pieces.insert(pieces.end(), dim.begin(), dim.end());
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.loop < b.loop; });
  // Consecutive pieces of one dimension, the outer one the next digit up, are one piece.
  std::vector<Piece> merged;
  for (const Piece& p : pieces) {
    if (!merged.empty() && merged.back().dim == p.dim &&
        merged.back().stride == p.stride * p.extent) {
      merged.back().stride = p.stride;
      merged.back().extent *= p.extent;
    } else {
      merged.push_back(p);
    }
  }
  return merged;
}

// The transform_layout maps that take the weight from its layout to the pieces' order: one split
// per extra piece of a dimension (a // s, a % s, in place), then one permutation. Empty when the
// weight is already read in its own order.
std::vector<std::string> layout_maps(const std::vector<Piece>& pieces, size_t rank) {
  // The current layout's dimensions: each the digits of original dimension `dim` from `stride`
  // up (stride 1 on an axis still to be split: the rest of the dimension).
  struct Axis {
    size_t dim;
    int64_t stride;
  };
  std::vector<size_t> count(rank, 0);
  for (const Piece& p : pieces) ++count[p.dim];
  bool in_order = true;
  for (size_t k = 0; k < pieces.size(); ++k)
    in_order &= k == 0 || pieces[k - 1].dim < pieces[k].dim;
  for (size_t d = 0; d < rank; ++d) in_order &= count[d] <= 1;
  if (in_order) return {};
  std::vector<std::string> maps;
  std::vector<Axis> axes;
  for (size_t d = 0; d < rank; ++d) axes.push_back({d, 1});
  for (size_t d = 0; d < rank; ++d) {
    std::vector<int64_t> strides;  // this dimension's pieces, largest stride first
    for (const Piece& p : pieces)
      if (p.dim == d) strides.push_back(p.stride);
    std::sort(strides.rbegin(), strides.rend());
    // Split off the top digit while more than one is left: axis (d, stride 1) holds the rest.
    for (size_t k = 0; k + 1 < strides.size(); ++k) {
      size_t at = 0;
      while (!(axes[at].dim == d && axes[at].stride == 1)) ++at;
      std::vector<std::string> outs;
      for (size_t i = 0; i < axes.size(); ++i) {
        if (i != at) {
          outs.push_back(fmt::format("a{}", i));
          continue;
        }
        outs.push_back(fmt::format("a{} // {}", i, strides[k]));
        outs.push_back(fmt::format("a{} % {}", i, strides[k]));
      }
      maps.push_back(lambda_text(axes.size(), outs));
      axes[at].stride = strides[k];
      axes.insert(axes.begin() + static_cast<std::ptrdiff_t>(at) + 1, Axis{d, 1});
    }
  }
  // The permutation: axes of extent-1 dimensions first (no piece drives them), then the pieces.
  std::vector<std::string> outs;
  for (size_t i = 0; i < axes.size(); ++i)
    if (count[axes[i].dim] == 0) outs.push_back(fmt::format("a{}", i));
  for (const Piece& p : pieces)
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].dim == p.dim && axes[i].stride == p.stride) outs.push_back(fmt::format("a{}", i));
  maps.push_back(lambda_text(axes.size(), outs));
  return maps;
}

class RewriteLayout : public Postproc {
 public:
  std::string name() const override { return "RewriteLayout"; }

  Status apply(Schedule& sch) override {
    std::vector<size_t> params = ir::layout_free_params(sch.func());
    for (size_t p : params) {
      const ir::BufferNode* weight = sch.func()->params[p].get();
      std::vector<const ir::BlockNode*> readers;
      ir::post_order_visit(sch.func()->body, [&](const ir::Stmt& s) {
        const auto* b = s.as<ir::BlockNode>();
        if (b && schedule::reads_buffer(b, weight)) readers.push_back(b);
      });
      // The root block summarizes what its body reads: only the blocks inside count.
      readers.erase(
          std::remove_if(readers.begin(), readers.end(),
                         [&](const ir::BlockNode* b) { return !sch.state().get_sref(b)->parent; }),
          readers.end());
      // A reader that is itself a layout rewrite (a tensor intrinsic's packing) already lays the
      // weight out once; a second stage before it would leave it to run at every call.
      if (readers.size() != 1 || readers[0]->annotations.count(ir::ann::kLayoutRewritePreproc))
        continue;
      schedule::SRef sref = sch.state().get_sref(readers[0]);
      size_t read = 0;
      while (readers[0]->reads[read].buffer.get() != weight) ++read;
      std::optional<std::vector<Piece>> pieces = layout_pieces(sch, sref, read);
      if (!pieces) continue;
      std::vector<std::string> maps = layout_maps(*pieces, weight->shape.size());
      if (maps.empty()) continue;
      TYCHE_TRY_ASSIGN(block, sch.get_block(readers[0]->name));
      TYCHE_TRY_ASSIGN(stage, sch.cache_read(block, static_cast<int>(read), "global"));
      for (const std::string& map : maps)
        if (Status st = sch.transform_layout(stage, 0, map); !st) return st.error();
      if (Status st = sch.annotate(stage, ir::ann::kLayoutRewritePreproc, int64_t{1}); !st)
        return st.error();
    }
    return schedule::ok_status();
  }
};

}  // namespace

PostprocPtr rewrite_layout() {
  return std::make_shared<RewriteLayout>();
}

}  // namespace tyche::tune
