// NVIDIA tensor cores, two families on the same 16 x 16 tiles (a warp fills, loads, multiplies and
// stores them together):
// - WMMA m16n16k16 (sm_70 and later for float16, sm_80 for bfloat16): fragments in the wmma.*
//   scopes, cuda_wmma_* intrinsics;
// - mma.sync m16n8k16 (sm_80 and later), each 16 x 16 x 16 update two instructions, operands
//   loaded from shared memory with ldmatrix: fragments in the mma.* scopes, cuda_mma_*
//   intrinsics. The thread owning each element is PTX's (warp-level matrix fragments), not
//   opaque as WMMA's, and ldmatrix loads four 8 x 8 matrices in one instruction.
//
// Each instruction is its own intrinsic, as TVM's wmma intrinsics are, so a schedule tensorizes
// the accumulator's init, the two operand copies, the update and the write-back separately:
//   fill:   C[i, j] = 0                                      (C in <family>.accumulator)
//   load_a: A[i, j] = S[i, j]  (A in <family>.matrix_a, S anywhere, row-major with any row stride)
//   load_b: B[i, j] = S[i, j]  (B in <family>.matrix_b)
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
    for (size_t d = 0; d < iters.size(); ++d)
      ivs.push_back(
          ir::IterVar{iters[d], ir::Range(ir::make_int(0), ir::make_int(kTile)), nest.kinds[d]});
    ir::Stmt update = nest.store(iters);
    ir::Block block = ir::make_block(op, ivs, {}, {}, ir::Stmt(), update);
    arith::Analyzer analyzer;
    arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
    block = ir::make_block(op, ivs, regions.reads, regions.writes, ir::Stmt(), update);
    body = ir::block_realize(std::vector<ir::Expr>(loops.begin(), loops.end()), ir::make_bool(true),
                             block);
  } else {
    body = nest.store(loops);
  }
  for (size_t d = loops.size(); d-- > 0;) {
    ir::Annotations ann;
    if (!desc && d == 0) ann[ir::ann::kWarpMatrix] = op;
    body = ir::for_loop(loops[d], ir::make_int(0), ir::make_int(kTile), ir::ForKind::kSerial, body,
                        {}, ann);
  }
  return body;
}

TensorIntrin make_intrin(const std::string& name, const std::string& op,
                         const std::function<std::vector<ir::Buffer>()>& params,
                         const std::function<Nest(const std::vector<ir::Buffer>&)>& nest) {
  std::vector<ir::Buffer> d = params(), m = params();
  return {name,
          intrin_func(name, d, build(nest(d), true, op)),
          intrin_func(name + "_impl", m, build(nest(m), false, op)),
          {}};
}

ir::Expr widen(ir::Expr e, DataType t) {
  return e.dtype() == t ? e : ir::cast(t, e);
}

TensorIntrin load(const std::string& name, const char* op, const std::string& scope, DataType t) {
  return make_intrin(
      name, op,
      [=] {
        return std::vector<ir::Buffer>{tile("S", t, "global"), tile("F", t, scope.c_str())};
      },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{
            {ir::IterKind::kSpatial, ir::IterKind::kSpatial}, [p](const std::vector<ir::Var>& v) {
              return ir::buffer_store(p[1], ir::buffer_load(p[0], {v[0], v[1]}), {v[0], v[1]});
            }};
      });
}

TensorIntrin mma(const std::string& name, const std::string& family, DataType in) {
  return make_intrin(
      name, "mma",
      [=] {
        return std::vector<ir::Buffer>{tile("A", in, (family + ".matrix_a").c_str()),
                                       tile("B", in, (family + ".matrix_b").c_str()),
                                       tile("C", kFloat32, (family + ".accumulator").c_str())};
      },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{{ir::IterKind::kSpatial, ir::IterKind::kSpatial, ir::IterKind::kReduce},
                    [p](const std::vector<ir::Var>& v) {
                      ir::Expr product = widen(ir::buffer_load(p[0], {v[0], v[2]}), kFloat32) *
                                         widen(ir::buffer_load(p[1], {v[2], v[1]}), kFloat32);
                      return ir::buffer_store(p[2], ir::buffer_load(p[2], {v[0], v[1]}) + product,
                                              {v[0], v[1]});
                    }};
      });
}

// One family's intrinsics: cuda_<family>_fill_16x16_f32, cuda_<family>_load_{a,b}_16x16_<t>,
// cuda_<family>_<update>_16x16x16_<t>f32, cuda_<family>_store_16x16_f32.
std::vector<TensorIntrin> family_intrins(const std::string& family, const std::string& update) {
  const DataType f16 = DataType::Float(16), bf16 = DataType::BFloat16();
  const std::string prefix = "cuda_" + family + "_", acc = family + ".accumulator";
  std::vector<TensorIntrin> out;
  out.push_back(make_intrin(
      prefix + "fill_16x16_f32", "fill",
      [acc] { return std::vector<ir::Buffer>{tile("C", kFloat32, acc.c_str())}; },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{{ir::IterKind::kSpatial, ir::IterKind::kSpatial},
                    [p](const std::vector<ir::Var>& v) {
                      return ir::buffer_store(p[0], ir::make_float(0.0, kFloat32), {v[0], v[1]});
                    }};
      }));
  for (auto [t, suffix] : {std::pair{f16, "f16"}, std::pair{bf16, "bf16"}}) {
    out.push_back(load(prefix + "load_a_16x16_" + suffix, "load_a", family + ".matrix_a", t));
    out.push_back(load(prefix + "load_b_16x16_" + suffix, "load_b", family + ".matrix_b", t));
    out.push_back(mma(prefix + update + "_16x16x16_" + suffix + "f32", family, t));
  }
  out.push_back(make_intrin(
      prefix + "store_16x16_f32", "store",
      [acc] {
        return std::vector<ir::Buffer>{tile("C", kFloat32, acc.c_str()),
                                       tile("D", kFloat32, "global")};
      },
      [](const std::vector<ir::Buffer>& p) {
        return Nest{
            {ir::IterKind::kSpatial, ir::IterKind::kSpatial}, [p](const std::vector<ir::Var>& v) {
              return ir::buffer_store(p[1], ir::buffer_load(p[0], {v[0], v[1]}), {v[0], v[1]});
            }};
      }));
  return out;
}

}  // namespace

std::vector<TensorIntrin> cuda_wmma_intrins() {
  return family_intrins("wmma", "mma");
}
std::vector<TensorIntrin> cuda_mma_intrins() {
  return family_intrins("mma", "sync");
}

}  // namespace tyche::schedule::intrin
