#include "graph/control_flow.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/op_registry.h"
#include "support/error.h"

namespace tyche::graph {

namespace {

// Unrolling stops here: each iteration's nodes are compiled (or folded) one by one.
constexpr int64_t kMaxIterations = 4096;
// Set on the rest of a Loop after its first iterations are expanded: how many have been, and how
// many of its inputs (after the captures) are those iterations' scan outputs.
constexpr const char* kIterationAttribute = "tyche.iteration";
constexpr const char* kScanPartsAttribute = "tyche.scan_parts";

[[noreturn]] void fail(const Node& n, const std::string& message) {
  throw_input_error("node '{}' ({}): {}", n.name, n.op, message);
}

// The graph inputs `value` is computed from, for a refusal that says what to bind.
std::string bind_hint(const Graph& graph, int value) {
  std::map<int, const Node*> producer;
  for (const Node& n : graph.nodes)
    for (int o : n.outputs)
      if (o >= 0) producer[o] = &n;
  std::set<int> inputs(graph.inputs.begin(), graph.inputs.end()), seen, found;
  std::vector<int> work = {value};
  while (!work.empty()) {
    int v = work.back();
    work.pop_back();
    if (v < 0 || !seen.insert(v).second) continue;
    if (inputs.count(v)) found.insert(v);
    if (auto it = producer.find(v); it != producer.end())
      for (int in : it->second->inputs) work.push_back(in);
  }
  std::vector<std::string> names;
  for (int v : found) names.push_back("'" + graph.value(v).name + "'");
  if (names.empty()) return "";
  if (names.size() == 1 && *found.begin() == value) return ": bind it (--bind)";
  return fmt::format("; it is computed from the input{} {}: bind {} (--bind)",
                     names.size() > 1 ? "s" : "", fmt::join(names, ", "),
                     names.size() > 1 ? "them" : "it");
}

// A one-element constant input's value as an integer (a bool's as 0 or 1).
int64_t constant_scalar(const Graph& graph, const Node& n, size_t i, const char* what) {
  if (n.inputs[i] < 0) fail(n, fmt::format("has no {}", what));
  const Value& v = graph.value(n.inputs[i]);
  if (!v.is_constant() || v.constant.numel() != 1)
    fail(n, fmt::format("the {} ('{}') must be a one-element constant: Tyche expands control flow "
                        "at compile time{}",
                        what, v.name, bind_hint(graph, n.inputs[i])));
  return v.constant.get_flat_int(0);
}

const Graph& subgraph(const Node& n, const std::string& name) {
  auto it = n.subgraphs.find(name);
  if (it == n.subgraphs.end() || !it->second) fail(n, fmt::format("has no '{}' graph", name));
  return *it->second;
}

// The nodes of an expansion, and the values they define.
class Expansion {
 public:
  // The node's inputs are its own, then its captures, then `trailing` more (a Loop's done
  // iterations' scan outputs).
  Expansion(Graph& graph, const Node& node, size_t trailing = 0) : graph_(graph), node_(node) {
    std::vector<std::string> names;
    if (node.has(kCapturesAttribute)) names = node.get_strings(kCapturesAttribute);
    if (names.size() + trailing > node.inputs.size())
      fail(node, fmt::format("has {} inputs, fewer than its {} captures", node.inputs.size(),
                             names.size()));
    own_inputs_ = node.inputs.size() - names.size() - trailing;
    for (size_t i = 0; i < names.size(); ++i) captured_[names[i]] = node.inputs[own_inputs_ + i];
  }

  // The node's inputs before its captures.
  size_t own_inputs() const { return own_inputs_; }
  size_t num_captures() const { return captured_.size(); }

  int constant(runtime::NDArray a, const std::string& what) {
    std::vector<int64_t> shape = a.shape();
    DataType dtype = a.dtype();
    return graph_.add_value({fmt::format("{}/{}", node_.name, what), shape, dtype, std::move(a)});
  }
  int int64_scalar(int64_t v) {
    runtime::NDArray a({}, kInt64);
    a.set_flat_int(0, v);
    return constant(std::move(a), fmt::format("i{}", v));
  }
  int int64_list(const std::vector<int64_t>& v) {
    runtime::NDArray a({static_cast<int64_t>(v.size())}, kInt64);
    for (size_t i = 0; i < v.size(); ++i) a.set_flat_int(static_cast<int64_t>(i), v[i]);
    return constant(std::move(a), "axes");
  }

