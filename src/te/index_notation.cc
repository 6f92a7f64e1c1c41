#include "te/index_notation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "support/error.h"

namespace tyche::te {

namespace {

// Deeper expressions are rejected so that the recursive parser, printer and evaluators can never
// exhaust the stack, whatever the input.
constexpr int kMaxDepth = 200;
// Likewise for chains of statements (the IR's dataflow graph is walked recursively).
constexpr size_t kMaxStatements = 1000;
// Index arithmetic in the IR is int32, so every index value (and every partial sum of one) must
// fit in it.
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

[[noreturn]] void fail(const std::string& msg) {
  throw InputError(msg);
}

// A character as a message shows it: printable ASCII quoted, anything else by its code, so a
// message stays on one line whatever the input holds.
std::string describe_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("character 0x{:02x}", u);
}

// ---------------------------------------------------------------------------------------------
// Lexer

// clang-format off
enum class Tok : uint8_t {
  kIdent, kInt, kFloat, kLBracket, kRBracket, kLParen, kRParen, kComma, kSemicolon, kPlus, kMinus,
  kStar, kSlash, kAssign, kPlusAssign, kEnd
};
// clang-format on

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;
  int column = 0;  // 1-based
  int64_t int_value = 0;
  double float_value = 0;
  int end_column() const { return column + static_cast<int>(text.size()); }
};

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::vector<Token> lex_formula(std::string_view s) {
  if (s.size() > static_cast<size_t>(std::numeric_limits<int>::max() / 2))
    fail("formula: too long");
  std::vector<Token> out;
  size_t i = 0;
  auto col = [](size_t p) { return static_cast<int>(p) + 1; };
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.column = col(i);
    size_t start = i;
    if (is_ident_start(c)) {
      while (i < s.size() && is_ident_char(s[i])) ++i;
      t.kind = Tok::kIdent;
    } else if (is_digit(c) || (c == '.' && i + 1 < s.size() && is_digit(s[i + 1]))) {
      bool is_float = false;
      while (i < s.size() && is_digit(s[i])) ++i;
      if (i < s.size() && s[i] == '.') {
        is_float = true;
        ++i;
        while (i < s.size() && is_digit(s[i])) ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        is_float = true;
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j >= s.size() || !is_digit(s[j]))
          fail(fmt::format("formula column {}: malformed number '{}'", t.column,
                           s.substr(start, j - start)));
        while (j < s.size() && is_digit(s[j])) ++j;
        i = j;
      }
      t.text = s.substr(start, i - start);
      const char* b = t.text.data();
      const char* e = b + t.text.size();
      if (is_float) {
        t.kind = Tok::kFloat;
        auto r = std::from_chars(b, e, t.float_value);
        if (r.ec != std::errc() || r.ptr != e ||
            !(std::abs(t.float_value) <= std::numeric_limits<float>::max()))
          fail(fmt::format("formula column {}: number '{}' does not fit in float32", t.column,
                           t.text));
      } else {
        t.kind = Tok::kInt;
        auto r = std::from_chars(b, e, t.int_value);
        if (r.ec != std::errc() || r.ptr != e)
          fail(fmt::format("formula column {}: integer '{}' is too large", t.column, t.text));
        t.float_value = static_cast<double>(t.int_value);
        if (!(std::abs(t.float_value) <= std::numeric_limits<float>::max()))
          fail(fmt::format("formula column {}: number '{}' does not fit in float32", t.column,
                           t.text));
      }
      out.push_back(t);
      continue;
    } else {
      ++i;
      // Single-character tokens; "+=" is the one two-character operator.
      static constexpr std::string_view kPunct = "[](),;-*/=+";
      static constexpr Tok kPunctTok[] = {
          Tok::kLBracket, Tok::kRBracket, Tok::kLParen, Tok::kRParen, Tok::kComma, Tok::kSemicolon,
          Tok::kMinus,    Tok::kStar,     Tok::kSlash,  Tok::kAssign, Tok::kPlus};
      size_t k = kPunct.find(c);
      if (k == std::string_view::npos)
        fail(fmt::format("formula column {}: unexpected {}", t.column, describe_char(c)));
      t.kind = kPunctTok[k];
      if (c == '+' && i < s.size() && s[i] == '=') {
        t.kind = Tok::kPlusAssign;
        ++i;
      }
    }
    t.text = s.substr(start, i - start);
    out.push_back(t);
  }
  Token end;
  end.column = col(s.size());
  out.push_back(end);
  return out;
}

