// The LLVM backend: compiled kernels agree with the reference (presets) or the interpreter
// (loop kinds, dtypes, allocations), and the machine code is what we ask for.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "../common/exhausting_kernel.h"
#include "../common/sanitizers.h"
#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "target/cpu.h"
#include "te/tensor.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<CompiledKernel> build(const ir::PrimFunc& f, CompileOptions o = {}) {
  return compile(lower::lower(f).func, o);
}

// Runs the kernel on the workload's inputs; compares with the reference implementation.
::testing::AssertionResult matches_reference(const workloads::Workload& w,
                                             const ir::PrimFunc& scheduled) {
  std::unique_ptr<CompiledKernel> k;
  try {
    k = build(scheduled);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << e.what() << "\n"
                                         << ir::to_string(lower::lower(scheduled).func);
  }
  auto inputs = workloads::make_inputs(w.func, 9);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args = inputs;
  for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  k->run(args);
  for (size_t i = 0; i < expected.size(); ++i) {
    runtime::Comparison c = runtime::compare(args[inputs.size() + i], expected[i]);
    if (!c.ok)
      return ::testing::AssertionFailure() << c.message << "\n"
                                           << ir::to_string(lower::lower(scheduled).func);
  }
  return ::testing::AssertionSuccess();
}

// Compares the compiled kernel with the interpreter on random inputs (any dtype).
::testing::AssertionResult matches_interpreter(const ir::PrimFunc& f, CompileOptions o = {}) {
  std::vector<runtime::NDArray> inputs;
  uint64_t seed = 1;
  for (const ir::Buffer& b : f.inputs()) {
    runtime::NDArray a(ir::const_shape(b), b->dtype);
    a.fill_uniform(seed++, b->dtype.is_float() ? -2.0 : 0.0, b->dtype.is_float() ? 2.0 : 50.0);
    inputs.push_back(a);
  }
  auto expected = interp::run_on_inputs(f, inputs);
  std::unique_ptr<CompiledKernel> k = build(f, o);
  std::vector<runtime::NDArray> args = inputs;
  for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  k->run(args);
  for (size_t i = 0; i < expected.size(); ++i) {
    runtime::Comparison c = runtime::compare(args[inputs.size() + i], expected[i]);
    if (!c.ok)
      return ::testing::AssertionFailure() << c.message << "\n"
                                           << ir::to_string(lower::lower(f).func);
  }
  return ::testing::AssertionSuccess();
}

// A hand schedule that fits any block: the outermost loop parallel, the innermost vectorized,
// the one above unrolled; primitives that refuse are skipped.
ir::PrimFunc hand_schedule(const ir::PrimFunc& f) {
  schedule::Schedule sch(f);
  auto root = sch.get_block("root").value();
  for (const schedule::BlockRV& b : sch.get_child_blocks(root).value()) {
    auto loops = sch.get_loops(b).value();
    if (loops.empty()) continue;
    (void)sch.parallel(loops[0]);
    if (loops.size() >= 2) (void)sch.vectorize(loops.back());
    if (loops.size() >= 3) (void)sch.unroll(loops[loops.size() - 2]);
  }
  return sch.func();
}

TEST(Codegen, EveryPresetFamilyUnscheduledAndHandScheduled) {
  for (const std::string& op : workloads::op_names()) {
    SCOPED_TRACE(op);
    auto w = workloads::scaled_down(workloads::get_preset(op + "-1"));
    EXPECT_TRUE(matches_reference(w, w.func));
    EXPECT_TRUE(matches_reference(w, hand_schedule(w.func)));
  }
}

TEST(Codegen, TiledGmmWithEveryLoopKind) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  schedule::Schedule sch(w.func);
  auto z = sch.get_block("Z").value();
  auto l = sch.get_loops(z).value();
  auto i = sch.split(l[1], {std::nullopt, 4}).value();
  auto j = sch.split(l[2], {std::nullopt, 16}).value();
  sch.reorder({i[0], j[0], l[3], i[1], j[1]}).value();
  sch.parallel(i[0]).value();
  sch.unroll(i[1]).value();
  sch.vectorize(j[1]).value();
  sch.decompose_reduction(z, l[3]).value();
  EXPECT_TRUE(matches_reference(w, sch.func()));
}

