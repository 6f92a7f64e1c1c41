#include "tune/explore/sample_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "interp/interpreter.h"
#include "runtime/compare.h"
#include "support/error.h"
#include "tune/measure/builder.h"
#include "tune/postproc/candidate.h"

namespace tyche::tune {

namespace {
constexpr size_t kMaxFailures = 5;
}  // namespace

std::string check_outputs(const ir::PrimFunc& func, const std::vector<runtime::NDArray>& inputs,
                          const std::vector<runtime::NDArray>& expected, bool compile,
                          const std::string& cpu) {
  std::vector<runtime::NDArray> actual;
  if (compile) {
    BuildResult built = Builder(BuilderOptions{.cpu = cpu}).build({func})[0];
    if (!built.ok()) throw Error(built.error);
    std::vector<runtime::NDArray> args = inputs;
    for (const auto& e : expected) args.push_back(runtime::NDArray(e.shape(), e.dtype()));
    run_built(built, args);  // NDArrays share their storage: the outputs land in args
    actual.assign(args.begin() + static_cast<std::ptrdiff_t>(inputs.size()), args.end());
  } else {
    actual = interp::run_on_inputs(func, inputs);
  }
  return runtime::compare_outputs(actual, expected).message;
}

SampleSpaceReport sample_space(const workloads::Workload& w, const target::Target& target,
                               const SampleSpaceOptions& options, SpaceGeneratorPtr generator,
                               std::vector<PostprocPtr> postprocs) {
  TuneContext context{w.func, target};
  if (!generator) generator = post_order_apply(default_rules(target));
  if (postprocs.empty())
    postprocs = default_postprocs(context);
  else
    for (const PostprocPtr& p : postprocs) p->initialize(context);
  std::vector<schedule::Schedule> designs = generator->generate(context, options.seed);
  SampleSpaceReport report;
  std::vector<schedule::Trace> traces;
  for (const schedule::Schedule& d : designs) {
    traces.push_back(d.trace()->simplified());
    report.spaces.push_back(traces.back().to_text());
  }
  if (traces.empty() || options.samples <= 0) return report;

  std::vector<runtime::NDArray> inputs, expected;
  if (options.check) {
    inputs = workloads::make_inputs(w.func);
    expected = w.reference(inputs);
  }
  RandomEngine rng(options.seed);
  std::vector<double> seconds;
  for (int i = 0; i < options.samples; ++i) {
    auto start = std::chrono::steady_clock::now();
    const schedule::Trace& trace =
        traces[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(traces.size())))];
    auto candidate =
        make_candidate(context, trace, {.fresh_decisions = true}, postprocs, rng.fork().seed());
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    ++report.samples;
    if (const CandidateError* err = std::get_if<CandidateError>(&candidate)) {
      ++report.invalid_reasons[err->reason()];
      if (report.failures.size() < kMaxFailures)
        report.failures.push_back(fmt::format("invalid: {}: {}", err->reason(), err->message));
      continue;
    }
    ++report.valid;
    const schedule::Schedule& sch = std::get<schedule::Schedule>(candidate);
    std::set<std::string> intrinsics;
    for (const schedule::Instruction& inst : sch.trace()->instructions())
      if (inst.is(schedule::kind_tensorize())) intrinsics.insert(inst.arg("tensor_intrin").s);
    for (const std::string& name : intrinsics) ++report.intrinsics[name];
    if (options.compiler) {
      std::string why;
      try {
        why = options.compiler(sch.func());
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (why.empty())
        ++report.compiled;
      else if (report.failures.size() < kMaxFailures)
        report.failures.push_back(fmt::format("not compiled: {}\n{}", why, sch.trace()->to_text()));
    }
    if (!options.check) continue;
    std::string why;
    try {
      why = options.checker
                ? options.checker(sch.func(), inputs, expected)
                : check_outputs(sch.func(), inputs, expected, options.compile, target.cpu);
    } catch (const std::exception& e) {
      why = e.what();
    }
    ++report.checked;
    if (why.empty()) {
      ++report.correct;
    } else if (report.failures.size() < kMaxFailures) {
      report.failures.push_back(fmt::format("wrong result: {}\n{}", why, sch.trace()->to_text()));
    }
  }
  std::sort(seconds.begin(), seconds.end());
  report.median_candidate_seconds = seconds[seconds.size() / 2];
  return report;
}

}  // namespace tyche::tune
