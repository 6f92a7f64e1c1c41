#include "codegen/gpu/gpu_codegen.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "codegen/c/c_expr_printer.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "lower/gpu/gpu_resources.h"
#include "support/error.h"
#include "support/int_division.h"

namespace tyche::codegen {

namespace {

// NVRTC has no standard headers; nvcc (an exported .cu) has them.
const char* kCudaPrelude = R"(#ifdef __CUDACC_RTC__
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; typedef unsigned long long uint64_t;
#else
#include <math.h>
#include <stdint.h>
#endif
#define TYCHE_DEVICE static __device__ __forceinline__
#define TYCHE_FLOAT_BITS(f) __float_as_uint(f)
#define TYCHE_BITS_FLOAT(u) __uint_as_float(u)
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef INT64_MIN
#define INT64_MIN (-9223372036854775807LL - 1)
#endif
TYCHE_DEVICE float tyche_expf(float x) { return expf(x); }
)";

const char* kOpenCLPrelude = R"(#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;
#define TYCHE_DEVICE static inline
#define TYCHE_FLOAT_BITS(f) as_uint(f)
#define TYCHE_BITS_FLOAT(u) as_float(u)
#define INT64_MIN LONG_MIN
TYCHE_DEVICE float tyche_expf(float x) { return exp(x); }
)";

// Both dialects: the helpers the expressions call.
const char* kCommonPrelude = R"(#define TYCHE_MINMAX(T, S) \
  TYCHE_DEVICE T tyche_min_##S(T a, T b) { return a < b ? a : b; } \
  TYCHE_DEVICE T tyche_max_##S(T a, T b) { return a < b ? b : a; }
