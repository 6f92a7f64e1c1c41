#include "tune/trial/trial.h"

#include "ir/structural.h"
#include "support/median.h"
#include "target/host.h"
#include "tune/trial/timing.h"

namespace tyche::tune {

Trial Trial::of(schedule::Trace trace, ir::PrimFunc program, bool is_gpu) {
  Trial t;
  t.trace = std::move(trace);
  t.program_hash = ir::structural_hash(program);
  t.lowered = std::make_shared<LoweredProgram>(std::move(program), is_gpu);
  return t;
}

double Trial::typical_seconds() const {
  if (!ok()) return std::numeric_limits<double>::infinity();
  return median(seconds);
}

TuningRecord Trial::record(const RecordWorkload& workload, const RecordTarget& target,
                           bool confirmed) const {
  return TuningRecord{
      workload, trace.to_json(), target,   program_hash, ok() ? seconds : std::vector<double>{},
      error,    utc_now(),       confirmed};
}

RecordTarget record_target(const target::Target& target) {
  // A GPU's records: its kind, CUDA's architecture, and the limits the programs were checked
  // against (they shape the space), in the target's text.
  if (target.is_gpu())
    return RecordTarget{target.kind,  1, target.kind == "cuda" ? target.cuda_arch() : "", "", "",
                        target.str(), ""};
  const target::Cpu& cpu = target.cpu_info();
  return RecordTarget{"llvm",
                      target.num_cores,
                      cpu.name,
                      cpu.llvm_cpu,
                      target::cpu_model_name(),
                      cpu.feature_string,
                      ""};
}

RecordTarget record_target(const target::Target& target, const runtime::TimeOptions& time) {
  RecordTarget t = record_target(target);
  t.timing = timing_name(time);
  return t;
}

}  // namespace tyche::tune