workloads::Workload elementwise(const std::string& formula, const std::string& extents) {
  return workloads::from_index_notation(formula, extents);
}

TEST(Codegen, VectorizedLoops) {
  auto w = elementwise("C[i,j] = A[i,j] * 2.0 + B[j,i]", "i=12,j=30");  // B[j,i]: a gather
  // Extent 10: not a power of two.
  schedule::Schedule a(w.func);
  auto la = a.get_loops(a.get_block("C").value()).value();
  a.vectorize(a.split(la[1], {std::nullopt, 10}).value()[1]).value();
  EXPECT_TRUE(matches_reference(w, a.func()));
  // An imperfect split: lowered to a scalar loop.
  schedule::Schedule b(w.func);
  auto lb = b.get_loops(b.get_block("C").value()).value();
  b.vectorize(b.split(lb[1], {std::nullopt, 8}).value()[1]).value();
  EXPECT_TRUE(matches_reference(w, b.func()));
  // Longer than 64 lanes: strip-mined.
  auto wide = elementwise("C[i,j] = A[i,j] - 1.0", "i=3,j=160");
  schedule::Schedule c(wide.func);
  c.vectorize(c.get_loops(c.get_block("C").value()).value()[1]).value();
  EXPECT_TRUE(matches_reference(wide, c.func()));
}

TEST(Codegen, ParallelAndUnrolledLoops) {
  auto w = elementwise("C[i,j] = max(A[i,j], 0.0) * B[i,j]", "i=37,j=19");
  schedule::Schedule s(w.func);
  auto l = s.get_loops(s.get_block("C").value()).value();
  schedule::LoopRV f = s.fuse({l[0], l[1]}).value();
  auto parts = s.split(f, {std::nullopt, 5}).value();  // 141 x 5 >= 703: predicated
  s.parallel(parts[0]).value();
  s.unroll(parts[1]).value();
  EXPECT_TRUE(matches_reference(w, s.func()));
  // Unrolling more than kMaxUnrollExtent iterations keeps a loop.
  schedule::Schedule u(w.func);
  auto lu = u.get_loops(u.get_block("C").value()).value();
  u.unroll(u.fuse({lu[0], lu[1]}).value()).value();
  EXPECT_TRUE(matches_reference(w, u.func()));
}

TEST(Codegen, DataTypes) {
  using namespace te;
  for (DataType t : {kFloat64, DataType::Float(16), DataType::BFloat16(), kInt32, DataType::Int(8),
                     DataType::UInt(8), kInt64}) {
    SCOPED_TRACE(t.str());
    Tensor a = placeholder({6, 20}, t, "A");
    Tensor b = placeholder({6, 20}, t, "B");
    Tensor c = compute(
        {6, 20},
        [&](Var i, Var j) { return max(a(i, j) + b(i, j), a(i, j)) * ir::make_const(t, 2); }, "C");
    auto k = reduce_axis(20, "k");
    Tensor s = compute(
        {6}, [&](Var i) { return sum(c(i, k.var), {k}); }, "S");
    ir::PrimFunc f = create_prim_func({a, b, s});
    EXPECT_TRUE(matches_interpreter(f));
    schedule::Schedule sch(f);
    auto l = sch.get_loops(sch.get_block("C").value()).value();
    sch.vectorize(l[1]).value();
    EXPECT_TRUE(matches_interpreter(sch.func()));
  }
}

