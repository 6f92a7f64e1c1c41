// The C backend's output compiles with the system C compiler and agrees with the reference.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "../../common/exhausting_kernel.h"
#include "../../common/sanitizers.h"
#include "codegen/c/c_codegen.h"
#include "codegen/export/export.h"
#include "interp/interpreter.h"
#include "ir/op.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "runtime/module.h"
#include "schedule/schedule.h"
#include "schedules.h"
#include "te/tensor.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The exported runtime (its parallel loops' thread pool), compiled once per test process.
struct RuntimeObject {
  std::string path = ::testing::TempDir() + fmt::format("/tyche_c_runtime_{}.o", getpid());
  RuntimeObject() {
    std::string source = path + ".c";
    std::ofstream(source) << export_runtime_source();
    std::string cmd = fmt::format("cc -std=c11 -O1 -Wall -Werror -fPIC -c -o {} {}", path, source);
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "the runtime does not compile: " << cmd;
    std::remove(source.c_str());
  }
  ~RuntimeObject() { std::remove(path.c_str()); }
};
const std::string& runtime_object() {
  static const RuntimeObject object;
  return object.path;
}

// Compiles C source, with the runtime its parallel loops call, into a shared library and returns
// its packed entry.
class CLibrary {
 public:
  CLibrary(const std::string& source, const std::string& name) {
    static int counter = 0;
    std::string base = ::testing::TempDir() + fmt::format("/tyche_c_{}_{}", getpid(), counter++);
    std::ofstream(base + ".c") << source;
    std::string cmd = fmt::format(
        "cc -std=c11 -O1 -Wall -Werror -shared -fPIC -o {0}.so {0}.c {1} -lm -lpthread 2> {0}.log",
        base, runtime_object());
    compiled = std::system(cmd.c_str()) == 0;
    if (!compiled) {
      std::ifstream log(base + ".log");
      error.assign(std::istreambuf_iterator<char>(log), {});
      return;
    }
    handle_ = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_)
      entry = reinterpret_cast<int32_t (*)(void**)>(dlsym(handle_, (name + "_packed").c_str()));
    std::remove((base + ".c").c_str());
    std::remove((base + ".so").c_str());
    std::remove((base + ".log").c_str());
  }
  ~CLibrary() {
    if (handle_) dlclose(handle_);
  }
  bool compiled = false;
  std::string error;
  int32_t (*entry)(void**) = nullptr;

 private:
  void* handle_ = nullptr;
};

// `misaligned`: every buffer is passed 4 bytes past a 64-byte boundary (the kernel copies them).
::testing::AssertionResult c_matches(const ir::PrimFunc& f,
                                     const std::vector<runtime::NDArray>& inputs,
                                     const std::vector<runtime::NDArray>& expected,
                                     int64_t max_stack_bytes = 64 * 1024, bool misaligned = false) {
  // Under another name: te's default, "main", is not one a C compiler takes for a kernel.
  ir::PrimFunc lowered =
      lower::lower(ir::PrimFunc("tested", f->params, f->num_outputs, f->body)).func;
  std::string source = emit_c(lowered, {.max_stack_bytes = max_stack_bytes});
  CLibrary lib(source, lowered->name);
  if (!lib.compiled)
    return ::testing::AssertionFailure() << "cc failed:\n" << lib.error << "\n" << source;
  if (!lib.entry) return ::testing::AssertionFailure() << "no packed entry";
  std::vector<runtime::NDArray> args = inputs;
  for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  std::vector<void*> ptrs;
  std::vector<runtime::NDArray> shifted;  // misaligned: each argument's bytes at +4
  for (auto& a : args) {
    if (!misaligned) {
      ptrs.push_back(a.data());
      continue;
    }
    shifted.push_back(runtime::NDArray({static_cast<int64_t>(a.nbytes()) + 64}, DataType::UInt(8)));
    ptrs.push_back(shifted.back().data_as<uint8_t>() + 4);
    std::memcpy(ptrs.back(), a.data(), a.nbytes());
  }
  if (int32_t status = lib.entry(ptrs.data()))
    return ::testing::AssertionFailure() << "status " << status << "\n" << source;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (misaligned)
      std::memcpy(args[inputs.size() + i].data(), ptrs[inputs.size() + i],
                  args[inputs.size() + i].nbytes());
    runtime::Comparison c = runtime::compare(args[inputs.size() + i], expected[i]);
    if (!c.ok) return ::testing::AssertionFailure() << c.message << "\n" << source;
  }
  return ::testing::AssertionSuccess();
}

