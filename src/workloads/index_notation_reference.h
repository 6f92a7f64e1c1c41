// A direct evaluation of an index-notation program (te/index_notation.h) on host tensors: loops
// over every index value of each statement and evaluates the parsed right-hand side, never
// going through the IR, so it can check whatever the scheduler and code generators make of the
// same formula. Float statements compute and reduce in double and round once, when stored in
// their output's type; integer statements compute in int64 with the wrap-around of their output's
// type (exact: what the generated code computes in that type). Every tensor (intermediates too)
// is stored in its own type, as the generated code stores it.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ndarray.h"
#include "te/index_notation.h"

namespace tyche::workloads {

// Shapes of the program's inputs, in `program.inputs` order (what evaluate expects).
std::vector<std::vector<int64_t>> index_notation_input_shapes(
    const te::IndexNotationProgram& program);
// Shapes of the program's outputs, in `program.outputs` order.
std::vector<std::vector<int64_t>> index_notation_output_shapes(
    const te::IndexNotationProgram& program);

// Inputs of their types, filled by NDArray::fill_random, input i from seed + i.
std::vector<runtime::NDArray> random_index_notation_inputs(const te::IndexNotationProgram& program,
                                                           uint64_t seed);

// Computes the outputs (in `program.outputs` order) from inputs typed and shaped as
// index_notation_input_shapes() says. Throws tyche::Error for a wrong input count, dtype or
// shape.
std::vector<runtime::NDArray> evaluate_index_notation(const te::IndexNotationProgram& program,
                                                      const std::vector<runtime::NDArray>& inputs);

// FLOPs, following docs/workloads.md. Every arithmetic node of a right-hand side (+ - * /, unary
// minus, and each call: max, min, exp, log, sqrt, tanh, sigmoid, abs) counts 1; numbers and
// tensor reads count 0. An element-wise statement costs (its ops) per output element; a
// reduction costs (its ops + 1 for the combining +, max or min) per point of its iteration space
// (output elements x reduction extents), so `C[i,j] += A[i,k]*B[k,j]` costs 2*I*J*K, two per
// multiply-accumulate, and a plain copy costs 0.
double index_notation_flop(const te::IndexNotationProgram& program);

}  // namespace tyche::workloads
