// exp and erf in generated code, at every CPU level this host can run: an inline polynomial (no
// libm call per lane, so it vectorizes), within 2 ulp of the correctly rounded e^x over the whole
// float range, subnormal results and overflow included, and exact on the special values.
#include <gmock/gmock.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "codegen/llvm/llvm_codegen.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "target/cpu.h"
#include "te/tensor.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

enum class Fn { kExp, kSigmoid };

// B[i] = f(A[i]) over n elements, the loop vectorized by 8 when `vector` is set.
ir::PrimFunc apply(Fn fn, int64_t n, bool vector) {
  using namespace te;
  Tensor a = placeholder({n}, kFloat32, "A");
  Tensor b = compute(
      {n}, [&](Var i) { return fn == Fn::kExp ? ir::exp(a(i)) : ir::sigmoid(a(i)); }, "B");
  ir::PrimFunc f = create_prim_func({a, b});
  if (!vector) return f;
  schedule::Schedule sch(f);
  auto loops = sch.get_loops(sch.get_block("B").value()).value();
  sch.vectorize(sch.split(loops[0], {std::nullopt, 8}).value()[1]).value();
  return sch.func();
}

// Specials, the edges of the range (overflow near 88.72, subnormal results below -87.34, zero
// below -103.97), a dense sweep of [-105, 90], and random bit patterns.
std::vector<float> math_probe_floats() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          inf,
                          -inf,
                          std::numeric_limits<float>::quiet_NaN(),
                          88.72283f,
                          88.72284f,
                          88.7229f,
                          89.0f,
                          1000.0f,
                          -87.33654f,
                          -87.3366f,
                          -100.0f,
                          -103.9720f,
                          -103.973f,
                          -104.0f,
                          -1000.0f,
                          std::numeric_limits<float>::denorm_min(),
                          1e-30f,
                          -1e-30f,
                          0.34657359f /* ln 2 / 2 */,
                          -0.34657359f};
  for (int i = 0; i <= 400000; ++i)
    v.push_back(-105.0f + 195.0f * static_cast<float>(i) / 400000.0f);
  std::mt19937 rng(5);
  for (int i = 0; i < (1 << 16); ++i)
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  while (v.size() % 8) v.push_back(0.5f);
  return v;
}

// Distance in units in the last place between two finite floats of the same sign (or zero).
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

double exact(Fn fn, float x) {
  double d = x;
  return fn == Fn::kExp ? std::exp(d) : 1.0 / (1.0 + std::exp(-d));
}

