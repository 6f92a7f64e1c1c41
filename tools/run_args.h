// What `tyche run` (on the CPU or a GPU) gives a workload's program and checks it against: its
// inputs, the reference's outputs, arrays for the program's outputs, and a pointer per parameter.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "workloads/workloads.h"

namespace tyche::tools {

inline constexpr int kExitMismatch = 1;

inline std::vector<std::string> output_names(const ir::PrimFunc& f) {
  std::vector<std::string> names;
  for (const ir::Buffer& b : f.outputs()) names.push_back(b->name);
  return names;
}

struct RunArgs {
  std::vector<runtime::NDArray> inputs, expected;
  std::vector<runtime::NDArray> args;  // inputs, then arrays for the outputs
  std::vector<void*> ptrs;             // args' data
  std::span<const runtime::NDArray> outputs() const {
    return std::span(args).subspan(inputs.size());
  }
};

inline RunArgs make_run_args(const workloads::Workload& w) {
  RunArgs r;
  r.inputs = workloads::make_inputs(w.func);
  r.expected = w.reference(r.inputs);
  r.args = r.inputs;
  for (const auto& e : r.expected) r.args.push_back(runtime::NDArray(e.shape(), e.dtype()));
  for (auto& a : r.args) r.ptrs.push_back(a.data());
  return r;
}

}  // namespace tyche::tools