ir::PrimFunc vectorize_inner(const ir::PrimFunc& f) {
  return test_schedules::parallel_vectorized(f);
}

TEST(CBackend, EveryPresetFamilyCompilesAndAgrees) {
  for (const std::string& op : workloads::op_names()) {
    SCOPED_TRACE(op);
    auto w = workloads::scaled_down(workloads::get_preset(op + "-1"));
    auto inputs = workloads::make_inputs(w.func, 4);
    auto expected = w.reference(inputs);
    EXPECT_TRUE(c_matches(w.func, inputs, expected));
    EXPECT_TRUE(c_matches(vectorize_inner(w.func), inputs, expected));
  }
}

TEST(CBackend, DataTypesAndMath) {
  using namespace te;
  for (DataType t : {kFloat64, DataType::Float(16), DataType::BFloat16(), kInt32, DataType::Int(8),
                     DataType::UInt(8)}) {
    SCOPED_TRACE(t.str());
    Tensor a = placeholder({5, 12}, t, "A");
    Tensor c = compute(
        {5, 12},
        [&](Var i, Var j) { return max(a(i, j) * ir::make_const(t, 3), a(i, j)) - a(i, 0); }, "C");
    ir::PrimFunc f = create_prim_func({a, c});
    runtime::NDArray in({5, 12}, t);
    in.fill_uniform(3, t.is_float() ? -2.0 : 0.0, t.is_float() ? 2.0 : 40.0);
    auto expected = interp::run_on_inputs(f, {in});
    EXPECT_TRUE(c_matches(f, {in}, expected));
    EXPECT_TRUE(c_matches(vectorize_inner(f), {in}, expected));
  }
  Tensor x = placeholder({3, 16}, kFloat32, "X");
  Tensor y = compute(
      {3, 16},
      [&](Var i, Var j) {
        ir::Expr v = x(i, j);
        return ir::exp(v) + ir::tanh(v) + ir::sigmoid(v) + ir::sqrt(ir::abs(v)) +
               ir::call(ir::CallOp::kErf, {v}) +
               ir::if_then_else(v > 0.0f, ir::log(v),
                                ir::cast(kFloat32, ir::cast(kInt32, v * 7.0f)));
      },
      "Y");
  ir::PrimFunc g = create_prim_func({x, y});
  runtime::NDArray in({3, 16}, kFloat32);
  in.fill_uniform(8);
  // round halves to even (nearbyintf), not away from zero (C's roundf).
  Tensor r = compute(
      {3, 16}, [&](Var i, Var j) { return ir::call(ir::CallOp::kRound, {x(i, j) * 4.0f}); }, "R");
  runtime::NDArray halves({3, 16}, kFloat32);
  for (int64_t e = 0; e < 48; ++e)
    halves.set_flat(e, static_cast<double>(e - 24) / 8.0);  // x * 4: every half
  runtime::NDArray rounded({3, 16}, kFloat32);
  for (int64_t e = 0; e < 48; ++e) rounded.set_flat(e, std::nearbyint(halves.get_flat(e) * 4.0));
  EXPECT_TRUE(c_matches(create_prim_func({x, r}), {halves}, {rounded}));
  auto expected = interp::run_on_inputs(g, {in});
  EXPECT_TRUE(c_matches(g, {in}, expected));
}

