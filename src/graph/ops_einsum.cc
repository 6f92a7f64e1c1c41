// Einsum: the equation's output indexed by its letters, each element the sum over the other
// letters of the product of the operands. Ellipses broadcast as numpy's; a letter repeated in an
// operand takes its diagonal; without "->" the output is the ellipsis and the letters used once,
// in alphabetical order.
#include <algorithm>
#include <map>

#include "graph/op_registry.h"
#include "ir/op.h"

namespace tyche::graph::ops {

using ir::Expr;
using te::Tensor;

namespace {

// One operand's subscripts: letters, and -1 where its ellipsis stands.
using Term = std::vector<int>;
constexpr int kEllipsis = -1;

Term parse_term(ConvertContext& c, const std::string& text) {
  Term out;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (text.compare(i, 3, "...") != 0) c.fail(fmt::format("a lone '.' in '{}'", text));
      for (int t : out)
        if (t == kEllipsis) c.fail(fmt::format("two ellipses in '{}'", text));
      out.push_back(kEllipsis);
      i += 2;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      out.push_back(static_cast<unsigned char>(ch));
    } else {
      c.fail(fmt::format("'{}' is not a subscript", ch));
    }
  }
  return out;
}

size_t letters_in(const Term& t) {
  size_t n = 0;
  for (int s : t) n += s != kEllipsis;
  return n;
}

}  // namespace

std::vector<Tensor> einsum(ConvertContext& c) {
  std::string equation = c.node().get_string("equation", "");
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<Term> terms;
  size_t start = 0;
  for (size_t comma = lhs.find(',');; comma = lhs.find(',', start)) {
    terms.push_back(parse_term(c, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != c.num_inputs())
    c.fail(fmt::format("the equation has {} operands, the node {} inputs", terms.size(),
                       c.num_inputs()));
  DataType t = c.dtype(0);
  // Each letter's extent, and the broadcast ellipsis.
  std::map<int, int64_t> extent;
  size_t ell_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (c.dtype(k) != t) c.fail("the operands differ in type");
    const std::vector<int64_t>& s = c.shape(k);
    bool has_ellipsis = letters_in(terms[k]) != terms[k].size();
    if (s.size() < letters_in(terms[k]) || (!has_ellipsis && s.size() != terms[k].size()))
      c.fail(fmt::format("operand {} has rank {}, its subscripts name {}", k, s.size(),
                         letters_in(terms[k])));
    if (has_ellipsis) ell_rank = std::max(ell_rank, s.size() - letters_in(terms[k]));
  }
  std::vector<int64_t> ell(ell_rank, 1);
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::vector<int64_t>& s = c.shape(k);
    size_t e = s.size() - letters_in(terms[k]), d = 0;
    for (int sym : terms[k]) {
      if (sym == kEllipsis) {
        for (size_t j = 0; j < e; ++j) {
          int64_t& slot = ell[ell_rank - e + j];
          int64_t dim = s[d + j];
          if (slot != 1 && dim != 1 && slot != dim)
            c.fail(fmt::format("the ellipsis dimensions {} and {} do not broadcast", slot, dim));
          if (dim != 1) slot = dim;
        }
        d += e;
        continue;
      }
      auto [it, fresh] = extent.emplace(sym, s[d]);
      if (!fresh && it->second != s[d])
        c.fail(fmt::format("'{}' is {} in one operand and {} in another", static_cast<char>(sym),
                           it->second, s[d]));
      ++d;
    }
  }
  Term out;
  if (arrow == std::string::npos) {
    std::map<int, int> uses;
    for (const Term& term : terms)
      for (int sym : term) ++uses[sym];
    if (ell_rank > 0) out.push_back(kEllipsis);
    for (auto [sym, n] : uses)
      if (sym != kEllipsis && n == 1) out.push_back(sym);
  } else {
    out = parse_term(c, equation.substr(arrow + 2));
    for (int sym : out)
      if (sym != kEllipsis && !extent.count(sym))
        c.fail(fmt::format("the output's '{}' is in no operand", static_cast<char>(sym)));
  }
  std::vector<int64_t> out_shape;
  for (int sym : out) {
    if (sym == kEllipsis)
      out_shape.insert(out_shape.end(), ell.begin(), ell.end());
    else
      out_shape.push_back(extent[sym]);
  }
  std::vector<int> reduced;
  for (auto [sym, n] : extent)
    if (std::find(out.begin(), out.end(), sym) == out.end()) reduced.push_back(sym);
  std::vector<ir::IterVar> axes;
  for (int sym : reduced)
    axes.push_back(te::reduce_axis(extent[sym], fmt::format("r{}", static_cast<char>(sym))));
  bool out_has_ellipsis = std::find(out.begin(), out.end(), kEllipsis) != out.end();
  if (ell_rank > 0 && !out_has_ellipsis) {
    // The ellipsis dimensions summed too.
    for (size_t j = 0; j < ell_rank; ++j)
      axes.push_back(te::reduce_axis(ell[j], fmt::format("re{}", j)));
  }
  return {te::compute(
      out_shape,
      [&](const std::vector<ir::Var>& v) -> te::ComputeBody {
        std::map<int, Expr> at;
        std::vector<Expr> ell_at;
        size_t d = 0;
        for (int sym : out) {
          if (sym == kEllipsis) {
            for (size_t j = 0; j < ell_rank; ++j) ell_at.push_back(v[d++]);
          } else {
            at[sym] = v[d++];
          }
        }
        for (size_t j = 0; j < reduced.size(); ++j) at[reduced[j]] = axes[j].var;
        if (ell_rank > 0 && !out_has_ellipsis)
          for (size_t j = 0; j < ell_rank; ++j) ell_at.push_back(axes[reduced.size() + j].var);
        Expr product;
        for (size_t k = 0; k < terms.size(); ++k) {
          const std::vector<int64_t>& s = c.shape(k);
          size_t e = s.size() - letters_in(terms[k]);
          std::vector<Expr> idx;
          for (int sym : terms[k]) {
            if (sym != kEllipsis) {
              idx.push_back(at[sym]);
              continue;
            }
            for (size_t j = 0; j < e; ++j) {
              size_t dim = idx.size();
              idx.push_back(s[dim] == 1 && ell[ell_rank - e + j] != 1 ? Expr(0)
                                                                      : ell_at[ell_rank - e + j]);
            }
          }
          Expr x = c.input(k)(idx);
          product = k == 0 ? x : product * x;
        }
        if (axes.empty()) return product;
        return te::sum(product, axes);
      },
      c.name("einsum"))};
}

}  // namespace tyche::graph::ops
