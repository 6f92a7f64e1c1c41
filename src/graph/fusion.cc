#include "graph/fusion.h"

#include <algorithm>
#include <cctype>

#include "graph/op_registry.h"

namespace tyche::graph {

namespace {

OpPattern pattern_of(const Node& n) {
  return find_op(n.op)->pattern;
}

bool is_pointwise(OpPattern p) {
  return p == OpPattern::kElementwise || p == OpPattern::kBroadcast;
}
bool is_anchor(OpPattern p) {
  return p == OpPattern::kAnchor || p == OpPattern::kReduction;
}

std::string snake(const std::string& op) {
  std::string s;
  for (size_t i = 0; i < op.size(); ++i) {
    char c = op[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0 &&
        !std::isupper(static_cast<unsigned char>(op[i - 1])))
      s += '_';
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

class Fuser {
 public:
  explicit Fuser(const Graph& g)
      : g_(g), users_(g.consumers()), group_(g.nodes.size()), producer_(g.values.size(), -1) {
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      group_[k] = static_cast<int>(k);
      members_.push_back({static_cast<int>(k)});
      for (int o : g.nodes[k].outputs)
        if (o >= 0) producer_[static_cast<size_t>(o)] = static_cast<int>(k);
    }
    is_output_.assign(g.values.size(), false);
    for (int o : g.outputs) is_output_[static_cast<size_t>(o)] = true;
  }

  std::vector<FusedGroup> run() {
    mark_softmax_prologues();
    for (size_t k = 0; k < g_.nodes.size(); ++k) join_epilogue(static_cast<int>(k));
    move_widening_tails();
    join_pointwise_readers();
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (is_anchor(pattern_of(g_.nodes[k]))) take_prologues(static_cast<int>(k));
    return groups();
  }

 private:
  // The value's only reader, or -1 (several readers, none, or a graph output).
  int sole_reader(int value) const {
    if (value < 0 || is_output_[static_cast<size_t>(value)]) return -1;
    const auto& u = users_[static_cast<size_t>(value)];
    return u.size() == 1 ? u[0] : -1;
  }
  bool single_output(int node) const {
    const auto& outs = g_.nodes[static_cast<size_t>(node)].outputs;
    return outs.size() == 1 && outs[0] >= 0;
  }
  bool has_anchor(int group) const {
    for (int n : members_[static_cast<size_t>(group)])
      if (is_anchor(pattern_of(g_.nodes[static_cast<size_t>(n)]))) return true;
    return false;
  }
  bool group_is_view(int group) const {
    const auto& m = members_[static_cast<size_t>(group)];
    return m.size() == 1 && pattern_of(g_.nodes[static_cast<size_t>(m[0])]) == OpPattern::kView;
  }
  int last_of(int group) const { return members_[static_cast<size_t>(group)].back(); }

  void merge(int into, int from) {
    auto& dst = members_[static_cast<size_t>(into)];
    for (int n : members_[static_cast<size_t>(from)]) {
      dst.push_back(n);
      group_[static_cast<size_t>(n)] = into;
    }
    std::sort(dst.begin(), dst.end());
    members_[static_cast<size_t>(from)].clear();
  }

  // Pointwise chains whose end feeds a Softmax: they stay free for its prologue.
  void mark_softmax_prologues() {
    waits_.assign(g_.nodes.size(), false);
    for (size_t k = g_.nodes.size(); k-- > 0;) {
      const Node& n = g_.nodes[k];
      if (!is_pointwise(pattern_of(n)) || !single_output(static_cast<int>(k))) continue;
      int r = sole_reader(n.outputs[0]);
      if (r < 0) continue;
      const Node& reader = g_.nodes[static_cast<size_t>(r)];
      waits_[k] = reader.op == "Softmax" ||
                  (is_pointwise(pattern_of(reader)) && waits_[static_cast<size_t>(r)]);
    }
  }

  // A pointwise node joins the group producing one of its inputs when that input has no other
  // reader and is the group's result (the group's last node made it). An anchor's group first.
  void join_epilogue(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    bool waits = waits_[static_cast<size_t>(k)];
    if (!is_pointwise(pattern_of(n)) || !single_output(k) || group_[static_cast<size_t>(k)] != k)
      return;
    int best = -1;
    for (int in : n.inputs) {
      int grp = result_group(in);
      if (grp < 0 || sole_reader(in) != k || (waits && has_anchor(grp))) continue;
      if (best < 0 || (has_anchor(grp) && !has_anchor(best))) best = grp;
    }
    if (best >= 0) return merge(best, group_[static_cast<size_t>(k)]);
    if (waits) return;
    for (int in : n.inputs) {
      int grp = result_group(in);
      if (grp >= 0 && sole_reader(in) < 0 && absorb_region(grp, in)) return;
    }
  }

  // A node whose output has wider elements than its input (DequantizeLinear: int8 in, float32
  // out; a Cast up).
  bool widens(int k) const {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    if ((n.op != "DequantizeLinear" && n.op != "Cast") || n.inputs.empty() || n.inputs[0] < 0)
      return false;
    return g_.value(n.outputs[0]).dtype.bytes() > g_.value(n.inputs[0]).dtype.bytes();
  }

  // The only reader of node k's output, when it may compute k's value where it reads it, once per
  // use: a pointwise node of the same shape, or a reduction (a pooling window reads an element a
  // few times; a dequantization is a subtract and a multiply). -1 otherwise.
  int reader_to_join(int k) const {
    int v = g_.nodes[static_cast<size_t>(k)].outputs[0];
    int r = sole_reader(v);
    if (r < 0 || !single_output(r) || waits_[static_cast<size_t>(r)]) return -1;
    const Node& reader = g_.nodes[static_cast<size_t>(r)];
    OpPattern p = pattern_of(reader);
    if (p == OpPattern::kReduction) return r;
    return is_pointwise(p) && g_.value(reader.outputs[0]).shape == g_.value(v).shape ? r : -1;
  }

  // A widening node that ends a group whose reader is in another group moves to the reader's
  // group: the value between the two kernels is then the narrow one (int8 rather than float32, a
  // quarter of the bytes), and the reader dequantizes as it reads.
  void move_widening_tails() {
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      int grp = group_[k], kk = static_cast<int>(k);
      auto& members = members_[static_cast<size_t>(grp)];
      if (members.size() < 2 || last_of(grp) != kk || !widens(kk)) continue;
      int r = reader_to_join(kk);
      int in = g_.nodes[k].inputs[0];
      int p = in >= 0 ? producer_[static_cast<size_t>(in)] : -1;
      // The group must still end in the node that made k's input, its new result.
      if (r < 0 || group_[static_cast<size_t>(r)] == grp || p < 0 ||
          members[members.size() - 2] != p || scale_made_in(kk, grp))
        continue;
      members.pop_back();
      int into = group_[static_cast<size_t>(r)];
      group_[k] = into;
      auto& dst = members_[static_cast<size_t>(into)];
      dst.insert(std::upper_bound(dst.begin(), dst.end(), kk), kk);
    }
  }

  // Whether an input of node k after its first (a dequantization's scale or zero point, a
  // constant in a quantized model) is made in group grp, which k then could not leave.
  bool scale_made_in(int k, int grp) const {
    const auto& ins = g_.nodes[static_cast<size_t>(k)].inputs;
    for (size_t i = 1; i < ins.size(); ++i) {
      int p = ins[i] >= 0 ? producer_[static_cast<size_t>(ins[i])] : -1;
      if (p >= 0 && group_[static_cast<size_t>(p)] == grp) return true;
    }
    return false;
  }

  // A group of pointwise nodes alone (their input had other readers) whose result one pointwise
  // node of another group reads, at the same shape: it joins that group, which computes its
  // values once each where they are needed, and the value between them is never stored. (The
  // reader's group ends downstream of the reader, so the merge makes no cycle.)
  void join_pointwise_readers() {
    for (size_t k = g_.nodes.size(); k-- > 0;) {
      int grp = group_[k];
      if (last_of(grp) != static_cast<int>(k)) continue;
      int r = reader_to_join(static_cast<int>(k));
      if (r < 0 || group_[static_cast<size_t>(r)] == grp ||
          pattern_of(g_.nodes[static_cast<size_t>(r)]) == OpPattern::kReduction)
        continue;
      bool lone_pointwise = true;
      for (int m : members_[static_cast<size_t>(grp)])
        lone_pointwise = lone_pointwise &&
                         is_pointwise(pattern_of(g_.nodes[static_cast<size_t>(m)])) &&
                         single_output(m) && !waits_[static_cast<size_t>(m)];
      if (lone_pointwise) merge(group_[static_cast<size_t>(r)], grp);
    }
  }

  // The group whose result `value` is (made by its last node), unless that is a view.
  int result_group(int value) const {
    if (value < 0) return -1;
    int p = producer_[static_cast<size_t>(value)];
    if (p < 0 || !single_output(p)) return -1;
    int grp = group_[static_cast<size_t>(p)];
    return group_is_view(grp) || last_of(grp) != p ? -1 : grp;
  }

  // A value read by several pointwise nodes (GELU's x in x * 0.5 * (1 + erf(x / sqrt 2))): the
  // pointwise nodes after it, taken in graph order until their values close into one exit,
  // join its group together. Refused when a node would read a value made after the group (a
  // cycle) or anything but a pointwise node is reached first.
  bool absorb_region(int grp, int value) {
    constexpr size_t kMaxRegion = 32;
    int group_last = last_of(grp);
    std::vector<int> region;
    std::vector<int> open = {value};  // values with a reader outside the region (or graph outputs)
    auto in_region = [&](int node) {
      return std::find(region.begin(), region.end(), node) != region.end();
    };
    auto made_in_region = [&](int v) {
      return v >= 0 && in_region(producer_[static_cast<size_t>(v)]);
    };
    while (region.size() < kMaxRegion) {
      int next = -1;
      for (int v : open)
        for (int r : users_[static_cast<size_t>(v)])
          if (!in_region(r) && (next < 0 || r < next)) next = r;
      if (next < 0) return false;
      const Node& c = g_.nodes[static_cast<size_t>(next)];
      if (!is_pointwise(pattern_of(c)) || !single_output(next) ||
          waits_[static_cast<size_t>(next)] ||
          members_[static_cast<size_t>(group_[static_cast<size_t>(next)])].size() != 1)
        return false;
      for (int in : c.inputs)
        if (in >= 0 && in != value && !made_in_region(in) &&
            producer_[static_cast<size_t>(in)] > group_last)
          return false;
      region.push_back(next);
      open.push_back(c.outputs[0]);
      std::erase_if(open, [&](int v) {
        if (is_output_[static_cast<size_t>(v)]) return false;
        const auto& u = users_[static_cast<size_t>(v)];
        return std::all_of(u.begin(), u.end(), in_region);
      });
      if (open.size() == 1 && open[0] != value) {
        for (int node : region) merge(grp, group_[static_cast<size_t>(node)]);
        return true;
      }
    }
    return false;
  }

  // Groups without an anchor whose result only this anchor's group reads, and recursively the
  // groups feeding those: injective ops and views (a transpose, a reshape), and for a reduction
  // anchor pointwise ops too (a softmax's scale and mask). Elementwise math before a conv or
  // matmul stays out: it would be recomputed for every output that reads it.
  void take_prologues(int k) {
    int into = group_[static_cast<size_t>(k)];
    bool reduction = pattern_of(g_.nodes[static_cast<size_t>(k)]) == OpPattern::kReduction;
    std::vector<int> work = g_.nodes[static_cast<size_t>(k)].inputs;
    while (!work.empty()) {
      int in = work.back();
      work.pop_back();
      int reader = sole_reader(in);
      if (reader < 0 || group_[static_cast<size_t>(reader)] != into) continue;
      int p = producer_[static_cast<size_t>(in)];
      if (p < 0 || !single_output(p)) continue;
      int grp = group_[static_cast<size_t>(p)];
      if (grp == into || has_anchor(grp) || last_of(grp) != p) continue;
      bool movable = true;
      for (int m : members_[static_cast<size_t>(grp)]) {
        OpPattern pt = pattern_of(g_.nodes[static_cast<size_t>(m)]);
        movable = movable && single_output(m) &&
                  (pt == OpPattern::kInjective || pt == OpPattern::kView ||
                   (reduction && is_pointwise(pt)));
      }
      if (!movable) continue;
      for (int m : members_[static_cast<size_t>(grp)])
        for (int v : g_.nodes[static_cast<size_t>(m)].inputs) work.push_back(v);
      merge(into, grp);
    }
  }

  std::vector<FusedGroup> groups() const {
    std::vector<FusedGroup> out;
    for (size_t grp = 0; grp < members_.size(); ++grp) {
      const auto& m = members_[grp];
      if (m.empty()) continue;
      FusedGroup f;
      f.nodes = m;
      f.is_view = group_is_view(static_cast<int>(grp));
      std::string name = "fused";
      for (int n : m) {
        const Node& node = g_.nodes[static_cast<size_t>(n)];
        if (is_anchor(pattern_of(node)) && f.anchor < 0) f.anchor = n;
        name += '_';
        name += snake(node.op);
      }
      f.name = f.is_view ? snake(g_.nodes[static_cast<size_t>(m[0])].op) : name;
      out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(),
              [](const FusedGroup& a, const FusedGroup& b) { return a.last() < b.last(); });
    return out;
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
  std::vector<int> group_;
  std::vector<int> producer_;
  std::vector<bool> is_output_;
  std::vector<bool> waits_;
  std::vector<std::vector<int>> members_;
};

}  // namespace

std::vector<FusedGroup> fuse(const Graph& graph) {
  return Fuser(graph).run();
}

}  // namespace tyche::graph
