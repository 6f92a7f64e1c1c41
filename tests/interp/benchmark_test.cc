// Interpreter throughput. The interpreter checks every candidate schedule, so it must stay fast:
// these print their numbers always and, in optimized, unsanitized builds, bound the time against
// the same work done by a plain C++ loop in the same test (so the bound moves with the host).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "builders.h"
#include "ir/functor.h"
#include "runtime/compare.h"

#if defined(__SANITIZE_ADDRESS__)
#define TYCHE_INTERP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define TYCHE_INTERP_SANITIZED 1
#endif
#endif
#if defined(NDEBUG) && !defined(TYCHE_INTERP_SANITIZED)
constexpr bool kAssertSpeed = true;
#else
constexpr bool kAssertSpeed = false;
#endif

namespace tyche::interp::testing {
namespace {

using runtime::compare;
using runtime::Comparison;

// Expression nodes (plus the store itself) one execution of `s` evaluates, loops excluded.
class NodeCounter : public StmtExprVisitor {
 public:
  int64_t count = 0;
  void visit_expr(const Expr& e) override {
    ++count;
    StmtExprVisitor::visit_expr(e);
  }
  void visit_stmt(const Stmt& s) override {
    if (s.kind() == StmtKind::kBufferStore) ++count;
    StmtExprVisitor::visit_stmt(s);
  }
};

// Best of three runs (the machine may be shared with a parallel build); one in slow builds.
template <typename F>
double seconds(F&& f) {
  double best = 1e30;
  for (int rep = 0; rep < (kAssertSpeed ? 3 : 1); ++rep) {
    auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Unoptimized or sanitized builds run a smaller problem and only print.
TEST(InterpreterBenchmark, Matmul) {
  const int n = kAssertSpeed ? 128 : 48;
  PrimFunc f = matmul(n, n, n);
  std::vector<NDArray> in = {random_array({n, n}, kFloat32, 1), random_array({n, n}, kFloat32, 2)};
  CompiledFunc compiled(f);
  std::vector<NDArray> out;
  double t = seconds([&] { out = compiled.run_on_inputs(in); });
  double iters = double(n) * n * n;
  // Per iteration: the block's iter values and body (store, loads, indices, +, *).
  const BlockRealizeNode* blk = nullptr;
  post_order_visit(f->body, [&](const Stmt& s) {
    if (auto* r = s.as<BlockRealizeNode>(); r && r->block->name == "C") blk = r;
  });
  ASSERT_NE(blk, nullptr);
  NodeCounter nodes;
  for (const Expr& v : blk->iter_values) nodes.visit_expr(v);
  nodes.visit_stmt(blk->block->body);
  std::printf(
      "[ interp ] matmul %d^3: %.3f s, %.1f M iterations/s, %.1f M nodes/s (%lld "
      "nodes/iteration)\n",
      n, t, iters / t / 1e6, iters * nodes.count / t / 1e6, static_cast<long long>(nodes.count));
  Comparison c = compare(out[0], matmul_reference(in[0], in[1]));
  EXPECT_TRUE(c.ok) << c.message;
  // The same product in C++: an ordered sum per element, which the compiler keeps scalar.
  std::vector<float> native(static_cast<size_t>(n) * n);
  const float* a = in[0].data_as<float>();
  const float* b = in[1].data_as<float>();
  double native_t = seconds([&] {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        float acc = 0;
        for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
        native[static_cast<size_t>(i) * n + j] = acc;
      }
    asm volatile("" : : "r"(native.data()) : "memory");
  });
  std::printf("[ interp ] matmul %d^3 in C++: %.4f s (interpreter %.0fx)\n", n, native_t,
              t / native_t);
  if (kAssertSpeed) {
    EXPECT_LT(t, 200 * native_t);  // 36x on the Xeon it was written on
  }
}

TEST(InterpreterBenchmark, ScalarExpressionThroughput) {
  // B[i] = ((A[i] * 1.5 + 2) * A[i] - floordiv(i, 3) * 0.25) / (A[i] * A[i] + 1) over 1M elements.
  const int n = kAssertSpeed ? 1 << 20 : 1 << 15;
  Buffer a = make_buffer("A", kFloat32, {n}), b = make_buffer("B", kFloat32, {n});
  Var i("i");
  Expr x = buffer_load(a, {i});
  Expr v = ((x * 1.5 + 2.0) * x - cast(kFloat32, floordiv(i, 3)) * 0.25) / (x * x + 1.0);
  Stmt store = buffer_store(b, v, {i});
  PrimFunc f("expr", {a, b}, 1, root(serial(i, n, store)));
  NodeCounter nodes;
  nodes.visit_stmt(store);
  std::vector<NDArray> in = {random_array({n}, kFloat32, 3)};
  CompiledFunc compiled(f);
  std::vector<NDArray> out;
  double t = seconds([&] { out = compiled.run_on_inputs(in); });
  double rate = double(n) * nodes.count / t;
  std::printf("[ interp ] scalar expression: %lld nodes x %d: %.3f s, %.1f M nodes/s\n",
              static_cast<long long>(nodes.count), n, t, rate / 1e6);
  for (int p : {0, 1, 12345, n - 1}) {
    double xv = in[0].get_flat(p);
    double expect = ((xv * 1.5 + 2) * xv - (p / 3) * 0.25) / (xv * xv + 1);
    EXPECT_FLOAT_EQ(out[0].get_flat(p), expect);
  }
  std::vector<float> native(static_cast<size_t>(n));
  const float* av = in[0].data_as<float>();
  double native_t = seconds([&] {
    for (int p = 0; p < n; ++p) {
      float xv = av[p];
      native[static_cast<size_t>(p)] =
          ((xv * 1.5f + 2.0f) * xv - static_cast<float>(p / 3) * 0.25f) / (xv * xv + 1.0f);
    }
    asm volatile("" : : "r"(native.data()) : "memory");
  });
  std::printf("[ interp ] scalar expression in C++: %.4f s (interpreter %.0fx)\n", native_t,
              t / native_t);
  if (kAssertSpeed) {
    EXPECT_LT(t, 300 * native_t);  // 48x on the Xeon it was written on
  }
}

}  // namespace
}  // namespace tyche::interp::testing