TEST(Codegen, MathAndBoolAndCasts) {
  using namespace te;
  Tensor a = placeholder({4, 33}, kFloat32, "A");
  Tensor c = compute(
      {4, 33},
      [&](Var i, Var j) {
        ir::Expr x = a(i, j);
        ir::Expr flag = x > 0.5f;
        return ir::exp(x) + ir::tanh(x) + ir::sigmoid(x) + ir::sqrt(ir::abs(x)) +
               ir::log(ir::abs(x) + 1.0f) +
               ir::select(flag, ir::cast(kFloat32, ir::cast(kInt32, x * 10.0f)),
                          ir::call(ir::CallOp::kErf, {x})) +
               ir::call(ir::CallOp::kFloor, {x}) + ir::call(ir::CallOp::kPow, {ir::abs(x), x});
      },
      "C");
  ir::PrimFunc f = create_prim_func({a, c});
  EXPECT_TRUE(matches_interpreter(f));
  schedule::Schedule sch(f);
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  sch.vectorize(sch.split(l[1], {3, 11}).value()[1]).value();
  EXPECT_TRUE(matches_interpreter(sch.func()));
}

// The trigonometric calls, and the integer bit calls of every width and signedness with shifts
// inside, at and past the width and negative: scalar and vectorized, as the interpreter.
TEST(Codegen, TrigonometricAndBitCalls) {
  using namespace te;
  Tensor a = placeholder({3, 17}, kFloat32, "A");
  Tensor c = compute(
      {3, 17},
      [&](Var i, Var j) {
        ir::Expr x = a(i, j) * 0.45f;  // inside (-1, 1) for the inverse functions
        ir::Expr sum = ir::Expr(0.0f);
        for (ir::CallOp op :
             {ir::CallOp::kSin, ir::CallOp::kCos, ir::CallOp::kTan, ir::CallOp::kAsin,
              ir::CallOp::kAcos, ir::CallOp::kAtan, ir::CallOp::kSinh, ir::CallOp::kCosh,
              ir::CallOp::kAsinh, ir::CallOp::kAtanh})
          sum = sum + ir::call(op, {x});
        return sum + ir::call(ir::CallOp::kAcosh, {ir::abs(x) + 1.0f});
      },
      "C");
  for (const ir::PrimFunc& f : {create_prim_func({a, c})}) {
    EXPECT_TRUE(matches_interpreter(f));
    schedule::Schedule sch(f);
    auto l = sch.get_loops(sch.get_block("C").value()).value();
    sch.vectorize(sch.split(l[1], {std::nullopt, 8}).value()[1]).value();
    EXPECT_TRUE(matches_interpreter(sch.func()));
  }
  for (DataType t :
       {DataType::Int(8), DataType::UInt(8), DataType::Int(16), DataType::UInt(16),
        DataType::Int(32), DataType::UInt(32), DataType::Int(64), DataType::UInt(64)}) {
    Tensor x = placeholder({2, 24}, t, "X"), y = placeholder({2, 24}, t, "Y");
    Tensor z = compute(
        {2, 24},
        [&](Var i, Var j) {
          // Shift amounts from -3 to width + 2 across the row.
          ir::Expr s = ir::cast(t, ir::floordiv(ir::Expr(j) * (t.bits() + 6), 24) - 3);
          ir::Expr l = ir::call(ir::CallOp::kShiftLeft, {x(i, j), s});
          ir::Expr r = ir::call(ir::CallOp::kShiftRight, {x(i, j), s});
          ir::Expr b =
              ir::call(ir::CallOp::kBitwiseXor,
                       {ir::call(ir::CallOp::kBitwiseAnd, {x(i, j), y(i, j)}),
                        ir::call(ir::CallOp::kBitwiseOr,
                                 {ir::call(ir::CallOp::kBitwiseNot, {x(i, j)}), y(i, j)})});
          return ir::call(ir::CallOp::kBitwiseXor, {ir::call(ir::CallOp::kBitwiseXor, {l, r}), b});
        },
        "Z");
    ir::PrimFunc f = create_prim_func({x, y, z});
    EXPECT_TRUE(matches_interpreter(f)) << t.str();
    schedule::Schedule sch(f);
    auto l = sch.get_loops(sch.get_block("Z").value()).value();
    sch.vectorize(sch.split(l[1], {std::nullopt, 8}).value()[1]).value();
    EXPECT_TRUE(matches_interpreter(sch.func())) << t.str();
  }
  EXPECT_THROW(ir::call(ir::CallOp::kBitwiseAnd, {ir::Expr(1.0f), ir::Expr(2.0f)}), Error);
}

