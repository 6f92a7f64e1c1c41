#include "ir/op.h"

#include "support/int_division.h"

#include <cmath>
#include <limits>

namespace tyche::ir {

Expr::Expr(int value) : Expr(make_int(value, kInt32)) {}
Expr::Expr(int64_t value) : Expr(make_int(value, kInt64)) {}
Expr::Expr(double value) : Expr(make_float(value, kFloat32)) {}
Var::Var(std::string name, DataType dtype)
    : Expr(std::make_shared<VarNode>(std::move(name), dtype)) {}

PrimFunc::PrimFunc(std::string name, std::vector<Buffer> params, int num_outputs, Stmt body)
    : NodeRef(std::make_shared<PrimFuncNode>(
          PrimFuncNode{std::move(name), std::move(params), num_outputs, std::move(body)})) {}

PrimFunc PrimFunc::with_body(Stmt body) const {
  if (body.same_as((*this)->body)) return *this;
  return PrimFunc((*this)->name, (*this)->params, (*this)->num_outputs, std::move(body));
}
std::vector<Buffer> PrimFunc::inputs() const {
  const auto& p = (*this)->params;
  return {p.begin(), p.end() - (*this)->num_outputs};
}
std::vector<Buffer> PrimFunc::outputs() const {
  const auto& p = (*this)->params;
  return {p.end() - (*this)->num_outputs, p.end()};
}

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope) {
  auto n = std::make_shared<BufferNode>();
  n->name = std::move(name);
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->scope = std::move(scope);
  return Buffer(std::move(n));
}
Buffer with_name(const Buffer& buffer, std::string name) {
  auto n = std::make_shared<BufferNode>(*buffer);
  n->name = std::move(name);
  return Buffer(std::move(n));
}
Buffer with_scope(const Buffer& buffer, std::string scope) {
  auto n = std::make_shared<BufferNode>(*buffer);
  n->scope = std::move(scope);
  return Buffer(std::move(n));
}
std::vector<int64_t> const_shape(const Buffer& buffer) {
  std::vector<int64_t> out;
  for (const Expr& e : buffer->shape) {
    auto v = as_const_int(e);
    if (!v) throw_error("buffer '{}' has a non-constant shape", buffer->name);
    out.push_back(*v);
  }
  return out;
}
std::optional<std::vector<int64_t>> aligned_strides(const std::vector<int64_t>& shape,
                                                    const std::vector<DimAlign>& aligns) {
  const size_t rank = shape.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(shape[d], 1);
  constexpr int64_t kLimit = int64_t{1} << 40;
  for (const DimAlign& a : aligns) {
    if (a.axis < 0 || static_cast<size_t>(a.axis) >= rank || a.factor <= 0) return std::nullopt;
    for (int d = a.axis; d >= 0; --d) {
      auto i = static_cast<size_t>(d);
      int64_t compact = i + 1 == rank ? 1 : strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
      if (d == a.axis)
        compact += ((a.offset - compact % a.factor) % a.factor + a.factor) % a.factor;
      if (compact > kLimit) return std::nullopt;
      strides[i] = compact;
    }
  }
  return strides;
}

BufferRegion BufferRegion::full(const Buffer& buffer) {
  std::vector<Range> r;
  for (const Expr& e : buffer->shape) r.emplace_back(make_int(0, e.dtype()), e);
  return {buffer, std::move(r)};
}

Expr make_int(int64_t value, DataType dtype) {
  if (dtype.is_bool()) return make_bool(value != 0);
  if (dtype.is_float()) return make_float(static_cast<double>(value), dtype);
  // Wrap to the type's width, as the generated code would (two's complement).
  if (dtype.bits() < 64) {
    uint64_t mask = (uint64_t{1} << dtype.bits()) - 1, bits = static_cast<uint64_t>(value) & mask;
    if (dtype.is_int() && (bits >> (dtype.bits() - 1))) bits |= ~mask;
    value = static_cast<int64_t>(bits);
  }
  return Expr(std::make_shared<IntImmNode>(dtype, value));
}
Expr make_float(double value, DataType dtype) {
  TYCHE_CHECK(dtype.is_float(), "make_float with {}", dtype.str());
  if (dtype.bits() == 32 && !dtype.is_bfloat16())
    value = static_cast<float>(value);  // fold at the type's precision
  return Expr(std::make_shared<FloatImmNode>(dtype, value));
}
Expr make_bool(bool value) {
  return Expr(std::make_shared<IntImmNode>(kBool, value ? 1 : 0));
}
Expr make_const(DataType dtype, double value) {
  if (dtype.is_float()) return make_float(value, dtype);
  return make_int(static_cast<int64_t>(value), dtype);
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (auto* n = e.as<IntImmNode>()) return n->value;
  return std::nullopt;
}
bool is_const_int(const Expr& e, int64_t value) {
  auto v = as_const_int(e);
  return v && *v == value;
}

