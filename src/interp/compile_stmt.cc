// Statements: stores, loops (every ForKind runs serially), blocks and allocations.
#include <fmt/format.h>

#include <cstring>

#include "interp/program.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "support/tensor_size.h"

namespace tyche::interp::detail {

using namespace ir;

namespace {

struct NoOp final : Exec {
  void exec() override {}
};
struct SeqExec final : Exec {
  std::vector<ExecPtr> seq;
  void exec() override {
    for (auto& s : seq) s->exec();
  }
};
struct IfExec final : Exec {
  IntPtr cond;
  ExecPtr then_case, else_case;  // else_case may be null
  void exec() override {
    if (cond->eval())
      then_case->exec();
    else if (else_case)
      else_case->exec();
  }
};
struct EvalInt final : Exec {
  IntPtr e;
  explicit EvalInt(IntPtr x) : e(std::move(x)) {}
  void exec() override { e->eval(); }
};
struct EvalFloat final : Exec {
  FloatPtr e;
  explicit EvalFloat(FloatPtr x) : e(std::move(x)) {}
  void exec() override { e->eval(); }
};
struct EvalVec final : Exec {
  VecPtr e;
  explicit EvalVec(VecPtr x) : e(std::move(x)) {}
  void exec() override { e->eval(); }
};

struct ForExec final : Exec {
  int64_t* slot = nullptr;
  IntPtr min, extent;
  ExecPtr body;
  void exec() override {
    int64_t mn = min->eval(), n = extent->eval();
    for (int64_t k = 0; k < n; ++k) {
      *slot = mn + k;
      body->exec();
    }
  }
};

// A scalar store of an integer (IntPtr) or float (FloatPtr) value into element type T.
template <typename T, typename ValuePtr>
struct ScalarStore final : Exec {
  ScalarAccess acc;
  ValuePtr value;
  ScalarStore(ScalarAccess a, ValuePtr v) : acc(std::move(a)), value(std::move(v)) {}
  void exec() override {
    if constexpr (std::is_same_v<ValuePtr, IntPtr>)
      Storage<T>::store_i(*acc.buf, acc.offset(), value->eval());
    else
      Storage<T>::store_f(*acc.buf, acc.offset(), value->eval());
  }
};
template <typename T>
using IntStore = ScalarStore<T, IntPtr>;
template <typename T>
using FloatStore = ScalarStore<T, FloatPtr>;
template <typename T>
struct VecStore final : Exec {
  VecAccess acc;
  VecPtr value;
  VecStore(VecAccess a, VecPtr v) : acc(std::move(a)), value(std::move(v)) {}
  void exec() override {
    value->eval();
    acc.compute();
    for (int l = 0; l < acc.lanes; ++l) {
      if (value->is_float)
        Storage<T>::store_f(*acc.buf, acc.offsets[l], value->f[l]);
      else
        Storage<T>::store_i(*acc.buf, acc.offsets[l], value->i[l]);
    }
  }
};

struct IterBinding {
  const IterVar* iter = nullptr;
  int64_t* slot = nullptr;
  IntPtr value;
  const int64_t* value_var = nullptr;  // `value`'s slot when it is a plain variable
  IntPtr min, extent;                  // null when constant
  int64_t const_min = 0, const_extent = 0;
  bool reduce = false;
};

struct BlockExec final : Exec {
  const BlockNode* block = nullptr;
  IntPtr predicate;  // null when always true
  std::vector<IterBinding> iters;
  std::vector<BufferState*> allocs;
  ExecPtr init;  // null when the block has none
  ExecPtr body;

  void exec() override {
    if (predicate && !predicate->eval()) return;
    bool run_init = init != nullptr;
    for (IterBinding& it : iters) {
      int64_t v = it.value_var ? *it.value_var : it.value->eval();
      int64_t mn = it.min ? it.min->eval() : it.const_min;
      int64_t ext = it.extent ? it.extent->eval() : it.const_extent;
      if (v < mn || v - mn >= ext) out_of_domain(it, v, mn, ext);
      *it.slot = v;
      if (it.reduce && v != mn) run_init = false;
    }
    for (BufferState* b : allocs) poison(*b);
    if (run_init) init->exec();
    body->exec();
  }

