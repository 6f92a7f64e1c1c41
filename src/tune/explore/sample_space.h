// Explores a workload's design space the way search will: generate the spaces, sample programs
// by replaying a space's trace with fresh decisions, finish them with the postprocessors, and
// check each valid one against the reference (interpreter, or LLVM-compiled).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tune/postproc/postproc.h"
#include "tune/space/space_generator.h"
#include "workloads/workloads.h"

namespace tyche::tune {

struct SampleSpaceOptions {
  int samples = 100;
  int64_t seed = 0;
  bool compile = false;  // check with LLVM-compiled code instead of the interpreter
  bool check = true;     // compare valid samples with the reference
  // When set, checks each valid sample instead of the interpreter or LLVM (a GPU back end the
  // caller reaches: tools/ and tests/ may, the tuner's layers may not): "" when its outputs match,
  // else why not; it may throw.
  std::function<std::string(const ir::PrimFunc& func, const std::vector<runtime::NDArray>& inputs,
                            const std::vector<runtime::NDArray>& expected)>
      checker = nullptr;
  // When set, compiles each valid sample (a GPU target's code, say): "" when it compiled within
  // the target's limits, else why not; it may throw. Counted in SampleSpaceReport::compiled.
  std::function<std::string(const ir::PrimFunc& func)> compiler = nullptr;
};

struct SampleSpaceReport {
  std::vector<std::string> spaces;  // each design space's trace, text form
  int samples = 0, valid = 0, checked = 0, correct = 0;
  int compiled = 0;  // valid samples the compiler hook accepted
  std::map<std::string, int>
      intrinsics;  // tensor intrinsic -> valid samples that tensorize with it
  std::map<std::string, int> invalid_reasons;  // CandidateError::reason() -> count
  std::vector<std::string> failures;           // first few messages (invalid or wrong samples)
  double median_candidate_seconds = 0;         // sample + replay + postprocess, per candidate
};

// Runs `func` on `inputs` (interpreted, or lowered and LLVM-compiled for `cpu`, "" the default)
// and compares its outputs with `expected`: empty if they match, else why not. Compile and run
// errors throw.
std::string check_outputs(const ir::PrimFunc& func, const std::vector<runtime::NDArray>& inputs,
                          const std::vector<runtime::NDArray>& expected, bool compile,
                          const std::string& cpu = {});

// Uses the target's default rules (compiled checks generate code for target.cpu) and postprocessors
// unless given.
SampleSpaceReport sample_space(const workloads::Workload& w, const target::Target& target,
                               const SampleSpaceOptions& options,
                               SpaceGeneratorPtr generator = nullptr,
                               std::vector<PostprocPtr> postprocs = {});

}  // namespace tyche::tune
