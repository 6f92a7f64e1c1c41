#include "lower/lower.h"

namespace tyche::lower {

Lowered lower(const ir::PrimFunc& func, const LowerOptions& options) {
  Lowered out;
  out.func = func;
  auto run = [&](const char* name, auto pass) {
    out.func = pass(out.func);
    if (options.log) options.log(name, out.func);
  };
  std::vector<std::string>* notes = &out.notes;
  run("lower_blocks", [&](const ir::PrimFunc& f) { return lower_blocks(f, notes); });
  run("compact_buffers", [&](const ir::PrimFunc& f) { return compact_buffers(f); });
  run("flatten_buffers", [&](const ir::PrimFunc& f) { return flatten_buffers(f); });
  run("simplify", [&](const ir::PrimFunc& f) { return simplify(f); });
  run("vectorize_loops", [&](const ir::PrimFunc& f) { return vectorize_loops(f, notes); });
  run("unroll_loops", [&](const ir::PrimFunc& f) { return unroll_loops(f, notes); });
  run("serialize_nested_parallel", [&](const ir::PrimFunc& f) { return serialize_nested_parallel(f, notes); });
  run("simplify", [&](const ir::PrimFunc& f) { return simplify(f); });
  run("unswitch_invariant_ifs", [&](const ir::PrimFunc& f) { return unswitch_invariant_ifs(f); });
  return out;
}

}  // namespace tyche::lower
