// A lowered kernel whose intermediate buffer no process can get (4 EiB), allocated in each
// iteration of a loop of the given kind: its code must report the failed allocation. The buffer
// is written, then read back in another order, so no compiler can drop it.
#pragma once

#include "ir/op.h"

namespace tyche::testing_kernels {

inline ir::PrimFunc exhausting_kernel(ir::ForKind kind) {
  using namespace ir;
  Buffer x = make_buffer("X", kFloat32, {Expr(64)});
  Buffer y = make_buffer("Y", kFloat32, {Expr(64)});
  Buffer huge = make_buffer("huge", kFloat32, {Expr(int64_t{1} << 60)});
  Var i("i"), j("j"), k("k");
  Stmt fill = for_loop(j, 0, 64, ForKind::kSerial, buffer_store(huge, buffer_load(x, {j}), {j}));
  Stmt drain =
      for_loop(k, 0, 64, ForKind::kSerial, buffer_store(y, buffer_load(huge, {Expr(63) - k}), {k}));
  return PrimFunc("oom", {x, y}, 1, for_loop(i, 0, 2, kind, allocate(huge, seq({fill, drain}))));
}

}  // namespace tyche::testing_kernels
