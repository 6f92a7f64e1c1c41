#include "workloads/workloads.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ir/buffer.h"
#include "te/index_notation.h"
#include "workloads/index_notation_reference.h"

namespace tyche::workloads {

namespace {

int64_t cap(int64_t v, int64_t limit) { return std::min(v, limit); }

// Channels of grouped convolutions must stay divisible by the group count.
int64_t cap_multiple(int64_t v, int64_t limit, int64_t multiple) {
  int64_t c = std::min(v, limit);
  return std::max(multiple, c / multiple * multiple);
}

// A spatial extent small enough to be cheap but large enough that the (dilated) kernel still
// fits the padded input with at least two output positions.
int64_t cap_spatial(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation, int64_t limit) {
  int64_t needed = dilation * (k - 1) + 1 - 2 * pad + stride;
  return std::min(in, std::max(limit, needed));
}

}  // namespace

Workload scaled_down(const Workload& w) {
  if (w.op == "index_notation") return w;
  std::vector<int64_t> p = w.params;
  const std::string& op = w.op;
  if (op == "GMM") {
    p = {p[0], cap(p[1], 32), cap(p[2], 32), cap(p[3], 32)};
  } else if (op == "C1D") {  // N, L, CI, CO, K, stride, pad
    p[1] = cap_spatial(p[1], p[4], p[5], p[6], 1, 24), p[2] = cap(p[2], 16), p[3] = cap(p[3], 16);
  } else if (op == "C2D" || op == "DIL" || op == "CBR" || op == "GRP" || op == "CAP" || op == "T2D") {
    // N, H, W, CI, CO, K, stride, pad
    int64_t dil = op == "DIL" ? 2 : 1;
    int64_t limit = op == "CAP" || op == "T2D" ? 6 : 12;
    if (op == "T2D") p[1] = cap(p[1], 4), p[2] = cap(p[2], 4);
    else p[1] = cap_spatial(p[1], p[5], p[6], p[7], dil, limit), p[2] = cap_spatial(p[2], p[5], p[6], p[7], dil, limit);
    int64_t groups = op == "GRP" ? 4 : 1;
    int64_t ch = op == "CAP" ? 4 : 8;
    p[3] = cap_multiple(p[3], ch, groups), p[4] = cap_multiple(p[4], ch, groups);
  } else if (op == "C3D") {  // N, D, H, W, CI, CO, K, stride, pad
    for (int d = 1; d <= 3; ++d) p[d] = cap_spatial(p[d], p[6], p[7], p[8], 1, 6);
    p[4] = cap(p[4], 4), p[5] = cap(p[5], 4);
  } else if (op == "DEP") {  // N, H, W, C, K, stride, pad
    p[1] = cap_spatial(p[1], p[4], p[5], p[6], 1, 12), p[2] = cap_spatial(p[2], p[4], p[5], p[6], 1, 12);
    p[3] = cap(p[3], 16);
  } else if (op == "NRM") {
    p = {p[0], cap(p[1], 64), cap(p[2], 64)};
  } else if (op == "SFM") {
    p = {cap(p[0], 32), cap(p[1], 64)};
  } else if (op == "TBG") {  // B, L, H, D
    p = {p[0], cap(p[1], 16), cap(p[2], 2), cap(p[3], 16)};
  } else if (op == "DENSE_RELU") {
    p = {cap(p[0], 32), cap(p[1], 32), cap(p[2], 32)};
  }
  Workload s = make_workload(w.op, p);
  s.name = w.name + " (scaled down)";
  return s;
}

Workload from_index_notation(const std::string& formula, const std::string& extents) {
  auto program = std::make_shared<te::IndexNotationProgram>(te::parse_index_notation(formula, extents));
  Workload w;
  w.name = formula;
  w.op = "index_notation";
  w.shape = extents;
  w.func = te::to_prim_func(*program, "main");
  w.flop = index_notation_flop(*program);
  w.reference = [program](const std::vector<runtime::NDArray>& inputs) {
    return evaluate_index_notation(*program, inputs);
  };
  return w;
}

Workload resolve(const std::string& name_or_formula, const std::string& extents) {
  bool looks_like_formula = name_or_formula.find_first_of("[=") != std::string::npos;
  if (looks_like_formula) {
    if (extents.empty()) throw InputError("an index-notation workload needs --extents, e.g. i=64,j=64,k=64");
    return from_index_notation(name_or_formula, extents);
  }
  if (!extents.empty()) throw InputError(fmt::format("--extents is only for index-notation formulas, not '{}'", name_or_formula));
  std::string upper = name_or_formula;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  Workload w = get_preset(upper);
  return w;
}

std::vector<runtime::NDArray> make_inputs(const ir::PrimFunc& func, uint64_t seed) {
  std::vector<runtime::NDArray> inputs;
  for (const ir::Buffer& b : func.inputs()) {
    runtime::NDArray a(ir::const_shape(b), b->dtype);
    a.fill_uniform(seed++);
    inputs.push_back(std::move(a));
  }
  return inputs;
}

}  // namespace tyche::workloads
