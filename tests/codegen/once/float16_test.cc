// float16 and bfloat16 in generated code, at every CPU level this host can run: the integer
// conversions (no F16C, and bfloat16 everywhere) give the bits the hardware gives; kernels need
// no compiler-rt helper (an AVX2 host once failed to load bf16 kernels for lack of
// __truncsfbf2), and one rounding from double or an integer is one rounding, as the
// interpreter computes it.
#include <dlfcn.h>
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "target/cpu.h"
#include "te/tensor.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

const DataType kHalf = DataType::Float(16);
const DataType kBf16 = DataType::BFloat16();

// "host" and every x86-64 level this machine runs: x86-64 and -v2 convert in integer IR, -v3
// and up with F16C.
std::vector<std::string> cpus_here() {
  std::vector<std::string> out = target::host_levels();
  out.push_back("host");
  return out;
}

// B[i] = cast(to, A[i]) over n elements, the loop vectorized by 16 when `vector` is set.
ir::PrimFunc convert(DataType from, DataType to, int64_t n, bool vector) {
  using namespace te;
  Tensor a = placeholder({n}, from, "A");
  Tensor b = compute(
      {n}, [&](Var i) { return ir::cast(to, a(i)); }, "B");
  ir::PrimFunc f = create_prim_func({a, b});
  if (!vector) return f;
  schedule::Schedule sch(f);
  auto loops = sch.get_loops(sch.get_block("B").value()).value();
  sch.vectorize(sch.split(loops[0], {std::nullopt, 16}).value()[1]).value();
  return sch.func();
}

runtime::NDArray run_on(const std::string& cpu, const ir::PrimFunc& f,
                        const runtime::NDArray& input) {
  auto kernel = compile(lower::lower(f).func, CompileOptions{.cpu = cpu});
  std::vector<runtime::NDArray> args = {input,
                                        runtime::NDArray({input.numel()}, f->params[1]->dtype)};
  kernel->run(args);
  return args[1];
}

template <typename Bits>
std::vector<Bits> bits_of(const runtime::NDArray& a) {
  std::vector<Bits> out(static_cast<size_t>(a.numel()));
  std::memcpy(out.data(), a.data(), out.size() * sizeof(Bits));
  return out;
}

// Floats that probe every branch of a float -> 16-bit conversion: specials, the edges of the
// normal, subnormal and overflow ranges of both formats, exact ties, then random bit patterns.
std::vector<float> probe_floats() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          65504.0f,
                          65519.996f,
                          65520.0f,
                          65536.0f,
                          -65520.0f,
                          6.1035156e-05f /* 2^-14 */,
                          5.9604645e-08f /* 2^-24 */,
                          2.9802322e-08f /* 2^-25: ties to 0 */,
                          8.940697e-08f /* 3 * 2^-25: ties to 2^-23 */,
                          1.0f + 0x1p-11f /* f16 tie to even */,
                          1.0f + 3 * 0x1p-11f,
                          1.0f + 0x1p-8f /* bf16 tie */,
                          1.0f + 3 * 0x1p-8f,
                          3.3895314e38f};
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc12345u, 0x7fbfe000u, 0x7f802000u})
    v.push_back(std::bit_cast<float>(nan));
  std::mt19937 rng(11);
  for (int i = 0; i < (1 << 16); ++i)
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  // Around the half range, where most of its rounding happens.
  std::uniform_int_distribution<uint32_t> near(100u << 23, 145u << 23);
  for (int i = 0; i < (1 << 16); ++i)
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(near(rng) | (rng() & 0x80000000u))));
  while (v.size() % 16) v.push_back(0.5f);
  return v;
}

runtime::NDArray array_of(const std::vector<float>& v) {
  runtime::NDArray a({static_cast<int64_t>(v.size())}, kFloat32);
  std::memcpy(a.data(), v.data(), v.size() * sizeof(float));
  return a;
}

// The runtime's converters (NDArray storage) are written out in C++ and round to nearest even.
uint16_t runtime_convert(float f, DataType to) {
  runtime::NDArray one({1}, to);
  one.set_flat(0, f);
  return *one.data_as<uint16_t>();
}

