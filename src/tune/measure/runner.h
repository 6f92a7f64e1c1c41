// The Runner times compiled candidates in a separate worker process (the tyche-worker program),
// so a kernel that crashes (an out-of-bounds store, an illegal instruction) or hangs is that
// candidate's failure: the worker is killed or reaped, restarted for the next candidate, and the
// tuner goes on. On request the worker writes the outputs back and the runner compares them with
// the reference.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "ir/function.h"
#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"
#include "tune/trial/timing.h"

namespace tyche::tune {

struct RunnerOptions {
  std::string worker_path = {};               // the tyche-worker executable
  double timeout_s = 10;                      // per candidate, loading and all timed runs included
  runtime::TimeOptions time = warm_timing();  // or another preset of tune/trial/timing.h
  int threads = 0;                            // threads for parallel loops in the worker (0: all)
};

struct ParamSpec {
  std::vector<int64_t> shape;
  DataType dtype;
};

// A layout rewrite's preproc the worker runs on a weight before the kernel (BuiltPreproc).
struct RunPreproc {
  size_t param = 0;
  std::string object_path;
  std::string name;
  std::vector<int64_t> shape;  // its output's
};

struct RunInput {
  std::string object_path;  // from the Builder (BuilderOptions::object_dir)
  std::string name;         // the function's name
  // Run on the filled inputs first, each output taking its weight's place (untimed, as the
  // weights of a model are laid out once at load). `params` keep the weights' own shapes.
  std::vector<RunPreproc> preprocs;
  std::vector<ParamSpec> params;
  size_t num_inputs = 0;  // the first num_inputs params are inputs, filled as make_inputs does
  uint64_t seed = 42;
  // Non-empty: the expected outputs (of the inputs `seed` makes), compared after one run.
  std::vector<runtime::NDArray> expected;
  // > 0: when the first (checking) run lasts at least this long, the candidate runs once more
  // and, if that run does too, it is the only measurement. A candidate many times slower than
  // the best one teaches the model as much from one run as from several, and the tuner need not
  // wait for its repeats; the first run is not that measure, as it pays one-time costs (page
  // faults of fresh intermediates) that can be several times a fast kernel's run.
  double single_run_after_s = 0;
  double timeout_s = 0;  // > 0: this candidate's timeout, below RunnerOptions::timeout_s
  std::vector<size_t> constant_params;  // evicted from every cache by the mixed timing
};

// The request for running `func` compiled into `object_path` under `name`: its parameters'
// shapes and types, inputs filled as make_inputs does (seed 42), outputs checked against
// `expected` when it is not empty.
RunInput run_input_for(const std::string& object_path, const std::string& name,
                       const ir::PrimFunc& func, std::vector<runtime::NDArray> expected = {});

struct RunResult {
  std::string error;  // empty on success: a crash, a hang, a load failure
  runtime::TimeResult time;
  bool checked = false;
  bool correct = false;
  std::string mismatch;  // why the outputs differ
  bool ok() const { return error.empty(); }
};

class Runner {
 public:
  explicit Runner(RunnerOptions options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  RunResult run(const RunInput& input);
  std::vector<RunResult> run(const std::vector<RunInput>& inputs);
  // How many times the worker had to be (re)started.
  int worker_starts() const { return starts_; }

 private:
  void start_worker();
  void stop_worker(bool kill);
  // The worker's exit, as a sentence ("crashed with signal 11 (Segmentation fault)").
  std::string reap_worker();

  RunnerOptions options_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  std::string pending_;  // bytes read past the last response line
  int starts_ = 0;
  int runs_ = 0;
};

// The worker's side: serves requests (one JSON line each) from `in_fd`, answers on `out_fd`.
int serve_worker(int in_fd, int out_fd);

}  // namespace tyche::tune