namespace {

bool is_const(const Expr& e) {
  return e.kind() == ExprKind::kIntImm || e.kind() == ExprKind::kFloatImm;
}

double const_value(const Expr& e) {
  if (auto* i = e.as<IntImmNode>()) return static_cast<double>(i->value);
  return e.as<FloatImmNode>()->value;
}

// Brings both operands to one type: a literal adopts the other side's type, integers widen,
// an integer meeting a float becomes that float.
void reconcile(Expr& a, Expr& b) {
  DataType ta = a.dtype(), tb = b.dtype();
  if (ta == tb) return;
  // Element types first (a cast keeps its operand's lanes), then lanes by broadcasting.
  DataType ea = ta.element_of(), eb = tb.element_of();
  auto to = [](const Expr& e, DataType elem) {
    return cast(elem.with_lanes(e.dtype().lanes()), e);
  };
  if (ea != eb) {
    if (is_const(b) && tb.lanes() == 1 && !(ea.is_int_like() && eb.is_float()))
      b = make_const(ea, const_value(b));
    else if (is_const(a) && ta.lanes() == 1 && !(eb.is_int_like() && ea.is_float()))
      a = make_const(eb, const_value(a));
    else if (ea.is_float() && eb.is_int_like())
      b = to(b, ea);
    else if (eb.is_float() && ea.is_int_like())
      a = to(a, eb);
    else if (ea.bits() < eb.bits())
      a = to(a, eb);
    else
      b = to(b, ea);
  }
  if (a.dtype().lanes() != b.dtype().lanes()) {
    if (a.dtype().lanes() == 1)
      a = broadcast(a, b.dtype().lanes());
    else if (b.dtype().lanes() == 1)
      b = broadcast(b, a.dtype().lanes());
  }
  if (a.dtype() != b.dtype())
    throw_error("operand types {} and {} do not match", a.dtype().str(), b.dtype().str());
}

// Two's complement negation without signed overflow.
int64_t neg_wrap(int64_t x) {
  return static_cast<int64_t>(0ULL - static_cast<uint64_t>(x));
}

// A comparison of two constants, or an undefined Expr when `k` is not a comparison.
template <typename T>
Expr fold_comparison(ExprKind k, T x, T y) {
  switch (k) {
    case ExprKind::kEQ:
      return make_bool(x == y);
    case ExprKind::kNE:
      return make_bool(x != y);
    case ExprKind::kLT:
      return make_bool(x < y);
    case ExprKind::kLE:
      return make_bool(x <= y);
    case ExprKind::kGT:
      return make_bool(x > y);
    case ExprKind::kGE:
      return make_bool(x >= y);
    default:
      return Expr();
  }
}

// Folds two constants of the same type; returns an undefined Expr when it cannot.
Expr fold(ExprKind k, const Expr& a, const Expr& b) {
  DataType t = a.dtype();
  if (!is_const(a) || !is_const(b) || t.lanes() != 1) return Expr();
  if (auto* ia = a.as<IntImmNode>()) {
    int64_t x = ia->value, y = b.as<IntImmNode>()->value;
    switch (k) {
      case ExprKind::kAdd:
        return make_int(static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)),
                        t);
      case ExprKind::kSub:
        return make_int(static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)),
                        t);
      case ExprKind::kMul:
        return make_int(static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)),
                        t);
      // Division by zero and INT64_MIN / -1 stay unfolded: they are errors at run time.
      case ExprKind::kDiv:
        return y && y != -1 ? make_int(x / y, t) : y == -1 ? make_int(neg_wrap(x), t) : Expr();
      case ExprKind::kFloorDiv:
        return y ? make_int(tyche::floordiv(x, y), t) : Expr();
      case ExprKind::kFloorMod:
        return y ? make_int(tyche::floormod(x, y), t) : Expr();
      case ExprKind::kMin:
        return make_int(std::min(x, y), t);
      case ExprKind::kMax:
        return make_int(std::max(x, y), t);
      case ExprKind::kAnd:
        return make_bool(x && y);
      case ExprKind::kOr:
        return make_bool(x || y);
      default:
        return fold_comparison(k, x, y);
    }
  }
  double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
  switch (k) {
    case ExprKind::kAdd:
      return make_float(x + y, t);
    case ExprKind::kSub:
      return make_float(x - y, t);
    case ExprKind::kMul:
      return make_float(x * y, t);
    case ExprKind::kDiv:
      return y != 0 ? make_float(x / y, t) : Expr();
    case ExprKind::kMin:
      return make_float(std::min(x, y), t);
    case ExprKind::kMax:
      return make_float(std::max(x, y), t);
    default:
      return fold_comparison(k, x, y);
  }
}

}  // namespace

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  TYCHE_CHECK(is_binary(kind), "not a binary operator");
  TYCHE_CHECK(a.defined() && b.defined(), "undefined operand of {}", binary_op_name(kind));
  reconcile(a, b);
  if (Expr f = fold(kind, a, b); f.defined()) return f;
  DataType t = a.dtype();
  if (is_comparison(kind) || kind == ExprKind::kAnd || kind == ExprKind::kOr) {
    t = kBool.with_lanes(a.dtype().lanes());
  }
  if ((kind == ExprKind::kFloorDiv || kind == ExprKind::kFloorMod) && !t.is_int_like())
    throw_error("{} needs integer operands, got {}", binary_op_name(kind), t.str());
  // Identities that keep index expressions readable without a full simplifier.
  if (t.is_int_like() && t.lanes() == 1) {
    if (kind == ExprKind::kAdd && is_const_int(b, 0)) return a;
    if (kind == ExprKind::kAdd && is_const_int(a, 0)) return b;
    if (kind == ExprKind::kSub && is_const_int(b, 0)) return a;
    if (kind == ExprKind::kMul && is_const_int(b, 1)) return a;
    if (kind == ExprKind::kMul && is_const_int(a, 1)) return b;
    if ((kind == ExprKind::kFloorDiv || kind == ExprKind::kDiv) && is_const_int(b, 1)) return a;
    if (kind == ExprKind::kMul && (is_const_int(a, 0) || is_const_int(b, 0))) return make_int(0, t);
    if (kind == ExprKind::kFloorMod && is_const_int(b, 1)) return make_int(0, t);
  }
  // Vector indices: a broadcast added to a ramp or a broadcast is one ramp or broadcast again, so
  // an offset region's index (tensorize's offset + ramp) stays a unit ramp, a contiguous access.
  if (t.is_integer() && t.lanes() > 1 && (kind == ExprKind::kAdd || kind == ExprKind::kSub)) {
    auto* ba = a.as<BroadcastNode>();
    auto* bb = b.as<BroadcastNode>();
    auto* ra = a.as<RampNode>();
    auto* rb = b.as<RampNode>();
    if (ba && bb) return broadcast(make_binary(kind, ba->value, bb->value), t.lanes());
    if (ra && bb) return ramp(make_binary(kind, ra->base, bb->value), ra->stride, ra->lanes);
    if (ba && rb && kind == ExprKind::kAdd)
      return ramp(ba->value + rb->base, rb->stride, rb->lanes);
  }
  return Expr(std::make_shared<BinaryNode>(kind, t, std::move(a), std::move(b)));
}