bool is_nan16(uint16_t h, DataType t) {
  return t.is_bfloat16() ? (h & 0x7fff) > 0x7f80 : (h & 0x7fff) > 0x7c00;
}

TEST(Float16, NarrowingIsBitExactOnEveryCpuLevel) {
  std::vector<float> in = probe_floats();
  runtime::NDArray input = array_of(in);
  for (DataType to : {kHalf, kBf16}) {
    for (bool vector : {false, true}) {
      SCOPED_TRACE(to.str() + (vector ? " vectorized" : " scalar"));
      ir::PrimFunc f = convert(kFloat32, to, input.numel(), vector);
      std::vector<uint16_t> first;
      for (const std::string& cpu : cpus_here()) {
        SCOPED_TRACE(cpu);
        std::vector<uint16_t> got = bits_of<uint16_t>(run_on(cpu, f, input));
        if (first.empty()) first = got;
        ASSERT_EQ(got, first) << "differs from " << cpus_here().front();  // NaN payloads included
        for (size_t i = 0; i < in.size(); ++i) {
          uint16_t want = runtime_convert(in[i], to);
          if (std::isnan(in[i])) {
            ASSERT_TRUE(is_nan16(got[i], to))
                << std::hex << std::bit_cast<uint32_t>(in[i]) << " -> " << got[i];
          } else {
            ASSERT_EQ(got[i], want) << std::hex << std::bit_cast<uint32_t>(in[i]);
          }
        }
      }
    }
  }
}

TEST(Float16, WideningIsExactOnEveryCpuLevelForEveryPattern) {
  for (DataType from : {kHalf, kBf16}) {
    runtime::NDArray input({65536}, from);
    for (uint32_t i = 0; i < 65536; ++i) input.data_as<uint16_t>()[i] = static_cast<uint16_t>(i);
    for (bool vector : {false, true}) {
      SCOPED_TRACE(from.str() + (vector ? " vectorized" : " scalar"));
      ir::PrimFunc f = convert(from, kFloat32, input.numel(), vector);
      std::vector<uint32_t> first;
      for (const std::string& cpu : cpus_here()) {
        SCOPED_TRACE(cpu);
        std::vector<uint32_t> got = bits_of<uint32_t>(run_on(cpu, f, input));
        if (first.empty()) first = got;
        ASSERT_EQ(got, first) << "differs from " << cpus_here().front();
        for (uint32_t i = 0; i < 65536; ++i) {
          float want = static_cast<float>(input.get_flat(i));
          float have = std::bit_cast<float>(got[i]);
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(have)) << std::hex << i;
          } else {
            ASSERT_EQ(got[i], std::bit_cast<uint32_t>(want)) << std::hex << i;
          }
        }
      }
    }
  }
}

TEST(Float16, DoublesAndIntegersRoundOnceAsInTheInterpreter) {
  // Each value lies just past a tie of the narrow type, and rounding it to float first would
  // land on the tie and then round the other way.
  struct Case {
    DataType from, to;
    double value;
  };
  std::vector<Case> cases = {{kFloat64, kHalf, 1.0 + 0x1p-11 + 0x1p-40},
                             {kFloat64, kHalf, -(1.0 + 0x1p-11 + 0x1p-40)},
                             {kFloat64, kBf16, 1.0 + 0x1p-8 + 0x1p-40},
                             {kFloat64, kHalf, 65520.0 - 0x1p-30},
                             {kInt64, kBf16, 16777216.0 + 65536.0 + 1},
                             {kInt32, kBf16, -(16777216.0 + 65536.0 + 1)},
                             {kFloat64, kBf16, 1e39},
                             {kFloat64, kHalf, 0x1p-25 + 0x1p-60}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {} -> {}", c.value, c.from.str(), c.to.str()));
    runtime::NDArray input({16}, c.from);
    for (int i = 0; i < 16; ++i) {
      if (c.from.is_int())
        input.set_flat_int(i, static_cast<int64_t>(c.value));
      else
        input.set_flat(i, c.value);
    }
    ir::PrimFunc f = convert(c.from, c.to, 16, true);
    std::vector<uint16_t> want = bits_of<uint16_t>(interp::run_on_inputs(f, {input})[0]);
    for (const std::string& cpu : cpus_here()) {
      SCOPED_TRACE(cpu);
      EXPECT_EQ(bits_of<uint16_t>(run_on(cpu, f, input)), want);
    }
  }
}