// erf: inline too (no erff per lane), within 4e-7 of erf (absolute) everywhere and within
// 4 ulp below |x| = 0.75 (the Taylor side, where erf is small), odd, exact at 0 and +-inf.
TEST(Math, ErfIsInlineAndAccurateOnEveryCpuLevel) {
  std::vector<float> in = {0.0f,
                           -0.0f,
                           1e-30f,
                           -1e-30f,
                           0.7499999f,
                           0.75f,
                           -0.75f,
                           3.9f,
                           10.0f,
                           -10.0f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  for (int i = 0; i <= 200000; ++i) in.push_back(-6.0f + 12.0f * static_cast<float>(i) / 200000.0f);
  while (in.size() % 8) in.push_back(0.25f);
  runtime::NDArray input({static_cast<int64_t>(in.size())}, kFloat32);
  std::memcpy(input.data(), in.data(), in.size() * sizeof(float));
  int64_t n = input.numel();
  std::vector<std::string> cpus = target::host_levels();
  cpus.push_back("host");
  for (const std::string& cpu : cpus) {
    for (bool vector : {false, true}) {
      SCOPED_TRACE("erf on " + cpu + (vector ? ", vectorized" : ""));
      te::Tensor a = te::placeholder({n}, kFloat32, "A");
      te::Tensor b = te::compute(
          {n}, [&](te::Var i) { return ir::call(ir::CallOp::kErf, {a(i)}); }, "B");
      ir::PrimFunc f = te::create_prim_func({a, b});
      if (vector) {
        schedule::Schedule sch(f);
        auto loops = sch.get_loops(sch.get_block("B").value()).value();
        sch.vectorize(sch.split(loops[0], {std::nullopt, 8}).value()[1]).value();
        f = sch.func();
      }
      CompileOptions o{.cpu = cpu};
      o.keep_module = true;
      auto kernel = compile(lower::lower(f).func, o);
      EXPECT_THAT(kernel->llvm_ir(), Not(HasSubstr("@erff")));
      if (vector) {
        EXPECT_THAT(kernel->llvm_ir(), HasSubstr("<8 x float>"));
      }
      std::vector<runtime::NDArray> args = {input, runtime::NDArray({n}, kFloat32)};
      kernel->run(args);
      const float* out = args[1].data_as<float>();
      size_t failures = 0;
      for (size_t i = 0; i < in.size() && failures < 5; ++i) {
        float x = in[i], got = out[i];
        bool ok;
        if (std::isnan(x)) {
          ok = std::isnan(got);
        } else {
          double want = std::erf(static_cast<double>(x));
          ok = std::abs(got - want) <= 4e-7 &&
               (std::abs(x) >= 0.75f || ulps(got, static_cast<float>(want)) <= 4) &&
               std::signbit(got) == std::signbit(x);
        }
        if (!ok) {
          ++failures;
          ADD_FAILURE() << "erf(" << x << ") = " << got << ", want "
                        << std::erf(static_cast<double>(x));
        }
      }
    }
  }
}

TEST(Math, ExpAndSigmoidAreAccurateOnEveryCpuLevel) {
  std::vector<float> in = math_probe_floats();
  runtime::NDArray input({static_cast<int64_t>(in.size())}, kFloat32);
  std::memcpy(input.data(), in.data(), in.size() * sizeof(float));
  std::vector<std::string> cpus = target::host_levels();
  cpus.push_back("host");
  for (Fn fn : {Fn::kExp, Fn::kSigmoid}) {
    for (const std::string& cpu : cpus) {
      for (bool vector : {false, true}) {
        SCOPED_TRACE(std::string(fn == Fn::kExp ? "exp" : "sigmoid") + " on " + cpu +
                     (vector ? ", vectorized" : ""));
        CompileOptions o{.cpu = cpu};
        o.keep_module = true;
        auto kernel = compile(lower::lower(apply(fn, input.numel(), vector)).func, o);
        // Inline: no call into libm, and the vectorized loop computes whole vectors.
        EXPECT_THAT(kernel->llvm_ir(), Not(HasSubstr("@expf")));
        EXPECT_THAT(kernel->llvm_ir(), Not(HasSubstr("@llvm.exp.")));
        if (vector) {
          EXPECT_THAT(kernel->llvm_ir(), HasSubstr("<8 x float>"));
        }
        std::vector<runtime::NDArray> args = {input, runtime::NDArray({input.numel()}, kFloat32)};
        kernel->run(args);
        const float* out = args[1].data_as<float>();
        int64_t worst = 0;
        size_t failures = 0;
        for (size_t i = 0; i < in.size() && failures < 5; ++i) {
          float want = static_cast<float>(exact(fn, in[i]));
          float got = out[i];
          bool ok;
          if (std::isnan(in[i])) {
            ok = std::isnan(got);
          } else if (std::isinf(want) || want == 0.0f) {
            ok = got == want || (want == 0.0f && got == std::numeric_limits<float>::denorm_min());
          } else {
            int64_t d = ulps(got, want);
            worst = std::max(worst, d);
            ok = d <= 2;
          }
          if (!ok) {
            ++failures;
            ADD_FAILURE() << "f(" << in[i] << ") = " << got << ", want " << want;
          }
        }
        EXPECT_LE(worst, 2);
      }
    }
  }
}

}  // namespace
}  // namespace tyche::codegen
