#include <unordered_map>
#include <unordered_set>

#include "arith/analyzer.h"
#include "arith/region.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "te/tensor.h"

namespace tyche::te {

namespace {

// Post-order over the dataflow graph (producers before consumers), iterative so that long
// chains cannot overflow the stack.
void topo_visit(const Tensor& root, std::unordered_set<const OperationNode*>& seen,
                std::vector<Tensor>& order) {
  if (!seen.insert(root.op()).second) return;
  std::vector<std::pair<Tensor, size_t>> stack = {{root, 0}};
  while (!stack.empty()) {
    auto& [t, next] = stack.back();
    if (next < t.op()->inputs.size()) {
      const Tensor& in = t.op()->inputs[next++];
      if (seen.insert(in.op()).second) stack.emplace_back(in, 0);
      continue;
    }
    order.push_back(t);
    stack.pop_back();
  }
}

// The block (inside its loop nest) that computes one compute op. Loops are named after the
// op's axes; block iter vars get a "v" prefix, as TVM prints them.
// Refuses a compute whose body reads a tensor outside its shape where the read is not guarded:
// generated code would read out of bounds. Reads in an if_then_else's branches are guarded by its
// condition (padding: `if_then_else(h >= 1, I[h - 1], 0)`) and not checked; select evaluates
// both sides, so its reads are.
class UnguardedReadChecker : public ir::StmtExprVisitor {
 public:
  UnguardedReadChecker(const OperationNode& op, arith::Analyzer& analyzer)
      : op_(op), analyzer_(analyzer) {}

  void visit_call(const ir::CallNode* n) override {
    if (n->op == ir::CallOp::kIfThenElse) return visit_expr(n->args.at(0));
    StmtExprVisitor::visit_call(n);
  }
  void visit_buffer_load(const ir::BufferLoadNode* n) override {
    StmtExprVisitor::visit_buffer_load(n);
    for (size_t d = 0; d < n->indices.size() && d < n->buffer->shape.size(); ++d) {
      const auto* extent = n->buffer->shape[d].as<ir::IntImmNode>();
      arith::ConstIntBound b = analyzer_.const_int_bound(n->indices[d]);
      if (!extent || b.min_value == arith::ConstIntBound::kNegInf ||
          b.max_value == arith::ConstIntBound::kPosInf)
        continue;
      if (b.min_value < 0 || b.max_value >= extent->value)
        throw_input_error(
            "compute '{}' reads {} outside its shape: index {} of dimension {} takes [{}, {}], not "
            "within [0, {}) "
            "(guard the read with if_then_else)",
            op_.name, n->buffer->name, ir::to_string(n->indices[d]), d, b.min_value, b.max_value,
            extent->value);
    }
  }

 private:
  const OperationNode& op_;
  arith::Analyzer& analyzer_;
};

ir::Stmt make_compute_stage(const OperationNode& op, arith::Analyzer& analyzer) {
  std::vector<IterVar> axes = op.axis;
  const Reduction* red = op.body->reduction();
  if (red) axes.insert(axes.end(), red->axes.begin(), red->axes.end());
  for (const IterVar& iv : axes) analyzer.bind(iv.var, iv.dom);
  UnguardedReadChecker(op, analyzer).visit_expr(red ? red->source : *op.body->expr());

  std::vector<IterVar> block_vars;
  std::vector<Var> loop_vars;
  std::unordered_map<const ir::VarNode*, Expr> to_block_var;
  for (const IterVar& iv : axes) {
    Var bv("v" + iv.var.name(), iv.var.dtype());
    block_vars.push_back(IterVar{bv, iv.dom, iv.kind});
    loop_vars.emplace_back(iv.var.name(), iv.var.dtype());
    to_block_var[iv.var.get()] = bv;
  }
  auto rebind = [&](const Expr& e) {
    return ir::substitute(e, [&](const Var& v) -> Expr {
      auto it = to_block_var.find(v.get());
      return it != to_block_var.end() ? it->second : Expr();
    });
  };
  std::vector<Expr> out_index;
  for (size_t i = 0; i < op.axis.size(); ++i) out_index.push_back(block_vars[i].var);

  ir::Stmt init, body;
  if (red) {
    DataType t = op.buffer->dtype;
    init = ir::buffer_store(op.buffer, reducer_identity(red->reducer, t), out_index);
    Expr acc = ir::buffer_load(op.buffer, out_index);
    body = ir::buffer_store(op.buffer, reducer_combine(red->reducer, acc, rebind(red->source)),
                            out_index);
  } else {
    body = ir::buffer_store(op.buffer, rebind(*op.body->expr()), out_index);
  }
  ir::Block block = ir::make_block(op.name, block_vars, {}, {}, init, body);
  arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
  block = ir::make_block(op.name, block_vars, regions.reads, regions.writes, init, body);

  std::vector<Expr> bindings(loop_vars.begin(), loop_vars.end());
  ir::Stmt stmt = ir::block_realize(bindings, ir::make_bool(true), block);
  for (size_t i = axes.size(); i-- > 0;) {
    stmt =
        ir::for_loop(loop_vars[i], axes[i].dom.min, axes[i].dom.extent, ir::ForKind::kSerial, stmt);
  }
  return stmt;
}

}  // namespace

ir::PrimFunc create_prim_func(const std::vector<Tensor>& args, std::string name) {
  std::unordered_set<const OperationNode*> arg_ops;
  std::vector<Tensor> outputs;
  bool seen_output = false;
  for (const Tensor& t : args) {
    if (!t.defined()) throw_input_error("create_prim_func: undefined tensor among the arguments");
    if (!arg_ops.insert(t.op()).second)
      throw_input_error("create_prim_func: tensor '{}' is passed twice", t.name());
    if (t.op()->is_placeholder) {
      if (seen_output)
        throw_input_error("create_prim_func: input '{}' listed after an output", t.name());
    } else {
      seen_output = true;
      outputs.push_back(t);
    }
  }
  if (outputs.empty())
    throw_input_error("create_prim_func: no computed tensor among the arguments");

  std::unordered_set<const OperationNode*> seen;
  std::vector<Tensor> order;
  for (const Tensor& t : outputs) topo_visit(t, seen, order);

  std::vector<ir::Buffer> params, intermediates;
  for (const Tensor& t : args) params.push_back(t.buffer());
  std::unordered_set<std::string> names;
  std::vector<ir::Stmt> stages;
  arith::Analyzer analyzer;
  for (const Tensor& t : order) {
    if (!names.insert(t.name()).second)
      throw_input_error("create_prim_func: two tensors are named '{}'", t.name());
    if (t.op()->is_placeholder) {
      if (!arg_ops.count(t.op()))
        throw_input_error("create_prim_func: input '{}' is not among the arguments", t.name());
      continue;
    }
    if (!arg_ops.count(t.op())) intermediates.push_back(t.buffer());
    stages.push_back(make_compute_stage(*t.op(), analyzer));
  }
  ir::Block root =
      ir::make_block("root", {}, {}, {}, ir::Stmt(), ir::seq(std::move(stages)), intermediates);
  ir::Stmt body = ir::block_realize({}, ir::make_bool(true), root);
  return ir::PrimFunc(std::move(name), std::move(params), static_cast<int>(outputs.size()), body);
}

}  // namespace tyche::te
