#include <array>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace tyche::ir {

const char* binary_op_name(ExprKind k) {
  switch (k) {
    case ExprKind::kAdd:
      return "+";
    case ExprKind::kSub:
      return "-";
    case ExprKind::kMul:
      return "*";
    case ExprKind::kDiv:
      return "/";
    case ExprKind::kFloorDiv:
      return "floordiv";
    case ExprKind::kFloorMod:
      return "floormod";
    case ExprKind::kMin:
      return "min";
    case ExprKind::kMax:
      return "max";
    case ExprKind::kEQ:
      return "==";
    case ExprKind::kNE:
      return "!=";
    case ExprKind::kLT:
      return "<";
    case ExprKind::kLE:
      return "<=";
    case ExprKind::kGT:
      return ">";
    case ExprKind::kGE:
      return ">=";
    case ExprKind::kAnd:
      return "and";
    case ExprKind::kOr:
      return "or";
    default:
      return "?";
  }
}

namespace {
struct CallOpInfo {
  CallOp op;
  const char* name;
  int arity;
};
constexpr std::array kCallOps = {
    CallOpInfo{CallOp::kExp, "exp", 1},
    CallOpInfo{CallOp::kLog, "log", 1},
    CallOpInfo{CallOp::kSqrt, "sqrt", 1},
    CallOpInfo{CallOp::kRsqrt, "rsqrt", 1},
    CallOpInfo{CallOp::kTanh, "tanh", 1},
    CallOpInfo{CallOp::kSigmoid, "sigmoid", 1},
    CallOpInfo{CallOp::kAbs, "abs", 1},
    CallOpInfo{CallOp::kPow, "pow", 2},
    CallOpInfo{CallOp::kFloor, "floor", 1},
    CallOpInfo{CallOp::kCeil, "ceil", 1},
    CallOpInfo{CallOp::kErf, "erf", 1},
    CallOpInfo{CallOp::kIfThenElse, "if_then_else", 3},
    CallOpInfo{CallOp::kGroupDot, "group_dot", 3},
    CallOpInfo{CallOp::kRound, "round", 1},
    CallOpInfo{CallOp::kTileDot, "tile_dot", 4},
    CallOpInfo{CallOp::kThreadBarrier, "thread_barrier", 0},
    CallOpInfo{CallOp::kWarpShuffleDown, "warp_shuffle_down", 3},
    CallOpInfo{CallOp::kWarpShuffle, "warp_shuffle", 3},
    CallOpInfo{CallOp::kWarpMatrixFill, "warp_matrix_fill", 2},
    CallOpInfo{CallOp::kWarpMatrixLoad, "warp_matrix_load", 3},
    CallOpInfo{CallOp::kWarpMatrixMma, "warp_matrix_mma", 3},
    CallOpInfo{CallOp::kWarpMatrixStore, "warp_matrix_store", 3},
    CallOpInfo{CallOp::kAsyncCopy, "async_copy", 3},
    CallOpInfo{CallOp::kAsyncCommit, "async_commit", 0},
    CallOpInfo{CallOp::kAsyncWait, "async_wait", 1},
    CallOpInfo{CallOp::kSin, "sin", 1},
    CallOpInfo{CallOp::kCos, "cos", 1},
    CallOpInfo{CallOp::kTan, "tan", 1},
    CallOpInfo{CallOp::kAsin, "asin", 1},
    CallOpInfo{CallOp::kAcos, "acos", 1},
    CallOpInfo{CallOp::kAtan, "atan", 1},
    CallOpInfo{CallOp::kSinh, "sinh", 1},
    CallOpInfo{CallOp::kCosh, "cosh", 1},
    CallOpInfo{CallOp::kAsinh, "asinh", 1},
    CallOpInfo{CallOp::kAcosh, "acosh", 1},
    CallOpInfo{CallOp::kAtanh, "atanh", 1},
    CallOpInfo{CallOp::kBitwiseAnd, "bitwise_and", 2},
    CallOpInfo{CallOp::kBitwiseOr, "bitwise_or", 2},
    CallOpInfo{CallOp::kBitwiseXor, "bitwise_xor", 2},
    CallOpInfo{CallOp::kBitwiseNot, "bitwise_not", 1},
    CallOpInfo{CallOp::kShiftLeft, "shift_left", 2},
    CallOpInfo{CallOp::kShiftRight, "shift_right", 2},
};
}  // namespace

bool is_gpu_call(CallOp op) {
  return op >= CallOp::kThreadBarrier && op <= CallOp::kAsyncWait;
}
bool is_bit_call(CallOp op) {
  return op >= CallOp::kBitwiseAnd && op <= CallOp::kShiftRight;
}
const char* call_op_name(CallOp op) {
  return kCallOps[static_cast<size_t>(op)].name;
}
int call_op_arity(CallOp op) {
  return kCallOps[static_cast<size_t>(op)].arity;
}
std::optional<CallOp> call_op_from_name(const std::string& name) {
  for (const auto& info : kCallOps)
    if (name == info.name) return info.op;
  return std::nullopt;
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unroll";
    case ForKind::kThreadBinding:
      return "thread_binding";
  }
  return "?";
}

const char* iter_kind_name(IterKind k) {
  switch (k) {
    case IterKind::kSpatial:
      return "spatial";
    case IterKind::kReduce:
      return "reduce";
    case IterKind::kOpaque:
      return "opaque";
  }
  return "?";
}

}  // namespace tyche::ir
