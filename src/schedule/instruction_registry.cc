// The explicit table of instruction kinds. Adding a primitive: define its kind (a function
// `const InstructionKind& kind_<name>()` beside the primitive) and add one line here.
#include "schedule/instruction.h"

#define TYCHE_INSTRUCTION_KINDS(X)                                                                \
  /* sampling (sampling.cc) */                                                                    \
  X(sample_perfect_tile) X(sample_categorical) X(sample_compute_location)                         \
  /* lookup (get_block_loop.cc) */                                                                \
  X(get_block) X(get_loops) X(get_child_blocks) X(get_producers) X(get_consumers)                 \
  /* loops (loop_transformation.cc, for_kind.cc) */                                               \
  X(split) X(fuse) X(reorder) X(add_unit_loop) X(parallel) X(vectorize) X(unroll) X(bind)         \
  /* annotations (annotate.cc) */                                                                 \
  X(annotate) X(unannotate)                                                                       \
  /* compute location (compute_at.cc, compute_inline.cc) */                                       \
  X(compute_at) X(reverse_compute_at) X(compute_inline) X(reverse_compute_inline)                 \
  /* caches (cache.cc) */                                                                         \
  X(cache_read) X(cache_write) X(set_scope) X(storage_align) X(transform_layout)                   \
  /* reductions (reduction.cc) */                                                                 \
  X(decompose_reduction) X(rfactor)                                                               \
  /* blocks (blockize_tensorize.cc) */                                                            \
  X(blockize) X(tensorize)

namespace tyche::schedule {

#define TYCHE_DECLARE_KIND(name) const InstructionKind& kind_##name();
TYCHE_INSTRUCTION_KINDS(TYCHE_DECLARE_KIND)
#undef TYCHE_DECLARE_KIND

const std::vector<const InstructionKind*>& instruction_kinds() {
#define TYCHE_KIND_ENTRY(name) &kind_##name(),
  static const std::vector<const InstructionKind*> table = {TYCHE_INSTRUCTION_KINDS(TYCHE_KIND_ENTRY)};
#undef TYCHE_KIND_ENTRY
  return table;
}

}  // namespace tyche::schedule
