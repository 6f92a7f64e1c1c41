// The measuring worker: loads each candidate's object file, fills its inputs as
// workloads::make_inputs does, runs it once (writing the outputs back when asked), then times it.
// Anything it survives is reported as {"ok": false, "error"}; what it does not survive (a crash,
// a hang) the Runner sees from outside.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/llvm_codegen.h"
#include "runtime/time_evaluator.h"
#include "tune/measure/runner.h"

namespace tyche::tune {

namespace {

using json = nlohmann::json;

json handle(const json& req) {
  auto kernel = codegen::load_object(req.at("object").get<std::string>(), req.at("name").get<std::string>());
  std::vector<runtime::NDArray> args;
  uint64_t seed = req.value("seed", uint64_t{42});
  size_t num_inputs = req.value("num_inputs", size_t{0});
  for (const json& p : req.at("params")) {
    runtime::NDArray a(p.at("shape").get<std::vector<int64_t>>(), DataType::parse(p.at("dtype").get<std::string>()));
    if (args.size() < num_inputs) a.fill_random(seed++);
    args.push_back(std::move(a));
  }
  if (req.contains("preprocs")) {
    for (const json& p : req.at("preprocs")) {
      size_t param = p.at("param").get<size_t>();
      if (param >= num_inputs) throw Error(fmt::format("preproc of param {}, which is not an input", param));
      auto pack = codegen::load_object(p.at("object").get<std::string>(), p.at("name").get<std::string>());
      runtime::NDArray packed(p.at("shape").get<std::vector<int64_t>>(), args[param].dtype());  // laid out anew, padded perhaps
      void* pack_args[] = {args[param].data(), packed.data()};
      pack->run(pack_args);
      args[param] = std::move(packed);
    }
  }
  std::vector<void*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  auto timed_run = [&] {
    auto t0 = std::chrono::steady_clock::now();
    kernel->run(ptrs.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double first_s = timed_run();
  std::string outputs_file = req.value("outputs_file", std::string());
  if (!outputs_file.empty()) {
    std::ofstream out(outputs_file, std::ios::binary);
    for (size_t i = num_inputs; i < args.size(); ++i)
      out.write(static_cast<const char*>(args[i].data()), static_cast<std::streamsize>(args[i].nbytes()));
    if (!out) throw Error(fmt::format("cannot write '{}'", outputs_file));
  }
  // A slow candidate is timed by one run alone. Not by the first: that one also pays for what
  // happens once (page faults of fresh intermediates, code and data first touched), several
  // times a fast kernel's run, which would rank a kernel by its start-up. The second decides.
  double single_run_after_s = req.value("single_run_after_s", 0.0);
  if (single_run_after_s > 0 && first_s >= single_run_after_s) {
    double second_s = timed_run();
    if (second_s >= single_run_after_s)
      return {{"ok", true}, {"seconds", {second_s}}, {"number", 1}, {"median", second_s}, {"min", second_s}, {"mean", second_s}, {"cv", 0.0}};
  }
  runtime::TimeOptions t;
  t.warmup = req.value("warmup", 1);
  t.number = req.value("number", 1);
  t.repeat = req.value("repeat", 5);
  t.min_repeat_ms = req.value("min_repeat_ms", 0);
  t.flush_cache = req.value("flush_cache", false);
  t.keep_in_llc = req.value("keep_in_llc", false);
  if (!t.keep_in_llc) {
    for (const auto& a : args) t.flush_ranges.emplace_back(a.data(), a.nbytes());  // each repeat starts with cold arguments
  } else {
    for (size_t i : req.value("constant_params", std::vector<size_t>{}))  // the weights from memory, the rest from the LLC
      if (i < args.size()) t.flush_ranges.emplace_back(args[i].data(), args[i].nbytes());
  }
  runtime::TimeResult r = runtime::time_function([&] { kernel->run(ptrs.data()); }, t);
  return {{"ok", true}, {"seconds", r.seconds}, {"number", r.number}, {"median", r.median},
          {"min", r.min},  {"mean", r.mean},       {"cv", r.cv}};
}

}  // namespace

int serve_worker(int in_fd, int out_fd) {
  FILE* in = ::fdopen(in_fd, "r");
  FILE* out = ::fdopen(out_fd, "w");
  if (!in || !out) return 2;
  char* buf = nullptr;
  size_t cap = 0;
  while (::getline(&buf, &cap, in) > 0) {
    json response;
    try {
      response = handle(json::parse(buf));
    } catch (const std::exception& e) {
      response = {{"ok", false}, {"error", e.what()}};
    }
    std::string line = response.dump() + "\n";
    std::fputs(line.c_str(), out);
    std::fflush(out);
  }
  std::free(buf);
  return 0;
}

}  // namespace tyche::tune