Expr operator+(Expr a, Expr b) {
  return make_binary(ExprKind::kAdd, std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
  return make_binary(ExprKind::kSub, std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
  return make_binary(ExprKind::kMul, std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
  return make_binary(ExprKind::kDiv, std::move(a), std::move(b));
}
Expr operator-(Expr a) {
  if (auto* i = a.as<IntImmNode>()) return make_int(-i->value, a.dtype());
  if (auto* f = a.as<FloatImmNode>()) return make_float(-f->value, a.dtype());
  return make_const(a.dtype().element_of(), 0) - a;
}
Expr floordiv(Expr a, Expr b) {
  return make_binary(ExprKind::kFloorDiv, std::move(a), std::move(b));
}
Expr floormod(Expr a, Expr b) {
  return make_binary(ExprKind::kFloorMod, std::move(a), std::move(b));
}
Expr min(Expr a, Expr b) {
  return make_binary(ExprKind::kMin, std::move(a), std::move(b));
}
Expr max(Expr a, Expr b) {
  return make_binary(ExprKind::kMax, std::move(a), std::move(b));
}
Expr operator==(Expr a, Expr b) {
  return make_binary(ExprKind::kEQ, std::move(a), std::move(b));
}
Expr operator!=(Expr a, Expr b) {
  return make_binary(ExprKind::kNE, std::move(a), std::move(b));
}
Expr operator<(Expr a, Expr b) {
  return make_binary(ExprKind::kLT, std::move(a), std::move(b));
}
Expr operator<=(Expr a, Expr b) {
  return make_binary(ExprKind::kLE, std::move(a), std::move(b));
}
Expr operator>(Expr a, Expr b) {
  return make_binary(ExprKind::kGT, std::move(a), std::move(b));
}
Expr operator>=(Expr a, Expr b) {
  return make_binary(ExprKind::kGE, std::move(a), std::move(b));
}
Expr operator&&(Expr a, Expr b) {
  if (is_const_int(a, 1)) return b;
  if (is_const_int(b, 1)) return a;
  return make_binary(ExprKind::kAnd, std::move(a), std::move(b));
}
Expr operator||(Expr a, Expr b) {
  return make_binary(ExprKind::kOr, std::move(a), std::move(b));
}
Expr operator!(Expr a) {
  if (auto v = as_const_int(a)) return make_bool(*v == 0);
  return Expr(std::make_shared<NotNode>(std::move(a)));
}
Expr select(Expr cond, Expr t, Expr f) {
  reconcile(t, f);
  if (auto c = as_const_int(cond)) return *c ? t : f;
  return Expr(std::make_shared<SelectNode>(std::move(cond), std::move(t), std::move(f)));
}
Expr cast(DataType dtype, Expr value) {
  if (value.dtype() == dtype) return value;
  if (dtype.lanes() == 1 && is_const(value)) return make_const(dtype, const_value(value));
  return Expr(std::make_shared<CastNode>(dtype, std::move(value)));
}
Expr call(CallOp op, std::vector<Expr> args) {
  if (static_cast<int>(args.size()) != call_op_arity(op))
    throw_error("{} takes {} argument(s), got {}", call_op_name(op), call_op_arity(op),
                args.size());
  if (op == CallOp::kGroupDot) return group_dot(args[0], args[1], args[2]);
  if (op == CallOp::kTileDot) return tile_dot(args[0], args[1], args[2], args[3]);
  if (op == CallOp::kThreadBarrier || (op >= CallOp::kWarpMatrixFill && op <= CallOp::kAsyncWait))
    return Expr(std::make_shared<CallNode>(kInt32, op, std::move(args)));
  if (op == CallOp::kWarpShuffleDown || op == CallOp::kWarpShuffle) {
    DataType t = args[0].dtype();
    return Expr(std::make_shared<CallNode>(t, op, std::move(args)));
  }
  if (op == CallOp::kIfThenElse) {
    if (auto c = as_const_int(args[0])) return *c ? args[1] : args[2];
    reconcile(args[1], args[2]);
    DataType t = args[1].dtype();
    return Expr(std::make_shared<CallNode>(t, op, std::move(args)));
  }
  if (is_bit_call(op)) {
    for (const Expr& a : args)
      if (!a.dtype().is_int_like() || a.dtype().is_bool())
        throw_error("{} takes integers, not {}", call_op_name(op), a.dtype().str());
    if (args.size() == 2 && args[0].dtype() != args[1].dtype())
      args[1] = cast(args[0].dtype(), args[1]);
    DataType t = args[0].dtype();
    return Expr(std::make_shared<CallNode>(t, op, std::move(args)));
  }
  if (args.size() == 2) reconcile(args[0], args[1]);
  DataType t = args[0].dtype();
  if (op != CallOp::kAbs && !t.is_float()) {
    for (auto& a : args) a = cast(kFloat32.with_lanes(t.lanes()), a);
    t = args[0].dtype();
  }
  return Expr(std::make_shared<CallNode>(t, op, std::move(args)));
}
namespace {
// The element types the CPUs' dot instructions take: int32 accumulators of integers of at most 16
// bits, or float32 ones of float16, bfloat16 or float32.
bool dot_types(DataType acc, DataType a, DataType b) {
  bool ints = acc.element_of() == kInt32 && a.is_integer() && b.is_integer() && a.bits() <= 16 &&
              b.bits() <= 16;
  auto narrow_float = [](DataType t) { return t.is_float() && (t.bits() == 16 || t.bits() == 32); };
  return ints || (acc.element_of() == kFloat32 && narrow_float(a) && narrow_float(b));
}
}  // namespace

Expr group_dot(Expr acc, Expr a, Expr b) {
  DataType ta = acc.dtype(), t1 = a.dtype(), t2 = b.dtype();
  if (ta.lanes() < 2 || t2.lanes() != t1.lanes() * ta.lanes() || !dot_types(ta, t1, t2))
    throw_error(
        "group_dot({}, {}, {}): needs acc int32xN with integers of at most 16 bits, or float32xN "
        "with float16, "
        "bfloat16 or float32, and b with a's lanes times N lanes",
        ta.str(), t1.str(), t2.str());
  return Expr(std::make_shared<CallNode>(
      ta, CallOp::kGroupDot, std::vector<Expr>{std::move(acc), std::move(a), std::move(b)}));
}

namespace {
// The group of a tile_dot's packed b: the elements of one 32-bit word.
int tile_group(DataType a) {
  return 32 / a.bits();
}
}  // namespace

Expr tile_dot(Expr acc, Expr a, Expr b, Expr rows) {
  DataType ta = acc.dtype(), t1 = a.dtype(), t2 = b.dtype();
  auto m = as_const_int(rows);
  const std::string what = fmt::format("tile_dot({}, {}, {})", ta.str(), t1.str(), t2.str());
  if (!dot_types(ta, t1, t2))
    throw_error(
        "{}: needs an int32 tile with integers of at most 16 bits, or a float32 one with float16, "
        "bfloat16 or float32",
        what);
  if (!m || *m < 1 || ta.lanes() < 2 || rows.dtype().lanes() != 1 || ta.lanes() % *m ||
      t1.lanes() % *m)
    throw_error("{}: rows must be a constant that divides acc's and a's lanes (acc a vector)",
                what);
  const int64_t n = ta.lanes() / *m, k = t1.lanes() / *m, g = tile_group(t1);
  if (k % g || t2.lanes() != k * n)
    throw_error("{}: needs a's {} lanes per row to be a multiple of {} and b to have {} x {} lanes",
                what, k, g, k, n);
  return Expr(std::make_shared<CallNode>(
      ta, CallOp::kTileDot,
      std::vector<Expr>{std::move(acc), std::move(a), std::move(b), make_int(*m)}));
}

TileDotShape tile_dot_shape(const CallNode* n) {
  const int m = static_cast<int>(*as_const_int(n->args[3]));
  const int lanes_a = n->args[1].dtype().lanes();
  return {m, n->dtype.lanes() / m, lanes_a / m, tile_group(n->args[1].dtype())};
}

Expr exp(Expr x) {
  return call(CallOp::kExp, {std::move(x)});
}
Expr log(Expr x) {
  return call(CallOp::kLog, {std::move(x)});
}
Expr sqrt(Expr x) {
  return call(CallOp::kSqrt, {std::move(x)});
}
Expr tanh(Expr x) {
  return call(CallOp::kTanh, {std::move(x)});
}
Expr sigmoid(Expr x) {
  return call(CallOp::kSigmoid, {std::move(x)});
}
Expr abs(Expr x) {
  return call(CallOp::kAbs, {std::move(x)});
}
Expr if_then_else(Expr cond, Expr t, Expr f) {
  return call(CallOp::kIfThenElse, {std::move(cond), std::move(t), std::move(f)});
}
Expr buffer_load(const Buffer& buffer, std::vector<Expr> indices) {
  TYCHE_CHECK(indices.size() == buffer->shape.size(), "{} indices for {}-d buffer {}",
              indices.size(), buffer->shape.size(), buffer->name);
  int lanes = 1;
  for (const Expr& i : indices) lanes = std::max(lanes, i.dtype().lanes());
  return Expr(std::make_shared<BufferLoadNode>(buffer->dtype.with_lanes(lanes), buffer,
                                               std::move(indices)));
}
Expr ramp(Expr base, Expr stride, int lanes) {
  reconcile(base, stride);
  return Expr(std::make_shared<RampNode>(std::move(base), std::move(stride), lanes));
}
Expr broadcast(Expr value, int lanes) {
  return Expr(std::make_shared<BroadcastNode>(std::move(value), lanes));
}
Expr let(Var var, Expr value, Expr body) {
  return Expr(std::make_shared<LetNode>(std::move(var), std::move(value), std::move(body)));
}

Expr min_value(DataType t) {
  if (t.is_float()) return make_float(-std::numeric_limits<double>::infinity(), t);
  if (t.is_uint() || t.is_bool()) return make_int(0, t);
  return make_int(
      t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1)), t);
}
Expr max_value(DataType t) {
  if (t.is_float()) return make_float(std::numeric_limits<double>::infinity(), t);
  if (t.is_bool()) return make_bool(true);
  if (t.is_uint()) return make_int(t.bits() == 64 ? -1 : (int64_t{1} << t.bits()) - 1, t);
  return make_int(
      t.bits() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits() - 1)) - 1, t);
}

