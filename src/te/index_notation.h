// Index notation: a whole tensor program written as one line of text, e.g.
//   C[i,j] += A[i,k] * B[k,j]            with extents  i=1024,j=1024,k=1024
// Statements are separated by ';'. Each is `Out[i, j, ...] OP rhs` with OP one of `=`, `+=`,
// `max=`, `min=`. Indices that appear only on the right are reduction indices: `+=` (or `=`
// with reduction indices) sums over them, `max=`/`min=` take the max/min.
// Tensors never written are inputs, tensors written but not read by a later statement are
// outputs, the rest are intermediates; input shapes are inferred from the index ranges.
//
// Element types: tensors are float32 unless `dtypes` names them ("A=uint8, B=int8, C=int32"; the
// types are int8, uint8, int16, int32, float16, bfloat16 and float32). A statement computes in its
// output's type: each tensor it reads is converted to that type first (sign- or zero-extended,
// int to float exactly where the float holds the value; a narrower integer output wraps, a
// narrower float output rounds to nearest even), so `C[i,j] += A[i,k] * B[k,j]` with A=uint8,
// B=int8, C=int32 multiplies and accumulates in int32. float16 and bfloat16 outputs are computed
// in float32 and rounded once, when stored; they cannot be reduced into (reduce into a float32
// intermediate and convert it in a second statement). An integer statement cannot read a float
// tensor, divide, call exp/log/sqrt/tanh/sigmoid or hold a non-integer number.
//
// `S[] += A[i]` declares a 0-d (scalar) tensor. Limits, so that no input can exhaust the stack
// or overflow the int32 index arithmetic of the IR: expressions nest at most 200 deep, a formula
// has at most 1000 statements, extents are at most 2^31-1 and every index expression (and each of
// its coefficients and partial sums) stays within int32.
//
// parse_index_notation() checks everything a user can get wrong and throws tyche::InputError with
// a one-line message (with the 1-based column where there is one), so to_prim_func() and the
// reference evaluator (workloads/index_notation_reference.h) can trust the program.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/function.h"
#include "te/tensor.h"

namespace tyche::te {

// One term of an affine index expression: coeff * index.
struct IndexTerm {
  std::string index;
  int64_t coeff = 0;
};

// An index expression inside [], normalized to offset + sum(coeff * index). Every index written
// in the expression has a term (even if its coefficient cancels to 0), in order of appearance.
struct AffineIndex {
  std::vector<IndexTerm> terms;
  int64_t offset = 0;
  std::string text;  // as written (trimmed), for messages
  int column = 0;    // 1-based column in the formula
};

enum class IndexNotationOp : uint8_t { kNumber, kAccess, kAdd, kSub, kMul, kDiv, kNeg, kCall };
enum class IndexNotationFunc : uint8_t { kMax, kMin, kExp, kLog, kSqrt, kTanh, kSigmoid, kAbs };
const char* index_notation_func_name(IndexNotationFunc f);

// A node of a right-hand side.
struct IndexNotationExpr {
  IndexNotationOp op = IndexNotationOp::kNumber;
  double value = 0;                                  // kNumber
  std::string tensor;                                // kAccess
  std::vector<AffineIndex> indices;                  // kAccess
  IndexNotationFunc func = IndexNotationFunc::kMax;  // kCall
  std::vector<IndexNotationExpr> args;               // kAdd..kDiv: 2, kNeg: 1, kCall: 1 or 2
  int column = 0;
};

enum class AssignOp : uint8_t { kAssign, kAddAssign, kMaxAssign, kMinAssign };
const char* assign_op_name(AssignOp op);  // "=", "+=", "max=", "min="

struct IndexNotationStatement {
  std::string output;
  std::vector<std::string> axes;  // the left-hand side indices (distinct)
  AssignOp assign = AssignOp::kAssign;
  IndexNotationExpr rhs;
  // Indices that appear only on the right, in order of first appearance. Non-empty iff the
  // statement is a reduction (with `reducer`).
  std::vector<std::string> reduce_axes;
  ReducerKind reducer = ReducerKind::kSum;
  int column = 0;  // of the output tensor's name
  bool is_reduction() const { return !reduce_axes.empty(); }
};

enum class TensorRole : uint8_t { kInput, kIntermediate, kOutput };

struct IndexNotationTensor {
  std::string name;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::kInput;
  DataType dtype = kFloat32;
};

struct IndexNotationProgram {
  std::vector<IndexNotationStatement> statements;
  // Every index with its extent, in order of first appearance in the formula.
  std::vector<std::pair<std::string, int64_t>> extents;
  // Every tensor, in order of first appearance in the formula.
  std::vector<IndexNotationTensor> tensors;
  std::vector<std::string> inputs;         // never written; order of first appearance
  std::vector<std::string> outputs;        // not read by a later statement; statement order
  std::vector<std::string> intermediates;  // written, then read later; statement order

  // Throw tyche::Error for an unknown name.
  int64_t extent(std::string_view index) const;
  const IndexNotationTensor& tensor(std::string_view name) const;
  std::vector<std::vector<int64_t>> input_shapes() const;   // in `inputs` order
  std::vector<std::vector<int64_t>> output_shapes() const;  // in `outputs` order
};

// Parses and checks `formula` with `extents` ("i=1024,j=1024,k=1024"; whitespace allowed) and
// `dtypes` ("A=uint8,B=int8,C=int32"; empty: every tensor float32). Throws tyche::InputError with
// a one-line message on any error.
IndexNotationProgram parse_index_notation(std::string_view formula, std::string_view extents,
                                          std::string_view dtypes = "");

// The type a statement with output type `out` computes in: `out`, or float32 for float16 and
// bfloat16 (rounded once, when stored).
DataType index_notation_compute_type(DataType out);

// One te::compute per statement, named after its output tensor (so its block is), with axis
// names = the left-hand indices and reduce axes named after the reduction indices; params are
// the inputs then the outputs; intermediates are buffers of the root block.
ir::PrimFunc to_prim_func(const IndexNotationProgram& program, std::string name = "main");

// Canonical text of the formula ("C[i, j] += A[i, k] * B[k, j]") and of the extents
// ("i=1024,j=1024,k=1024"); parsing them again gives the same program.
std::string formula_string(const IndexNotationProgram& program);
std::string extents_string(const IndexNotationProgram& program);
// The types of the tensors that are not float32, in tensor order ("A=uint8,B=int8,C=int32"; empty
// when every tensor is float32); parsing it again gives the same types.
std::string dtypes_string(const IndexNotationProgram& program);

}  // namespace tyche::te