TYCHE_MINMAX(int8_t, i8) TYCHE_MINMAX(int16_t, i16) TYCHE_MINMAX(int32_t, i32) TYCHE_MINMAX(int64_t, i64)
TYCHE_MINMAX(uint8_t, u8) TYCHE_MINMAX(uint16_t, u16) TYCHE_MINMAX(uint32_t, u32) TYCHE_MINMAX(uint64_t, u64)
TYCHE_MINMAX(float, f32) TYCHE_MINMAX(double, f64) TYCHE_MINMAX(bool, b)
TYCHE_DEVICE float tyche_sigmoidf(float x) { return 1.0f / (1.0f + tyche_expf(-x)); }
/* bfloat16: the 16 high bits of a float; float16: IEEE binary16; both computed in float. */
TYCHE_DEVICE float tyche_bf16_to_f32(uint16_t h) { return TYCHE_BITS_FLOAT((uint32_t)h << 16); }
TYCHE_DEVICE uint16_t tyche_f32_to_bf16(float f) {
  uint32_t u = TYCHE_FLOAT_BITS(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
TYCHE_DEVICE float tyche_round_bf16(float f) { return tyche_bf16_to_f32(tyche_f32_to_bf16(f)); }
TYCHE_DEVICE float tyche_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return TYCHE_BITS_FLOAT(sign | 0x7f800000u | (m << 13));
  if (e != 0) return TYCHE_BITS_FLOAT(sign | ((e + 112u) << 23) | (m << 13));
  float v = (float)m * 5.9604644775390625e-8f; /* 2^-24 */
  return sign ? -v : v;
}
TYCHE_DEVICE uint16_t tyche_f32_to_f16(float f) {
  uint32_t u = TYCHE_FLOAT_BITS(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
  if (a < 0x38800000u) { /* a float16 subnormal: round to nearest even on a 2^-24 grid */
    float v = TYCHE_BITS_FLOAT(a) * 16777216.0f;
    uint32_t q = (uint32_t)v;
    float r = v - (float)q;
    if (r > 0.5f || (r == 0.5f && (q & 1u))) ++q;
    return (uint16_t)(sign | q);
  }
  uint32_t mant = a & 0x7fffffu, e = (a >> 23) - 112u, h = (e << 10) | (mant >> 13), rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}
TYCHE_DEVICE float tyche_round_f16(float f) { return tyche_f16_to_f32(tyche_f32_to_f16(f)); }
)";

bool is_mma_family(const ir::Buffer& b) {
  return b->scope.starts_with("mma.");
}

std::string fragment_element_type(const ir::Buffer& b) {
  if (ir::fragment_role(b->scope) == "accumulator") {
    if (b->dtype != kFloat32)
      throw Error(fmt::format("GPU back end: accumulator fragment '{}' is {}, not float32", b->name,
                              b->dtype.str()));
    return "float";
  }
  if (!(b->dtype.is_float() && b->dtype.bits() == 16))
    throw Error(fmt::format("GPU back end: operand fragment '{}' is {}, not float16 or bfloat16",
                            b->name, b->dtype.str()));
  return "uint32_t";
}

std::string operands(const char* constraint, const char* array, int count) {
  std::vector<std::string> out;
  for (int r = 0; r < count; ++r)
    out.push_back(fmt::format("\"{}\"({}[{}])", constraint, array, r));
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string registers(int first, int count) {
  std::vector<std::string> out;
  for (int r = 0; r < count; ++r) out.push_back(fmt::format("%{}", first + r));
  return fmt::format("{{{}}}", fmt::join(out, ", "));
}

// The device function behind one warp_matrix_* call (inline PTX: no CUDA headers needed, so
// NVRTC and nvcc compile it alike). `key`: "fill", "load_a_f16", "mma_bf16", "store", ...
std::string warp_matrix_helper(const std::string& key) {
  if (key == "fill")
    return "TYCHE_DEVICE void tyche_wmma_fill(float* c, float v) { for (int r = 0; r < 8; ++r) "
           "c[r] = v; }\n";
  if (key == "store")
    return fmt::format(
        "TYCHE_DEVICE void tyche_wmma_store(void* p, const float* c, int ld) {{\n  asm "
        "volatile(\"wmma.store.d.sync.aligned.row.m16n16k16.f32 "
        "[%0], {}, %9;\" :: \"l\"(p), {}, \"r\"(ld) : \"memory\");\n}}\n",
        registers(1, 8), operands("f", "c", 8));
  bool bf16 = key.ends_with("bf16");
  int n = bf16 ? 4 : 8;
  const char* type = bf16 ? "bf16" : "f16";
  if (key.starts_with("load_")) {
    char ab = key[5];
    return fmt::format(
        "TYCHE_DEVICE void tyche_wmma_{0}(uint32_t* f, const void* p, int ld) {{\n  asm "
        "volatile(\"wmma.load.{1}.sync.aligned.row.m16n16k16.{2} "
        "{3}, [%{4}], %{5};\" : {6} : \"l\"(p), \"r\"(ld) : \"memory\");\n}}\n",
        key, ab, type, registers(0, n), n, n + 1, operands("=r", "f", n));
  }
  // mma: c (in and out, operands 0..7), a, b.
  std::string shape = bf16 ? "f32.bf16.bf16.f32" : "f32.f32";
  return fmt::format(
      "TYCHE_DEVICE void tyche_wmma_{0}(float* c, const uint32_t* a, const uint32_t* b) {{\n  asm "
      "volatile(\"wmma.mma.sync.aligned.row.row."
      "m16n16k16.{1} {2}, {3}, {4}, {2};\" : {5} : {6}, {7});\n}}\n",
      key, shape, registers(0, 8), registers(8, n), registers(8 + n, n), operands("+f", "c", 8),
      operands("r", "a", n), operands("r", "b", n));
}

// The device function behind one call of the mma.sync family. The layouts are PTX's for
// m16n8k16 (lane l = 4 g + t): A's registers a0..a3 hold rows g, g + 8 at columns 2t, 2t + 1,
// then the same 8 columns on; B's half h (columns 8h..8h + 7) holds rows 2t, 2t + 1 (then + 8) of
// column g; C's half h holds rows g, g + 8 at columns 2t, 2t + 1. ldmatrix.x4 loads them from
// shared memory, lane l giving the address of row l % 16, column 8 (l / 16) of the tile (.trans for
// B, stored by rows of k). Keys: "fill", "load_{a,b}_{shared,generic}", "sync_{f16,bf16}", "store".
std::string mma_helper(const std::string& key) {
  const char* lane = "const int g = (int)(threadIdx.x & 31u) >> 2, t = (int)threadIdx.x & 3;";
  if (key == "fill")
    return "TYCHE_DEVICE void tyche_mma_fill(float* c, float v) { for (int r = 0; r < 8; ++r) c[r] "
           "= v; }\n";
  if (key == "store")
    return fmt::format(
        "TYCHE_DEVICE void tyche_mma_store(float* p, const float* c, int ld) {{\n  {}\n"
        "  for (int h = 0; h < 2; ++h)\n    for (int e = 0; e < 4; ++e) p[(g + 8 * (e >> 1)) * ld "
        "+ 8 * h + 2 * t + (e & 1)] = c[4 * h + e];\n}}\n",
        lane);
  if (key.starts_with("load_") && key.ends_with("_shared")) {
    bool b = key[5] == 'b';
    return fmt::format(
        "TYCHE_DEVICE void tyche_mma_{0}(uint32_t* f, const uint16_t* p, int ld) {{\n"
        "  const int l = (int)(threadIdx.x & 31u);\n"
        "  const uint16_t* row = p + (l & 15) * ld + 8 * (l >> 4);\n"
        "  uint64_t a;\n  asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(a) : \"l\"(row));\n"
        "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4{1}.shared.b16 {{%0, %1, %2, %3}}, [%4];\" "
        ": {2} : \"r\"((uint32_t)a) : \"memory\");\n}}\n",
        key, b ? ".trans" : "", operands("=r", "f", 4));
  }
  if (key.starts_with("load_")) {  // from memory ldmatrix cannot read: each thread its elements
    bool b = key[5] == 'b';
    std::string body =
        b ? "  for (int r = 0; r < 4; ++r) {\n    const int k = 8 * (r & 1) + 2 * t, n = 8 * (r >> "
            "1) + g;\n"
            "    f[r] = (uint32_t)p[k * ld + n] | ((uint32_t)p[(k + 1) * ld + n] << 16);\n  }\n"
          : "  for (int r = 0; r < 4; ++r) {\n    const int i = g + 8 * (r & 1), k = 8 * (r >> 1) "
            "+ 2 * t;\n"
            "    f[r] = (uint32_t)p[i * ld + k] | ((uint32_t)p[i * ld + k + 1] << 16);\n  }\n";
    return fmt::format(
        "TYCHE_DEVICE void tyche_mma_{}(uint32_t* f, const uint16_t* p, int ld) {{\n  {}\n{}}}\n",
        key, lane, body);
  }
  // sync: c += a * b as two m16n8k16 products, one per half of B and C.
  const char* type = key.ends_with("bf16") ? "bf16" : "f16";
  return fmt::format(
      "TYCHE_DEVICE void tyche_mma_{0}(float* c, const uint32_t* a, const uint32_t* b) {{\n  for "
      "(int h = 0; h < 2; ++h)\n"
      "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{1}.{1}.f32 {{%0, %1, %2, %3}}, "
      "{{%4, %5, %6, %7}}, {{%8, %9}}, "
      "{{%0, %1, %2, %3}};\"\n                 : \"+f\"(c[4 * h]), \"+f\"(c[4 * h + 1]), "
      "\"+f\"(c[4 * h + 2]), \"+f\"(c[4 * h + 3])\n"
      "                 : {2}, \"r\"(b[2 * h]), \"r\"(b[2 * h + 1]));\n}}\n",
      key, type, operands("r", "a", 4));
}

// cp.async of 4, 8 or 16 bytes global -> shared (16 bytes bypass L1: .cg).
std::string cp_async_helper(int bytes) {
  return fmt::format(
      "TYCHE_DEVICE void tyche_cp_async{0}(void* dst, const void* src) {{\n  uint64_t s;\n"
      "  asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(s) : \"l\"(dst));\n"
      "  asm volatile(\"cp.async.{1}.shared.global [%0], [%1], {0};\" :: \"r\"((uint32_t)s), "
      "\"l\"(src) : \"memory\");\n}}\n",
      bytes, bytes == 16 ? "cg" : "ca");
}

class GpuEmitter : public CExprPrinter {
 public:
  explicit GpuEmitter(GpuDialect dialect) : dialect_(dialect) { out_ = &body_; }

  std::string emit(const lower::GpuProgram& program) {
    for (const lower::GpuKernel& k : program.kernels) kernel(program, k);
    std::string head = cuda() ? kCudaPrelude : kOpenCLPrelude;
    head += kCommonPrelude;
    head += kIntDivisionGpuSource;
    head += "\n";
    for (const std::string& key : helpers_)
      head += key.starts_with("mma:")       ? mma_helper(key.substr(4))
              : key.starts_with("cp_async") ? cp_async_helper(std::stoi(key.substr(8)))
                                            : warp_matrix_helper(key);
    head += "\n";
    if (cuda()) head += "extern \"C\" {\n\n";
    std::string tail = cuda() ? "}  /* extern \"C\" */\n" : "";
    return head + body_.str() + tail;
  }

 private:
  bool cuda() const { return dialect_ == GpuDialect::kCuda; }

  std::string memory_type(DataType t) override { return gpu_memory_type(t); }
  std::string from_memory(const std::string& load, DataType t) override {
    if (t.is_bfloat16()) return fmt::format("tyche_bf16_to_f32({})", load);
    if (t.is_float() && t.bits() == 16) return fmt::format("tyche_f16_to_f32({})", load);
    if (t.is_bool()) return fmt::format("({} != 0)", load);
    return load;
  }
  std::string to_memory(const std::string& v, DataType t) override {
    if (t.is_bfloat16()) return fmt::format("tyche_f32_to_bf16({})", v);
    if (t.is_float() && t.bits() == 16) return fmt::format("tyche_f32_to_f16({})", v);
    if (t.is_bool()) return fmt::format("(uint8_t)({})", v);
    return v;
  }
  std::string round_float16(const std::string& v) override {
    return fmt::format("tyche_round_f16({})", v);
  }
  std::string math(const std::string& name, bool f64) override {
    if (cuda()) return CExprPrinter::math(name, f64);
    return name == "nearbyint" ? "rint"
                               : name;  // OpenCL's are overloaded; rint rounds halves to even
  }
  const char* int64_suffix() override { return cuda() ? "LL" : "L"; }

  std::string call(const ir::CallNode* n, const std::string& lane) override {
    if (n->op == ir::CallOp::kThreadBarrier)
      return cuda() ? "__syncthreads()" : "barrier(CLK_LOCAL_MEM_FENCE)";
    if (n->op == ir::CallOp::kWarpShuffleDown || n->op == ir::CallOp::kWarpShuffle) {
      if (!cuda()) throw InternalError("GPU back end: a warp shuffle in OpenCL C");
      // Called by every thread of the block at once (uniform control flow): the active lanes are
      // the warp's threads.
      return fmt::format("{}(__activemask(), {}, {}, {})",
                         n->op == ir::CallOp::kWarpShuffle ? "__shfl_sync" : "__shfl_down_sync",
                         expr(n->args[0], lane), expr(n->args[1], lane), expr(n->args[2], lane));
    }
    if (n->op == ir::CallOp::kAsyncCopy) {
      if (!cuda()) throw InternalError("GPU back end: cp.async in OpenCL C");
      int64_t bytes = ir::as_const_int(n->args[2]).value();
      helpers_.insert(fmt::format("cp_async{}", bytes));
      return fmt::format("tyche_cp_async{}({}, {})", bytes, address(n->args[0]),
                         address(n->args[1]));
    }
    if (n->op == ir::CallOp::kAsyncCommit)
      return "asm volatile(\"cp.async.commit_group;\" ::: \"memory\")";
    if (n->op == ir::CallOp::kAsyncWait)
      return fmt::format("asm volatile(\"cp.async.wait_group {};\" ::: \"memory\")",
                         ir::as_const_int(n->args[0]).value());
    if (n->op >= ir::CallOp::kWarpMatrixFill && n->op <= ir::CallOp::kWarpMatrixStore)
      return warp_matrix(n);
    return CExprPrinter::call(n, lane);
  }

  std::string fragment(const ir::Expr& e) {
    auto* l = e.as<ir::BufferLoadNode>();
    if (!l || !ir::is_fragment_scope(l->buffer->scope))
      throw InternalError("GPU back end: a tensor-core operand is not a fragment");
    return fmt::format("{}[{}]", buffer_name(l->buffer), expr(l->indices.at(0), ""));
  }
  std::string address(const ir::Expr& e) {
    auto* l = e.as<ir::BufferLoadNode>();
    if (!l)
      throw InternalError("GPU back end: a tensor-core memory operand is not a buffer element");
    return fmt::format("&{}[{}]", buffer_name(l->buffer), expr(l->indices.at(0), ""));
  }
  std::string warp_matrix(const ir::CallNode* n) {
    if (!cuda()) throw InternalError("GPU back end: a tensor-core instruction in OpenCL C");
    auto* first = n->args[0].as<ir::BufferLoadNode>();
    auto* frag =
        n->op == ir::CallOp::kWarpMatrixStore ? n->args[1].as<ir::BufferLoadNode>() : first;
    const bool mma = frag && is_mma_family(frag->buffer);
    auto use = [&](std::string key) {
      helpers_.insert(mma ? "mma:" + key : key);
      return (mma ? "tyche_mma_" : "tyche_wmma_") + key;
    };
    auto type_of = [](const ir::Expr& e) {
      return e.as<ir::BufferLoadNode>()->buffer->dtype.is_bfloat16() ? "bf16" : "f16";
    };
    switch (n->op) {
      case ir::CallOp::kWarpMatrixFill:
        return fmt::format("{}({}, {})", use("fill"), fragment(n->args[0]), expr(n->args[1], ""));
      case ir::CallOp::kWarpMatrixLoad: {
        const char* ab = frag && ir::fragment_role(frag->buffer->scope) == "matrix_b" ? "b" : "a";
        std::string key = fmt::format("load_{}_{}", ab, type_of(n->args[0]));
        if (mma) {  // ldmatrix reads shared memory only
          auto* m = n->args[1].as<ir::BufferLoadNode>();
          key = fmt::format("load_{}_{}", ab,
                            m && m->buffer->scope.starts_with("shared") ? "shared" : "generic");
        }
        return fmt::format("{}({}, {}, {})", use(key), fragment(n->args[0]), address(n->args[1]),
                           expr(n->args[2], ""));
      }
      case ir::CallOp::kWarpMatrixMma:
        return fmt::format("{}({}, {}, {})",
                           use((mma ? "sync_" : "mma_") + std::string(type_of(n->args[1]))),
                           fragment(n->args[0]), fragment(n->args[1]), fragment(n->args[2]));
      case ir::CallOp::kWarpMatrixStore:
        return fmt::format("{}({}, {}, {})", use("store"), address(n->args[0]),
                           fragment(n->args[1]), expr(n->args[2], ""));
      default:
        throw InternalError("GPU back end: unknown tensor-core instruction");
    }
  }

  std::string thread_index(const std::string& tag) const {
    int d = tag.back() - 'x';
    bool block = tag.starts_with("blockIdx");
    if (cuda()) return tag;
    return fmt::format("{}({})", block ? "get_group_id" : "get_local_id", d);
  }

  void kernel(const lower::GpuProgram& program, const lower::GpuKernel& k) {
    std::vector<std::string> params;
    for (const ir::Buffer& b : k.buffers) {
      bool written = false;
      ir::post_order_visit(k.body, [&](const ir::Stmt& s) {
        auto* st = s.as<ir::BufferStoreNode>();
        written |= st && st->buffer.same_as(b);
      });
      struct TensorCoreStores
          : ir::StmtExprVisitor {  // a tensor core's store writes through an element
        const ir::Buffer* buffer;
        bool* written;
        void visit_call(const ir::CallNode* c) override {
          auto* m =
              c->op == ir::CallOp::kWarpMatrixStore ? c->args[0].as<ir::BufferLoadNode>() : nullptr;
          *written |= m && m->buffer.same_as(*buffer);
          ir::StmtExprVisitor::visit_call(c);
        }
      } stores;
      stores.buffer = &b;
      stores.written = &written;
      stores.visit_stmt(k.body);
      std::string type = memory_type(b->dtype);
      std::string konst = written ? "" : "const ";
      params.push_back(
          cuda() ? fmt::format("{}{}* __restrict__ {}", konst, type, buffer_name(b))
                 : fmt::format("__global {}{}* restrict {}", konst, type, buffer_name(b)));
    }
    (void)program;
    int64_t threads = k.block[0] * k.block[1] * k.block[2];
    if (cuda()) {
      line(fmt::format("__global__ void __launch_bounds__({}) {}({}) {{", threads, k.name,
                       fmt::join(params, ", ")));
    } else {
      line(fmt::format("__kernel __attribute__((reqd_work_group_size({}, {}, {}))) void {}({}) {{",
                       k.block[0], k.block[1], k.block[2], k.name, fmt::join(params, ", ")));
    }
    indent_ = 1;
    for (const lower::ThreadIndex& t : k.indices)
      line(fmt::format("const int32_t {} = (int32_t){};", var_name(t.var.get()),
                       thread_index(t.tag)));
    // Each array aligned as lower::kernel_resources lays them out (and as a tensor core's tile in
    // shared memory must be): the kernel's shared bytes are that layout's.
    for (const ir::Buffer& b : k.shared) {
      int64_t size = ir::as_const_int(b->shape.at(0)).value();
      if (cuda())
        line(fmt::format("__shared__ __align__({}) {} {}[{}];", lower::kSharedArrayAlignment,
                         memory_type(b->dtype), buffer_name(b), size));
      else
        line(fmt::format("__local {} {}[{}] __attribute__((aligned({})));", memory_type(b->dtype),
                         buffer_name(b), size, lower::kSharedArrayAlignment));
    }
    fragment_tiles_ = k.fragment_tiles;
    stmt(k.body);
    indent_ = 0;
    line("}");
    line("");
  }

  void stmt(const ir::Stmt& s) override {
    if (auto* f = s.as<ir::ForNode>(); f && f->for_kind == ir::ForKind::kThreadBinding)
      throw InternalError(fmt::format("GPU back end: loop '{}' bound to {} inside a kernel",
                                      f->loop_var.name(), f->thread_tag));
    if (common_stmt(s)) return;
    switch (s.kind()) {
      case ir::StmtKind::kEvaluate:
        line(fmt::format("{};", expr(s.as<ir::EvaluateNode>()->value, "")));
        return;
      case ir::StmtKind::kAllocate: {
        auto* n = s.as<ir::AllocateNode>();
        auto size = ir::as_const_int(n->buffer->shape.at(0));
        if (!size)
          throw Error(fmt::format("GPU back end: buffer '{}' has a size that is not constant",
                                  n->buffer->name));
        // A fragment left as a buffer (OpenCL: the tensor-core nests run as loops) is the thread's.
        if (n->buffer->scope != "local" && !ir::is_fragment_scope(n->buffer->scope))
          throw InternalError(fmt::format("GPU back end: {} buffer '{}' allocated inside a kernel",
                                          n->buffer->scope, n->buffer->name));
        line("{");
        ++indent_;
        // An array of tiles, each the thread's registers of one (sized so by
        // lower::kernel_resources).
        if (fragment_tiles_ && ir::is_fragment_scope(n->buffer->scope))
          line(fmt::format("{} {}[{}][{}];", fragment_element_type(n->buffer),
                           buffer_name(n->buffer), *size,
                           lower::fragment_tile_registers(n->buffer)));
        else
          line(fmt::format("{} {}[{}];", memory_type(n->buffer->dtype), buffer_name(n->buffer),
                           *size));
        stmt(n->body);
        --indent_;
        line("}");
        return;
      }
      case ir::StmtKind::kBlock:
      case ir::StmtKind::kBlockRealize:
        throw InternalError("GPU back end: the program still has blocks");
      case ir::StmtKind::kBufferStore:
      case ir::StmtKind::kSeqStmt:
      case ir::StmtKind::kIfThenElse:
      case ir::StmtKind::kFor:
        return;  // common_stmt's
    }
  }

  GpuDialect dialect_;
  bool fragment_tiles_ = false;  // the kernel being printed holds its fragments as tiles
  std::ostringstream body_;
  std::set<std::string> helpers_;  // the tensor-core device functions the kernels call
};

}  // namespace

std::string gpu_memory_type(DataType t) {
  if (t.is_float() && t.bits() == 16) return "uint16_t";
  if (t.is_bool()) return "uint8_t";  // OpenCL forbids bool in memory shared with the host
  if (t.is_float()) return t.bits() == 64 ? "double" : "float";
  return fmt::format("{}int{}_t", t.is_uint() ? "u" : "", t.bits());
}

size_t gpu_buffer_bytes(const ir::Buffer& b) {
  return static_cast<size_t>(lower::gpu_array_bytes(b));
}

const char* gpu_dialect_name(GpuDialect d) {
  return d == GpuDialect::kCuda ? "cuda" : "opencl";
}

std::string emit_gpu(const lower::GpuProgram& program, GpuDialect dialect) {
  return GpuEmitter(dialect).emit(program);
}

}  // namespace tyche::codegen
