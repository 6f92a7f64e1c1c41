#include "lower/gpu/gpu_lower.h"

#include <fmt/format.h>

#include <unordered_set>

#include "ir/functor.h"
#include "ir/op.h"
#include "lower/gpu/gpu_resources.h"
#include "support/error.h"

namespace tyche::lower {

namespace {

int dimension(const std::string& tag) {
  return tag.back() - 'x';
}

// Parallel loops have no meaning inside a kernel: the GPU's threads are its parallelism.
void refuse_parallel_loops(const ir::PrimFunc& func) {
  ir::post_order_visit(func->body, [](const ir::Stmt& s) {
    auto* f = s.as<ir::ForNode>();
    if (f && f->for_kind == ir::ForKind::kParallel)
      throw Error(
          fmt::format("GPU lowering: loop '{}' is parallel (a CPU schedule): bind it to "
                      "blockIdx/threadIdx instead",
                      f->loop_var.name()));
  });
}

class KernelSplitter {
 public:
  KernelSplitter(GpuProgram& program, bool fragment_tiles)
      : program_(program), fragment_tiles_(fragment_tiles) {}

  void top(const ir::Stmt& s) {
    if (auto* a = s.as<ir::AllocateNode>()) {
      program_.intermediates.push_back(a->buffer);
      top(a->body);
    } else if (auto* q = s.as<ir::SeqStmtNode>()) {
      for (const ir::Stmt& c : q->seq) top(c);
    } else {
      kernel(s);
    }
  }

 private:
  void kernel(ir::Stmt s) {
    GpuKernel k;
    k.name = fmt::format("{}_kernel{}", program_.name, program_.kernels.size());
    k.fragment_tiles = fragment_tiles_;
    for (;;) {
      auto* f = s.as<ir::ForNode>();
      if (!f || f->for_kind != ir::ForKind::kThreadBinding) break;
      int64_t extent = ir::as_const_int(f->extent).value();
      int d = dimension(f->thread_tag);
      (f->thread_tag.starts_with("blockIdx") ? k.grid : k.block)[static_cast<size_t>(d)] = extent;
      k.indices.push_back({f->thread_tag, f->loop_var});
      s = f->body;
    }
    if (k.indices.empty()) throw InternalError("GPU lowering: a kernel without launch loops");
    while (auto* a = s.as<ir::AllocateNode>()) {
      if (!a->buffer->scope.starts_with("shared")) break;
      k.shared.push_back(a->buffer);
      s = a->body;
    }
    k.body = s;
    k.shared_bytes = kernel_resources(k).shared_bytes;
    std::unordered_set<const ir::BufferNode*> used;
    ir::post_order_visit(s, [&](const ir::Stmt& x) {
      if (auto* st = x.as<ir::BufferStoreNode>()) used.insert(st->buffer.get());
    });
    struct Loads : ir::StmtExprVisitor {
      std::unordered_set<const ir::BufferNode*>* used;
      void visit_buffer_load(const ir::BufferLoadNode* n) override {
        used->insert(n->buffer.get());
        StmtExprVisitor::visit_buffer_load(n);
      }
    } loads;
    loads.used = &used;
    loads.visit_stmt(s);
    for (const auto* list : {&program_.params, &program_.intermediates})
      for (const ir::Buffer& b : *list)
        if (used.count(b.get())) k.buffers.push_back(b);
    program_.kernels.push_back(std::move(k));
  }

  GpuProgram& program_;
  bool fragment_tiles_;
};

}  // namespace

GpuProgram split_kernels(const ir::PrimFunc& func, bool fragment_tiles) {
  GpuProgram program;
  program.name = func->name;
  program.params = func->params;
  program.num_outputs = func->num_outputs;
  KernelSplitter(program, fragment_tiles).top(func->body);
  return program;
}

GpuProgram lower_gpu(const ir::PrimFunc& func, const LowerOptions& options,
                     const GpuLowerOptions& gpu) {
  ir::PrimFunc f = func;
  std::vector<std::string> notes;
  auto pass = [&](const char* name, auto&& run) {
    f = run(f);
    if (options.log) options.log(name, f);
  };
  pass("lower_cross_thread_reductions",
       [&](const ir::PrimFunc& x) { return lower_cross_thread_reductions(x, gpu.cuda); });
  pass("lower_blocks", [&](const ir::PrimFunc& x) { return lower_blocks(x, &notes, true); });
  refuse_parallel_loops(f);
  pass("compact_buffers", [](const ir::PrimFunc& x) { return compact_buffers(x); });
  pass("bind_gpu_threads", [](const ir::PrimFunc& x) { return bind_gpu_threads(x); });
  if (gpu.cuda)
    pass("lower_warp_matrix_ops", [](const ir::PrimFunc& x) { return lower_warp_matrix_ops(x); });
  pass("flatten_buffers", [](const ir::PrimFunc& x) { return flatten_buffers(x); });
  pass("simplify", [](const ir::PrimFunc& x) { return simplify(x); });
  pass("vectorize_loops", [&](const ir::PrimFunc& x) { return vectorize_loops(x, &notes); });
  pass("unroll_loops", [&](const ir::PrimFunc& x) { return unroll_loops(x, &notes); });
  pass("simplify", [](const ir::PrimFunc& x) { return simplify(x); });
  pass("pipeline_shared_copies",
       [&](const ir::PrimFunc& x) { return pipeline_shared_copies(x, gpu.cuda && gpu.sm >= 80); });
  pass("insert_thread_barriers", [](const ir::PrimFunc& x) { return insert_thread_barriers(x); });
  GpuProgram program = split_kernels(f, gpu.cuda);
  program.notes = std::move(notes);
  return program;
}

}  // namespace tyche::lower
