#include "tune/search/records.h"

#include "codegen/cpu.h"
#include "ir/structural.h"
#include "runtime/host_info.h"
#include "support/error.h"
#include "tune/postproc/candidate.h"

namespace tyche::tune {

std::unordered_set<uint64_t> measured_programs(const std::vector<const TuningRecord*>& records, const TuneContext& context,
                                               const std::vector<PostprocPtr>& postprocs) {
  std::unordered_set<uint64_t> out;
  for (const TuningRecord* r : records) {
    if (r->program) {
      out.insert(r->program);
      continue;
    }
    try {
      auto c = make_candidate(context, schedule::Trace::from_json(r->trace_json), {}, postprocs, 0);
      if (auto* sch = std::get_if<schedule::Schedule>(&c)) out.insert(ir::structural_hash(sch->func()));
    } catch (const Error&) {
      // a trace of another version of the rules: not a program this run can produce again
    }
  }
  return out;
}

RecordTarget record_target(const Target& target) {
  if (target.is_gpu()) return RecordTarget{"cuda", 1, "", "", "", ""};
  const codegen::Cpu& cpu = codegen::resolve_cpu(target.cpu);
  return RecordTarget{"llvm", target.num_cores, cpu.name, cpu.llvm_cpu, runtime::cpu_model_name(), cpu.feature_string};
}

}  // namespace tyche::tune