// The integer bit calls (shifts inside, at and past the width, and negative) and the
// trigonometric calls agree with the interpreter.
TEST(CBackend, BitAndTrigonometricCalls) {
  using namespace te;
  for (DataType t : {DataType::Int(8), DataType::UInt(16), DataType::Int(32), DataType::UInt(64)}) {
    SCOPED_TRACE(t.str());
    Tensor x = placeholder({2, 20}, t, "X");
    Tensor z = compute(
        {2, 20},
        [&](Var i, Var j) {
          ir::Expr s = ir::cast(t, ir::floordiv(ir::Expr(j) * (t.bits() + 6), 20) - 3);
          ir::Expr v = x(i, j);
          return ir::call(ir::CallOp::kBitwiseXor,
                          {ir::call(ir::CallOp::kShiftLeft, {v, s}),
                           ir::call(ir::CallOp::kBitwiseOr,
                                    {ir::call(ir::CallOp::kShiftRight,
                                              {ir::call(ir::CallOp::kBitwiseNot, {v}), s}),
                                     ir::call(ir::CallOp::kBitwiseAnd, {v, s})})});
        },
        "Z");
    ir::PrimFunc f = create_prim_func({x, z});
    runtime::NDArray in({2, 20}, t);
    in.fill_uniform(5, 0.0, 100.0);
    EXPECT_TRUE(c_matches(f, {in}, interp::run_on_inputs(f, {in})));
  }
  Tensor x = placeholder({2, 8}, kFloat32, "X");
  Tensor y = compute(
      {2, 8},
      [&](Var i, Var j) {
        ir::Expr v = x(i, j) * 0.4f;
        return ir::call(ir::CallOp::kSin, {v}) + ir::call(ir::CallOp::kAcos, {v}) +
               ir::call(ir::CallOp::kAtanh, {v}) + ir::call(ir::CallOp::kCosh, {v});
      },
      "Y");
  ir::PrimFunc g = create_prim_func({x, y});
  runtime::NDArray in({2, 8}, kFloat32);
  in.fill_uniform(9);
  EXPECT_TRUE(c_matches(g, {in}, interp::run_on_inputs(g, {in})));
}

// Generated C, the interpreter and constant folding share one floordiv/floormod
// (support/int_division.h): every sign of dividend and divisor, -1 and INT64_MIN included.
TEST(CBackend, FloorDivisionAgreesWithTheInterpreterAndFoldingOnEverySign) {
  using namespace te;
  const std::vector<int64_t> dividends = {7, -7,        7,         -7,        6,  -6,
                                          0, INT64_MIN, INT64_MIN, INT64_MAX, -1, 1};
  const std::vector<int64_t> divisors = {2, 2, -2, -2, 3, -3, 5, -1, 2, -1, 4, -4};
  const int64_t n = static_cast<int64_t>(dividends.size());
  Tensor a = placeholder({n}, kInt64, "A");
  Tensor d = placeholder({n}, kInt64, "D");
  Tensor q = compute(
      {n}, [&](Var i) { return ir::floordiv(a(i), d(i)); }, "Q");
  Tensor r = compute(
      {n}, [&](Var i) { return ir::floormod(a(i), d(i)); }, "R");
  ir::PrimFunc f = create_prim_func({a, d, q, r});
  runtime::NDArray in_a({n}, kInt64), in_d({n}, kInt64);
  for (int64_t i = 0; i < n; ++i) {
    static_cast<int64_t*>(in_a.data())[i] = dividends[i];
    static_cast<int64_t*>(in_d.data())[i] = divisors[i];
  }
  auto expected = interp::run_on_inputs(f, {in_a, in_d});
  for (int64_t i = 0; i < n; ++i) {
    SCOPED_TRACE(fmt::format("{} / {}", dividends[i], divisors[i]));
    ir::Expr folded_q =
        ir::floordiv(ir::make_int(dividends[i], kInt64), ir::make_int(divisors[i], kInt64));
    ir::Expr folded_r =
        ir::floormod(ir::make_int(dividends[i], kInt64), ir::make_int(divisors[i], kInt64));
    EXPECT_EQ(ir::as_const_int(folded_q), static_cast<int64_t*>(expected[0].data())[i]);
    EXPECT_EQ(ir::as_const_int(folded_r), static_cast<int64_t*>(expected[1].data())[i]);
  }
  EXPECT_EQ(static_cast<int64_t*>(expected[0].data())[1], -4);  // -7 // 2
  EXPECT_EQ(static_cast<int64_t*>(expected[1].data())[2], -1);  // 7 % -2
  EXPECT_TRUE(c_matches(f, {in_a, in_d}, expected));
}