std::string describe(const Token& t) {
  if (t.kind == Tok::kEnd) return "end of formula";
  return fmt::format("'{}'", t.text);
}

// ---------------------------------------------------------------------------------------------
// Affine index arithmetic (overflow-checked)

bool add_overflows(int64_t a, int64_t b, int64_t* r) {
  return __builtin_add_overflow(a, b, r);
}
bool mul_overflows(int64_t a, int64_t b, int64_t* r) {
  return __builtin_mul_overflow(a, b, r);
}

struct Affine {
  std::vector<IndexTerm> terms;
  int64_t offset = 0;
  bool is_const() const { return terms.empty(); }
};

// ---------------------------------------------------------------------------------------------
// Parser

struct FuncInfo {
  const char* name;
  IndexNotationFunc func;
  int arity;
  ir::ExprKind binary;  // arity 2
  ir::CallOp call;      // arity 1
};
constexpr FuncInfo kFuncs[] = {
    {"max", IndexNotationFunc::kMax, 2, ir::ExprKind::kMax, ir::CallOp::kExp},
    {"min", IndexNotationFunc::kMin, 2, ir::ExprKind::kMin, ir::CallOp::kExp},
    {"exp", IndexNotationFunc::kExp, 1, ir::ExprKind::kAdd, ir::CallOp::kExp},
    {"log", IndexNotationFunc::kLog, 1, ir::ExprKind::kAdd, ir::CallOp::kLog},
    {"sqrt", IndexNotationFunc::kSqrt, 1, ir::ExprKind::kAdd, ir::CallOp::kSqrt},
    {"tanh", IndexNotationFunc::kTanh, 1, ir::ExprKind::kAdd, ir::CallOp::kTanh},
    {"sigmoid", IndexNotationFunc::kSigmoid, 1, ir::ExprKind::kAdd, ir::CallOp::kSigmoid},
    {"abs", IndexNotationFunc::kAbs, 1, ir::ExprKind::kAdd, ir::CallOp::kAbs},
};
// IndexNotationOp::kAdd..kDiv in order.
constexpr ir::ExprKind kBinaryKinds[] = {ir::ExprKind::kAdd, ir::ExprKind::kSub, ir::ExprKind::kMul,
                                         ir::ExprKind::kDiv};

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

// ---------------------------------------------------------------------------------------------
// Extents: "i=1024, j=512"

struct ExtentEntry {
  std::string name;
  int64_t value;
  int column;
};