// round: halves to even (nearbyint), scalar and vectorized, as the interpreter and by hand.
TEST(Codegen, RoundTakesHalvesToEven) {
  using namespace te;
  Tensor a = placeholder({2, 16}, kFloat32, "A");
  Tensor c = compute(
      {2, 16}, [&](Var i, Var j) { return ir::call(ir::CallOp::kRound, {a(i, j)}); }, "C");
  ir::PrimFunc f = create_prim_func({a, c});
  runtime::NDArray in({2, 16}, kFloat32);
  for (int64_t e = 0; e < 32; ++e)
    in.set_flat(e, static_cast<double>(e - 16) * 0.5 + (e % 7 == 0 ? 0.01 : 0.0));
  schedule::Schedule sch(f);
  sch.vectorize(sch.get_loops(sch.get_block("C").value()).value()[1]).value();
  for (const ir::PrimFunc& g : {f, sch.func()}) {
    runtime::NDArray out({2, 16}, kFloat32);
    std::vector<runtime::NDArray> args = {in, out};
    build(g)->run(args);
    for (int64_t e = 0; e < 32; ++e)
      ASSERT_EQ(args[1].get_flat(e), std::nearbyint(in.get_flat(e))) << "element " << e;
    EXPECT_EQ(interp::run_on_inputs(g, {in})[0].get_flat(5), -6.0);  // -5.5 -> -6
  }
  EXPECT_EQ(std::nearbyint(2.5), 2.0);
  EXPECT_EQ(std::nearbyint(-5.5), -6.0);
}

// pow with an exponent of 1/4, 1/2 or 3/4 (LRN's) is built from square roots: vectorized, no libm
// call, within 2 ulp of std::pow and with its special values (-0, -inf, negatives, NaN).
TEST(Codegen, PowOfQuartersIsSquareRootsWithPowsSpecialValues) {
  using namespace te;
  const std::vector<float> values = {0.0f,
                                     -0.0f,
                                     1.0f,
                                     2.0f,
                                     0.3f,
                                     1e-3f,
                                     7.5f,
                                     1e30f,
                                     1e-40f,
                                     3.4e38f,
                                     -1.0f,
                                     -2.5f,
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN(),
                                     1.0001f};
  const int64_t n = 16;
  ASSERT_EQ(static_cast<int64_t>(values.size()), n);
  runtime::NDArray in({n}, kFloat32);
  for (int64_t e = 0; e < n; ++e) in.set_flat(e, values[e]);
  for (double p : {0.25, 0.5, 0.75}) {
    Tensor a = placeholder({n}, kFloat32, "A");
    Tensor c = compute(
        {n},
        [&](Var i) {
          return ir::call(ir::CallOp::kPow, {a(i), ir::make_float(p)});
        },
        "C");
    ir::PrimFunc f = create_prim_func({a, c});
    schedule::Schedule sch(f);
    auto l = sch.get_loops(sch.get_block("C").value()).value();
    sch.vectorize(sch.split(l[0], {std::nullopt, 8}).value()[1]).value();
    CompileOptions o;
    o.keep_module = true;
    for (const ir::PrimFunc& g : {f, sch.func()}) {
      auto k = build(g, o);
      EXPECT_THAT(k->assembly(), Not(HasSubstr("powf"))) << p;
      EXPECT_THAT(k->assembly(), HasSubstr(g.same_as(f) ? "sqrtss" : "sqrtps")) << p;
      runtime::NDArray out({n}, kFloat32);
      std::vector<runtime::NDArray> args = {in, out};
      k->run(args);
      for (int64_t e = 0; e < n; ++e) {
        float want = std::pow(values[e], static_cast<float>(p));
        float got = static_cast<float>(args[1].get_flat(e));
        SCOPED_TRACE(fmt::format("pow({}, {}) = {}, not {}", values[e], p, got, want));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got));
        } else if (want == 0.0f || std::isinf(want)) {
          EXPECT_EQ(got, want);
          EXPECT_EQ(std::signbit(got), std::signbit(want));
        } else {
          EXPECT_LE(std::abs(got - want), 2.0f * (std::nextafter(want, INFINITY) - want));
        }
      }
    }
  }
}