  // A one-output node reading `inputs`, defining `output` (a new value when -1).
  int add(const std::string& op, std::vector<int> inputs,
          std::map<std::string, Attribute> attributes = {}, int output = -1) {
    std::string name = fmt::format("{}/{}_{}", node_.name, op, count_++);
    if (output < 0) output = graph_.add_value({name, {}, {}, {}});
    nodes_.push_back(Node{op, name, std::move(inputs), {output}, std::move(attributes), {}});
    return output;
  }

  // `body`'s nodes as nodes of the graph: its inputs are `args`, the outer values it reads are
  // the node's captures, and its other values are new (named under `prefix`). Its outputs' ids.
  std::vector<int> inline_body(const Graph& body, const std::vector<int>& args,
                               const std::string& prefix) {
    if (args.size() != body.inputs.size())
      fail(node_, fmt::format("its graph '{}' takes {} inputs, the node gives it {}", body.name,
                              body.inputs.size(), args.size()));
    std::vector<int> ids(body.values.size(), -1);
    for (size_t i = 0; i < args.size(); ++i) ids[static_cast<size_t>(body.inputs[i])] = args[i];
    for (int c : body.captures) {
      auto it = captured_.find(body.value(c).name);
      if (it == captured_.end())
        fail(node_, fmt::format("its graph reads '{}', which the node does not capture",
                                body.value(c).name));
      ids[static_cast<size_t>(c)] = it->second;
    }
    auto id_of = [&](int v) {
      if (v < 0) return -1;
      int& id = ids[static_cast<size_t>(v)];
      if (id < 0) {
        const Value& bv = body.value(v);
        Value copy = bv;
        copy.name = prefix + "/" + bv.name;
        id = graph_.add_value(std::move(copy));
      }
      return id;
    };
    for (const Node& bn : body.nodes) {
      Node n = bn;
      n.name = prefix + "/" + bn.name;
      for (int& in : n.inputs) in = id_of(in);
      for (int& out : n.outputs) out = id_of(out);
      nodes_.push_back(std::move(n));
    }
    std::vector<int> outs;
    for (int o : body.outputs) outs.push_back(id_of(o));
    return outs;
  }

  // Each part with a new axis `axis`, concatenated on it (a scan output).
  void stack(const std::vector<int>& parts, int64_t axis, int output) {
    std::vector<int> unsqueezed;
    for (int p : parts) unsqueezed.push_back(add("Unsqueeze", {p, int64_list({axis})}));
    add("Concat", unsqueezed, {{"axis", axis}}, output);
  }

  std::vector<Node> take() { return std::move(nodes_); }