// The undefined symbols of an object file, by the system's nm.
std::vector<std::string> undefined_symbols(const std::string& path) {
  std::vector<std::string> out;
  FILE* p = popen(("nm -u '" + path + "'").c_str(), "r");
  if (!p) return {"(nm did not start)"};
  char line[512];
  while (std::fgets(line, sizeof(line), p)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    size_t space = s.rfind(' ');
    out.push_back(space == std::string::npos ? s : s.substr(space + 1));
  }
  if (pclose(p) != 0) out.push_back("(nm failed)");
  return out;
}

// Every conversion between the float and integer types in one function, each output vectorized.
ir::PrimFunc all_conversions() {
  using namespace te;
  std::vector<DataType> types = {kHalf,  kBf16, kFloat32, kFloat64, DataType::Int(8),
                                 kInt32, kInt64};
  std::vector<Tensor> ins, outs;
  std::vector<std::string> names;
  for (DataType from : types) ins.push_back(placeholder({64}, from, "A_" + from.str()));
  for (size_t a = 0; a < types.size(); ++a)
    for (DataType to : types)
      if (to != types[a]) {
        names.push_back("B_" + types[a].str() + "_" + to.str());
        outs.push_back(compute(
            {64}, [&](Var i) { return ir::cast(to, ins[a](i)); }, names.back()));
      }
  std::vector<Tensor> params = ins;
  params.insert(params.end(), outs.begin(), outs.end());
  schedule::Schedule sch(create_prim_func(params));
  for (const std::string& name : names) {
    auto loops = sch.get_loops(sch.get_block(name).value()).value();
    sch.vectorize(sch.split(loops[0], {std::nullopt, 16}).value()[1]).value();
  }
  return sch.func();
}

TEST(Float16, ObjectsNeedOnlyTheRuntimeAndTheCLibraries) {
  // Every conversion; math calls on half values; a parallel loop and heap buffers (SFM,
  // unscheduled, allocates its intermediates; no stack buffers).
  using namespace te;
  std::vector<ir::PrimFunc> funcs = {all_conversions()};
  Tensor a = placeholder({4, 40}, kHalf, "A");
  Tensor c = compute(
      {4, 40},
      [&](Var i, Var j) {
        ir::Expr x = ir::cast(kFloat32, a(i, j));
        return ir::cast(kBf16,
                        ir::exp(x) + ir::tanh(x) + ir::call(ir::CallOp::kPow, {ir::abs(x), x}));
      },
      "C");
  funcs.push_back(create_prim_func({a, c}));
  funcs.push_back(workloads::scaled_down(workloads::get_preset("SFM-1")).func);
  std::string path = ::testing::TempDir() + "/tyche_symbols.o";
  for (const std::string& cpu : cpus_here()) {
    SCOPED_TRACE(cpu);
    std::set<std::string> seen;
    for (const ir::PrimFunc& f : funcs) {
      compile_to_object(lower::lower(f).func, path,
                        CompileOptions{.cpu = cpu, .max_stack_bytes = 0});
      for (const std::string& sym : undefined_symbols(path)) {
        seen.insert(sym);
        EXPECT_FALSE(sym.starts_with("__")) << sym << " (a compiler-rt / libgcc helper)";
        if (sym.starts_with("tyche_")) continue;
        EXPECT_NE(dlsym(RTLD_DEFAULT, sym.c_str()), nullptr) << sym << " is not in the C libraries";
      }
    }
    // tanhf is still libm's; exp is inline (llvm_math.h).
    EXPECT_TRUE(seen.count("tyche_alloc") && seen.count("tanhf") && !seen.count("expf"))
        << "nm saw what the kernels call";
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tyche::codegen
