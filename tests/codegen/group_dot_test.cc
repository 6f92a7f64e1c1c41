// group_dot, the CPU tensor instructions' dot products (ir/expr.h): the compiled code agrees with
// loops written out here and with the interpreter, exactly for u8 x s8 -> s32, at every CPU level
// ctest runs this binary for (VNNI and AVX512-BF16 where the CPU has them, portable vector code
// elsewhere), and the assembly holds the instruction exactly when the CPU does.
#include <gmock/gmock.h>

#include <cmath>

#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/op.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "schedule/tensor_intrin.h"
#include "target/cpu.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// C[i, j] = sum over k of A[i, k] * B[j / n, k / g, (j % n) * g + k % g], for i < m, j < lanes *
// jo, k < ko * g: B packed as group_dot wants its weights ([N/n][K/g][n*g]), one group_dot of
// `lanes` lanes per (i, j block, k group).
struct Packed {
  int64_t m, lanes, jo, ko, g;
  DataType a_t, b_t, acc_t;
  int64_t n() const { return lanes * jo; }
  int64_t k() const { return ko * g; }
};

ir::PrimFunc packed_dot(const Packed& p) {
  ir::Buffer a = ir::make_buffer("A", p.a_t, {ir::make_int(p.m), ir::make_int(p.k())});
  ir::Buffer b = ir::make_buffer(
      "B", p.b_t, {ir::make_int(p.jo), ir::make_int(p.ko), ir::make_int(p.lanes * p.g)});
  ir::Buffer c = ir::make_buffer("C", p.acc_t, {ir::make_int(p.m), ir::make_int(p.n())});
  ir::Var i("i"), j("j"), k("k");
  const int lanes = static_cast<int>(p.lanes), g = static_cast<int>(p.g);
  ir::Expr row = ir::ramp(j * static_cast<int>(p.lanes), ir::make_int(1), lanes);
  ir::Stmt init = ir::buffer_store(c, ir::broadcast(ir::make_const(p.acc_t, 0), lanes), {i, row});
  ir::Expr dot = ir::group_dot(
      ir::buffer_load(c, {i, row}), ir::buffer_load(a, {i, ir::ramp(k * g, ir::make_int(1), g)}),
      ir::buffer_load(b, {j, k, ir::ramp(ir::make_int(0), ir::make_int(1), lanes * g)}));
  ir::Stmt update = ir::for_loop(k, ir::make_int(0), ir::make_int(p.ko), ir::ForKind::kSerial,
                                 ir::buffer_store(c, dot, {i, row}));
  ir::Stmt body = ir::for_loop(i, ir::make_int(0), ir::make_int(p.m), ir::ForKind::kSerial,
                               ir::for_loop(j, ir::make_int(0), ir::make_int(p.jo),
                                            ir::ForKind::kSerial, ir::seq({init, update})));
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), body);
  return ir::PrimFunc("packed_dot", {a, b, c}, 1, ir::block_realize({}, ir::make_bool(true), root));
}

// What packed_dot computes, in double (exact for these types' products and sums).
std::vector<double> by_hand(const Packed& p, const runtime::NDArray& a, const runtime::NDArray& b) {
  std::vector<double> c(static_cast<size_t>(p.m * p.n()), 0.0);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n(); ++j)
      for (int64_t k = 0; k < p.k(); ++k) {
        int64_t jb = j / p.lanes, kb = k / p.g, inner = (j % p.lanes) * p.g + k % p.g;
        c[i * p.n() + j] +=
            a.get_flat(i * p.k() + k) * b.get_flat((jb * p.ko + kb) * p.lanes * p.g + inner);
      }
  return c;
}

struct Results {
  runtime::NDArray compiled, interpreted;
  std::vector<double> expected;
  std::string assembly;
};

Results compile_and_run(const Packed& p) {
  ir::PrimFunc f = packed_dot(p);
  std::vector<runtime::NDArray> inputs;
  uint64_t seed = 3;
  for (const ir::Buffer& b : f.inputs()) {
    runtime::NDArray x(ir::const_shape(b), b->dtype);
    x.fill_random(seed++);
    inputs.push_back(x);
  }
  Results r;
  r.interpreted = interp::run_on_inputs(f, inputs)[0];
  CompileOptions o;
  o.keep_module = true;
  auto k = compile(lower::lower(f).func, o);
  std::vector<runtime::NDArray> args = inputs;
  args.emplace_back(ir::const_shape(f->params[2]), p.acc_t);
  k->run(args);
  r.compiled = args[2];
  r.expected = by_hand(p, inputs[0], inputs[1]);
  r.assembly = k->assembly();
  return r;
}

TEST(GroupDot, U8S8IsExactEverywhereAndVnniWhereTheCpuHasIt) {
  const target::Cpu& cpu = target::resolve_cpu("");
  // 16 lanes (one zmm instruction), 8 (ymm), 32 (two instructions), 4 (xmm).
  for (int64_t lanes : {16, 8, 32, 4}) {
    Packed p{3, lanes, 2, 40, 4, DataType::UInt(8), DataType::Int(8), kInt32};
    Results r = compile_and_run(p);
    for (int64_t e = 0; e < r.compiled.numel(); ++e) {
      ASSERT_EQ(r.compiled.get_flat_int(e), static_cast<int64_t>(r.expected[e]))
          << "lanes " << lanes << ", element " << e;
      ASSERT_EQ(r.interpreted.get_flat_int(e), static_cast<int64_t>(r.expected[e]))
          << "lanes " << lanes << ", element " << e;
    }
    bool native = (cpu.has("avx512vnni") && (lanes % 16 == 0 || cpu.has("avx512vl"))) ||
                  (cpu.has("avxvnni") && lanes % 4 == 0);
    if (native) {
      EXPECT_THAT(r.assembly, HasSubstr("vpdpbusd")) << "lanes " << lanes;
    } else {
      EXPECT_THAT(r.assembly, Not(HasSubstr("vpdpbusd"))) << "lanes " << lanes;
    }
  }
}

