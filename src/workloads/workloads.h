// The preset operator suite of docs/workloads.md (`GMM-1` ... `DENSE_RELU-4`) and workloads written in
// index notation: each is an unscheduled PrimFunc plus a reference that does not use the IR.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"
#include "runtime/ndarray.h"

namespace tyche::workloads {

using ReferenceFn = std::function<std::vector<runtime::NDArray>(const std::vector<runtime::NDArray>&)>;

struct Workload {
  std::string name;             // "GMM-4", or the formula for index notation
  std::string op;               // "GMM", ..., or "index_notation"
  std::vector<int64_t> params;  // the op's parameter tuple (empty for index notation)
  ir::PrimFunc func;            // unscheduled
  double flop = 0;
  ReferenceFn reference;        // computes the outputs from the inputs without the IR
  // "B=1,N=1024,M=1024,K=1024" for presets; the extents for index notation.
  std::string shape;
  // The inputs (by param index) that hold constants: a model's weights, which the "mixed"
  // timing evicts from every cache before each run (tune/measure/runner.h).
  std::vector<size_t> constant_params;
};

// Names of the 14 op families in docs/workloads.md order, and their parameter names.
const std::vector<std::string>& op_names();
const std::vector<std::string>& param_names(const std::string& op);
// The four parameter tuples of an op family (index 0..3 = `<OP>-1`..`<OP>-4`).
const std::vector<std::vector<int64_t>>& preset_params(const std::string& op);
// "GMM-1", ..., in table order.
std::vector<std::string> preset_names();

// Builds one op family's PrimFunc for a parameter tuple.
Workload make_workload(const std::string& op, const std::vector<int64_t>& params);
// A preset by name ("GMM-4"); throws InputError for an unknown name.
Workload get_preset(const std::string& name);
// Same op with every dimension shrunk so the interpreter checks it well under a second, keeping
// kernel sizes, strides, padding and group structure.
Workload scaled_down(const Workload& w);
// `formula` in index notation with `extents` such as "i=64,j=64,k=64".
Workload from_index_notation(const std::string& formula, const std::string& extents);
// Either a preset name or, when `extents` is non-empty, an index-notation formula.
Workload resolve(const std::string& name_or_formula, const std::string& extents);

// Inputs filled from a seeded generator in [-1, 1), shaped as the PrimFunc's input params.
std::vector<runtime::NDArray> make_inputs(const ir::PrimFunc& func, uint64_t seed = 42);

}  // namespace tyche::workloads