 private:
  Graph& graph_;
  const Node& node_;
  size_t own_inputs_ = 0;
  std::map<std::string, int> captured_;
  std::vector<Node> nodes_;
  int count_ = 0;
};

std::vector<Node> expand_if(Graph& graph, const Node& n) {
  Expansion e(graph, n);
  if (e.own_inputs() != 1) fail(n, "must have one input, the condition");
  subgraph(n, "then_branch");  // both are required, whichever is taken
  subgraph(n, "else_branch");
  bool taken = constant_scalar(graph, n, 0, "condition") != 0;
  const Graph& branch = subgraph(n, taken ? "then_branch" : "else_branch");
  std::vector<int> outs = e.inline_body(branch, {}, n.name + (taken ? "/then" : "/else"));
  if (outs.size() != n.outputs.size())
    fail(n, fmt::format("its {} branch gives {} outputs, the node has {}", taken ? "then" : "else",
                        outs.size(), n.outputs.size()));
  for (size_t o = 0; o < outs.size(); ++o)
    if (n.outputs[o] >= 0) e.add("Identity", {outs[o]}, {}, n.outputs[o]);
  return e.take();
}

// One iteration of the loop, then the rest of it as a Loop node of its own (which sees the
// iteration's condition folded); or, when the loop is done, its final values and scan outputs.
std::vector<Node> expand_loop(Graph& graph, const Node& n) {
  Expansion e(graph, n,
              static_cast<size_t>(std::max<int64_t>(0, n.get_int(kScanPartsAttribute, 0))));
  const Graph& body = subgraph(n, "body");
  if (body.inputs.size() < 2 || body.outputs.size() + 1 < body.inputs.size())
    fail(n,
         "its body must take the iteration count, the condition and each loop-carried value, "
         "and give the condition and each of them");
  size_t carried = body.inputs.size() - 2;
  size_t scans = body.outputs.size() - 1 - carried;
  if (e.own_inputs() != 2 + carried || n.outputs.size() != carried + scans)
    fail(n, fmt::format("has {} inputs and {} outputs; its body carries {} values and scans {}",
                        e.own_inputs(), n.outputs.size(), carried, scans));
  for (size_t j = 0; j < carried; ++j)
    if (n.inputs[2 + j] < 0) fail(n, fmt::format("loop-carried input {} is left out", j + 1));
  int64_t iteration = n.get_int(kIterationAttribute, 0);
  bool has_count = n.inputs[0] >= 0, has_cond = n.inputs[1] >= 0;
  if (!has_count && !has_cond)
    fail(n, "has neither a trip count nor a condition: it would run forever");
  int64_t count = has_count ? constant_scalar(graph, n, 0, "trip count") : kMaxIterations + 1;
  bool cond = has_cond ? constant_scalar(graph, n, 1, "condition") != 0 : true;
  // Inputs after the own ones: the captures, then the done iterations' scan outputs.
  auto captures_begin = n.inputs.begin() + static_cast<std::ptrdiff_t>(2 + carried);
  auto parts_begin = captures_begin + static_cast<std::ptrdiff_t>(e.num_captures());
  std::vector<int> parts(parts_begin, n.inputs.end());
  if (iteration >= count || !cond) {
    for (size_t j = 0; j < carried; ++j)
      if (n.outputs[j] >= 0) e.add("Identity", {n.inputs[2 + j]}, {}, n.outputs[j]);
    for (size_t k = 0; k < scans; ++k) {
      int out = n.outputs[carried + k];
      if (out < 0) continue;
      if (iteration == 0) fail(n, "runs no iteration, so its scan outputs' shapes are unknown");
      std::vector<int> mine;
      for (size_t p = k; p < parts.size(); p += scans) mine.push_back(parts[p]);
      e.stack(mine, 0, out);
    }
    return e.take();
  }
  if (iteration >= kMaxIterations || (!has_cond && count > kMaxIterations))
    fail(n,
         fmt::format("runs more than {} iterations, which Tyche does not unroll", kMaxIterations));
  runtime::NDArray truth({}, kBool);
  truth.set_flat_int(0, 1);
  std::vector<int> args = {e.int64_scalar(iteration), e.constant(std::move(truth), "true")};
  args.insert(args.end(), n.inputs.begin() + 2, captures_begin);
  std::vector<int> outs = e.inline_body(body, args, fmt::format("{}/{}", n.name, iteration));
  std::vector<Node> nodes = e.take();
  Node rest = n;
  rest.inputs = {n.inputs[0], has_cond ? outs[0] : -1};
  rest.inputs.insert(rest.inputs.end(), outs.begin() + 1,
                     outs.begin() + static_cast<std::ptrdiff_t>(1 + carried));
  rest.inputs.insert(rest.inputs.end(), captures_begin, parts_begin);
  rest.inputs.insert(rest.inputs.end(), parts.begin(), parts.end());
  rest.inputs.insert(rest.inputs.end(), outs.begin() + static_cast<std::ptrdiff_t>(1 + carried),
                     outs.end());
  rest.attributes[kIterationAttribute] = iteration + 1;
  rest.attributes[kScanPartsAttribute] = static_cast<int64_t>(parts.size() + scans);
  nodes.push_back(std::move(rest));
  return nodes;
}

std::vector<Node> expand_scan(Graph& graph, const Node& n) {
  Expansion e(graph, n);
  const Graph& body = subgraph(n, "body");
  int64_t scan_inputs = n.get_int("num_scan_inputs", -1);
  size_t inputs = e.own_inputs();
  if (scan_inputs < 1 || static_cast<size_t>(scan_inputs) > inputs)
    fail(n, fmt::format("num_scan_inputs ({}) must be in [1, {}]", scan_inputs, inputs));
  size_t states = inputs - static_cast<size_t>(scan_inputs);
  for (size_t i = 0; i < inputs; ++i)
    if (n.inputs[i] < 0) fail(n, fmt::format("input {} is left out", i + 1));
  if (body.inputs.size() != inputs || body.outputs.size() < states)
    fail(n, fmt::format("its body takes {} inputs and gives {} outputs; the node gives {} inputs "
                        "of which {} are states",
                        body.inputs.size(), body.outputs.size(), inputs, states));
  size_t scan_outputs = body.outputs.size() - states;
  if (n.outputs.size() != states + scan_outputs)
    fail(n,
         fmt::format("has {} outputs, its body gives {}", n.outputs.size(), body.outputs.size()));
  auto list = [&](const char* attr, size_t size) {
    std::vector<int64_t> v = n.get_ints(attr, std::vector<int64_t>(size, 0));
    if (v.size() != size) fail(n, fmt::format("{} must have {} values", attr, size));
    return v;
  };
  std::vector<int64_t> in_axes = list("scan_input_axes", static_cast<size_t>(scan_inputs));
  std::vector<int64_t> in_reverse = list("scan_input_directions", static_cast<size_t>(scan_inputs));
  std::vector<int64_t> out_axes = list("scan_output_axes", scan_outputs);
  std::vector<int64_t> out_reverse = list("scan_output_directions", scan_outputs);
  int64_t length = -1;
  for (size_t j = 0; j < static_cast<size_t>(scan_inputs); ++j) {
    const Value& v = graph.value(n.inputs[states + j]);
    auto rank = static_cast<int64_t>(v.shape.size());
    int64_t& axis = in_axes[j];
    if (axis < -rank || axis >= rank)
      fail(n, fmt::format("scan input axis {} is out of range for '{}' of rank {}", axis, v.name,
                          rank));
    if (axis < 0) axis += rank;
    int64_t extent = v.shape[static_cast<size_t>(axis)];
    if (length >= 0 && extent != length)
      fail(n, fmt::format("its scan inputs have lengths {} and {}", length, extent));
    length = extent;
  }
  if (length < 1) fail(n, "scans a sequence of length 0, whose outputs' shapes are unknown");
  if (length > kMaxIterations)
    fail(n, fmt::format("scans {} steps, more than the {} Tyche unrolls", length, kMaxIterations));
  std::vector<int> state(n.inputs.begin(), n.inputs.begin() + static_cast<std::ptrdiff_t>(states));
  std::vector<std::vector<int>> parts(scan_outputs);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<int> args = state;
    for (size_t j = 0; j < static_cast<size_t>(scan_inputs); ++j) {
      int64_t at = in_reverse[j] ? length - 1 - t : t;
      args.push_back(
          e.add("Gather", {n.inputs[states + j], e.int64_scalar(at)}, {{"axis", in_axes[j]}}));
    }
    std::vector<int> outs = e.inline_body(body, args, fmt::format("{}/{}", n.name, t));
    state.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(states));
    for (size_t k = 0; k < scan_outputs; ++k) parts[k].push_back(outs[states + k]);
  }
  for (size_t j = 0; j < states; ++j)
    if (n.outputs[j] >= 0) e.add("Identity", {state[j]}, {}, n.outputs[j]);
  for (size_t k = 0; k < scan_outputs; ++k) {
    int out = n.outputs[states + k];
    if (out < 0) continue;
    if (out_reverse[k]) std::reverse(parts[k].begin(), parts[k].end());
    // The axis counts in the output's rank, one more than each part's; the parts' shapes are
    // not known yet, so a negative axis is placed by Unsqueeze and Concat, which take it too.
    e.stack(parts[k], out_axes[k], out);
  }
  return e.take();
}

}  // namespace

namespace ops {

std::vector<te::Tensor> control_flow(ConvertContext& c) {
  c.fail("is expanded into the nodes it runs before any is converted");
}

}  // namespace ops

bool is_control_flow(const std::string& op) {
  return op == "If" || op == "Loop" || op == "Scan";
}

std::vector<Node> expand_control_flow(Graph& graph, const Node& node) {
  if (node.op == "If") return expand_if(graph, node);
  if (node.op == "Loop") return expand_loop(graph, node);
  return expand_scan(graph, node);
}

}  // namespace tyche::graph
