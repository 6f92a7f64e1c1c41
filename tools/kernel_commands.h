// The workload commands of `tyche`: workloads, show, check, run, space, cpu, features, export.
// Each takes a preset or an index-notation formula, scheduled by a trace or a database's best
// record, and shows, checks, compiles and times, samples or exports its program.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "ir/function.h"
#include "workloads/workloads.h"

namespace tyche::tools {

class KernelCommands {
 public:
  explicit KernelCommands(CLI::App& app);
  // Whether the command given is one of these.
  bool parsed() const;
  int run();

 private:
  int cmd_workloads();
  int cmd_show();
  int cmd_check();
  int cmd_cpu();
  int cmd_features();
  // kernel_codegen.cc: the commands that generate code.
  int cmd_run();
  int cmd_space();
  int cmd_export();

  // The workload, scaled down on request, with the trace file (text or JSON) applied and, with
  // --postprocess, the postprocessors. Sampling instructions without a recorded decision draw
  // from --seed.
  workloads::Workload load() const;
  // The best program of `w` that the database at --db measured for this target: the GPU target
  // of --target (run) or export's --target, else llvm on this host's cores and --cpu.
  ir::PrimFunc best_in_database(const workloads::Workload& w) const;
  // The program after the target's postprocessors, as tuning finishes every candidate.
  ir::PrimFunc postprocessed(const ir::PrimFunc& func) const;

  CLI::App* workloads_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* check_ = nullptr;
  CLI::App* run_ = nullptr;
  CLI::App* space_ = nullptr;
  CLI::App* cpu_cmd_ = nullptr;
  CLI::App* features_ = nullptr;
  CLI::App* export_ = nullptr;
  std::string workload_, extents_, dtypes_, trace_file_, db_;
  bool scale_down_ = false;
  bool postprocess_ = false;  // show, check, run, features, export
  int64_t seed_ = 0;
  std::string cpu_;  // run, space, cpu, export: the CPU code is generated for ("" = default)
  std::string target_ = "llvm";
  std::string json_file_;
  int threads_ = 0;
  // run
  std::string emit_;
  bool dump_ir_ = false;
  int repeat_ = 10;
  // space
  int samples_ = 100;
  bool compile_ = false;
  // export
  std::string export_name_, library_, output_, export_target_ = "llvm";
};

}  // namespace tyche::tools