  [[noreturn]] void out_of_domain(const IterBinding& it, int64_t v, int64_t mn, int64_t ext) const {
    throw_error("block '{}': iter var '{}' = {} is outside its domain [{}, {})", block->name,
                it.iter->var.name(), v, mn, mn + ext);
  }
};

struct AllocateExec final : Exec {
  BufferState* buf = nullptr;
  ExecPtr body;
  void exec() override {
    poison(*buf);
    body->exec();
  }
};

// Storage for an allocation site, bound to `buffer` in `scope`. Its shape must be constant.
BufferState* compile_allocation(Program::Scope& scope, const Buffer& buffer) {
  DataType t = buffer->dtype;
  with_storage(t, []<typename T>() {});  // rejects element types the interpreter cannot store
  std::vector<int64_t> shape, strides;
  for (const Expr& d : buffer->shape) {
    auto v = as_const_int(d);
    if (!v)
      throw_error("non-constant allocation shape: buffer '{}' has extent '{}'", buffer->name,
                  to_string(d));
    if (*v < 0) throw_error("negative allocation extent {} of buffer '{}'", *v, buffer->name);
    shape.push_back(*v);
  }
  int64_t size = tensor_size(fmt::format("buffer '{}'", buffer->name), shape, t).elements;
  bool compact = true;
  if (!buffer->strides.empty()) {
    if (buffer->strides.size() != shape.size())
      throw_error("buffer '{}' has {} strides for {} dimensions", buffer->name,
                  buffer->strides.size(), shape.size());
    int64_t expect = 1, reach = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      auto v = as_const_int(buffer->strides[d]);
      if (!v || *v < 0)
        throw_error("allocation of buffer '{}' needs constant non-negative strides", buffer->name);
      strides.insert(strides.begin(), *v);
      compact = compact && *v == expect;
      expect *= shape[d];  // within size, checked above
      // The last element's offset + 1, checked: crafted strides must not wrap past the buffer.
      int64_t step = 0;
      if (__builtin_mul_overflow(shape[d] - 1, *v, &step) ||
          __builtin_add_overflow(reach, step, &reach))
        throw_input_error("buffer '{}': its strides reach past 64 bits", buffer->name);
    }
    if (size > 0) size = reach;
  } else {
    strides.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  }
  BufferState* b = scope.bind_buffer(buffer);
  b->shape = std::move(shape);
  b->strides = std::move(strides);
  b->compact = compact;
  b->size = size;
  b->owned = runtime::NDArray({size}, t);
  b->data = static_cast<uint8_t*>(b->owned.data());
  b->array = &b->owned;
  return b;
}

}  // namespace

void poison(BufferState& b) {
  DataType t = b.node->dtype;
  if (t.is_float()) {
    if (t.bits() == 32) {
      std::fill_n(reinterpret_cast<float*>(b.data), b.size,
                  std::numeric_limits<float>::quiet_NaN());
    } else if (t.bits() == 64) {
      std::fill_n(reinterpret_cast<double*>(b.data), b.size,
                  std::numeric_limits<double>::quiet_NaN());
    } else {
      uint16_t nan = t.is_bfloat16() ? 0x7fc0 : 0x7e00;
      std::fill_n(reinterpret_cast<uint16_t*>(b.data), b.size, nan);
    }
  } else {
    std::memset(b.data, 0xa5, static_cast<size_t>(b.size) * t.bytes());
  }
}

