// Expressions of the tensor IR (docs/architecture.md, "The IR").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/node.h"
#include "support/dtype.h"

namespace tyche::ir {

enum class ExprKind : uint8_t {
  kIntImm,
  kFloatImm,
  kVar,
  // Binary operators share one node type (BinaryNode); keep them contiguous.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
  kNot,
  kSelect,
  kCast,
  kBufferLoad,
  kCall,
  kRamp,
  kBroadcast,
  kLet,
};

inline bool is_binary(ExprKind k) {
  return k >= ExprKind::kAdd && k <= ExprKind::kOr;
}
inline bool is_comparison(ExprKind k) {
  return k >= ExprKind::kEQ && k <= ExprKind::kGE;
}
// "+", "floordiv", "<", ... as the printer writes them.
const char* binary_op_name(ExprKind k);

struct ExprNode {
  const ExprKind kind;
  const DataType dtype;
  virtual ~ExprNode() = default;

 protected:
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
};

class Expr : public NodeRef<ExprNode> {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : NodeRef(std::move(n)) {}
  // Integer literals become int32 IntImm (the default index type), as in TVM.
  Expr(int value);      // NOLINT(google-explicit-constructor)
  Expr(int64_t value);  // NOLINT: int64 literal -> int64 IntImm
  // Floating literals become float32 FloatImm.
  Expr(double value);  // NOLINT(google-explicit-constructor)

  ExprKind kind() const { return (*this)->kind; }
  DataType dtype() const { return (*this)->dtype; }
  template <typename T>
  const T* as() const {
    return get() && get()->kind == T::kKind ? static_cast<const T*>(get()) : nullptr;
  }
  // Binary operators share BinaryNode, which has no single kind.
  const struct BinaryNode* as_binary() const;
};

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  const int64_t value;
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  const double value;
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
};

struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  const std::string name;  // a hint only: variables are identified by their node
  VarNode(std::string n, DataType t) : ExprNode(kKind, t), name(std::move(n)) {}
};

// A variable: a handle usable wherever an Expr is.
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType dtype = kInt32);
  explicit Var(std::shared_ptr<const VarNode> n) : Expr(std::move(n)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return static_cast<const VarNode*>(Expr::operator->()); }
  const VarNode& operator*() const { return *operator->(); }
  const std::string& name() const { return (*this)->name; }
};

struct BinaryNode : ExprNode {
  const Expr a, b;
  BinaryNode(ExprKind k, DataType t, Expr a_, Expr b_)
      : ExprNode(k, t), a(std::move(a_)), b(std::move(b_)) {}
};

inline const BinaryNode* Expr::as_binary() const {
  return get() && is_binary(get()->kind) ? static_cast<const BinaryNode*>(get()) : nullptr;
}

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kNot;
  const Expr a;
  explicit NotNode(Expr a_) : ExprNode(kKind, a_.dtype()), a(std::move(a_)) {}
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  const Expr condition, true_value, false_value;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.dtype()),
        condition(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  const Expr value;
  CastNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
};

struct BufferNode;  // buffer.h

// A multi-dimensional array (identified by its node). Defined here because loads refer to it.
class Buffer : public NodeRef<BufferNode> {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> n) : NodeRef(std::move(n)) {}
};

struct BufferLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBufferLoad;
  const Buffer buffer;
  const std::vector<Expr> indices;
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> idx)
      : ExprNode(kKind, t), buffer(std::move(b)), indices(std::move(idx)) {}
};