TEST(CBackend, ParallelLoopsHeapBuffersAndRefusals) {
  auto w = workloads::scaled_down(workloads::get_preset("SFM-1"));
  ir::PrimFunc lowered = lower::lower(vectorize_inner(w.func)).func;
  std::string small_stack = emit_c(lowered, {.max_stack_bytes = 0});
  EXPECT_THAT(small_stack, HasSubstr("tyche_rt1_parallel_for("));
  EXPECT_THAT(
      small_stack,
      HasSubstr("static int32_t SFM_parallel_0(int64_t task_begin, int64_t task_end, void* env_)"));
  EXPECT_THAT(small_stack, HasSubstr("aligned_alloc(64"));
  EXPECT_THAT(small_stack, HasSubstr("return 2; }"));  // out of memory
  std::string serial = emit_c(lowered, {.max_stack_bytes = 0, .parallel = false});
  EXPECT_THAT(serial, Not(HasSubstr("parallel_for(")));
  auto inputs = workloads::make_inputs(w.func, 2);
  EXPECT_TRUE(c_matches(vectorize_inner(w.func), inputs, w.reference(inputs),
                        0));            // every buffer on the heap
  EXPECT_THROW(emit_c(w.func), Error);  // not lowered
}

// A kernel returns its status: a null pointer, an intermediate that cannot be allocated (from a
// serial loop and from a parallel one).
TEST(CBackend, KernelsReturnTheirStatus) {
  if (TYCHE_ASAN) GTEST_SKIP() << "AddressSanitizer aborts on a 4 EiB request by default";
  for (ir::ForKind kind : {ir::ForKind::kSerial, ir::ForKind::kParallel}) {
    std::string source = emit_c(testing_kernels::exhausting_kernel(kind));
    CLibrary lib(source, "oom");
    ASSERT_TRUE(lib.compiled) << lib.error << source;
    runtime::NDArray in({64}, kFloat32), out({64}, kFloat32);
    void* args[] = {in.data(), out.data()};
    EXPECT_EQ(lib.entry(args), runtime::kKernelOutOfMemory) << source;
    args[0] = nullptr;
    EXPECT_EQ(lib.entry(args), runtime::kKernelNullArgument);
  }
}

// A misaligned buffer is no error: the kernel runs on 64-byte aligned copies (inputs copied in,
// outputs copied back), serial or parallel, with stack or heap intermediates.
TEST(CBackend, MisalignedBuffersComputeTheSame) {
  for (const char* preset : {"GMM-1", "SFM-1", "C2D-1"}) {
    SCOPED_TRACE(preset);
    auto w = workloads::scaled_down(workloads::get_preset(preset));
    auto inputs = workloads::make_inputs(w.func, 6);
    auto expected = w.reference(inputs);
    EXPECT_TRUE(c_matches(w.func, inputs, expected, 64 * 1024, /*misaligned=*/true));
    EXPECT_TRUE(c_matches(vectorize_inner(w.func), inputs, expected, 0, /*misaligned=*/true));
  }
  std::string source =
      emit_c(lower::lower(workloads::scaled_down(workloads::get_preset("GMM-1")).func).func);
  EXPECT_THAT(source, HasSubstr("static int32_t GMM_staged("));
  EXPECT_THAT(source, HasSubstr("return GMM_body("));
}

}  // namespace
}  // namespace tyche::codegen
