// Annotation keys, each defined once: the tuner's rules write them, its postprocessors and
// mutators read them, and lowering and the feature extractor honour the pragmas. They live at the
// IR layer because every one of those layers includes it (TVM keeps them beside its statements
// too, with the same names, so traces read alike).
#pragma once

namespace tyche::ir::ann {

// On the root block: the largest extent a fused parallel loop may have (int).
inline constexpr const char* kParallel = "meta_schedule.parallel";
// On the root block: the largest extent a fused vectorized loop may have (int).
inline constexpr const char* kVectorize = "meta_schedule.vectorize";
// On the root block: the auto-unroll step limit, explicit (unrolled in the IR) or implicit
// (left to the compiler); the value is a sample_categorical outcome.
inline constexpr const char* kUnrollExplicit = "meta_schedule.unroll_explicit";
inline constexpr const char* kUnrollImplicit = "meta_schedule.unroll_implicit";
// On a block MultiLevelTiling has tiled: its structure string.
inline constexpr const char* kTilingStructure = "meta_schedule.tiling_structure";
// On a shared-memory read cache block inside a threadIdx-bound loop (MultiLevelTiling, GPU): the
// vector length (int) RewriteCooperativeFetch copies with, spreading the copy over the threads.
inline constexpr const char* kCooperativeFetch = "meta_schedule.cooperative_fetch";
// On a block whose producers (the rfactor block AddRFactor made) RandomComputeLocation places.
inline constexpr const char* kRandomComputeProducer = "meta_schedule.random_compute_producer";
// On a loop, read by lowering (lower/unroll.cc): unroll the loops under it whose total unrolled
// size is at most this; with kUnrollExplicitPragma = 0 the limit is left to the compiler.
inline constexpr const char* kAutoUnrollMaxStep = "pragma_auto_unroll_max_step";
inline constexpr const char* kUnrollExplicitPragma = "pragma_unroll_explicit";
// On the root block: the input params (comma-separated indices) that hold constants, which a
// schedule may store in a layout of its own (ir/layout_free.h).
inline constexpr const char* kLayoutFreeBuffers = "layout_free_buffers";
// On a shared-memory read cache block of a tensor-core schedule (MultiLevelTilingTensorCore),
// whose threads are warps bound to threadIdx.y: threadIdx.x is a warp's 32 lanes, so
// RewriteCooperativeFetch spreads the copy over 32 lanes where no threadIdx.x loop encloses it.
inline constexpr const char* kWarpExecution = "meta_schedule.warp_execution";
// On a root-level stage block that copies a layout-free param into the layout its reader walks
// (RewriteLayout): run once at load, not at every call (lower/layout_rewrite.h).
inline constexpr const char* kLayoutRewritePreproc = "meta_schedule.layout_rewrite_preproc";

// On the outer loop of a tensor-core intrinsic's implementation (schedule/intrin/cuda_wmma.cc):
// the warp-wide matrix instruction the 16 x 16 (x 16) nest under it is ("fill", "load_a",
// "load_b", "mma", "store"). The CUDA lowering emits that instruction
// (lower/gpu/gpu_warp_matrix.cc); everywhere else the nest runs as the loops it is, so its
// semantics never depend on the target.
inline constexpr const char* kWarpMatrix = "warp_matrix";

// On a serial loop whose body first copies into shared memory, then reads the copies (the
// reduction loop of a tiled GPU matrix product): keep this many copies of those buffers so that
// later iterations' copies overlap this one's reads (int; 1: none). The GPU lowering
// (lower/gpu/gpu_software_pipeline.cc) multi-versions the buffers, with cp.async on CUDA sm_80+.
inline constexpr const char* kSoftwarePipelineStages = "software_pipeline_stages";
// Set by that lowering on the loop it pipelined: the comma-separated names of the shared buffers
// it versioned, which the loop's own barrier fences (insert_thread_barriers adds none for them).
inline constexpr const char* kPipelinedSharedBuffers = "tyche.pipelined_shared_buffers";

}  // namespace tyche::ir::ann
