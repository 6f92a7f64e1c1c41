// Lowering: a scheduled PrimFunc -> flat loops over 1-d buffers that a backend can emit directly.
// One linear pipeline of passes (lower()), each also callable alone for tests. With a log sink,
// the IR after every pass is reported (`tyche run --dump-ir`).
//
// After lowering: no blocks (iter vars substituted by their bindings, inits guarded by "all
// reduce iters at their minimum", predicates as ifs, alloc_buffers as Allocate); every buffer is
// 1-d (strides from storage_align honoured); vectorized loops are vector expressions (Ramp /
// Broadcast) or, when that is not possible, serial loops with a note; unrolled loops of at most
// kMaxUnrollExtent iterations are unrolled, and so are the small loops under a
// pragma_auto_unroll_max_step annotation. Parallel loops stay For nodes of kind kParallel: the
// backend outlines their bodies (codegen does the closure conversion).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"

namespace tyche::lower {

inline constexpr int64_t kMaxUnrollExtent = 64;
inline constexpr int kMaxVectorLanes = 64;

struct LowerOptions {
  // Called with each pass's name and the function after it, when set.
  std::function<void(const std::string& pass, const ir::PrimFunc& func)> log;
};

struct Lowered {
  ir::PrimFunc func;
  // Why a loop was not lowered as asked (a vectorized loop that became serial, ...).
  std::vector<std::string> notes;
};

Lowered lower(const ir::PrimFunc& func, const LowerOptions& options = {});

// lower() in two halves, so that a tuning candidate is lowered once: lower_loops (blocks to loops,
// intermediates compacted: the program the cost model's features read) and finish_lowering (the
// rest, for the code generator). lower(f) is finish_lowering(lower_loops(f)). Thread bindings are
// kept as loops of their kind only on request (a GPU program's features read them).
Lowered lower_loops(const ir::PrimFunc& func, const LowerOptions& options = {},
                    bool keep_thread_bindings = false);
Lowered finish_lowering(Lowered loops, const LowerOptions& options = {});

// ---- the passes, in pipeline order ----
// Blocks -> loops; thread bindings become serial loops on the CPU (noted), unless kept (the
// features of a GPU program read them).
ir::PrimFunc lower_blocks(const ir::PrimFunc& func, std::vector<std::string>* notes,
                          bool keep_thread_bindings = false);
// Moves each Allocate down the loops containing all its accesses while their iterations touch
// disjoint elements, and shrinks it to the region one iteration touches (buffers with explicit
// strides keep their layout).
ir::PrimFunc compact_buffers(const ir::PrimFunc& func);
// N-d buffers -> 1-d; params are replaced by their flat versions, in the same order.
ir::PrimFunc flatten_buffers(const ir::PrimFunc& func);
// Simplifies index expressions and conditions under the loop ranges; drops decided ifs.
ir::PrimFunc simplify(const ir::PrimFunc& func);
// Vectorized loops -> vector expressions, or serial loops with a note.
ir::PrimFunc vectorize_loops(const ir::PrimFunc& func, std::vector<std::string>* notes);
// Unrolled loops of constant extent <= kMaxUnrollExtent -> copies of the body; under a loop
// annotated pragma_auto_unroll_max_step = N (explicit), serial loops of at most N steps too
// (see unroll.cc).
ir::PrimFunc unroll_loops(const ir::PrimFunc& func, std::vector<std::string>* notes);
// Nested parallel loops: only the outermost runs in parallel (inner ones become serial, noted).
ir::PrimFunc serialize_nested_parallel(const ir::PrimFunc& func, std::vector<std::string>* notes);
// A loop whose body only accumulates terms that are zero unless some conditions hold (products
// with a padding's zeros, say), and stores to buffers allocated inside it, runs its body only
// when the conditions it does not change hold.
ir::PrimFunc skip_zero_terms(const ir::PrimFunc& func);
// The same, before flattening, for the zeros of a padded buffer the function allocates at its top
// and fills once (every store if_then_else(bounds on its indices, x, 0)): a loop whose body's
// accumulations all read it where the bounds fail is skipped.
ir::PrimFunc skip_padding_taps(const ir::PrimFunc& func);
// A serial loop whose body has ifs with conditions invariant in it (no loads, no variable bound
// inside) is copied: if (all of them) { the loop without those ifs } else { the loop }.
ir::PrimFunc unswitch_invariant_ifs(const ir::PrimFunc& func);

}  // namespace tyche::lower
