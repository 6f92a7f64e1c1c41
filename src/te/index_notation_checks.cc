// The checks that turn parsed statements into an index-notation program: roles and shapes of
// the tensors, reduction indices, extents.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "support/error.h"
#include "te/index_notation_syntax.h"

namespace tyche::te::notation {

namespace {

[[noreturn]] void fail_at(int column, const std::string& what) {
  fail(fmt::format("formula column {}: {}", column, what));
}

template <typename F>
void for_each_access(const IndexNotationExpr& e, F&& f) {
  if (e.op == IndexNotationOp::kAccess) f(e);
  for (const IndexNotationExpr& a : e.args) for_each_access(a, f);
}

struct TensorUse {
  size_t ndim = 0;
  int column = 0;    // first appearance
  int written = -1;  // statement index
  int write_column = 0;
  int read_column = 0;  // first read
  int first_read_stmt = -1;
  int last_read_stmt = -1;
};

void push_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// First appearances, reads and writes of every name: what the checks and the roles rest on.
struct Usage {
  std::map<std::string, TensorUse> uses;
  std::vector<std::string> tensor_order, index_order;
  std::map<std::string, int> index_column;

  // A tensor's use must agree with its first one on the number of indices.
  TensorUse& note_tensor(const std::string& name, size_t ndim, int column) {
    auto [it, inserted] = uses.try_emplace(name);
    if (inserted) {
      it->second.ndim = ndim;
      it->second.column = column;
      tensor_order.push_back(name);
    } else if (it->second.ndim != ndim) {
      fail_at(column, fmt::format("'{}' is used with {} ind{} here but {} at column {}", name, ndim,
                                  ndim == 1 ? "ex" : "ices", it->second.ndim, it->second.column));
    }
    return it->second;
  }
  // The first appearance orders the extents and locates a tensor/index clash.
  void note_index(const std::string& name, int column) {
    if (index_column.try_emplace(name, column).second) index_order.push_back(name);
  }
};

// Statement `si`'s names; its right-hand indices are where its reduction indices come from.
std::vector<std::string> note_reads(Usage& usage, const IndexNotationStatement& st, int si) {
  for (const std::string& a : st.axes) usage.note_index(a, st.column);
  usage.note_tensor(st.output, st.axes.size(), st.column);
  std::vector<std::string> rhs_indices;
  for_each_access(st.rhs, [&](const IndexNotationExpr& acc) {
    TensorUse& u = usage.note_tensor(acc.tensor, acc.indices.size(), acc.column);
    if (u.first_read_stmt < 0) {
      u.first_read_stmt = si;
      u.read_column = acc.column;
    }
    u.last_read_stmt = si;
    if (acc.tensor == st.output)
      fail_at(acc.column, fmt::format("'{}' is read in the statement that writes it", acc.tensor));
    for (const AffineIndex& idx : acc.indices)
      for (const IndexTerm& t : idx.terms) {
        usage.note_index(t.index, idx.column);
        push_unique(rhs_indices, t.index);
      }
  });
  return rhs_indices;
}

// Each tensor is written once, and not read by an earlier statement.
void note_write(Usage& usage, const IndexNotationStatement& st, int si) {
  TensorUse& w = usage.uses[st.output];
  if (w.written >= 0)
    fail_at(st.column,
            fmt::format("'{}' is written twice (first at column {})", st.output, w.write_column));
  if (w.first_read_stmt >= 0 && w.first_read_stmt < si)
    fail_at(w.read_column,
            fmt::format("'{}' is read before it is written (at column {})", st.output, st.column));
  w.written = si;
  w.write_column = st.column;
}

// Right-hand indices not on the left reduce; an accumulating assignment needs at least one.
void set_reduction(IndexNotationStatement& st, const std::vector<std::string>& rhs_indices) {
  for (const std::string& i : rhs_indices)
    if (std::find(st.axes.begin(), st.axes.end(), i) == st.axes.end()) st.reduce_axes.push_back(i);
  st.reducer = st.assign == AssignOp::kMaxAssign   ? ReducerKind::kMax
               : st.assign == AssignOp::kMinAssign ? ReducerKind::kMin
                                                   : ReducerKind::kSum;
  if (st.assign != AssignOp::kAssign && st.reduce_axes.empty())
    fail_at(st.column,
            fmt::format("'{}' on '{}' needs a reduction index (an index that appears only on the "
                        "right); use '=' for an element-wise statement",
                        assign_op_name(st.assign), st.output));
}

// Every statement's names, in order, so that each check can point at a first appearance.
Usage collect_usage(std::vector<IndexNotationStatement>& stmts) {
  Usage usage;
  for (size_t s = 0; s < stmts.size(); ++s) {
    IndexNotationStatement& st = stmts[s];
    int si = static_cast<int>(s);
    std::vector<std::string> rhs_indices = note_reads(usage, st, si);
    note_write(usage, st, si);
    set_reduction(st, rhs_indices);
  }
  for (const std::string& t : usage.tensor_order)
    if (usage.index_column.count(t))
      fail_at(usage.uses.at(t).column,
              fmt::format("'{}' is used both as a tensor and as an index", t));
  return usage;
}

// Extents must name exactly the indices of the formula.
std::map<std::string, int64_t> check_extents(const Usage& usage,
                                             const std::vector<ExtentEntry>& extents) {
  std::map<std::string, int64_t> extent_of;
  for (const ExtentEntry& e : extents) {
    if (!usage.index_column.count(e.name))
      fail(fmt::format("extents: '{}' is not an index of the formula", e.name));
    extent_of[e.name] = e.value;
  }
  for (const std::string& i : usage.index_order)
    if (!extent_of.count(i)) fail(fmt::format("extents: no extent for index '{}'", i));
  return extent_of;
}

// The index's largest value, refused where the IR's 32-bit index arithmetic could go wrong.
int64_t index_top(const AffineIndex& idx, const std::string& tensor,
                  const std::map<std::string, int64_t>& extent_of) {
  // 128-bit bounds: coefficients are arbitrary int64, extents are below 2^31. `mag` bounds
  // every partial sum the int32 index arithmetic of the IR can form.
  __int128 lo = idx.offset, hi = idx.offset;
  __int128 mag = idx.offset < 0 ? -__int128(idx.offset) : __int128(idx.offset);
  bool big_coeff = false;
  for (const IndexTerm& t : idx.terms) {
    __int128 span = __int128(t.coeff) * (extent_of.at(t.index) - 1);
    (span < 0 ? lo : hi) += span;
    mag += span < 0 ? -span : span;
    big_coeff |= t.coeff > kMaxIndex || t.coeff < -kMaxIndex;
  }
  if (lo < 0)
    fail_at(idx.column, fmt::format("index '{}' of '{}' can be negative", idx.text, tensor));
  if (mag > kMaxIndex || big_coeff)
    fail_at(idx.column,
            fmt::format("index '{}' of '{}' exceeds the 32-bit index range", idx.text, tensor));
  return static_cast<int64_t>(hi);
}

// Shapes: written tensors from their left-hand indices, inputs from the index ranges.
std::map<std::string, std::vector<int64_t>> infer_shapes(
    const std::vector<IndexNotationStatement>& stmts, const Usage& usage,
    const std::map<std::string, int64_t>& extent_of) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const IndexNotationStatement& st : stmts) {
    std::vector<int64_t>& sh = shapes[st.output];
    for (const std::string& a : st.axes) sh.push_back(extent_of.at(a));
  }
  for (const IndexNotationStatement& st : stmts) {
    for_each_access(st.rhs, [&](const IndexNotationExpr& acc) {
      const TensorUse& u = usage.uses.at(acc.tensor);
      std::vector<int64_t>& sh =
          shapes.try_emplace(acc.tensor, std::vector<int64_t>(acc.indices.size(), 0)).first->second;
      for (size_t d = 0; d < acc.indices.size(); ++d) {
        const AffineIndex& idx = acc.indices[d];
        int64_t top = index_top(idx, acc.tensor, extent_of);
        if (u.written >= 0) {
          if (top >= sh[d])
            fail_at(idx.column,
                    fmt::format("index '{}' of '{}' can reach {}, outside its extent {}", idx.text,
                                acc.tensor, top, sh[d]));
        } else {
          sh[d] = std::max(sh[d], top + 1);
        }
      }
    });
  }
  return shapes;
}

