#include "tune/measure/runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/compare.h"
#include "support/error.h"

namespace tyche::tune {

namespace {

using json = nlohmann::json;

bool write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Runner::Runner(RunnerOptions options) : options_(std::move(options)) {
  ::signal(SIGPIPE, SIG_IGN);  // a dead worker must not kill the tuner through a write
  if (options_.worker_path.empty() || !std::filesystem::exists(options_.worker_path))
    throw Error(fmt::format("runner: worker program '{}' not found", options_.worker_path));
}

Runner::~Runner() {
  stop_worker(true);
}

void Runner::start_worker() {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw Error("runner: cannot create pipes");
  pid_t pid = ::fork();
  if (pid < 0) throw Error("runner: cannot fork the worker");
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    std::string threads = std::to_string(options_.threads);
    if (options_.threads > 0) ::setenv("TYCHE_NUM_THREADS", threads.c_str(), 1);
    ::execl(options_.worker_path.c_str(), options_.worker_path.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  pid_ = pid;
  to_worker_ = in_pipe[1];
  from_worker_ = out_pipe[0];
  pending_.clear();
  ++starts_;
}

void Runner::stop_worker(bool kill) {
  if (pid_ < 0) return;
  if (to_worker_ >= 0) ::close(to_worker_);
  if (kill) ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  if (from_worker_ >= 0) ::close(from_worker_);
  pid_ = -1;
  to_worker_ = from_worker_ = -1;
}

std::string Runner::reap_worker() {
  int status = 0;
  ::close(to_worker_);
  ::waitpid(pid_, &status, 0);
  ::close(from_worker_);
  pid_ = -1;
  to_worker_ = from_worker_ = -1;
  if (WIFSIGNALED(status))
    return fmt::format("the kernel crashed the worker: signal {} ({})", WTERMSIG(status),
                       ::strsignal(WTERMSIG(status)));
  // (Under a sanitizer the worker reports the fault and exits instead of dying by the signal.)
  if (WIFEXITED(status))
    return fmt::format("the kernel crashed the worker: it exited with code {}",
                       WEXITSTATUS(status));
  return "the worker stopped";
}

RunInput run_input_for(const std::string& object_path, const std::string& name,
                       const ir::PrimFunc& func, std::vector<runtime::NDArray> expected) {
  RunInput in;
  in.object_path = object_path;
  in.name = name;
  for (const ir::Buffer& p : func->params) in.params.push_back({ir::const_shape(p), p->dtype});
  in.num_inputs = func->params.size() - static_cast<size_t>(func->num_outputs);
  in.seed = 42;
  in.expected = std::move(expected);
  return in;
}

RunResult Runner::run(const RunInput& input) {
  RunResult result;
  if (pid_ < 0) start_worker();
  std::string outputs_file;
  if (!input.expected.empty())
    outputs_file = (std::filesystem::temp_directory_path() /
                    fmt::format("tyche_run_{}_{}.bin", ::getpid(), runs_++))
                       .string();
  json params = json::array();
  for (const ParamSpec& p : input.params)
    params.push_back({{"shape", p.shape}, {"dtype", p.dtype.str()}});
  const runtime::TimeOptions& t = options_.time;
  json request = {
      {"object", input.object_path},
      {"name", input.name},
      {"params", params},
      {"num_inputs", input.num_inputs},
      {"seed", input.seed},
      {"outputs_file", outputs_file},
      {"warmup", t.warmup},
      {"number", t.number},
      {"repeat", t.repeat},
      {"min_repeat_ms", t.min_repeat_ms},
      {"flush_cache", t.flush_cache},
      {"keep_in_llc", t.keep_in_llc},
      {"constant_params", t.flush_constants ? input.constant_params : std::vector<size_t>{}},
      {"single_run_after_s", input.single_run_after_s}};
  if (!input.preprocs.empty()) {
    json preprocs = json::array();
    for (const RunPreproc& p : input.preprocs)
      preprocs.push_back(
          {{"param", p.param}, {"object", p.object_path}, {"name", p.name}, {"shape", p.shape}});
    request["preprocs"] = preprocs;
  }
  if (!write_all(to_worker_, request.dump() + "\n")) {
    result.error = reap_worker();
    return result;
  }
  // Wait for one response line, up to the timeout.
  double timeout_s =
      input.timeout_s > 0 ? std::min(input.timeout_s, options_.timeout_s) : options_.timeout_s;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string line;
  while (true) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      stop_worker(true);
      result.error = fmt::format("timed out after {:.3g} s (the worker was killed)", timeout_s);
      std::remove(outputs_file.c_str());
      return result;
    }
    pollfd pfd{from_worker_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(from_worker_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result.error = reap_worker();
      std::remove(outputs_file.c_str());
      return result;
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
  json response = json::parse(line, nullptr, false);
  if (response.is_discarded() || !response.is_object()) {
    stop_worker(true);
    result.error = "the worker answered something that is not JSON";
    return result;
  }
  if (!response.value("ok", false)) {
    result.error = response.value("error", std::string("the worker failed"));
    std::remove(outputs_file.c_str());
    return result;
  }
  result.time.seconds = response["seconds"].get<std::vector<double>>();
  result.time.number = response.value("number", 1);
  result.time.median = response.value("median", 0.0);
  result.time.min = response.value("min", 0.0);
  result.time.mean = response.value("mean", 0.0);
  result.time.cv = response.value("cv", 0.0);
  if (!outputs_file.empty()) {
    result.checked = true;
    std::ifstream in(outputs_file, std::ios::binary);
    std::vector<runtime::NDArray> got;
    bool complete = true;
    for (const runtime::NDArray& want : input.expected) {
      got.emplace_back(want.shape(), want.dtype());
      complete = complete && in.read(static_cast<char*>(got.back().data()),
                                     static_cast<std::streamsize>(got.back().nbytes()));
    }
    in.close();
    runtime::OutputsComparison c = runtime::compare_outputs(got, input.expected);
    result.correct = complete && c.ok;
    result.mismatch = complete ? c.message : "the worker wrote fewer outputs than expected";
    std::remove(outputs_file.c_str());
  }
  return result;
}

std::vector<RunResult> Runner::run(const std::vector<RunInput>& inputs) {
  std::vector<RunResult> out;
  for (const RunInput& in : inputs) out.push_back(run(in));
  return out;
}

}  // namespace tyche::tune