TEST(Codegen, IntermediateBuffersOnStackAndHeap) {
  auto w = workloads::scaled_down(workloads::get_preset("SFM-1"));
  CompileOptions heap;
  heap.max_stack_bytes = 0;
  EXPECT_TRUE(matches_interpreter(w.func, heap));
  EXPECT_TRUE(matches_interpreter(w.func));
  // A cache inside a parallel loop: allocated per outlined body.
  auto g = workloads::scaled_down(workloads::get_preset("GMM-1"));
  schedule::Schedule sch(g.func);
  auto z = sch.get_block("Z").value();
  auto cw = sch.cache_write(z, 0, "local").value();
  auto l = sch.get_loops(sch.get_block("Z").value()).value();
  sch.reverse_compute_at(cw, l[1]).value();
  sch.parallel(l[1]).value();
  EXPECT_TRUE(matches_reference(g, sch.func()));
}

TEST(Codegen, AssemblyUsesFullWidthFmaAndObjectsAreElf) {
  auto w = workloads::get_preset("GMM-1");
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("Z").value()).value();
  auto j = sch.split(l[2], {std::nullopt, 16}).value();
  sch.reorder({l[1], j[0], l[3], j[1]}).value();
  sch.vectorize(j[1]).value();
  CompileOptions o;
  o.keep_module = true;
  auto k = build(sch.func(), o);
  std::string asm_text = k->assembly();
  // What the CPU (TYCHE_CPU, else the host) offers is used: FMA, and the widest registers.
  const target::Cpu& cpu = target::resolve_cpu("");
  EXPECT_THAT(asm_text, HasSubstr(cpu.has("fma") ? "vfmadd" : "mulps"));
  const char* widest = cpu.vector_bits() == 512 ? "zmm" : cpu.vector_bits() == 256 ? "ymm" : "xmm";
  EXPECT_THAT(asm_text, HasSubstr(widest));
  if (cpu.vector_bits() < 512) {
    EXPECT_THAT(asm_text, Not(HasSubstr("zmm")));
  }
  if (cpu.vector_bits() < 256) {
    EXPECT_THAT(asm_text, Not(HasSubstr("ymm")));
  }
  EXPECT_THAT(k->llvm_ir(), HasSubstr("<16 x float>"));
  // Per process: ctest runs this test once per CPU level, concurrently under -j.
  std::string path = ::testing::TempDir() + "/tyche_gmm_" + std::to_string(getpid()) + ".o";
  k->save_object(path);
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "ELF");
  std::remove(path.c_str());
  EXPECT_GT(k->compile_seconds(), 0.0);  // measured; how fast is bench_gmm's business
  auto plain = build(sch.func());
  EXPECT_THROW(plain->assembly(), Error);
}

// The vector moves between a register and the stack frame in an assembly text.
std::vector<std::string> vector_stack_moves(const std::string& asm_text) {
  std::vector<std::string> out;
  std::istringstream in(asm_text);
  for (std::string line; std::getline(in, line);) {
    bool vector = line.find("%ymm") != std::string::npos || line.find("%zmm") != std::string::npos;
    if (vector && line.find("(%rsp)") != std::string::npos &&
        line.find("vmov") != std::string::npos)
      out.push_back(line);
  }
  return out;
}