// Every tensor with its shape and role, and the program's inputs, intermediates and outputs.
void add_tensors(IndexNotationProgram& p, const std::vector<IndexNotationStatement>& stmts,
                 const Usage& usage, const std::map<std::string, std::vector<int64_t>>& shapes) {
  for (const std::string& name : usage.tensor_order) {
    const TensorUse& u = usage.uses.at(name);
    IndexNotationTensor t;
    t.name = name;
    t.shape = shapes.at(name);
    int64_t numel = 1;
    for (int64_t d : t.shape)
      if (mul_overflows(numel, d, &numel))
        fail_at(u.column, fmt::format("'{}' has too many elements", name));
    if (u.written < 0) {
      t.role = TensorRole::kInput;
      p.inputs.push_back(name);
    } else {
      t.role = u.first_read_stmt >= 0 ? TensorRole::kIntermediate : TensorRole::kOutput;
    }
    p.tensors.push_back(std::move(t));
  }
  for (const IndexNotationStatement& st : stmts) {
    if (usage.uses.at(st.output).first_read_stmt >= 0)
      p.intermediates.push_back(st.output);
    else
      p.outputs.push_back(st.output);
  }
}

}  // namespace

IndexNotationProgram analyze(std::vector<IndexNotationStatement> stmts,
                             const std::vector<ExtentEntry>& extents) {
  IndexNotationProgram p;
  Usage usage = collect_usage(stmts);
  std::map<std::string, int64_t> extent_of = check_extents(usage, extents);
  for (const std::string& i : usage.index_order) p.extents.emplace_back(i, extent_of.at(i));
  std::map<std::string, std::vector<int64_t>> shapes = infer_shapes(stmts, usage, extent_of);
  add_tensors(p, stmts, usage, shapes);
  p.statements = std::move(stmts);
  return p;
}

}  // namespace tyche::te::notation
