#include "graph/executor.h"

#include <chrono>
#include <cstring>
#include <limits>

#include "ir/functor.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace tyche::graph {

namespace {

class BlockCollector : public ir::StmtExprVisitor {
 public:
  std::vector<const ir::BlockNode*> blocks;

 protected:
  void visit_block(const ir::BlockNode* n) override {
    blocks.push_back(n);
    StmtExprVisitor::visit_block(n);
  }
};

}  // namespace

ir::PrimFunc default_schedule(const ir::PrimFunc& func) {
  BlockCollector c;
  c.visit_stmt(func->body);
  schedule::Schedule sch(func);
  std::vector<std::pair<std::string, size_t>> kept;  // block name, spatial iterators
  for (size_t i = 0; i < c.blocks.size(); ++i) {
    const ir::BlockNode* b = c.blocks[i];
    if (b->name == "root") continue;
    size_t spatial = 0;
    bool reduces = false;
    for (const ir::IterVar& iv : b->iter_vars) {
      if (iv.kind == ir::IterKind::kSpatial) ++spatial;
      else reduces = true;
    }
    auto rv = sch.get_block(b->name);
    if (!rv.ok()) continue;
    // Stages without a reduction are inlined into their readers where that is legal.
    if (!reduces && i + 1 < c.blocks.size() && sch.compute_inline(rv.value()).ok()) continue;
    kept.emplace_back(b->name, spatial);
  }
  for (const auto& [name, spatial] : kept) {
    auto rv = sch.get_block(name);
    if (!rv.ok()) continue;
    auto loops = sch.get_loops(rv.value());
    if (!loops.ok() || loops.value().empty() || spatial == 0) continue;
    std::vector<schedule::LoopRV> all = loops.value();
    std::vector<schedule::LoopRV> outer(all.begin(), all.begin() + static_cast<long>(std::min(spatial, all.size())));
    schedule::Result<schedule::LoopRV> fused = outer.size() > 1 ? sch.fuse(outer) : schedule::Result<schedule::LoopRV>(outer[0]);
    if (fused.ok()) (void)sch.parallel(fused.value());
  }
  return sch.func();
}

Executor::Executor(Graph graph, TaskTable table, std::vector<ir::PrimFunc> programs, const ExecutorOptions& options)
    : graph_(std::move(graph)), table_(std::move(table)), options_(options) {
  auto start = std::chrono::steady_clock::now();
  programs.resize(table_.tasks.size());
  for (size_t t = 0; t < table_.tasks.size(); ++t) {
    ir::PrimFunc p = programs[t].defined() ? programs[t] : default_schedule(table_.tasks[t].func);
    kernels_.push_back(codegen::compile(lower::lower(p).func, options_.compile));
  }
  compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  plan();
}

void Executor::plan() {
  const size_t nv = graph_.values.size();
  storage_.assign(nv, {});
  input_index_.assign(nv, -1);
  for (size_t i = 0; i < graph_.inputs.size(); ++i) input_index_[static_cast<size_t>(graph_.inputs[i])] = static_cast<int>(i);
  for (size_t v = 0; v < nv; ++v) storage_[v].root = static_cast<int>(v);
  // Views: the output's bytes are the input's.
  for (const FusedGroup& g : table_.groups) {
    if (!g.is_view) continue;
    const Node& n = graph_.nodes[static_cast<size_t>(g.nodes[0])];
    storage_[static_cast<size_t>(n.outputs[0])].root = storage_[static_cast<size_t>(n.inputs[0])].root;
  }
  // Lifetimes of the roots written by calls, in calls.
  const int end = static_cast<int>(table_.calls.size());
  std::vector<int> buffer_of(nv, -1);
  for (size_t c = 0; c < table_.calls.size(); ++c) {
    for (int o : table_.calls[c].outputs) {
      int root = storage_[static_cast<size_t>(o)].root;
      buffer_of[static_cast<size_t>(root)] = static_cast<int>(buffers_.size());
      const Value& v = graph_.value(root);
      buffers_.push_back({static_cast<int64_t>(v.numel() * v.dtype.bytes()), static_cast<int>(c), static_cast<int>(c)});
    }
    for (int in : table_.calls[c].inputs) {
      int b = buffer_of[static_cast<size_t>(storage_[static_cast<size_t>(in)].root)];
      if (b >= 0) buffers_[static_cast<size_t>(b)].last = static_cast<int>(c);
    }
  }
  for (int o : graph_.outputs) {
    int b = buffer_of[static_cast<size_t>(storage_[static_cast<size_t>(o)].root)];
    if (b >= 0) buffers_[static_cast<size_t>(b)].last = end;  // read back after the last call
  }
  for (size_t v = 0; v < nv; ++v) storage_[v].buffer = buffer_of[static_cast<size_t>(storage_[v].root)];
  dies_after_.assign(static_cast<size_t>(end) + 1, {});
  for (size_t b = 0; b < buffers_.size(); ++b) dies_after_[static_cast<size_t>(buffers_[b].last)].push_back(static_cast<int>(b));
  memory_ = plan_memory(buffers_);
  arena_ = runtime::NDArray({std::max<int64_t>(memory_.arena_bytes, 1)}, DataType::UInt(8));
}

void* Executor::address(int value, const std::vector<runtime::NDArray>& inputs) {
  const Storage& s = storage_[static_cast<size_t>(value)];
  if (s.buffer >= 0) return arena_.data_as<uint8_t>() + memory_.offsets[static_cast<size_t>(s.buffer)];
  Value& root = graph_.value(s.root);
  if (root.is_constant()) return root.constant.data();
  int i = input_index_[static_cast<size_t>(s.root)];
  if (i >= 0) return const_cast<void*>(inputs[static_cast<size_t>(i)].data());
  throw InternalError(fmt::format("value '{}' has no storage", graph_.value(value).name));
}

std::vector<runtime::NDArray> Executor::run(const std::vector<runtime::NDArray>& inputs) {
  if (inputs.size() != graph_.inputs.size())
    throw_input_error("the model takes {} inputs, {} given", graph_.inputs.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph_.value(graph_.inputs[i]);
    if (inputs[i].dtype() != v.dtype || inputs[i].shape() != v.shape)
      throw_input_error("input '{}' must be {} {}, not {} {}", v.name, v.dtype.str(), shape_text(v.shape),
                        inputs[i].dtype().str(), shape_text(inputs[i].shape()));
  }
  std::vector<void*> args;
  for (size_t c = 0; c < table_.calls.size(); ++c) {
    const Call& call = table_.calls[c];
    args.clear();
    for (int in : call.inputs) args.push_back(address(in, inputs));
    for (int out : call.outputs) args.push_back(address(out, inputs));
    kernels_[static_cast<size_t>(call.task)]->run(args.data());
    if (!options_.poison_dead) continue;
    for (int b : dies_after_[c])
      std::memset(arena_.data_as<uint8_t>() + memory_.offsets[static_cast<size_t>(b)], 0xFF,
                  static_cast<size_t>(buffers_[static_cast<size_t>(b)].bytes));
  }
  std::vector<runtime::NDArray> outs;
  for (int o : graph_.outputs) {
    const Value& v = graph_.value(o);
    runtime::NDArray a(v.shape, v.dtype);
    std::memcpy(a.data(), address(o, inputs), a.nbytes());
    outs.push_back(std::move(a));
  }
  return outs;
}

}  // namespace tyche::graph