// Math intrinsics; names as the printer and the parsers spell them.
// kIfThenElse(cond, a, b) evaluates only the chosen operand (unlike Select, which may evaluate
// both), so it can guard loads that would be out of bounds, e.g. in padding.
// kGroupDot(acc, a, b): the dot products of CPUs' tensor instructions (VNNI's vpdpbusd,
// AVX512-BF16's vdpbf16ps). acc has N lanes, a has G, b has G*N; lane i of the result is
// acc[i] + sum over t < G of a[t] * b[G*i + t], each operand widened to acc's element type first.
// Integers are exact (wrapping as acc's type); floats may be summed in any order (the instructions
// differ), within float32 rounding. The backend emits the instruction where the CPU has it and
// plain vector code elsewhere (ir::group_dot checks the types).
// kTileDot(acc, a, b, rows): the matrix products of CPUs' tile instructions (AMX's tdpbusd,
// tdpbf16ps): acc is an M x N tile (M = rows, a constant; row-major, M*N lanes), a an M x K tile,
// b the K x N tile packed in groups of G = 4 bytes / a's element size (K/G rows of N*G: element
// (t, n) at lane (t / G) * N * G + n * G + t % G, AMX's and VNNI's weight layout). Lane m*N + n of
// the result is acc[m*N + n] + sum over t < K of a[m*K + t] * b[(t, n)], types and rounding as
// group_dot's (one row with K = G is group_dot). The backend emits the tile instructions where the
// CPU has them and group_dots elsewhere.
// kThreadBarrier() (int32, evaluated for its effect): the GPU threads of a block wait there until
// all have reached it, and their shared-memory writes before it are seen after it. Only the GPU
// back end's lowering inserts it.
// kWarpShuffleDown(v, offset, width) / kWarpShuffle(v, lane, width) (CUDA, v's type): v as the
// thread `offset` lanes up (or lane `lane`) of the caller's segment of `width` lanes of its warp
// holds it; the caller's own v where that lane lies past the segment. Only the CUDA lowering
// inserts them. The tensor cores' warp-wide instructions on 16 x 16 fragments (int32, evaluated for
// their effect; every thread of a warp calls them together). A fragment operand is one element of a
// fragment array (a fragment scope, ir/buffer.h: wmma.* or mma.*, one 16 x 16 tile per
// element); a memory operand is the element at the tile's origin, its rows `ld` elements apart:
//   kWarpMatrixFill(c, value), kWarpMatrixLoad(fragment, memory, ld), kWarpMatrixMma(c, a, b)
//   (c += a * b), kWarpMatrixStore(memory, c, ld). Only the CUDA lowering makes them.
// CUDA's asynchronous copies global -> shared (sm_80+, cp.async; made by the software pipeline):
// kAsyncCopy(dst, src, bytes) starts copying `bytes` (4, 8 or 16, aligned) from the element src to
// the element dst; kAsyncCommit() closes the thread's group of copies started since the last;
// kAsyncWait(n) waits until at most n of its groups are still in flight.
// kRound rounds to the nearest integer, halves to even (nearbyint; numpy.round, ONNX's
// QuantizeLinear), not C's round, which takes halves away from zero.
enum class CallOp : uint8_t {
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kTanh,
  kSigmoid,
  kAbs,
  kPow,
  kFloor,
  kCeil,
  kErf,
  kIfThenElse,
  kGroupDot,
  kRound,
  kTileDot,
  kThreadBarrier,
  kWarpShuffleDown,
  kWarpShuffle,
  kWarpMatrixFill,
  kWarpMatrixLoad,
  kWarpMatrixMma,
  kWarpMatrixStore,
  kAsyncCopy,
  kAsyncCommit,
  kAsyncWait,
  // Trigonometric and hyperbolic functions (ONNX's Sin ... Atanh), after the GPU calls so that
  // the GPU calls keep their numbers.
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  // Integer bit operations (ONNX's Bitwise* and BitShift): the operands' type, wrapped to it; a
  // right shift of an unsigned type is logical, of a signed one arithmetic; a shift by a
  // negative amount or the width or more gives 0 (-1 for a negative value shifted right).
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kBitwiseNot,
  kShiftLeft,
  kShiftRight,
};
// Whether only the GPU back end's lowering makes (and its printer prints) calls of `op`.
bool is_gpu_call(CallOp op);
// Whether `op` is an integer bit operation (kBitwiseAnd ... kShiftRight).
bool is_bit_call(CallOp op);
const char* call_op_name(CallOp op);
std::optional<CallOp> call_op_from_name(const std::string& name);
int call_op_arity(CallOp op);

struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCall;
  const CallOp op;
  const std::vector<Expr> args;
  CallNode(DataType t, CallOp o, std::vector<Expr> a)
      : ExprNode(kKind, t), op(o), args(std::move(a)) {}
};

struct RampNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kRamp;
  const Expr base, stride;
  const int lanes;
  RampNode(Expr b, Expr s, int l)
      : ExprNode(kKind, b.dtype().with_lanes(l)),
        base(std::move(b)),
        stride(std::move(s)),
        lanes(l) {}
};

struct BroadcastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBroadcast;
  const Expr value;
  const int lanes;
  BroadcastNode(Expr v, int l)
      : ExprNode(kKind, v.dtype().with_lanes(l)), value(std::move(v)), lanes(l) {}
};

struct LetNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kLet;
  const Var var;
  const Expr value, body;
  LetNode(Var v, Expr val, Expr b)
      : ExprNode(kKind, b.dtype()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

// Half-open integer range [min, min + extent).
struct Range {
  Expr min, extent;
  Range() = default;
  Range(Expr m, Expr e) : min(std::move(m)), extent(std::move(e)) {}
  static Range from_min_extent(Expr m, Expr e) { return {std::move(m), std::move(e)}; }
};

}  // namespace tyche::ir
