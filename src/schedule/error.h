// Why a schedule primitive refused. Cheap to create (a code, a one-line reason and the node it
// is about); the long form, the IR with the offending block or loop marked, is rendered only
// when a person will read it.
#pragma once

#include <string>
#include <variant>

#include "ir/function.h"
#include "support/error.h"

namespace tyche::schedule {

enum class ErrorCode : uint8_t {
  kUnknownBlock,       // get_block: no block of that name
  kAmbiguousBlock,     // get_block: several blocks share the name
  kStaleHandle,        // a handle consumed by an earlier primitive, or never issued
  kWrongHandleKind,    // e.g. a block handle where a loop is needed
  kInvalidFactors,     // split factors that do not cover the extent, non-positive, > 1 inferred
  kNotAChain,          // reorder/fuse: loops not on a single chain of nested loops
  kDuplicateLoop,      // reorder: a loop given twice
  kNotAdjacent,        // fuse: loops not directly nested
  kNonConstantExtent,  // a loop whose extent must be a constant is not
  kDependentLoop,      // a loop's range depends on another loop being moved
  kOpaqueBlock,        // a block under the loop has opaque iterators or non-affine bindings
  kNotSingleChild,     // a transformation needs a loop whose body is one statement
  kInvalidLoopKind,    // e.g. vectorize a reduction loop, parallelize a loop with a reduction
  kInvalidAnnotation,  // unannotate of a missing key
  kNotAncestor,   // a loop that is no place for the block: another scope, above it, not above its
                  // consumers
  kNotCovered,    // a consumer would be left without its data
  kNotComplete,   // the block is not a complete (spatial, single-writer) block
  kIsReduction,   // compute_inline of a reduction block
  kIsOutput,      // compute_inline of a block that writes a function output
  kNotReduction,  // decompose_reduction/rfactor of a block that does not reduce
  kSpatialLoop,   // rfactor on a loop that is not a reduction loop
  kDependenceViolated,  // would read data before it is written or after it is overwritten, or
                        // bypass a writer
  kOutOfRange,   // a buffer index, axis or factor_axis beyond the block's buffers or the buffer's
                 // rank
  kUnknownName,  // an unknown storage scope, thread axis or tensor intrinsic
  kParameterBuffer,    // a function parameter the primitive may not change or remove
  kNotSeparable,       // blockize: a binding does not split into parts outside and inside the loop
  kIntrinsicMismatch,  // tensorize: the computation does not match the intrinsic's description
  kNotInlinable,     // not a store at its iterators of a function of its iterators (or of one load)
  kExtentMismatch,   // a layout factor that does not divide the extent, or the wrong rank
  kIllegalDecision,  // a sampling decision that is not legal in the program as it is now
  kExceedsLimit,     // over a target limit (threads or memory per GPU block)
  kUnsupported,  // a request outside what the primitive handles (the root block, a nested scope,
                 // ...)
  kInvalidArgument,  // an ill-formed argument (wrong count or type, a malformed index map, a bad
                     // probability)
};
const char* error_code_name(ErrorCode code);

class ScheduleError {
 public:
  ScheduleError(ErrorCode code, std::string reason, const ir::StmtNode* location = nullptr)
      : code_(code), reason_(std::move(reason)), location_(location) {}

  ErrorCode code() const { return code_; }
  // One line, for the search's statistics and for users.
  const std::string& reason() const { return reason_; }
  // The reason followed by the IR of `func` with the offending statement marked.
  std::string render(const ir::PrimFunc& func) const;

 private:
  ErrorCode code_;
  std::string reason_;
  const ir::StmtNode* location_;  // may dangle once the schedule moves on: render right away
};

// Thrown by Result::value() when a caller chose not to inspect the failure.
class ScheduleException : public Error {
 public:
  explicit ScheduleException(ScheduleError e) : Error(e.reason()), error_(std::move(e)) {}
  const ScheduleError& error() const { return error_; }

 private:
  ScheduleError error_;
};

// A value or the ScheduleError that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}              // NOLINT(google-explicit-constructor)
  Result(ScheduleError error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const ScheduleError& error() const { return std::get<1>(v_); }
  T& value() & {
    if (!ok()) throw ScheduleException(error());
    return std::get<0>(v_);
  }
  // By value, so `for (auto& x : f().value())` does not dangle.
  T value() && {
    if (!ok()) throw ScheduleException(error());
    return std::get<0>(std::move(v_));
  }

 private:
  std::variant<T, ScheduleError> v_;
};

// For primitives that produce nothing.
struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() {
  return Unit{};
}

}  // namespace tyche::schedule

// Unwraps a Result into `var`, or returns its error from the enclosing function.
#define TYCHE_TRY_ASSIGN(var, expr)               \
  auto var##_result = (expr);                     \
  if (!var##_result) return var##_result.error(); \
  auto var = std::move(var##_result).value()
