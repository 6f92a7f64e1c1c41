// What the GPU tests share (tests/lower/gpu: the lowering; tests/codegen/gpu: printing, running,
// compiling): schedule results unwrapped (a refusal throws its reason), the OpenCL device and
// NVRTC or why not, and the hand-scheduled programs both test the lowering and the code of.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/annotation_keys.h"
#include "ir/printer.h"
#include "lower/gpu/gpu_lower.h"
#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "target/target.h"
#include "tune/space/schedule_rule.h"

namespace tyche::testing {

template <typename T>
T ok(schedule::Result<T> r) {
  if (!r.ok()) throw Error(r.error().reason());
  return std::move(r).value();
}
inline void ok(const schedule::Status& s) {
  if (!s.ok()) throw Error(s.error().reason());
}

// The OpenCL device, or nullopt with why not in `why` (the tests then skip, saying so).
inline std::optional<runtime::opencl::Device> open_device(std::string& why) {
  try {
    return runtime::opencl::Device::open();
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

// Why NVRTC cannot compile here ("" if it can).
inline std::string nvrtc_missing() {
  try {
    runtime::cuda::nvrtc_version();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// ---- programs ----

inline const target::Target kOpenCL = target::Target::parse("opencl");

// A lowered program as text: intermediates, then each kernel's launch, shared buffers and body.
inline std::string describe(const lower::GpuProgram& p) {
  std::string out;
  for (const ir::Buffer& b : p.intermediates)
    out += fmt::format("intermediate {} ({} bytes)\n", b->name,
                       ir::const_shape(b)[0] * b->dtype.bytes());
  for (const lower::GpuKernel& k : p.kernels) {
    std::vector<std::string> shared, buffers;
    for (const ir::Buffer& b : k.shared) shared.push_back(b->name);
    for (const ir::Buffer& b : k.buffers) buffers.push_back(b->name);
    out += fmt::format(
        "kernel {}({}): grid ({}, {}, {}), block ({}, {}, {}), shared [{}] {} bytes\n{}\n", k.name,
        fmt::join(buffers, ", "), k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
        k.block[2], fmt::join(shared, ", "), k.shared_bytes, ir::to_string(k.body));
  }
  return out;
}

// X's rows a block reads in one k step, staged in shared memory by its 8 x 8 threads together.
inline void stage_x_in_shared(schedule::Schedule& sch, const schedule::BlockRV& z,
                              const schedule::LoopRV& k_outer) {
  auto x_shared = ok(sch.cache_read(z, 0, "shared"));
  ok(sch.compute_at(x_shared, k_outer));
  auto fetch = ok(sch.get_loops(x_shared));
  auto fused = ok(sch.fuse({fetch[fetch.size() - 2], fetch.back()}));
  auto parts = ok(sch.split(fused, {std::nullopt, 8, 8}));
  ok(sch.bind(parts[1], "threadIdx.y"));
  ok(sch.bind(parts[2], "threadIdx.x"));
}

// GMM tiled by hand: 8 x 8 output tiles per block (blockIdx.x over rows, .y over columns), one
// element per thread (threadIdx.y, .x), X's rows staged in shared memory by every k step's threads.
inline ir::PrimFunc bound_gmm(const ir::PrimFunc& func) {
  schedule::Schedule sch(func);
  auto z = ok(sch.get_block("Z"));
  auto loops = ok(sch.get_loops(z));  // b, i, j, k
  auto i = ok(sch.split(loops[1], {std::nullopt, 8}));
  auto j = ok(sch.split(loops[2], {std::nullopt, 8}));
  auto k = ok(sch.split(loops[3], {std::nullopt, 8}));
  ok(sch.reorder({i[0], j[0], i[1], j[1], k[0], k[1]}));
  ok(sch.bind(i[0], "blockIdx.x"));
  ok(sch.bind(j[0], "blockIdx.y"));
  ok(sch.bind(i[1], "threadIdx.y"));
  ok(sch.bind(j[1], "threadIdx.x"));
  stage_x_in_shared(sch, z, k[0]);
  return sch.func();
}

// GMM with 2 virtual threads over the rows of each block's 16 x 8 tile, each thread accumulating
// in a local buffer, X's rows staged in shared memory once per k step for both virtual threads.
inline ir::PrimFunc vthread_gmm(const ir::PrimFunc& func) {
  schedule::Schedule sch(func);
  auto z = ok(sch.get_block("Z"));
  auto z_local = ok(sch.cache_write(z, 0, "local"));
  auto loops = ok(sch.get_loops(z));  // b, i, j, k
  auto i = ok(sch.split(loops[1], {std::nullopt, 2, 8}));
  auto j = ok(sch.split(loops[2], {std::nullopt, 8}));
  auto k = ok(sch.split(loops[3], {std::nullopt, 8}));
  ok(sch.reorder({i[0], j[0], i[1], i[2], j[1], k[0], k[1]}));
  ok(sch.bind(i[0], "blockIdx.x"));
  ok(sch.bind(j[0], "blockIdx.y"));
  ok(sch.bind(i[1], "vthread.x"));
  ok(sch.bind(i[2], "threadIdx.y"));
  ok(sch.bind(j[1], "threadIdx.x"));
  ok(sch.reverse_compute_at(z_local, j[1]));
  stage_x_in_shared(sch, z, k[0]);
  return sch.func();
}

// Softmax with its two reductions shared by 16 threads of a block each (CrossThreadReduction's
// schedule), the rest bound by AutoBind.
inline ir::PrimFunc cross_thread_softmax(const ir::PrimFunc& func, int64_t threads = 16) {
  schedule::Schedule sch(func);
  for (const char* name : {"row_max", "row_sum"}) {
    auto b = ok(sch.get_block(name));
    auto loops = ok(sch.get_loops(b));
    auto parts = ok(sch.split(loops.back(), {std::nullopt, threads}));
    ok(sch.bind(parts[1], "threadIdx.x"));
  }
  return tune::auto_bind_blocks(sch.func(), kOpenCL, 0);
}

// A cooperative fetch into shared memory at `at`: the copy's loops fused and spread over the
// block's 2 warps of 32 threads, `vector` elements each; rows padded to 8 elements past a multiple
// of 32 (storage_align, laid out again for the tile compact_buffers shrinks the buffer to).
inline void fetch_to_shared(schedule::Schedule& sch, const schedule::BlockRV& reader, int read,
                            const schedule::LoopRV& at, int64_t lanes, int64_t vector) {
  auto shared = ok(sch.cache_read(reader, read, "shared"));
  ok(sch.compute_at(shared, at));
  ok(sch.storage_align(shared, 0, 1, 32, 8));
  auto loops = ok(sch.get_loops(shared));
  auto fused = ok(sch.fuse({loops[loops.size() - 2], loops.back()}));
  std::vector<std::optional<schedule::ExprArg>> factors = {std::nullopt, 2, lanes};
  if (vector > 1) factors.push_back(vector);
  auto parts = ok(sch.split(fused, factors));
  ok(sch.bind(parts[1], "threadIdx.y"));
  ok(sch.bind(parts[2], "threadIdx.x"));
  if (vector > 1) ok(sch.vectorize(parts[3]));
}

// The innermost two loops of `block` (rows, then columns of `cols` = 16 * n) as n tiles of
// 16 x 16, tensorized with `intrin`.
inline void tensorize_tiles(schedule::Schedule& sch, const schedule::BlockRV& block,
                            const std::string& intrin) {
  auto loops = ok(sch.get_loops(block));
  schedule::LoopRV rows = loops[loops.size() - 2], cols = loops.back();
  auto c = ok(sch.split(cols, {std::nullopt, 16}));
  auto r = ok(sch.split(rows, {std::nullopt, 16}));
  ok(sch.reorder({r[0], c[0], r[1], c[1]}));
  ok(sch.tensorize(r[1], intrin));
}

// GMM (float16 x float16 -> float32) on tensor cores: a block computes 32 x 32 of Z with 2 warps
// (threadIdx.y), each 16 rows by 2 tiles of 16 columns; per k step of 16, X's 32 x 16 and Y's
// 16 x 32 are fetched into shared memory by all 64 threads, then each warp loads its fragments
// and issues 2 mma. `type` is "f16" or "bf16"; `lanes` the fetches' threadIdx.x; without
// `tensorize_store` the accumulator is copied out by plain loops. `family`: "wmma" or "mma";
// `stages` > 0: the k loop annotated software_pipeline_stages.
struct TensorCoreGmm {
  std::string type = "f16";
  int64_t lanes = 32;
  bool tensorize_store = true;
  std::string family = "wmma";
  int64_t stages = 0;
  int64_t vector = 1;  // the fetches' elements per thread and step
};
inline ir::PrimFunc tensor_core_gmm(const ir::PrimFunc& func, const TensorCoreGmm& o) {
  const std::string& type = o.type;
  const std::string intrin = "cuda_" + o.family + "_";
  schedule::Schedule sch(func);
  auto z = ok(sch.get_block("Z"));
  auto acc = ok(sch.cache_write(z, 0, o.family + ".accumulator"));
  auto loops = ok(sch.get_loops(z));  // b, i, j, k
  auto i = ok(sch.split(loops[1], {std::nullopt, 2, 16}));
  auto j = ok(sch.split(loops[2], {std::nullopt, 2, 16}));
  auto k = ok(sch.split(loops[3], {std::nullopt, 16}));
  ok(sch.reorder({i[0], j[0], i[1], k[0], j[1], i[2], j[2], k[1]}));
  ok(sch.bind(i[0], "blockIdx.x"));
  ok(sch.bind(j[0], "blockIdx.y"));
  ok(sch.bind(i[1], "threadIdx.y"));
  ok(sch.reverse_compute_at(acc, i[1]));
  auto a = ok(sch.cache_read(z, 0, o.family + ".matrix_a"));
  auto b = ok(sch.cache_read(z, 1, o.family + ".matrix_b"));
  ok(sch.compute_at(a, k[0]));
  ok(sch.compute_at(b, k[0]));
  fetch_to_shared(sch, a, 0, k[0], o.lanes, o.vector);
  fetch_to_shared(sch, b, 0, k[0], o.lanes, o.vector);
  if (o.stages > 0) ok(sch.annotate(k[0], ir::ann::kSoftwarePipelineStages, o.stages));
  auto init = ok(sch.decompose_reduction(z, k[0]));
  tensorize_tiles(sch, a, intrin + "load_a_16x16_" + type);
  tensorize_tiles(sch, b, intrin + "load_b_16x16_" + type);
  tensorize_tiles(sch, init, intrin + "fill_16x16_f32");
  ok(sch.tensorize(i[2],
                   intrin + (o.family == "mma" ? "sync" : "mma") + "_16x16x16_" + type + "f32"));
  if (o.tensorize_store) tensorize_tiles(sch, acc, intrin + "store_16x16_f32");
  return sch.func();
}

}  // namespace tyche::testing

#define NVRTC_OR_SKIP()                                                          \
  if (std::string missing = ::tyche::testing::nvrtc_missing(); !missing.empty()) \
  GTEST_SKIP() << missing
#define OPEN_OR_SKIP(d)                        \
  std::string why;                             \
  auto d = ::tyche::testing::open_device(why); \
  if (!d) GTEST_SKIP() << why;