TEST(Codegen, RegisterTilesThatSpillDoSoToAlignedSlots) {
  // 8 rows x 4 vectors of accumulators, with the operands, need more than the register file at
  // every level: some spill. Unaligned spill slots follow the thread's stack alignment and can
  // straddle cache lines (a kernel whose speed changes from one process to the next), so the
  // frame is realigned and every spill and reload is an aligned move. Each level the host can run
  // (JIT compilation refuses the others: an AVX2-only Zen 3 checks x86-64-v3 alone).
  int levels = 0;
  for (const std::string level : {"x86-64-v3", "x86-64-v4"}) {
    SCOPED_TRACE(level);
    const target::Cpu& cpu = target::resolve_cpu(level);
    if (!target::missing_on_host(cpu).empty()) continue;
    ++levels;
    int lanes = cpu.vector_bits() / 32;
    auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]",
                                            fmt::format("i=8,j={},k=64", 4 * lanes));
    schedule::Schedule sch(w.func);
    auto z = sch.get_block("C").value();
    auto cw = sch.cache_write(z, 0, "local").value();
    (void)cw;
    auto l = sch.get_loops(sch.get_block("C").value()).value();
    auto j = sch.split(l[1], {4, lanes}).value();
    sch.reorder({l[2], l[0], j[0], j[1]}).value();
    sch.vectorize(j[1]).value();
    sch.unroll(j[0]).value();
    sch.unroll(l[0]).value();
    CompileOptions o;
    o.cpu = level;
    o.keep_module = true;
    std::string asm_text = build(sch.func(), o)->assembly();
    std::vector<std::string> moves = vector_stack_moves(asm_text);
    ASSERT_FALSE(moves.empty()) << "no vector spill: the tile no longer tests this\n" << asm_text;
    for (const std::string& m : moves)
      EXPECT_THAT(m, ::testing::ContainsRegex("vmov(aps|apd|dqa)")) << m;
    EXPECT_TRUE(matches_reference(w, sch.func()));
  }
  if (levels == 0) GTEST_SKIP() << "the host runs neither x86-64-v3 nor x86-64-v4";
}

TEST(Codegen, StridedVectorLoadsAreBuiltFromScalarLoadsNotGathered) {
  // B = A transposed, vectorized along B's rows: A is read at a constant stride. One load per
  // lane (a gather instruction was 15 % slower on TBG-3's transposed copies on Zen 4); values
  // exact, with a negative stride too.
  using namespace te;
  Tensor a = placeholder({40, 48}, kFloat32, "A");
  Tensor b = compute(
      {48, 40}, [&](Var i, Var j) { return a(j, i) * 2.0f; }, "B");
  Tensor c = compute(
      {48, 40}, [&](Var i, Var j) { return a(39 - j, i); }, "C");
  ir::PrimFunc f = create_prim_func({a, b, c});
  schedule::Schedule sch(f);
  for (const char* name : {"B", "C"}) {
    auto l = sch.get_loops(sch.get_block(name).value()).value();
    auto inner = sch.split(l[1], {std::nullopt, 8}).value();
    sch.vectorize(inner[1]).value();
  }
  std::string lowered = ir::to_string(lower::lower(sch.func()).func);
  ASSERT_THAT(lowered, HasSubstr(", 48, 8)]")) << lowered;   // ramp(…, 48, 8): stride 48
  ASSERT_THAT(lowered, HasSubstr(", -48, 8)]")) << lowered;  // and -48
  CompileOptions o;
  o.keep_module = true;
  EXPECT_THAT(build(sch.func(), o)->assembly(), Not(HasSubstr("gather")));
  EXPECT_TRUE(matches_interpreter(sch.func()));
}

// The basic blocks of an LLVM IR text that contain `needle`.
std::vector<std::string> blocks_with(const std::string& ir_text, const std::string& needle) {
  std::vector<std::string> out;
  std::string block;
  std::istringstream in(ir_text);
  for (std::string line; std::getline(in, line);) {
    bool label = !line.empty() && line[0] != ' ' && line.find(':') != std::string::npos &&
                 line.back() != '{';
    if (label || line == "}") {
      if (block.find(needle) != std::string::npos) out.push_back(block);
      block.clear();
    }
    block += line + "\n";
  }
  return out;
}

