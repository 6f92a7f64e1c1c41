// Hand-built PrimFuncs for the interpreter tests: matmul in several schedules (and broken
// variants), element-wise pipelines, and helpers for expected values.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "interp/interpreter.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::interp::testing {

using namespace ir;
using runtime::NDArray;

// Wraps `body` into the realize of a "root" block owning `allocs`.
inline Stmt root(Stmt body, std::vector<Buffer> allocs = {}) {
  return block_realize({}, make_bool(true),
                       make_block("root", {}, {}, {}, Stmt(), std::move(body), std::move(allocs)));
}

inline IterVar spatial(const Var& v, Expr extent) {
  return IterVar{v, Range(0, std::move(extent)), IterKind::kSpatial};
}
inline IterVar reduce(const Var& v, Expr extent) {
  return IterVar{v, Range(0, std::move(extent)), IterKind::kReduce};
}

inline Stmt serial(const Var& v, Expr extent, Stmt body) {
  return for_loop(v, 0, std::move(extent), ForKind::kSerial, std::move(body));
}

struct MatmulOptions {
  bool split_k = false;      // k = ko * 4 + ki (K divisible by 4)
  bool reorder = false;      // loop order k, i, j instead of i, j, k
  bool wrong_index = false;  // reads A[vk, vi] instead of A[vi, vk]
  bool drop_k = false;       // the k loop runs K - 1 times
  bool with_init = true;     // otherwise C is expected to be zero-initialized by the caller
  DataType dtype = kFloat32;
  ForKind kind = ForKind::kSerial;  // of every loop
};

// C[M, N] = sum_k A[M, K] * B[K, N] as one block with an init.
inline PrimFunc matmul(int m, int n, int k, MatmulOptions o = {}) {
  Buffer a = make_buffer("A", o.dtype, {Expr(m), Expr(k)});
  Buffer b = make_buffer("B", o.dtype, {Expr(k), Expr(n)});
  Buffer c = make_buffer("C", o.dtype, {Expr(m), Expr(n)});
  Var vi("vi"), vj("vj"), vk("vk"), i("i"), j("j"), kk("k"), ko("ko"), ki("ki");
  Expr a_load = o.wrong_index ? buffer_load(a, {vk, vi}) : buffer_load(a, {vi, vk});
  Stmt body =
      buffer_store(c, buffer_load(c, {vi, vj}) + a_load * buffer_load(b, {vk, vj}), {vi, vj});
  Stmt init = o.with_init ? buffer_store(c, make_const(o.dtype, 0), {vi, vj}) : Stmt();
  Block blk = make_block("C", {spatial(vi, Expr(m)), spatial(vj, Expr(n)), reduce(vk, Expr(k))},
                         {BufferRegion::full(a), BufferRegion::full(b)}, {BufferRegion::full(c)},
                         init, body);
  Expr k_value = o.split_k ? ko * 4 + ki : Expr(kk);
  Stmt s = block_realize({i, j, k_value}, make_bool(true), blk);
  auto loop = [&](const Var& v, int extent, Stmt inner) {
    return for_loop(v, 0, Expr(extent), o.kind, std::move(inner));
  };
  int k_extent = o.drop_k ? k - 1 : k;
  auto k_loops = [&](Stmt inner) {
    if (!o.split_k) return loop(kk, k_extent, std::move(inner));
    return loop(ko, k_extent / 4, loop(ki, 4, std::move(inner)));
  };
  if (o.reorder)
    s = k_loops(loop(i, m, loop(j, n, s)));
  else
    s = loop(i, m, loop(j, n, k_loops(s)));
  return PrimFunc("matmul", {a, b, c}, 1, root(s));
}

inline NDArray random_array(std::vector<int64_t> shape, DataType dtype, uint64_t seed,
                            double lo = -1, double hi = 1) {
  NDArray a(std::move(shape), dtype);
  a.fill_uniform(seed, lo, hi);
  return a;
}

// Exact integer element (NDArray::get_flat_int returns negative int32 values as unsigned).
inline int64_t int_at(const NDArray& a, int64_t i) {
  DataType t = a.dtype();
  if (t == DataType::Int(32)) return a.data_as<int32_t>()[i];
  if (t == DataType::Int(8)) return a.data_as<int8_t>()[i];
  return a.get_flat_int(i);
}

// The matmul computed directly in double, stored as `dtype`.
inline NDArray matmul_reference(const NDArray& a, const NDArray& b) {
  int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  NDArray c({m, n}, a.dtype());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      int64_t iacc = 0;
      for (int64_t p = 0; p < k; ++p) {
        if (a.dtype().is_float())
          acc += a.get_flat(i * k + p) * b.get_flat(p * n + j);
        else
          iacc += int_at(a, i * k + p) * int_at(b, p * n + j);
      }
      if (a.dtype().is_float())
        c.set_flat(i * n + j, acc);
      else
        c.set_flat_int(i * n + j, iacc);
    }
  return c;
}

// Runs `f` and expects a tyche::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected tyche::Error containing '" << parts.at(0) << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
  }
}

}  // namespace tyche::interp::testing