ExecPtr Program::compile_stmt(const Stmt& s) {
  if (!s.defined()) return std::make_unique<NoOp>();
  switch (s.kind()) {
    case StmtKind::kBufferStore: {
      auto* n = s.as<BufferStoreNode>();
      int lanes = n->value.dtype().lanes();
      for (const Expr& i : n->indices) lanes = std::max(lanes, i.dtype().lanes());
      if (lanes > 1) {
        VecAccess acc = compile_vec_access(*this, n->buffer, n->indices, lanes, true);
        VecPtr value = compile_vec(n->value, lanes);
        return with_storage(n->buffer->dtype, [&]<typename T>() -> ExecPtr {
          return std::make_unique<VecStore<T>>(std::move(acc), std::move(value));
        });
      }
      ScalarAccess acc = compile_access(*this, n->buffer, n->indices, true);
      if (n->value.dtype().is_float()) {
        FloatPtr value = compile_float(n->value);
        return with_storage(n->buffer->dtype, [&]<typename T>() -> ExecPtr {
          return std::make_unique<FloatStore<T>>(std::move(acc), std::move(value));
        });
      }
      IntPtr value = compile_int(n->value);
      return with_storage(n->buffer->dtype, [&]<typename T>() -> ExecPtr {
        return std::make_unique<IntStore<T>>(std::move(acc), std::move(value));
      });
    }
    case StmtKind::kSeqStmt: {
      auto r = std::make_unique<SeqExec>();
      for (const Stmt& c : s.as<SeqStmtNode>()->seq) r->seq.push_back(compile_stmt(c));
      return r;
    }
    case StmtKind::kIfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      auto r = std::make_unique<IfExec>();
      r->cond = compile_int(n->condition);
      r->then_case = compile_stmt(n->then_case);
      if (n->else_case.defined()) r->else_case = compile_stmt(n->else_case);
      return r;
    }
    case StmtKind::kEvaluate: {
      const Expr& e = s.as<EvaluateNode>()->value;
      if (e.dtype().lanes() > 1)
        return std::make_unique<EvalVec>(compile_vec(e, e.dtype().lanes()));
      if (e.dtype().is_float()) return std::make_unique<EvalFloat>(compile_float(e));
      return std::make_unique<EvalInt>(compile_int(e));
    }
    case StmtKind::kFor: {
      auto* n = s.as<ForNode>();
      auto r = std::make_unique<ForExec>();
      r->min = compile_int(n->min);
      r->extent = compile_int(n->extent);
      DataType t = n->loop_var.dtype();
      if (!t.is_int_like() || t.lanes() != 1)
        throw_error("interp: loop variable '{}' has type {}", n->loop_var.name(), t.str());
      Scope scope(*this);
      r->slot = scope.bind_var(n->loop_var).i;
      r->body = compile_stmt(n->body);
      return r;
    }
    case StmtKind::kBlock:
    case StmtKind::kBlockRealize: {
      auto* realize = s.as<BlockRealizeNode>();
      const BlockNode* block = realize ? realize->block.get() : s.as<BlockNode>();
      size_t nvalues = realize ? realize->iter_values.size() : 0;
      if (nvalues != block->iter_vars.size())
        throw_error("interp: block '{}' has {} iter vars but {} values", block->name,
                    block->iter_vars.size(), nvalues);
      auto r = std::make_unique<BlockExec>();
      r->block = block;
      // Iter values, the predicate and the domains live in the enclosing scope.
      if (realize && !is_true(realize->predicate)) r->predicate = compile_int(realize->predicate);
      for (size_t k = 0; k < nvalues; ++k) {
        const IterVar& iv = block->iter_vars[k];
        IterBinding b;
        b.iter = &iv;
        b.value = compile_int(realize->iter_values[k]);
        b.value_var = b.value->var_slot();
        b.reduce = iv.kind == IterKind::kReduce;
        if (auto c = as_const_int(iv.dom.min))
          b.const_min = *c;
        else
          b.min = compile_int(iv.dom.min);
        if (auto c = as_const_int(iv.dom.extent))
          b.const_extent = *c;
        else
          b.extent = compile_int(iv.dom.extent);
        r->iters.push_back(std::move(b));
      }
      Scope scope(*this);
      for (IterBinding& b : r->iters) {
        const Var& v = b.iter->var;
        if (!v.dtype().is_int_like() || v.dtype().lanes() != 1)
          throw_error("interp: iter var '{}' of block '{}' has type {}", v.name(), block->name,
                      v.dtype().str());
        b.slot = scope.bind_var(v).i;
      }
      for (const Buffer& buf : block->alloc_buffers)
        r->allocs.push_back(compile_allocation(scope, buf));
      if (block->init.defined()) r->init = compile_stmt(block->init);
      r->body = compile_stmt(block->body);
      return r;
    }
    case StmtKind::kAllocate: {
      auto* n = s.as<AllocateNode>();
      Scope scope(*this);
      auto r = std::make_unique<AllocateExec>();
      r->buf = compile_allocation(scope, n->buffer);
      r->body = compile_stmt(n->body);
      return r;
    }
  }
  throw_error("interp: unknown statement kind");
}

}  // namespace tyche::interp::detail