TEST(Codegen, DistinctBuffersDoNotAliasInsideParallelBodies) {
  // B is packed per k-block into an intermediate; the rows are parallel. The output tile is
  // accumulated straight into C: only if LLVM knows that C, A and the packed B (all pointers the
  // parallel body loads from its environment) do not overlap can it keep the tile in registers
  // across the k loop instead of storing it every step.
  auto w = workloads::from_index_notation("C[i,j] += A[i,k] * B[k,j]", "i=64,j=64,k=64");
  schedule::Schedule sch(w.func);
  auto c = sch.get_block("C").value();
  auto packed = sch.cache_read(c, 1, "global").value();
  auto l = sch.get_loops(c).value();
  auto i = sch.split(l[0], {std::nullopt, 4}).value();
  auto j = sch.split(l[1], {std::nullopt, 16}).value();
  auto k = sch.split(l[2], {std::nullopt, 32}).value();
  sch.reorder({k[0], i[0], j[0], k[1], i[1], j[1]}).value();
  sch.compute_at(packed, k[0]).value();
  sch.decompose_reduction(c, k[0]).value();
  sch.parallel(i[0]).value();
  sch.unroll(i[1]).value();
  sch.vectorize(j[1]).value();
  EXPECT_TRUE(matches_reference(w, sch.func()));
  CompileOptions o;
  o.keep_module = true;
  std::string text = build(sch.func(), o)->llvm_ir();
  EXPECT_THAT(text, HasSubstr("!noalias"));
  std::vector<std::string> fma_blocks = blocks_with(text, "fmul contract <16 x float>");
  ASSERT_FALSE(fma_blocks.empty()) << text;
  bool register_tile = std::any_of(fma_blocks.begin(), fma_blocks.end(), [](const std::string& b) {
    return b.find("store") == std::string::npos;
  });
  EXPECT_TRUE(register_tile) << "every block with the FMAs stores:\n" << fma_blocks[0];
}

// Leaves garbage where the next call's stack frame will be: a buffer the kernel fails to write
// then reads garbage instead of the zeros a fresh stack happens to hold.
__attribute__((noinline)) void dirty_stack() {
  volatile unsigned char junk[1 << 16];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = 0xff;
}

TEST(Codegen, APaddedCopyThroughAnIntermediateKeepsItsZeros) {
  // The padded input is staged in a cache_write buffer and copied out. With a per-buffer TBAA
  // type (an earlier way of telling LLVM that buffers do not overlap), LLVM merged the copy into
  // memcpys tagged as the destination and deleted the zero stores of the padding as dead.
  auto w = workloads::make_workload("C1D", {1, 8, 4, 4, 3, 2, 1});
  schedule::Schedule sch(w.func);
  sch.cache_write(sch.get_block("pad").value(), 0, "shared").value();
  auto k = build(sch.func());
  auto inputs = workloads::make_inputs(w.func, 5);
  auto expected = w.reference(inputs);
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<runtime::NDArray> args = inputs;
    args.push_back(runtime::NDArray(expected[0].shape(), expected[0].dtype()));
    dirty_stack();
    k->run(args);
    runtime::Comparison c = runtime::compare(args.back(), expected[0]);
    ASSERT_TRUE(c.ok) << c.message;
  }
}

TEST(Codegen, ModulesLookUpKernelsByName) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  auto s = workloads::scaled_down(workloads::get_preset("SFM-1"));
  runtime::Module m = build_module({lower::lower(w.func).func, lower::lower(s.func).func});
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"GMM", "SFM"}));
  auto inputs = workloads::make_inputs(w.func, 3);
  auto expected = w.reference(inputs);
  std::vector<runtime::NDArray> args = inputs;
  args.push_back(runtime::NDArray(expected[0].shape(), kFloat32));
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  EXPECT_EQ(m.get_function("GMM")(ptrs.data()), runtime::kKernelOk);
  EXPECT_TRUE(runtime::compare(args.back(), expected[0]).ok);
  EXPECT_THROW(m.get_function("C2D"), Error);
}

