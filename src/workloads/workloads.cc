#include "workloads/workloads.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ir/buffer.h"
#include "te/index_notation.h"
#include "workloads/families.h"
#include "workloads/index_notation_reference.h"

namespace tyche::workloads {

Workload scaled_down(const Workload& w) {
  if (w.op == "index_notation") return w;
  const Family* f = find_family(w.op);
  if (!f) throw InputError(fmt::format("unknown operator '{}'", w.op));
  std::vector<int64_t> p = f->scale_down(*f, w.params);
  Workload s = make_workload(w.op, p, w.precision);
  s.name = w.name + " (scaled down)";
  return s;
}

Workload from_index_notation(const std::string& formula, const std::string& extents,
                             const std::string& dtypes) {
  auto program = std::make_shared<te::IndexNotationProgram>(
      te::parse_index_notation(formula, extents, dtypes));
  Workload w;
  w.name = formula;
  w.op = "index_notation";
  w.shape = extents;
  w.dtypes = te::dtypes_string(*program);
  w.func = te::to_prim_func(*program, "main");
  w.flop = index_notation_flop(*program);
  w.reference = [program](const std::vector<runtime::NDArray>& inputs) {
    return evaluate_index_notation(*program, inputs);
  };
  return w;
}

Workload resolve(const std::string& name_or_formula, const std::string& extents,
                 const std::string& dtypes) {
  bool looks_like_formula = name_or_formula.find_first_of("[=") != std::string::npos;
  if (looks_like_formula) {
    if (extents.empty())
      throw InputError("an index-notation workload needs --extents, e.g. i=64,j=64,k=64");
    return from_index_notation(name_or_formula, extents, dtypes);
  }
  if (!extents.empty())
    throw InputError(
        fmt::format("--extents is only for index-notation formulas, not '{}'", name_or_formula));
  if (!dtypes.empty())
    throw InputError(
        fmt::format("--dtypes is only for index-notation formulas; a preset names its types (e.g. "
                    "GMM-4-U8S8), not '{}'",
                    name_or_formula));
  std::string upper = name_or_formula;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  Workload w = get_preset(upper);
  return w;
}

std::vector<runtime::NDArray> make_inputs(const ir::PrimFunc& func, uint64_t seed) {
  std::vector<runtime::NDArray> inputs;
  for (const ir::Buffer& b : func.inputs()) {
    runtime::NDArray a(ir::const_shape(b), b->dtype);
    a.fill_random(seed++);
    inputs.push_back(std::move(a));
  }
  return inputs;
}

}  // namespace tyche::workloads