std::vector<ExtentEntry> parse_extents(std::string_view s) {
  std::vector<ExtentEntry> out;
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  auto col = [](size_t p) {
    return static_cast<int>(std::min<size_t>(p, std::numeric_limits<int>::max() - 1)) + 1;
  };
  auto found = [&](size_t p) {
    return p >= s.size() ? std::string("end of extents") : describe_char(s[p]);
  };
  auto err = [&](size_t p, const std::string& what) {
    fail(fmt::format("extents column {}: {}", col(p), what));
  };
  skip_ws();
  if (i == s.size()) return out;
  while (true) {
    skip_ws();
    size_t name_pos = i;
    if (i >= s.size() || !is_ident_start(s[i])) err(i, "expected an index name, found " + found(i));
    while (i < s.size() && is_ident_char(s[i])) ++i;
    std::string name(s.substr(name_pos, i - name_pos));
    skip_ws();
    if (i >= s.size() || s[i] != '=')
      err(i, fmt::format("expected '=' after '{}', found {}", name, found(i)));
    ++i;
    skip_ws();
    // The value is everything up to the next separator, so "1.5" or "4k" is reported whole.
    size_t value_pos = i;
    while (i < s.size() && s[i] != ',' && s[i] != '=' &&
           !std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    std::string_view value = s.substr(value_pos, i - value_pos);
    if (value.empty())
      err(value_pos, fmt::format("expected an extent for '{}', found {}", name, found(value_pos)));
    bool negative = value[0] == '-';
    std::string_view digits = negative ? value.substr(1) : value;
    bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), is_digit);
    bool printable =
        std::all_of(value.begin(), value.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (!all_digits)
      err(value_pos, fmt::format("expected an integer extent for '{}', found {}", name,
                                 printable ? fmt::format("'{}'", value) : describe_char(value[0])));
    int64_t v = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if ((r.ec != std::errc() || v > kMaxIndex) && !negative)
      err(value_pos, fmt::format("extent of '{}' is too large (at most {})", name, kMaxIndex));
    if (negative || v == 0)
      err(value_pos, fmt::format("extent of '{}' must be positive, found {}", name, value));
    for (const ExtentEntry& e : out)
      if (e.name == name)
        err(name_pos,
            fmt::format("duplicate extent for '{}' (first at column {})", name, e.column));
    out.push_back(ExtentEntry{name, v, col(name_pos)});
    skip_ws();
    if (i >= s.size()) break;
    if (s[i] != ',') err(i, "expected ',' between extents, found " + found(i));
    ++i;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Semantic analysis

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

IndexNotationProgram analyze(std::vector<IndexNotationStatement> stmts,
                             const std::vector<ExtentEntry>& extents) {
  IndexNotationProgram p;
  std::map<std::string, TensorUse> uses;
  std::vector<std::string> tensor_order, index_order;
  std::map<std::string, int> index_column;

  auto note_tensor = [&](const std::string& name, size_t ndim, int column) -> TensorUse& {
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
  };
  auto note_index = [&](const std::string& name, int column) {
    if (index_column.try_emplace(name, column).second) index_order.push_back(name);
  };

  for (size_t s = 0; s < stmts.size(); ++s) {
    IndexNotationStatement& st = stmts[s];
    int si = static_cast<int>(s);
    for (const std::string& a : st.axes) note_index(a, st.column);
    note_tensor(st.output, st.axes.size(), st.column);
    std::vector<std::string> rhs_indices;
    for_each_access(st.rhs, [&](const IndexNotationExpr& acc) {
      TensorUse& u = note_tensor(acc.tensor, acc.indices.size(), acc.column);
      if (u.first_read_stmt < 0) {
        u.first_read_stmt = si;
        u.read_column = acc.column;
      }
      u.last_read_stmt = si;
      if (acc.tensor == st.output)
        fail_at(acc.column,
                fmt::format("'{}' is read in the statement that writes it", acc.tensor));
      for (const AffineIndex& idx : acc.indices)
        for (const IndexTerm& t : idx.terms) {
          note_index(t.index, idx.column);
          push_unique(rhs_indices, t.index);
        }
    });
    TensorUse& w = uses[st.output];
    if (w.written >= 0)
      fail_at(st.column,
              fmt::format("'{}' is written twice (first at column {})", st.output, w.write_column));
    if (w.first_read_stmt >= 0 && w.first_read_stmt < si)
      fail_at(w.read_column, fmt::format("'{}' is read before it is written (at column {})",
                                         st.output, st.column));
    w.written = si;
    w.write_column = st.column;

    for (const std::string& i : rhs_indices)
      if (std::find(st.axes.begin(), st.axes.end(), i) == st.axes.end())
        st.reduce_axes.push_back(i);
    st.reducer = st.assign == AssignOp::kMaxAssign   ? ReducerKind::kMax
                 : st.assign == AssignOp::kMinAssign ? ReducerKind::kMin
                                                     : ReducerKind::kSum;
    if (st.assign != AssignOp::kAssign && st.reduce_axes.empty())
      fail_at(st.column,
              fmt::format("'{}' on '{}' needs a reduction index (an index that appears only on the "
                          "right); use '=' for an element-wise statement",
                          assign_op_name(st.assign), st.output));
  }
  for (const std::string& t : tensor_order)
    if (index_column.count(t))
      fail_at(uses[t].column, fmt::format("'{}' is used both as a tensor and as an index", t));

  // Extents must name exactly the indices of the formula.
  std::map<std::string, int64_t> extent_of;
  for (const ExtentEntry& e : extents) {
    if (!index_column.count(e.name))
      fail(fmt::format("extents: '{}' is not an index of the formula", e.name));
    extent_of[e.name] = e.value;
  }
  for (const std::string& i : index_order)
    if (!extent_of.count(i)) fail(fmt::format("extents: no extent for index '{}'", i));
  for (const std::string& i : index_order) p.extents.emplace_back(i, extent_of[i]);

  // Shapes: written tensors from their left-hand indices, inputs from the index ranges.
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const IndexNotationStatement& st : stmts) {
    std::vector<int64_t>& sh = shapes[st.output];
    for (const std::string& a : st.axes) sh.push_back(extent_of[a]);
  }
  for (const IndexNotationStatement& st : stmts) {
    for_each_access(st.rhs, [&](const IndexNotationExpr& acc) {
      const TensorUse& u = uses[acc.tensor];
      std::vector<int64_t>& sh =
          shapes.try_emplace(acc.tensor, std::vector<int64_t>(acc.indices.size(), 0)).first->second;
      for (size_t d = 0; d < acc.indices.size(); ++d) {
        const AffineIndex& idx = acc.indices[d];
        // 128-bit bounds: coefficients are arbitrary int64, extents are below 2^31. `mag` bounds
        // every partial sum the int32 index arithmetic of the IR can form.
        __int128 lo = idx.offset, hi = idx.offset;
        __int128 mag = idx.offset < 0 ? -__int128(idx.offset) : __int128(idx.offset);
        bool big_coeff = false;
        for (const IndexTerm& t : idx.terms) {
          __int128 span = __int128(t.coeff) * (extent_of[t.index] - 1);
          (span < 0 ? lo : hi) += span;
          mag += span < 0 ? -span : span;
          big_coeff |= t.coeff > kMaxIndex || t.coeff < -kMaxIndex;
        }
        if (lo < 0)
          fail_at(idx.column,
                  fmt::format("index '{}' of '{}' can be negative", idx.text, acc.tensor));
        if (mag > kMaxIndex || big_coeff)
          fail_at(idx.column, fmt::format("index '{}' of '{}' exceeds the 32-bit index range",
                                          idx.text, acc.tensor));
        auto top = static_cast<int64_t>(hi);
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

  for (const std::string& name : tensor_order) {
    const TensorUse& u = uses[name];
    IndexNotationTensor t;
    t.name = name;
    t.shape = shapes[name];
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
    if (uses[st.output].first_read_stmt >= 0)
      p.intermediates.push_back(st.output);
    else
      p.outputs.push_back(st.output);
  }
  p.statements = std::move(stmts);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Lowering to te

Expr affine_to_expr(const AffineIndex& idx, const std::unordered_map<std::string, Var>& vars) {
  Expr e;
  auto plus = [&](Expr t) { e = e.defined() ? e + t : t; };
  auto term = [&](const IndexTerm& t) -> Expr {
    const Var& v = vars.at(t.index);
    int64_t c = t.coeff < 0 ? -t.coeff : t.coeff;
    return c == 1 ? Expr(v) : v * ir::make_int(c);
  };
  for (const IndexTerm& t : idx.terms)
    if (t.coeff > 0) plus(term(t));
  if (idx.offset > 0) plus(ir::make_int(idx.offset));
  for (const IndexTerm& t : idx.terms)
    if (t.coeff < 0) e = e.defined() ? e - term(t) : ir::make_int(0) - term(t);
  if (idx.offset < 0) e = e.defined() ? e - ir::make_int(-idx.offset) : ir::make_int(idx.offset);
  return e.defined() ? e : ir::make_int(0);
}

Expr lower_expr(const IndexNotationExpr& e, const std::unordered_map<std::string, Tensor>& tensors,
                const std::unordered_map<std::string, Var>& vars) {
  auto arg = [&](size_t i) { return lower_expr(e.args[i], tensors, vars); };
  switch (e.op) {
    case IndexNotationOp::kNumber:
      return ir::make_float(e.value, kFloat32);
    case IndexNotationOp::kAccess: {
      std::vector<Expr> indices;
      for (const AffineIndex& idx : e.indices) indices.push_back(affine_to_expr(idx, vars));
      return tensors.at(e.tensor)(std::move(indices));
    }
    case IndexNotationOp::kNeg:
      return -arg(0);
    case IndexNotationOp::kCall:
      for (const FuncInfo& f : kFuncs)
        if (f.func == e.func)
          return f.arity == 2 ? ir::make_binary(f.binary, arg(0), arg(1))
                              : ir::call(f.call, {arg(0)});
      break;
    default:  // + - * /: float arithmetic, as make_binary builds it
      return ir::make_binary(
          kBinaryKinds[static_cast<int>(e.op) - static_cast<int>(IndexNotationOp::kAdd)], arg(0),
          arg(1));
  }
  throw InternalError("index notation: unknown expression node");
}

// ---------------------------------------------------------------------------------------------
// Printing

int precedence(const IndexNotationExpr& e) {
  IndexNotationOp o = e.op;
  if (o == IndexNotationOp::kAdd || o == IndexNotationOp::kSub) return 1;
  if (o == IndexNotationOp::kMul || o == IndexNotationOp::kDiv) return 2;
  return o == IndexNotationOp::kNeg ? 3 : 4;
}

// Coefficients and offsets of a checked program fit in int32, so negating them is safe.
std::string affine_string(const AffineIndex& idx) {
  std::string s;
  for (const IndexTerm& t : idx.terms) {
    int64_t c = t.coeff;
    if (s.empty()) {
      s = c == 1 ? t.index : c == -1 ? "-" + t.index : fmt::format("{}*{}", c, t.index);
    } else {
      int64_t m = c < 0 ? -c : c;
      s += c < 0 ? " - " : " + ";
      s += m == 1 ? t.index : fmt::format("{}*{}", m, t.index);
    }
  }
  if (s.empty()) return fmt::format("{}", idx.offset);
  if (idx.offset > 0) s += fmt::format(" + {}", idx.offset);
  if (idx.offset < 0) s += fmt::format(" - {}", -idx.offset);
  return s;
}

std::string expr_string(const IndexNotationExpr& e) {
  auto child = [&](size_t i, bool paren) {
    std::string s = expr_string(e.args[i]);
    return paren ? "(" + s + ")" : s;
  };
  int prec = precedence(e);
  switch (e.op) {
    case IndexNotationOp::kNumber: {
      // Shortest round-trip form, kept visibly floating point ("0.0", not "0").
      std::string n = fmt::format("{}", e.value);
      return n.find_first_of(".e") == std::string::npos ? n + ".0" : n;
    }
    case IndexNotationOp::kAccess: {
      std::string s = e.tensor + "[";
      for (size_t i = 0; i < e.indices.size(); ++i)
        s += (i ? ", " : "") + affine_string(e.indices[i]);
      return s + "]";
    }
    case IndexNotationOp::kAdd:
    case IndexNotationOp::kSub:
    case IndexNotationOp::kMul:
    case IndexNotationOp::kDiv: {
      const char* op = e.op == IndexNotationOp::kAdd   ? " + "
                       : e.op == IndexNotationOp::kSub ? " - "
                       : e.op == IndexNotationOp::kMul ? " * "
                                                       : " / ";
      return child(0, precedence(e.args[0]) < prec) + op + child(1, precedence(e.args[1]) <= prec);
    }
    case IndexNotationOp::kNeg:
      return "-" + child(0, precedence(e.args[0]) < 4);
    case IndexNotationOp::kCall: {
      std::string s = std::string(index_notation_func_name(e.func)) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + expr_string(e.args[i]);
      return s + ")";
    }
  }
  return "?";
}

}  // namespace

const char* index_notation_func_name(IndexNotationFunc f) {
  for (const FuncInfo& i : kFuncs)
    if (i.func == f) return i.name;
  return "?";
}

const char* assign_op_name(AssignOp op) {
  static const char* const kNames[] = {"=", "+=", "max=", "min="};
  return kNames[static_cast<int>(op)];
}

int64_t IndexNotationProgram::extent(std::string_view index) const {
  for (const auto& [name, e] : extents)
    if (name == index) return e;
  throw_error("index notation: no index '{}'", index);
}

const IndexNotationTensor& IndexNotationProgram::tensor(std::string_view name) const {
  for (const IndexNotationTensor& t : tensors)
    if (t.name == name) return t;
  throw_error("index notation: no tensor '{}'", name);
}

std::vector<std::vector<int64_t>> IndexNotationProgram::input_shapes() const {
  std::vector<std::vector<int64_t>> r;
  for (const std::string& n : inputs) r.push_back(tensor(n).shape);
  return r;
}

std::vector<std::vector<int64_t>> IndexNotationProgram::output_shapes() const {
  std::vector<std::vector<int64_t>> r;
  for (const std::string& n : outputs) r.push_back(tensor(n).shape);
  return r;
}

IndexNotationProgram parse_index_notation(std::string_view formula, std::string_view extents) {
  Parser parser(formula, lex_formula(formula));
  std::vector<IndexNotationStatement> stmts = parser.parse_program();
  return analyze(std::move(stmts), parse_extents(extents));
}

ir::PrimFunc to_prim_func(const IndexNotationProgram& program, std::string name) {
  std::unordered_map<std::string, Tensor> tensors;
  std::vector<Tensor> args;
  for (const std::string& in : program.inputs) {
    Tensor t = placeholder(program.tensor(in).shape, kFloat32, in);
    tensors.emplace(in, t);
    args.push_back(t);
  }
  for (const IndexNotationStatement& st : program.statements) {
    std::vector<IterVar> reduce_axes;
    for (const std::string& r : st.reduce_axes)
      reduce_axes.push_back(reduce_axis(program.extent(r), r));
    std::vector<int64_t> shape;
    for (const std::string& a : st.axes) shape.push_back(program.extent(a));
    auto body = [&](const std::vector<Var>& axis) -> ComputeBody {
      std::unordered_map<std::string, Var> vars;
      for (size_t i = 0; i < axis.size(); ++i) vars.emplace(st.axes[i], axis[i]);
      for (const IterVar& iv : reduce_axes) vars.emplace(iv.var.name(), iv.var);
      Expr value = lower_expr(st.rhs, tensors, vars);
      if (!st.is_reduction()) return value;
      switch (st.reducer) {
        case ReducerKind::kMax:
          return te::max(value, reduce_axes);
        case ReducerKind::kMin:
          return te::min(value, reduce_axes);
        default:
          return te::sum(value, reduce_axes);
      }
    };
    tensors.emplace(st.output,
                    compute(shape, std::function<ComputeBody(const std::vector<Var>&)>(body),
                            st.output, st.axes));
  }
  for (const std::string& out : program.outputs) args.push_back(tensors.at(out));
  return create_prim_func(args, std::move(name));
}

std::string formula_string(const IndexNotationProgram& program) {
  std::string s;
  for (const IndexNotationStatement& st : program.statements) {
    if (!s.empty()) s += "; ";
    s += st.output + "[";
    for (size_t i = 0; i < st.axes.size(); ++i) s += (i ? ", " : "") + st.axes[i];
    s += fmt::format("] {} {}", assign_op_name(st.assign), expr_string(st.rhs));
  }
  return s;
}

std::string extents_string(const IndexNotationProgram& program) {
  std::string s;
  for (const auto& [name, e] : program.extents)
    s += fmt::format("{}{}={}", s.empty() ? "" : ",", name, e);
  return s;
}

}  // namespace tyche::te