// A kernel returns a status (runtime::KernelStatus) that run() turns into an error: a null
// pointer is refused before anything runs, and an intermediate buffer that cannot be allocated
// stops the kernel, from a serial loop or from inside a parallel one. A misaligned pointer is no
// error: the kernel runs on aligned copies (inputs copied in, outputs copied back).
TEST(Codegen, KernelsRefuseNullPointersComputeOnMisalignedOnesAndReportExhaustion) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  auto k = build(w.func);
  std::vector<runtime::NDArray> args = workloads::make_inputs(w.func, 3);
  std::vector<runtime::NDArray> expected = w.reference(args);
  args.push_back(runtime::NDArray(ir::const_shape(w.func.outputs()[0]), kFloat32));
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  ASSERT_NO_THROW(k->run(ptrs.data()));
  auto fails_with = [&](const std::string& text) {
    try {
      k->run(ptrs.data());
    } catch (const Error& e) {
      return std::string(e.what()).find(text) != std::string::npos
                 ? ::testing::AssertionSuccess()
                 : ::testing::AssertionFailure() << e.what();
    }
    return ::testing::AssertionFailure() << "no error";
  };
  ptrs[1] = nullptr;
  EXPECT_TRUE(fails_with("kernel 'GMM' failed: a buffer pointer was null"));

  // Each buffer, then all of them, 4 bytes past a 64-byte boundary.
  std::vector<runtime::NDArray> shifted;  // the bytes, 64-byte aligned; the data at +4
  for (const runtime::NDArray& a : args) {
    shifted.push_back(runtime::NDArray({static_cast<int64_t>(a.nbytes()) + 64}, DataType::UInt(8)));
    std::memcpy(shifted.back().data_as<uint8_t>() + 4, a.data(), a.nbytes());
  }
  const size_t out = args.size() - 1;
  for (size_t which = 0; which <= args.size(); ++which) {
    SCOPED_TRACE(which == args.size() ? std::string("all misaligned")
                                      : fmt::format("argument {} misaligned", which));
    for (size_t i = 0; i < args.size(); ++i)
      ptrs[i] =
          which == i || which == args.size() ? shifted[i].data_as<uint8_t>() + 4 : args[i].data();
    std::memset(ptrs[out], 0, args[out].nbytes());
    ASSERT_NO_THROW(k->run(ptrs.data()));
    runtime::NDArray result(args[out].shape(), kFloat32);
    std::memcpy(result.data(), ptrs[out], result.nbytes());
    runtime::Comparison c = runtime::compare(result, expected[0]);
    EXPECT_TRUE(c.ok) << c.message;
  }
  for (size_t i = 0; i + 1 < args.size(); ++i)  // inputs are read, not written
    EXPECT_EQ(std::memcmp(shifted[i].data_as<uint8_t>() + 4, args[i].data(), args[i].nbytes()), 0);

#if !TYCHE_ASAN  // AddressSanitizer aborts on such a request by default
  for (ir::ForKind kind : {ir::ForKind::kSerial, ir::ForKind::kParallel}) {
    auto oom = compile(testing_kernels::exhausting_kernel(kind));
    runtime::NDArray in({64}, kFloat32), out({64}, kFloat32);
    std::vector<runtime::NDArray> oom_args = {in, out};
    try {
      oom->run(oom_args);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("kernel 'oom' failed: out of memory"));
    }
  }
#endif
}

TEST(Codegen, RefusesUnloweredFunctionsAndWrongArguments) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  EXPECT_THROW(compile(w.func), Error);
  auto k = build(w.func);
  std::vector<runtime::NDArray> too_few = workloads::make_inputs(w.func, 1);
  EXPECT_THROW(k->run(too_few), Error);
  std::vector<runtime::NDArray> wrong = too_few;
  wrong.push_back(runtime::NDArray({3}, kFloat32));
  EXPECT_THROW(k->run(wrong), Error);
}

}  // namespace
}  // namespace tyche::codegen
