// The parser of index-notation formulas (a recursive descent over the lexer's tokens) and of
// their extents.
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

// A parsed subexpression with its tree height (bounded so later recursions are safe).
struct Parsed {
  IndexNotationExpr e;
  int height = 1;
};

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks) : src_(src), toks_(std::move(toks)) {}

  std::vector<IndexNotationStatement> parse_program() {
    std::vector<IndexNotationStatement> stmts;
    while (true) {
      while (peek().kind == Tok::kSemicolon) next();
      if (peek().kind == Tok::kEnd) break;
      if (stmts.size() == kMaxStatements)
        error_at(peek(), fmt::format("too many statements (limit {})", kMaxStatements));
      stmts.push_back(parse_statement());
      if (peek().kind != Tok::kSemicolon && peek().kind != Tok::kEnd)
        error_at(peek(),
                 "expected ';' or end of formula after a statement, found " + describe(peek()));
    }
    if (stmts.empty())
      error_at(peek(), "expected a statement such as 'C[i] = A[i]', found end of formula");
    return stmts;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void error_at(const Token& t, const std::string& what) const {
    fail(fmt::format("formula column {}: {}", t.column, what));
  }
  const Token& expect(Tok kind, const std::string& what) {
    if (peek().kind != kind) error_at(peek(), "expected " + what + ", found " + describe(peek()));
    return next();
  }
  // Source text between two tokens (inclusive), for messages.
  std::string text_between(const Token& first, const Token& last) const {
    size_t b = static_cast<size_t>(first.column - 1);
    size_t e = static_cast<size_t>(last.end_column() - 1);
    return std::string(src_.substr(b, e > b ? e - b : 0));
  }
  void enter(const Token& at) {
    if (++depth_ > kMaxDepth)
      error_at(at, fmt::format("expression nested too deeply (limit {})", kMaxDepth));
  }
  void check_height(const Token& at, int height) const {
    if (height > kMaxDepth)
      error_at(at, fmt::format("expression nested too deeply (limit {})", kMaxDepth));
  }

  IndexNotationStatement parse_statement() {
    IndexNotationStatement st;
    const Token& name = expect(Tok::kIdent, "a tensor name");
    st.output = std::string(name.text);
    st.column = name.column;
    expect(Tok::kLBracket, fmt::format("'[' after '{}'", st.output));
    if (peek().kind != Tok::kRBracket) {
      while (true) {
        const Token& idx =
            expect(Tok::kIdent, fmt::format("an index name on the left of '{}'", st.output));
        std::string n(idx.text);
        if (std::find(st.axes.begin(), st.axes.end(), n) != st.axes.end())
          error_at(idx, fmt::format("index '{}' appears twice on the left of '{}'", n, st.output));
        st.axes.push_back(n);
        if (peek().kind == Tok::kComma) {
          next();
          continue;
        }
        if (peek().kind != Tok::kRBracket)
          error_at(
              peek(),
              fmt::format("expected ',' or ']' after left-hand index '{}' (left-hand indices are "
                          "plain names), found {}",
                          n, describe(peek())));
        break;
      }
    }
    next();  // ']'
    const Token& op = peek();
    if (op.kind == Tok::kAssign) {
      st.assign = AssignOp::kAssign;
      next();
    } else if (op.kind == Tok::kPlusAssign) {
      st.assign = AssignOp::kAddAssign;
      next();
    } else if (op.kind == Tok::kIdent && (op.text == "max" || op.text == "min") &&
               peek(1).kind == Tok::kAssign) {
      st.assign = op.text == "max" ? AssignOp::kMaxAssign : AssignOp::kMinAssign;
      next();
      next();
    } else {
      error_at(op, fmt::format("expected '=', '+=', 'max=' or 'min=' after '{}[...]', found {}",
                               st.output, describe(op)));
    }
    st.rhs = parse_expr().e;
    return st;
  }

  static Parsed make_node(IndexNotationOp op, int column, std::vector<Parsed> args) {
    Parsed p;
    p.e.op = op;
    p.e.column = column;
    int h = 0;
    for (Parsed& a : args) {
      h = std::max(h, a.height);
      p.e.args.push_back(std::move(a.e));
    }
    p.height = h + 1;
    return p;
  }

  Parsed parse_expr() {
    Parsed lhs = parse_term();
    while (peek().kind == Tok::kPlus || peek().kind == Tok::kMinus) {
      const Token& op = next();
      std::vector<Parsed> args;
      args.push_back(std::move(lhs));
      args.push_back(parse_term());
      lhs = make_node(op.kind == Tok::kPlus ? IndexNotationOp::kAdd : IndexNotationOp::kSub,
                      op.column, std::move(args));
      check_height(op, lhs.height);
    }
    return lhs;
  }

  Parsed parse_term() {
    Parsed lhs = parse_unary();
    while (peek().kind == Tok::kStar || peek().kind == Tok::kSlash) {
      const Token& op = next();
      std::vector<Parsed> args;
      args.push_back(std::move(lhs));
      args.push_back(parse_unary());
      lhs = make_node(op.kind == Tok::kStar ? IndexNotationOp::kMul : IndexNotationOp::kDiv,
                      op.column, std::move(args));
      check_height(op, lhs.height);
    }
    return lhs;
  }

  Parsed parse_unary() {
    enter(peek());
    Parsed r;
    if (peek().kind == Tok::kMinus) {
      const Token& op = next();
      std::vector<Parsed> args;
      args.push_back(parse_unary());
      r = make_node(IndexNotationOp::kNeg, op.column, std::move(args));
      check_height(op, r.height);
    } else {
      r = parse_primary();
    }
    --depth_;
    return r;
  }

  Parsed parse_primary() {
    const Token& t = peek();
    if (t.kind == Tok::kInt || t.kind == Tok::kFloat) {
      next();
      Parsed p;
      p.e.op = IndexNotationOp::kNumber;
      p.e.value = t.float_value;
      p.e.column = t.column;
      return p;
    }
    if (t.kind == Tok::kLParen) {
      next();
      Parsed p = parse_expr();
      expect(Tok::kRParen, "')'");
      return p;
    }
    if (t.kind == Tok::kIdent) {
      next();
      if (peek().kind == Tok::kLBracket) return parse_access(t);
      if (peek().kind == Tok::kLParen) return parse_call(t);
      error_at(peek(),
               fmt::format("expected '[' or '(' after '{}', found {}", t.text, describe(peek())));
    }
    error_at(t, "expected a number, a tensor access, a function call or '(', found " + describe(t));
  }

  Parsed parse_call(const Token& name) {
    const FuncInfo* info = nullptr;
    for (const FuncInfo& f : kFuncs)
      if (name.text == f.name) info = &f;
    if (!info)
      error_at(
          name,
          fmt::format("unknown function '{}' (known: max, min, exp, log, sqrt, tanh, sigmoid, abs)",
                      name.text));
    next();  // '('
    std::vector<Parsed> args;
    if (peek().kind != Tok::kRParen) {
      while (true) {
        args.push_back(parse_expr());
        if (peek().kind == Tok::kComma) {
          next();
          continue;
        }
        if (peek().kind != Tok::kRParen)
          error_at(peek(), fmt::format("expected ',' or ')' in the arguments of '{}', found {}",
                                       name.text, describe(peek())));
        break;
      }
    }
    next();  // ')'
    if (static_cast<int>(args.size()) != info->arity)
      error_at(name, fmt::format("'{}' takes {} argument{}, found {}", info->name, info->arity,
                                 info->arity == 1 ? "" : "s", args.size()));
    Parsed p = make_node(IndexNotationOp::kCall, name.column, std::move(args));
    p.e.func = info->func;
    check_height(name, p.height);
    return p;
  }

  Parsed parse_access(const Token& name) {
    Parsed p;
    p.e.op = IndexNotationOp::kAccess;
    p.e.tensor = std::string(name.text);
    p.e.column = name.column;
    next();  // '['
    if (peek().kind != Tok::kRBracket) {
      while (true) {
        const Token& first = peek();
        Affine a = parse_index_sum();
        const Token& last = toks_[pos_ - 1];
        AffineIndex idx;
        idx.terms = std::move(a.terms);
        idx.offset = a.offset;
        idx.text = text_between(first, last);
        idx.column = first.column;
        p.e.indices.push_back(std::move(idx));
        if (peek().kind == Tok::kComma) {
          next();
          continue;
        }
        if (peek().kind == Tok::kSlash)
          error_at(
              peek(),
              "'/' is not allowed in an index expression (indices are affine: integer multiples "
              "of indices plus a constant)");
        if (peek().kind != Tok::kRBracket)
          error_at(peek(), fmt::format("expected ',' or ']' after an index of '{}', found {}",
                                       name.text, describe(peek())));
        break;
      }
    }
    next();  // ']'
    return p;
  }

  // Index expressions: sums of integer multiples of index names, checked to stay affine.
  Affine parse_index_sum() {
    const Token& first = peek();
    Affine lhs = parse_index_product();
    while (peek().kind == Tok::kPlus || peek().kind == Tok::kMinus) {
      bool minus = next().kind == Tok::kMinus;
      Affine rhs = parse_index_product();
      if (minus) rhs = scale(rhs, -1, first);
      lhs = add(std::move(lhs), rhs, first);
    }
    return lhs;
  }

  Affine parse_index_product() {
    const Token& first = peek();
    Affine lhs = parse_index_unary();
    while (peek().kind == Tok::kStar) {
      next();
      Affine rhs = parse_index_unary();
      if (!lhs.is_const() && !rhs.is_const())
        error_at(first,
                 fmt::format("index expression '{}' is not affine (it multiplies two indices)",
                             text_between(first, toks_[pos_ - 1])));
      lhs = lhs.is_const() ? scale(rhs, lhs.offset, first) : scale(lhs, rhs.offset, first);
    }
    return lhs;
  }

  Affine parse_index_unary() {
    const Token& t = peek();
    enter(t);
    Affine r;
    if (t.kind == Tok::kMinus) {
      next();
      r = scale(parse_index_unary(), -1, t);
    } else if (t.kind == Tok::kLParen) {
      next();
      r = parse_index_sum();
      expect(Tok::kRParen, "')' in an index expression");
    } else if (t.kind == Tok::kInt) {
      next();
      r.offset = t.int_value;
    } else if (t.kind == Tok::kIdent) {
      next();
      if (peek().kind == Tok::kLBracket || peek().kind == Tok::kLParen)
        error_at(peek(),
                 fmt::format("an index expression cannot contain a tensor access or call ('{}{}')",
                             t.text, peek().text));
      r.terms.push_back(IndexTerm{std::string(t.text), 1});
    } else if (t.kind == Tok::kFloat) {
      error_at(t, "expected an integer in an index expression, found " + describe(t));
    } else {
      error_at(t, "expected an index name, an integer or '(' in an index expression, found " +
                      describe(t));
    }
    --depth_;
    return r;
  }

  [[noreturn]] void overflow(const Token& at) const {
    error_at(at, "integer overflow in an index expression");
  }
  Affine scale(Affine a, int64_t k, const Token& at) const {
    if (mul_overflows(a.offset, k, &a.offset)) overflow(at);
    for (IndexTerm& t : a.terms)
      if (mul_overflows(t.coeff, k, &t.coeff)) overflow(at);
    return a;
  }
  Affine add(Affine a, const Affine& b, const Token& at) const {
    if (add_overflows(a.offset, b.offset, &a.offset)) overflow(at);
    for (const IndexTerm& t : b.terms) {
      auto it = std::find_if(a.terms.begin(), a.terms.end(),
                             [&](const IndexTerm& x) { return x.index == t.index; });
      if (it == a.terms.end())
        a.terms.push_back(t);
      else if (add_overflows(it->coeff, t.coeff, &it->coeff))
        overflow(at);
    }
    return a;
  }

  std::string_view src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<IndexNotationStatement> parse_statements(std::string_view formula) {
  Parser parser(formula, lex_formula(formula));
  return parser.parse_program();
}

// ---------------------------------------------------------------------------------------------
// Extents: "i=1024, j=512"

std::vector<ExtentEntry> parse_extents(std::string_view s) {
  std::vector<ExtentEntry> out;
  AssignmentList list(s, "extents", "an index name", "extents");
  while (list.next()) {
    const std::string& name = list.name();
    // The value is everything up to the next separator, so "1.5" or "4k" is reported whole.
    std::string_view value = list.value(+[](char c) {
      return c != ',' && c != '=' && !std::isspace(static_cast<unsigned char>(c));
    });
    size_t value_pos = list.value_pos();
    if (value.empty())
      list.fail_at(value_pos, fmt::format("expected an extent for '{}', found {}", name,
                                          list.found(value_pos)));
    bool negative = value[0] == '-';
    std::string_view digits = negative ? value.substr(1) : value;
    bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), is_digit);
    bool printable =
        std::all_of(value.begin(), value.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (!all_digits)
      list.fail_at(value_pos,
                   fmt::format("expected an integer extent for '{}', found {}", name,
                               printable ? fmt::format("'{}'", value) : describe_char(value[0])));
    int64_t v = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if ((r.ec != std::errc() || v > kMaxIndex) && !negative)
      list.fail_at(value_pos,
                   fmt::format("extent of '{}' is too large (at most {})", name, kMaxIndex));
    if (negative || v == 0)
      list.fail_at(value_pos,
                   fmt::format("extent of '{}' must be positive, found {}", name, value));
    for (const ExtentEntry& e : out)
      if (e.name == name)
        fail(fmt::format("extents column {}: duplicate extent for '{}' (first at column {})",
                         list.name_column(), name, e.column));
    out.push_back(ExtentEntry{name, v, list.name_column()});
  }
  return out;
}

}  // namespace tyche::te::notation
