#include "ir/reducer.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/var_use.h"

namespace tyche::ir {

namespace {

// Exact equality (variables and buffers by identity), unlike structural_equal, which would
// consider B[vi, vj] and B[vj, vi] equal modulo renaming.
bool same_expr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  if (auto* x = a.as<IntImmNode>()) return x->value == b.as<IntImmNode>()->value;
  if (auto* x = a.as<FloatImmNode>()) return x->value == b.as<FloatImmNode>()->value;
  if (auto* x = a.as_binary())
    return same_expr(x->a, b.as_binary()->a) && same_expr(x->b, b.as_binary()->b);
  if (auto* x = a.as<CastNode>()) return same_expr(x->value, b.as<CastNode>()->value);
  if (auto* x = a.as<BufferLoadNode>()) {
    auto* y = b.as<BufferLoadNode>();
    if (!x->buffer.same_as(y->buffer) || x->indices.size() != y->indices.size()) return false;
    for (size_t i = 0; i < x->indices.size(); ++i)
      if (!same_expr(x->indices[i], y->indices[i])) return false;
    return true;
  }
  return false;
}

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_expr(a[i], b[i])) return false;
  return true;
}

}  // namespace

bool is_reducer_identity(ExprKind combine, const Expr& e) {
  DataType t = e.dtype();
  auto* f = e.as<FloatImmNode>();
  auto* i = e.as<IntImmNode>();
  if (!f && !i) return false;
  double v = f ? f->value : static_cast<double>(i->value);
  auto lowest_float = [&]() {
    if (t.bits() == 64) return -std::numeric_limits<double>::max();
    if (t.bits() == 32) return static_cast<double>(-std::numeric_limits<float>::max());
    return -65504.0;
  };
  switch (combine) {
    case ExprKind::kAdd:
      return v == 0;
    case ExprKind::kMul:
      return v == 1;
    case ExprKind::kMax:
      return f ? (std::isinf(v) && v < 0) || v == lowest_float()
               : i->value == *as_const_int(min_value(t));
    case ExprKind::kMin:
      return f ? (std::isinf(v) && v > 0) || v == -lowest_float()
               : i->value == *as_const_int(max_value(t));
    default:
      return false;
  }
}

std::optional<Reducer> match_reducer(const BlockNode* b, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<Reducer> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  auto* init = b->init.as<BufferStoreNode>();
  auto* update = b->body.as<BufferStoreNode>();
  if (!init || !update)
    return fail("is not a single-store reduction (init and body must each be one store)");
  if (!init->buffer.same_as(update->buffer) || !same_indices(init->indices, update->indices) ||
      !update->buffer.same_as(b->writes[0].buffer))
    return fail("does not initialize and update the same element");
  auto* bin = update->value.as_binary();
  ExprKind k = bin ? update->value.kind() : ExprKind::kNot;
  if (k != ExprKind::kAdd && k != ExprKind::kMul && k != ExprKind::kMax && k != ExprKind::kMin)
    return fail("does not combine with +, *, max or min");
  auto is_acc = [&](const Expr& e) {
    auto* l = e.as<BufferLoadNode>();
    return l && l->buffer.same_as(update->buffer) && same_indices(l->indices, update->indices);
  };
  Expr value;
  if (is_acc(bin->a))
    value = bin->b;
  else if (is_acc(bin->b))
    value = bin->a;
  else
    return fail("does not combine the accumulator with a value");
  if (loads_buffer(value, update->buffer.get()))
    return fail("reads its accumulator in the combined value");
  if (!is_reducer_identity(k, init->value))
    return fail(fmt::format("initializes with {}, not the identity of {}", to_string(init->value),
                            binary_op_name(k)));
  return Reducer{k, init, update, value};
}

}  // namespace tyche::ir
