#include "graph/tasks.h"

#include <map>
#include <set>
#include <unordered_map>

#include "graph/op_registry.h"
#include "ir/functor.h"
#include "ir/layout_free.h"
#include "ir/structural.h"
#include "support/error.h"

namespace tyche::graph {

namespace {

class FlopCounter : public ir::StmtExprVisitor {
 public:
  double total = 0;

 protected:
  void visit_block(const ir::BlockNode* n) override {
    double points = 1;
    for (const ir::IterVar& iv : n->iter_vars)
      if (auto e = ir::as_const_int(iv.dom.extent)) points *= static_cast<double>(*e);
    double saved = ops_;
    ops_ = 0;
    visit_stmt(n->body);
    total += ops_ * points;
    ops_ = saved;
  }
  // Arithmetic on values, float or integer (a quantized conv's u8 x s8 multiply-adds); index
  // arithmetic (loads' and stores' indices, a padding's bounds test) is not counted.
  void visit_binary(const ir::BinaryNode* n) override {
    if (n->dtype.is_float() || n->dtype.is_integer()) ops_ += 1;
    StmtExprVisitor::visit_binary(n);
  }
  void visit_call(const ir::CallNode* n) override {
    if (n->op == ir::CallOp::kIfThenElse) {
      for (size_t i = 1; i < n->args.size(); ++i) visit_expr(n->args[i]);
      return;
    }
    if (n->dtype.is_float()) ops_ += 1;
    StmtExprVisitor::visit_call(n);
  }
  void visit_buffer_load(const ir::BufferLoadNode* n) override { (void)n; }
  void visit_buffer_store(const ir::BufferStoreNode* n) override { visit_expr(n->value); }
  void visit_select(const ir::SelectNode* n) override {
    visit_expr(n->true_value);
    visit_expr(n->false_value);
  }

 private:
  double ops_ = 0;
};

}  // namespace

double count_flop(const ir::PrimFunc& func) {
  FlopCounter c;
  c.visit_stmt(func->body);
  return c.total;
}

ir::PrimFunc group_function(const Graph& graph, const FusedGroup& group, const std::string& name,
                            Call& call) {
  // An empty input a converter never reads (CastLike's `like`) still gets a placeholder; it is
  // left out of the function below. One that is read was refused by infer_and_fold.
  te::AllowEmptyExtents unread_empty_inputs;
  NameGen names;
  std::unordered_map<int, te::Tensor> tensors;  // values made inside the group, and placeholders
  std::vector<std::pair<int, te::Tensor>> placeholders;
  for (int k : group.nodes) {
    const Node& n = graph.nodes[static_cast<size_t>(k)];
    std::vector<te::Tensor> ins;
    for (int v : n.inputs) {
      if (v < 0) {
        ins.emplace_back();
        continue;
      }
      auto it = tensors.find(v);
      if (it == tensors.end()) {
        const Value& val = graph.value(v);
        te::Tensor p =
            te::placeholder(val.shape, val.dtype, fmt::format("p{}", placeholders.size()));
        placeholders.emplace_back(v, p);
        it = tensors.emplace(v, p).first;
      }
      ins.push_back(it->second);
    }
    std::vector<te::Tensor> outs = convert_node(graph, n, ins, names);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) tensors[n.outputs[o]] = outs[o];
  }
  const Node& last = graph.nodes[static_cast<size_t>(group.last())];
  std::vector<te::Tensor> results;
  call.outputs.clear();
  for (int o : last.outputs) {
    if (o < 0) continue;
    results.push_back(tensors.at(o));
    call.outputs.push_back(o);
  }
  std::set<const te::OperationNode*> used = reachable_operations(results);
  std::vector<te::Tensor> args;
  call.inputs.clear();
  for (const auto& [v, p] : placeholders) {
    if (!used.count(p.op())) continue;
    args.push_back(p);
    call.inputs.push_back(v);
  }
  // An output that is one of the inputs (nothing computed) still needs its own buffer.
  for (te::Tensor& r : results)
    if (r.op()->is_placeholder) {
      te::Tensor in = r;
      r = te::compute(
          in.shape(),
          [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
            return in(std::vector<ir::Expr>(v.begin(), v.end()));
          },
          names("copy"));
    }
  args.insert(args.end(), results.begin(), results.end());
  // Weights may be stored in whatever layout the tuned kernel reads (RewriteLayout).
  std::vector<size_t> weights;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    if (graph.value(call.inputs[i]).is_constant()) weights.push_back(i);
  return ir::with_layout_free_params(te::create_prim_func(args, name), weights);
}

TaskTable extract_tasks(const Graph& graph) {
  TaskTable table;
  table.groups = fuse(graph);
  std::unordered_map<uint64_t, std::vector<int>> by_hash;
  std::map<std::string, int> name_uses;
  for (size_t g = 0; g < table.groups.size(); ++g) {
    const FusedGroup& group = table.groups[g];
    if (group.is_view) continue;
    Call call;
    call.group = static_cast<int>(g);
    ir::PrimFunc func = group_function(graph, group, group.name, call);
    uint64_t hash = ir::structural_hash(func);
    int found = -1;
    for (int t : by_hash[hash])
      if (ir::structural_equal(table.tasks[static_cast<size_t>(t)].func, func)) found = t;
    if (found < 0) {
      int uses = name_uses[group.name]++;
      std::string name = uses == 0 ? group.name : fmt::format("{}_{}", group.name, uses);
      found = static_cast<int>(table.tasks.size());
      // The task's function is named after the task, so a kernel's symbol is its task's name.
      Call unused;
      func = name == group.name ? func : group_function(graph, group, name, unused);
      table.tasks.push_back({name, func, ir::structural_hash(func), 0, count_flop(func)});
      by_hash[hash].push_back(found);
    }
    ++table.tasks[static_cast<size_t>(found)].weight;
    call.task = found;
    table.calls.push_back(std::move(call));
  }
  return table;
}

}  // namespace tyche::graph
