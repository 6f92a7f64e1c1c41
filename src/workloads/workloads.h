// The preset operator suite of docs/workloads.md (`GMM-1` ... `DENSE_RELU-4`) and workloads written
// in index notation: each is an unscheduled PrimFunc plus a reference that does not use the IR.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/function.h"
#include "runtime/ndarray.h"

namespace tyche::workloads {

using ReferenceFn =
    std::function<std::vector<runtime::NDArray>(const std::vector<runtime::NDArray>&)>;

struct Workload {
  std::string name;             // "GMM-4", or the formula for index notation
  std::string op;               // "GMM", ..., or "index_notation"
  std::vector<int64_t> params;  // the op's parameter tuple (empty for index notation)
  std::string
      precision;  // a preset's typed variant: "" (float32), "U8S8", "BF16" or "F16" (families.h)
  ir::PrimFunc func;  // unscheduled
  double flop = 0;
  ReferenceFn reference;  // computes the outputs from the inputs without the IR
  // "B=1,N=1024,M=1024,K=1024" for presets; the extents for index notation.
  std::string shape;
  // Index notation: the tensors' element types that are not float32 ("A=uint8,B=int8,C=int32",
  // te::dtypes_string), what rebuilds it with the formula and extents. Empty for presets, whose
  // names carry their types (GMM-4-U8S8).
  std::string dtypes;
  // The inputs (by param index) that hold constants: a model's weights, which the "mixed"
  // timing evicts from every cache before each run (tune/trial/timing.h).
  std::vector<size_t> constant_params;
};

// Names of the 14 op families in docs/workloads.md order, and their parameter names.
const std::vector<std::string>& op_names();
const std::vector<std::string>& param_names(const std::string& op);
// The four parameter tuples of an op family (index 0..3 = `<OP>-1`..`<OP>-4`).
const std::vector<std::vector<int64_t>>& preset_params(const std::string& op);
// "GMM-1", ..., in table order.
std::vector<std::string> preset_names();

// Builds one op family's PrimFunc for a parameter tuple, in a precision ("", "U8S8", "BF16", "F16";
// only GMM, C2D and DENSE_RELU have typed variants).
Workload make_workload(const std::string& op, const std::vector<int64_t>& params,
                       const std::string& precision = "");
// A preset by name: "GMM-4", or "DENSE-BERT" (DENSE_RELU 128x3072x768), optionally with a
// precision suffix ("GMM-4-U8S8", "DENSE-BERT-BF16"); throws InputError for an unknown name.
Workload get_preset(const std::string& name);
// The typed presets, as patterns: "GMM-{1..4}-U8S8", ..., "DENSE-BERT-BF16".
std::vector<std::string> typed_preset_names();
// Same op with every dimension shrunk so the interpreter checks it well under a second, keeping
// kernel sizes, strides, padding and group structure.
Workload scaled_down(const Workload& w);
// `formula` in index notation with `extents` such as "i=64,j=64,k=64" and element types such as
// "A=uint8,B=int8,C=int32" (empty: float32).
Workload from_index_notation(const std::string& formula, const std::string& extents,
                             const std::string& dtypes = "");
// Either a preset name or, when `extents` is non-empty, an index-notation formula (with `dtypes`,
// which a preset refuses).
Workload resolve(const std::string& name_or_formula, const std::string& extents,
                 const std::string& dtypes = "");

// Inputs shaped and typed as the PrimFunc's input params, filled by NDArray::fill_random from
// seed, seed + 1, ...
std::vector<runtime::NDArray> make_inputs(const ir::PrimFunc& func, uint64_t seed = 42);

}  // namespace tyche::workloads
