#include "tune/explore/dataset.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <thread>

#include "ir/layout_free.h"
#include "ir/structural.h"
#include "support/error.h"
#include "tune/database/record.h"
#include "tune/postproc/candidate.h"
#include "workloads/workloads.h"

namespace tyche::tune {

namespace {

constexpr size_t kMaxWarnings = 20;

// One workload on one target: the context and postprocessors its records replay with.
struct Task {
  TuneContext context;
  std::vector<PostprocPtr> postprocs;
  std::string error;  // why its records cannot be used
};

target::Target target_of(const RecordTarget& t) {
  target::Target target = target::Target::parse(t.kind);
  if (!target.is_gpu()) {
    target.num_cores = t.num_cores;
    target.cpu = t.cpu;
  }
  return target;
}

}  // namespace

Dataset Dataset::pick(const std::vector<size_t>& indices) const {
  Dataset out;
  for (size_t i : indices) {
    out.inputs.push_back(inputs[i]);
    out.seconds.push_back(seconds[i]);
    out.workload_names.push_back(workload_names[i]);
  }
  return out;
}

Dataset Dataset::subset(const std::string& workload, bool others) const {
  std::vector<size_t> idx;
  for (size_t i = 0; i < size(); ++i)
    if ((workload_names[i] == workload) != others) idx.push_back(i);
  return pick(idx);
}

std::vector<std::string> Dataset::workloads() const {
  std::vector<std::string> out;
  for (const std::string& w : workload_names)
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  return out;
}

Dataset load_dataset(const std::vector<std::string>& record_files, int threads) {
  Dataset out;
  auto warn = [&](const std::string& w) {
    ++out.skipped;
    if (out.warnings.size() < kMaxWarnings) out.warnings.push_back(w);
  };
  std::vector<TuningRecord> records;
  for (const std::string& path : record_files) {
    RecordFile f = read_records(path);
    out.skipped += f.skipped;
    for (const std::string& w : f.warnings)
      if (out.warnings.size() < kMaxWarnings) out.warnings.push_back(w);
    for (TuningRecord& r : f.records) records.push_back(std::move(r));
  }
  // One task per (workload, target).
  std::map<std::string, std::unique_ptr<Task>> tasks;
  std::vector<Task*> task_of(records.size(), nullptr);
  for (size_t i = 0; i < records.size(); ++i) {
    const TuningRecord& r = records[i];
    std::string key = fmt::format("{}|{}|{:016x}|{}|{}|{}", r.workload.name, r.workload.extents,
                                  r.workload.hash, r.target.kind, r.target.num_cores, r.target.cpu);
    auto& task = tasks[key];
    if (!task) {
      task = std::make_unique<Task>();
      try {
        workloads::Workload w =
            workloads::resolve(r.workload.name, r.workload.extents, r.workload.dtypes);
        // Records from before a preset named its weights layout-free (bench/data) hash the same
        // computation without that root annotation.
        if (ir::structural_hash(w.func) != r.workload.hash &&
            ir::structural_hash(ir::with_layout_free_params(w.func, {})) != r.workload.hash)
          throw Error(
              fmt::format("workload '{}' is not the one measured (its structural hash differs)",
                          r.workload.name));
        task->context = TuneContext{w.func, target_of(r.target)};
        task->postprocs = default_postprocs(task->context);
      } catch (const Error& e) {
        task->error = e.what();
      }
    }
    task_of[i] = task.get();
  }
  // Replay and extract in parallel.
  std::vector<ModelInput> inputs(records.size());
  std::vector<std::string> errors(records.size());
  int n =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < records.size();) {
      Task& task = *task_of[i];
      if (!task.error.empty()) {
        errors[i] = task.error;
        continue;
      }
      try {
        auto c = make_candidate(task.context, schedule::Trace::from_json(records[i].trace_json), {},
                                task.postprocs, 0);
        if (auto* e = std::get_if<CandidateError>(&c)) {
          errors[i] = fmt::format("the trace no longer replays ({}: {})", e->category, e->message);
          continue;
        }
        inputs[i] = {records[i].workload.hash,
                     per_store_features(std::get<schedule::Schedule>(c).func(),
                                        {.is_gpu = task.context.target.is_gpu()})};
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < records.size(); ++i) {
    if (!errors[i].empty()) {
      warn(fmt::format("record of {} measured {}: skipped: {}", records[i].workload.name,
                       records[i].measured_at, errors[i]));
      continue;
    }
    out.inputs.push_back(std::move(inputs[i]));
    out.seconds.push_back(records[i].ok() ? records[i].typical_seconds()
                                          : std::numeric_limits<double>::quiet_NaN());
    out.workload_names.push_back(records[i].workload.name);
  }
  return out;
}

}  // namespace tyche::tune
