#include "graph/fusion.h"

#include <algorithm>
#include <cctype>

#include "graph/op_registry.h"

namespace tyche::graph {

namespace {

OpPattern pattern_of(const Node& n) { return find_op(n.op)->pattern; }

bool is_pointwise(OpPattern p) { return p == OpPattern::kElementwise || p == OpPattern::kBroadcast; }
bool is_anchor(OpPattern p) { return p == OpPattern::kAnchor || p == OpPattern::kReduction; }

std::string snake(const std::string& op) {
  std::string s;
  for (size_t i = 0; i < op.size(); ++i) {
    char c = op[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0 && !std::isupper(static_cast<unsigned char>(op[i - 1]))) s += '_';
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

class Fuser {
 public:
  explicit Fuser(const Graph& g) : g_(g), users_(g.consumers()), group_(g.nodes.size()), producer_(g.values.size(), -1) {
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
      waits_[k] = reader.op == "Softmax" || (is_pointwise(pattern_of(reader)) && waits_[static_cast<size_t>(r)]);
    }
  }

  // A pointwise node joins the group producing one of its inputs when that input has no other
  // reader and is the group's result (the group's last node made it). An anchor's group first.
  void join_epilogue(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    bool waits = waits_[static_cast<size_t>(k)];
    if (!is_pointwise(pattern_of(n)) || !single_output(k) || group_[static_cast<size_t>(k)] != k) return;
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
    auto in_region = [&](int node) { return std::find(region.begin(), region.end(), node) != region.end(); };
    auto made_in_region = [&](int v) { return v >= 0 && in_region(producer_[static_cast<size_t>(v)]); };
    while (region.size() < kMaxRegion) {
      int next = -1;
      for (int v : open)
        for (int r : users_[static_cast<size_t>(v)])
          if (!in_region(r) && (next < 0 || r < next)) next = r;
      if (next < 0) return false;
      const Node& c = g_.nodes[static_cast<size_t>(next)];
      if (!is_pointwise(pattern_of(c)) || !single_output(next) || waits_[static_cast<size_t>(next)] ||
          members_[static_cast<size_t>(group_[static_cast<size_t>(next)])].size() != 1)
        return false;
      for (int in : c.inputs)
        if (in >= 0 && in != value && !made_in_region(in) && producer_[static_cast<size_t>(in)] > group_last) return false;
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
                  (pt == OpPattern::kInjective || pt == OpPattern::kView || (reduction && is_pointwise(pt)));
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
    std::sort(out.begin(), out.end(), [](const FusedGroup& a, const FusedGroup& b) { return a.last() < b.last(); });
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

std::vector<FusedGroup> fuse(const Graph& graph) { return Fuser(graph).run(); }

}  // namespace tyche::graph
