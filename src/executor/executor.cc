#include "executor/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "graph/default_schedule.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace tyche::executor {

CallWeights rewrite_call_weights(const Graph& graph, const TaskTable& table,
                                 const ExecutionPlan& plan,
                                 const std::vector<std::vector<CompiledRewrite>>& rewrites) {
  CallWeights out(table.calls.size());
  for (size_t c = 0; c < table.calls.size(); ++c) {
    size_t t = static_cast<size_t>(table.calls[c].task);
    if (t >= rewrites.size()) continue;
    for (const CompiledRewrite& rw : rewrites[t]) {
      size_t arg = rw.param;
      const Location& l = plan.call_args[c][arg];
      if (l.kind != Location::Kind::kConstant)
        throw InternalError(
            fmt::format("task '{}' rewrites the layout of argument {}, which is not a weight",
                        table.tasks[t].name, arg));
      const runtime::NDArray& weight = graph.value(l.index).constant;
      runtime::NDArray packed(rw.shape, weight.dtype());  // laid out anew (padded, perhaps)
      void* args[] = {const_cast<void*>(weight.data()), packed.data()};
      rw.preproc->run(args);
      out[c].emplace_back(arg, std::move(packed));
    }
  }
  return out;
}

Executor::Executor(Graph graph, TaskTable table, std::vector<ir::PrimFunc> programs,
                   const ExecutorOptions& options)
    : graph_(std::move(graph)), table_(std::move(table)), options_(options) {
  auto start = std::chrono::steady_clock::now();
  size_t n = table_.tasks.size();
  programs.resize(n);
  kernels_.resize(n);
  // Tasks compile independently (LLVM contexts are per kernel), so on as many threads as the
  // kernels will run on (the thread pool's size: all the machine's unless the caller set fewer);
  // the first error, by task order, is the one reported.
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  std::vector<std::vector<CompiledRewrite>> rewrites(n);
  auto worker = [&] {
    for (size_t t = next.fetch_add(1); t < n; t = next.fetch_add(1)) {
      try {
        ir::PrimFunc p =
            programs[t].defined() ? programs[t] : graph::default_schedule(table_.tasks[t].func);
        lower::SplitProgram split = lower::split_layout_rewrites(p);
        rewrites[t] = compile_rewrites(split.rewrites);
        kernels_[t] = codegen::compile(lower::lower(split.main).func, options_.compile);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    }
  };
  size_t threads = std::min<size_t>(
      n, static_cast<size_t>(std::max(1, runtime::ThreadPool::global().num_threads())));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  plan_ = plan_execution(graph_, table_);
  call_weights_ = rewrite_call_weights(graph_, table_, plan_, rewrites);
  compile_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  arena_ = runtime::NDArray({std::max<int64_t>(plan_.memory.arena_bytes, 1)}, DataType::UInt(8));
}

void* Executor::address(const Location& where, const std::vector<runtime::NDArray>& inputs) {
  switch (where.kind) {
    case Location::Kind::kArena:
      return arena_.data_as<uint8_t>() + where.offset;
    case Location::Kind::kConstant:
      return graph_.value(where.index).constant.data();
    case Location::Kind::kInput:
      return const_cast<void*>(inputs[static_cast<size_t>(where.index)].data());
    case Location::Kind::kNone:
      break;
  }
  throw InternalError("a value has no storage");
}

std::vector<runtime::NDArray> Executor::run(const std::vector<runtime::NDArray>& inputs,
                                            std::vector<double>* call_seconds) {
  if (call_seconds) call_seconds->resize(table_.calls.size(), 0.0);
  if (inputs.size() != graph_.inputs.size())
    throw_input_error("the model takes {} inputs, {} given", graph_.inputs.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph_.value(graph_.inputs[i]);
    if (inputs[i].dtype() != v.dtype || inputs[i].shape() != v.shape)
      throw_input_error("input '{}' must be {} {}, not {} {}", v.name, v.dtype.str(),
                        graph::shape_text(v.shape), inputs[i].dtype().str(),
                        graph::shape_text(inputs[i].shape()));
  }
  std::vector<void*> args;
  for (size_t c = 0; c < table_.calls.size(); ++c) {
    args.clear();
    for (const Location& l : plan_.call_args[c]) args.push_back(address(l, inputs));
    for (auto& [arg, weight] : call_weights_[c]) args[arg] = weight.data();
    auto start =
        call_seconds ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    kernels_[static_cast<size_t>(table_.calls[c].task)]->run(args.data());
    if (call_seconds)
      (*call_seconds)[c] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!options_.poison_dead) continue;
    for (int b : plan_.dies_after[c])
      std::memset(arena_.data_as<uint8_t>() + plan_.memory.offsets[static_cast<size_t>(b)], 0xFF,
                  static_cast<size_t>(plan_.buffers[static_cast<size_t>(b)].bytes));
  }
  std::vector<runtime::NDArray> outs;
  for (int o : graph_.outputs) {
    const Value& v = graph_.value(o);
    runtime::NDArray a(v.shape, v.dtype);
    std::memcpy(a.data(), address(plan_.location[static_cast<size_t>(o)], inputs), a.nbytes());
    outs.push_back(std::move(a));
  }
  return outs;
}

}  // namespace tyche::executor
