#include "lower/lower.h"

namespace tyche::lower {

namespace {

// Runs one pass on `out`, then reports the result to the log sink.
template <typename Pass>
void run_pass(Lowered& out, const LowerOptions& options, const char* name, Pass pass) {
  out.func = pass(out.func);
  if (options.log) options.log(name, out.func);
}

}  // namespace

Lowered lower_loops(const ir::PrimFunc& func, const LowerOptions& options,
                    bool keep_thread_bindings) {
  Lowered out{func, {}};
  std::vector<std::string>* notes = &out.notes;
  run_pass(out, options, "lower_blocks",
           [&](const ir::PrimFunc& f) { return lower_blocks(f, notes, keep_thread_bindings); });
  run_pass(out, options, "compact_buffers",
           [&](const ir::PrimFunc& f) { return compact_buffers(f); });
  return out;
}

Lowered finish_lowering(Lowered out, const LowerOptions& options) {
  std::vector<std::string>* notes = &out.notes;
  run_pass(out, options, "skip_padding_taps",
           [&](const ir::PrimFunc& f) { return skip_padding_taps(f); });
  run_pass(out, options, "flatten_buffers",
           [&](const ir::PrimFunc& f) { return flatten_buffers(f); });
  run_pass(out, options, "simplify", [&](const ir::PrimFunc& f) { return simplify(f); });
  run_pass(out, options, "vectorize_loops",
           [&](const ir::PrimFunc& f) { return vectorize_loops(f, notes); });
  run_pass(out, options, "unroll_loops",
           [&](const ir::PrimFunc& f) { return unroll_loops(f, notes); });
  run_pass(out, options, "serialize_nested_parallel",
           [&](const ir::PrimFunc& f) { return serialize_nested_parallel(f, notes); });
  run_pass(out, options, "simplify", [&](const ir::PrimFunc& f) { return simplify(f); });
  run_pass(out, options, "skip_zero_terms",
           [&](const ir::PrimFunc& f) { return skip_zero_terms(f); });
  run_pass(out, options, "unswitch_invariant_ifs",
           [&](const ir::PrimFunc& f) { return unswitch_invariant_ifs(f); });
  return out;
}

Lowered lower(const ir::PrimFunc& func, const LowerOptions& options) {
  return finish_lowering(lower_loops(func, options), options);
}

}  // namespace tyche::lower
