// NVIDIA tensor cores through WMMA (m16n16k16, sm_70 and later for float16, sm_80 for bfloat16):
// a warp fills, loads, multiplies and stores 16 x 16 fragments together.
//
// Each instruction is its own intrinsic, as TVM's wmma intrinsics are, so a schedule tensorizes
// the accumulator's init, the two operand copies, the update and the write-back separately:
//   fill:   C[i, j] = 0                                      (C in wmma.accumulator)
//   load_a: A[i, j] = S[i, j]  (A in wmma.matrix_a, S anywhere, row-major with any row stride)
//   load_b: B[i, j] = S[i, j]  (B in wmma.matrix_b)
//   mma:    C[i, j] = C[i, j] + float(A[i, k]) * float(B[k, j])
//   store:  D[i, j] = C[i, j]  (D anywhere)
// An implementation is its description's loops without the block, its outer loop annotated
// warp_matrix = the instruction: the CUDA lowering turns the nest into the instruction, every
// other target runs the loops (PoCL executes a tensor-core schedule as plain code, per thread).
#include <functional>

#include "arith/region.h"
#include "ir/annotation_keys.h"
#include "ir/op.h"
#include "schedule/intrin/dot.h"

namespace tyche::schedule::intrin {

namespace {

constexpr int kTile = 16;

ir::Buffer tile(const char* name, DataType t, const char* scope) {
  return ir::make_buffer(name, t, {ir::make_int(kTile), ir::make_int(kTile)}, scope);
}

// The nest over `iters` (16 each) around `store(iterator variables)`: with a block for the
// description, annotated loops around the plain store for the implementation.
struct Nest {
  std::vector<ir::IterKind> kinds;
  std::function<ir::Stmt(const std::vector<ir::Var>&)> store;
};

ir::Stmt build(const Nest& nest, bool desc, const std::string& op) {
  std::vector<ir::Var> loops, iters;
  for (size_t d = 0; d < nest.kinds.size(); ++d) {
    loops.emplace_back(std::string(1, "ijk"[d]));
    iters.emplace_back(std::string("v") + "ijk"[d]);
  }
  ir::Stmt body;
  if (desc) {
    std::vector<ir::IterVar> ivs;
    for (size_t d = 0; d < iters.size(); ++d) ivs.push_back(ir::IterVar{iters[d], ir::Range(ir::make_int(0), ir::make_int(kTile)), nest.kinds[d]});
    ir::Stmt update = nest.store(iters);
    ir::Block block = ir::make_block(op, ivs, {}, {}, ir::Stmt(), update);
    arith::Analyzer analyzer;
    arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
    block = ir::make_block(op, ivs, regions.reads, regions.writes, ir::Stmt(), update);
    body = ir::block_realize(std::vector<ir::Expr>(loops.begin(), loops.end()), ir::make_bool(true), block);
  } else {
    body = nest.store(loops);
  }
  for (size_t d = loops.size(); d-- > 0;) {
    ir::Annotations ann;
    if (!desc && d == 0) ann[ir::ann::kWarpMatrix] = op;
    body = ir::for_loop(loops[d], ir::make_int(0), ir::make_int(kTile), ir::ForKind::kSerial, body, {}, ann);
  }
  return body;
}

TensorIntrin make_intrin(const std::string& name, const std::string& op, const std::function<std::vector<ir::Buffer>()>& params,
                         const std::function<Nest(const std::vector<ir::Buffer>&)>& nest) {
  std::vector<ir::Buffer> d = params(), m = params();
  return {name, intrin_func(name, d, build(nest(d), true, op)), intrin_func(name + "_impl", m, build(nest(m), false, op)), {}};
}

ir::Expr widen(ir::Expr e, DataType t) { return e.dtype() == t ? e : ir::cast(t, e); }

TensorIntrin load(const std::string& name, const char* op, const char* scope, DataType t) {
  return make_intrin(
      name, op, [=] { return std::vector<ir::Buffer>{tile("S", t, "global"), tile("F", t, scope)}; },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{{ir::IterKind::kSpatial, ir::IterKind::kSpatial},
                    [p](const std::vector<ir::Var>& v) { return ir::buffer_store(p[1], ir::buffer_load(p[0], {v[0], v[1]}), {v[0], v[1]}); }};
      });
}

TensorIntrin mma(const std::string& name, DataType in) {
  return make_intrin(
      name, "mma",
      [=] {
        return std::vector<ir::Buffer>{tile("A", in, "wmma.matrix_a"), tile("B", in, "wmma.matrix_b"), tile("C", kFloat32, "wmma.accumulator")};
      },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{{ir::IterKind::kSpatial, ir::IterKind::kSpatial, ir::IterKind::kReduce}, [p](const std::vector<ir::Var>& v) {
                      ir::Expr product = widen(ir::buffer_load(p[0], {v[0], v[2]}), kFloat32) * widen(ir::buffer_load(p[1], {v[2], v[1]}), kFloat32);
                      return ir::buffer_store(p[2], ir::buffer_load(p[2], {v[0], v[1]}) + product, {v[0], v[1]});
                    }};
      });
}

}  // namespace

std::vector<TensorIntrin> cuda_wmma_intrins() {
  const DataType f16 = DataType::Float(16), bf16 = DataType::BFloat16();
  std::vector<TensorIntrin> out;
  out.push_back(make_intrin(
      "cuda_wmma_fill_16x16_f32", "fill", [] { return std::vector<ir::Buffer>{tile("C", kFloat32, "wmma.accumulator")}; },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{{ir::IterKind::kSpatial, ir::IterKind::kSpatial},
                    [p](const std::vector<ir::Var>& v) { return ir::buffer_store(p[0], ir::make_float(0.0, kFloat32), {v[0], v[1]}); }};
      }));
  for (auto [t, suffix] : {std::pair{f16, "f16"}, std::pair{bf16, "bf16"}}) {
    out.push_back(load(std::string("cuda_wmma_load_a_16x16_") + suffix, "load_a", "wmma.matrix_a", t));
    out.push_back(load(std::string("cuda_wmma_load_b_16x16_") + suffix, "load_b", "wmma.matrix_b", t));
    out.push_back(mma(std::string("cuda_wmma_mma_16x16x16_") + suffix + "f32", t));
  }
  out.push_back(make_intrin(
      "cuda_wmma_store_16x16_f32", "store",
      [] { return std::vector<ir::Buffer>{tile("C", kFloat32, "wmma.accumulator"), tile("D", kFloat32, "global")}; },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{{ir::IterKind::kSpatial, ir::IterKind::kSpatial},
                    [p](const std::vector<ir::Var>& v) { return ir::buffer_store(p[1], ir::buffer_load(p[0], {v[0], v[1]}), {v[0], v[1]}); }};
      }));
  return out;
}

}  // namespace tyche::schedule::intrin
