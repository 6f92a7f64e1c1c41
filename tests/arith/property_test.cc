// Seeded property test: random integer expressions over three bounded variables. The simplified
// expression must evaluate to the same value as the original at random points of the domain,
// const_int_bound must contain the value, and simplify must be idempotent. Intervals from
// eval_interval must contain the value too.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "arith/analyzer.h"
#include "arith/int_set.h"
#include "arith/linear.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "support/int_division.h"

namespace tyche::arith {
namespace {

using namespace ir;

using Env = std::map<const VarNode*, int64_t>;

// A tiny reference evaluator with exact (int64) integer semantics.
int64_t eval(const Expr& e, const Env& env) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return e.as<IntImmNode>()->value;
    case ExprKind::kVar:
      return env.at(static_cast<const VarNode*>(e.get()));
    case ExprKind::kNot:
      return !eval(e.as<NotNode>()->a, env);
    case ExprKind::kSelect: {
      auto* n = e.as<SelectNode>();
      return eval(n->condition, env) ? eval(n->true_value, env) : eval(n->false_value, env);
    }
    case ExprKind::kCast:
      return eval(e.as<CastNode>()->value, env);
    default:
      break;
  }
  auto* n = static_cast<const BinaryNode*>(e.get());
  int64_t a = eval(n->a, env), b = eval(n->b, env);
  switch (e.kind()) {
    case ExprKind::kAdd:
      return a + b;
    case ExprKind::kSub:
      return a - b;
    case ExprKind::kMul:
      return a * b;
    case ExprKind::kDiv:
      return a / b;
    case ExprKind::kFloorDiv:
      return tyche::floordiv(a, b);
    case ExprKind::kFloorMod:
      return tyche::floormod(a, b);
    case ExprKind::kMin:
      return std::min(a, b);
    case ExprKind::kMax:
      return std::max(a, b);
    case ExprKind::kEQ:
      return a == b;
    case ExprKind::kNE:
      return a != b;
    case ExprKind::kLT:
      return a < b;
    case ExprKind::kLE:
      return a <= b;
    case ExprKind::kGT:
      return a > b;
    case ExprKind::kGE:
      return a >= b;
    case ExprKind::kAnd:
      return a && b;
    case ExprKind::kOr:
      return a || b;
    default:
      ADD_FAILURE() << "unexpected node in " << to_string(e);
      return 0;
  }
}

struct Gen {
  std::mt19937_64 rng;
  std::vector<Var> vars;
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }

  Expr leaf() {
    if (pick(0, 3) == 0) return make_int(pick(-9, 9));
    return vars[static_cast<size_t>(pick(0, static_cast<int64_t>(vars.size()) - 1))];
  }
  Expr expr(int depth) {
    if (depth == 0 || pick(0, 5) == 0) return leaf();
    switch (pick(0, 10)) {
      case 0:
      case 1:
        return expr(depth - 1) + expr(depth - 1);
      case 2:
        return expr(depth - 1) - expr(depth - 1);
      case 3:
        return expr(depth - 1) * make_int(pick(-4, 6));
      case 4:
        return pick(0, 3) == 0 ? expr(depth - 1) * expr(depth - 1)
                               : expr(depth - 1) * make_int(pick(2, 4));
      case 5:
        return floordiv(expr(depth - 1), make_int(pick(1, 9)));
      case 6:
        return floormod(expr(depth - 1), make_int(pick(1, 9)));
      case 7:
        return min(expr(depth - 1), expr(depth - 1));
      case 8:
        return max(expr(depth - 1), expr(depth - 1));
      case 9:
        return select(expr(depth - 1) < expr(depth - 1), expr(depth - 1), expr(depth - 1));
      default:
        return make_binary(ExprKind::kDiv, expr(depth - 1), make_int(pick(1, 9)));  // truncdiv
    }
  }
  Expr cond(int depth) {
    Expr a = expr(depth), b = expr(depth);
    switch (pick(0, 7)) {
      case 0:
        return a < b;
      case 1:
        return a <= b;
      case 2:
        return a == b;
      case 3:
        return a != b;
      case 4:
        return a > b;
      case 5:
        return a >= b;
      case 6:
        return (a < b) && (b < expr(depth));
      default:
        return !(a < b) || (a == expr(depth));
    }
  }
};

TEST(ArithProperty, SimplifyPreservesValues) {
  Gen g{std::mt19937_64(20240611), {Var("x"), Var("y"), Var("z")}};
  const int64_t lo[3] = {0, -5, 3}, ext[3] = {16, 11, 7};
  Analyzer ana;
  for (int v = 0; v < 3; ++v)
    ana.bind(g.vars[static_cast<size_t>(v)], Range(make_int(lo[v]), make_int(ext[v])));
  VarRangeMap dom;
  for (int v = 0; v < 3; ++v)
    dom[g.vars[static_cast<size_t>(v)]] = Range(make_int(lo[v]), make_int(ext[v]));

  int checked = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    bool is_cond = trial % 4 == 3;
    Expr e = is_cond ? g.cond(3) : g.expr(4);
    Expr s = ana.simplify(e);
    std::string once = to_string(s);
    ASSERT_EQ(to_string(ana.simplify(s)), once) << "not idempotent: " << to_string(e);
    ASSERT_TRUE(expr_equal(ana.simplify(s), s)) << "not idempotent: " << to_string(e);
    ConstIntBound b = ana.const_int_bound(e);
    ConstIntBound bs = ana.const_int_bound(s);
    IntervalSet iv = is_cond ? IntervalSet::everything() : eval_interval(e, dom, &ana);
    for (int p = 0; p < 12; ++p) {
      Env env;
      for (int v = 0; v < 3; ++v)
        env[g.vars[static_cast<size_t>(v)].get()] = g.pick(lo[v], lo[v] + ext[v] - 1);
      int64_t want = eval(e, env);
      ASSERT_EQ(eval(s, env), want) << to_string(e) << "  simplified to  " << once;
      ASSERT_TRUE(b.contains(want)) << to_string(e) << " = " << want;
      ASSERT_TRUE(bs.contains(want)) << once << " = " << want;
      if (iv.has_lower_bound()) {
        ASSERT_LE(eval(iv.min_value, env), want)
            << to_string(e) << " min " << to_string(iv.min_value);
      }
      if (iv.has_upper_bound()) {
        ASSERT_GE(eval(iv.max_value, env), want)
            << to_string(e) << " max " << to_string(iv.max_value);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1500 * 12);
}

// With no bounds at all every rule must still hold (pure identities).
TEST(ArithProperty, UnboundedIdentities) {
  Gen g{std::mt19937_64(7), {Var("a"), Var("b"), Var("c")}};
  Analyzer ana;
  for (int trial = 0; trial < 800; ++trial) {
    Expr e = g.expr(4);
    Expr s = ana.simplify(e);
    ASSERT_EQ(to_string(ana.simplify(s)), to_string(s)) << "not idempotent: " << to_string(e);
    for (int p = 0; p < 8; ++p) {
      Env env;
      for (const Var& v : g.vars) env[v.get()] = g.pick(-40, 40);
      ASSERT_EQ(eval(s, env), eval(e, env)) << to_string(e) << "  simplified to  " << to_string(s);
    }
  }
}

}  // namespace
}  // namespace tyche::arith