Stmt buffer_store(const Buffer& buffer, Expr value, std::vector<Expr> indices) {
  TYCHE_CHECK(indices.size() == buffer->shape.size(), "{} indices for {}-d buffer {}",
              indices.size(), buffer->shape.size(), buffer->name);
  if (value.dtype().element_of() != buffer->dtype)
    value = cast(buffer->dtype.with_lanes(value.dtype().lanes()), value);
  return Stmt(std::make_shared<BufferStoreNode>(buffer, std::move(value), std::move(indices)));
}
Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (auto* q = s.as<SeqStmtNode>())
      flat.insert(flat.end(), q->seq.begin(), q->seq.end());
    else
      flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<SeqStmtNode>(std::move(flat)));
}
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case) {
  return Stmt(std::make_shared<IfThenElseNode>(std::move(cond), std::move(then_case),
                                               std::move(else_case)));
}
Stmt evaluate(Expr value) {
  return Stmt(std::make_shared<EvaluateNode>(std::move(value)));
}
Stmt for_loop(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag,
              Annotations annotations) {
  return Stmt(std::make_shared<ForNode>(std::move(var), std::move(min), std::move(extent), kind,
                                        std::move(body), std::move(thread_tag),
                                        std::move(annotations)));
}
Block make_block(std::string name, std::vector<IterVar> iter_vars, std::vector<BufferRegion> reads,
                 std::vector<BufferRegion> writes, Stmt init, Stmt body,
                 std::vector<Buffer> alloc_buffers, Annotations annotations) {
  return Block(std::make_shared<BlockNode>(std::move(name), std::move(iter_vars), std::move(reads),
                                           std::move(writes), std::move(init), std::move(body),
                                           std::move(alloc_buffers), std::move(annotations)));
}
Stmt block_realize(std::vector<Expr> iter_values, Expr predicate, Block block) {
  TYCHE_CHECK(iter_values.size() == block->iter_vars.size(), "block {} has {} iter vars, {} values",
              block->name, block->iter_vars.size(), iter_values.size());
  if (!predicate.defined()) predicate = make_bool(true);
  return Stmt(std::make_shared<BlockRealizeNode>(std::move(iter_values), std::move(predicate),
                                                 std::move(block)));
}
Stmt allocate(Buffer buffer, Stmt body) {
  return Stmt(std::make_shared<AllocateNode>(std::move(buffer), std::move(body)));
}

}  // namespace tyche::ir