TEST(GroupDot, BFloat16AccumulatesInFloat32) {
  const target::Cpu& cpu = target::resolve_cpu("");
  for (int64_t lanes : {16, 8}) {
    Packed p{2, lanes, 2, 24, 2, DataType::BFloat16(), DataType::BFloat16(), kFloat32};
    Results r = compile_and_run(p);
    runtime::NDArray expected(r.compiled.shape(), kFloat32);
    for (int64_t e = 0; e < expected.numel(); ++e) expected.set_flat(e, r.expected[e]);
    runtime::Comparison c = runtime::compare(r.compiled, expected);
    EXPECT_TRUE(c.ok) << "lanes " << lanes << ": " << c.message;
    c = runtime::compare(r.interpreted, expected);
    EXPECT_TRUE(c.ok) << "lanes " << lanes << ": " << c.message;
    bool native = cpu.has("avx512bf16") && (lanes == 16 || cpu.has("avx512vl"));
    if (native) {
      EXPECT_THAT(r.assembly, HasSubstr("vdpbf16ps")) << "lanes " << lanes;
    } else {
      EXPECT_THAT(r.assembly, Not(HasSubstr("vdpbf16ps"))) << "lanes " << lanes;
    }
  }
}

// Any other types go the portable way: int8 x int8 and int16 weights, float32.
TEST(GroupDot, OtherTypesArePortable) {
  for (Packed p : {Packed{2, 8, 2, 10, 4, DataType::Int(8), DataType::Int(8), kInt32},
                   Packed{2, 8, 1, 10, 2, DataType::UInt(8), DataType::Int(16), kInt32},
                   Packed{2, 8, 2, 10, 2, kFloat32, kFloat32, kFloat32}}) {
    Results r = compile_and_run(p);
    for (int64_t e = 0; e < r.compiled.numel(); ++e) {
      ASSERT_NEAR(r.compiled.get_flat(e), r.expected[e], 1e-4 * (1 + std::abs(r.expected[e])))
          << p.a_t.str() << " element " << e;
      ASSERT_NEAR(r.interpreted.get_flat(e), r.expected[e], 1e-4 * (1 + std::abs(r.expected[e])))
          << p.a_t.str();
    }
    EXPECT_THAT(r.assembly, Not(HasSubstr("vpdpbusd")));
  }
}

TEST(GroupDot, TypesAndLanesAreChecked) {
  auto v = [](DataType t, int lanes) { return ir::broadcast(ir::make_const(t, 1), lanes); };
  const DataType u8 = DataType::UInt(8), s8 = DataType::Int(8);
  EXPECT_NO_THROW(ir::group_dot(v(kInt32, 16), v(u8, 4), v(s8, 64)));
  EXPECT_THROW(ir::group_dot(v(kInt32, 16), v(u8, 4), v(s8, 32)), Error);    // b's lanes
  EXPECT_THROW(ir::group_dot(v(kFloat32, 16), v(u8, 4), v(s8, 64)), Error);  // float acc, integers
  EXPECT_THROW(ir::group_dot(v(kInt32, 16), v(kInt32, 4), v(s8, 64)), Error);  // 32-bit operands
  EXPECT_THROW(ir::group_dot(ir::make_int(0), v(u8, 4), v(s8, 4)), Error);     // scalar acc
  EXPECT_THROW(ir::group_dot(v(kInt32, 8), v(kFloat32, 2), v(kFloat32, 16)), Error);
  try {
    ir::group_dot(v(kInt32, 16), v(u8, 4), v(s8, 32));
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("group_dot(int32x16, uint8x4, int8x32)"));
  }
}

}  // namespace
}  // namespace tyche::codegen

namespace tyche::codegen {
namespace {

// Every CPU tensor intrinsic's implementation, compiled for this level, computes what its
// description computes (interpreted), on random data over the types' whole ranges: exactly for
// integers.
TEST(CpuTensorIntrinsics, ImplementationsMatchTheirDescriptions) {
  int checked = 0;
  for (const std::string& name : schedule::tensor_intrin_names()) {
    if (name.rfind("x86_", 0) != 0) continue;
    const schedule::TensorIntrin* t = schedule::find_tensor_intrin(name);
    std::vector<runtime::NDArray> args;
    uint64_t seed = 11;
    for (const ir::Buffer& b : t->desc->params) {
      runtime::NDArray a(ir::const_shape(b), b->dtype);
      a.fill_random(seed++);
      args.push_back(a);
    }
    // The description accumulates into C's initial values; so does the implementation.
    std::vector<runtime::NDArray> desc_args = {args[0], args[1], args[2].copy()};
    interp::run(t->desc, desc_args);
    std::vector<runtime::NDArray> impl_args = {args[0], args[1], args[2].copy()};
    compile(lower::lower(t->impl).func)->run(impl_args);
    runtime::Comparison c = runtime::compare(impl_args[2], desc_args[2]);
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
    if (desc_args[2].dtype().is_integer()) {
      EXPECT_EQ(c.max_abs_error, 0) << name;
    }
    EXPECT_FALSE(runtime::compare(impl_args[2], args[2]).ok) << name << " changed nothing";
    ++checked;
  }
  EXPECT_EQ(checked, 7);  // VNNI (2), AVX2, AVX512-BF16 (2), AMX (2)
}

}  // namespace
}  // namespace tyche::codegen
