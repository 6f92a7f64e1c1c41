#include "schedule/error.h"

#include "ir/printer.h"

namespace tyche::schedule {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnknownBlock:
      return "unknown_block";
    case ErrorCode::kAmbiguousBlock:
      return "ambiguous_block";
    case ErrorCode::kStaleHandle:
      return "stale_handle";
    case ErrorCode::kWrongHandleKind:
      return "wrong_handle_kind";
    case ErrorCode::kInvalidFactors:
      return "invalid_factors";
    case ErrorCode::kNotAChain:
      return "not_a_chain";
    case ErrorCode::kDuplicateLoop:
      return "duplicate_loop";
    case ErrorCode::kNotAdjacent:
      return "not_adjacent";
    case ErrorCode::kNonConstantExtent:
      return "non_constant_extent";
    case ErrorCode::kDependentLoop:
      return "dependent_loop";
    case ErrorCode::kOpaqueBlock:
      return "opaque_block";
    case ErrorCode::kNotSingleChild:
      return "not_single_child";
    case ErrorCode::kInvalidLoopKind:
      return "invalid_loop_kind";
    case ErrorCode::kInvalidAnnotation:
      return "invalid_annotation";
    case ErrorCode::kNotAncestor:
      return "not_ancestor";
    case ErrorCode::kNotCovered:
      return "not_covered";
    case ErrorCode::kNotComplete:
      return "not_complete";
    case ErrorCode::kIsReduction:
      return "is_reduction";
    case ErrorCode::kIsOutput:
      return "is_output";
    case ErrorCode::kNotReduction:
      return "not_reduction";
    case ErrorCode::kSpatialLoop:
      return "spatial_loop";
    case ErrorCode::kDependenceViolated:
      return "dependence_violated";
    case ErrorCode::kOutOfRange:
      return "out_of_range";
    case ErrorCode::kUnknownName:
      return "unknown_name";
    case ErrorCode::kParameterBuffer:
      return "parameter_buffer";
    case ErrorCode::kNotSeparable:
      return "not_separable";
    case ErrorCode::kIntrinsicMismatch:
      return "intrinsic_mismatch";
    case ErrorCode::kNotInlinable:
      return "not_inlinable";
    case ErrorCode::kExtentMismatch:
      return "extent_mismatch";
    case ErrorCode::kIllegalDecision:
      return "illegal_decision";
    case ErrorCode::kExceedsLimit:
      return "exceeds_limit";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
  }
  return "?";
}

std::string ScheduleError::render(const ir::PrimFunc& func) const {
  std::string out =
      "ScheduleError (" + std::string(error_code_name(code_)) + "): " + reason_ + "\n";
  ir::PrintOptions options;
  options.highlight = location_;
  out += ir::to_string(func, options);
  return out;
}

}  // namespace tyche::schedule
