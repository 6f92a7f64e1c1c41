// The pieces of parse_index_notation (private to src/te/): the lexer (index_notation_lexer.cc),
// the parser of formulas and extents (index_notation_parser.cc) and the checks that turn
// statements into a program (index_notation_checks.cc); index_notation.cc lowers and prints.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ir/expr.h"
#include "support/error.h"
#include "te/index_notation.h"

namespace tyche::te::notation {

// Deeper expressions are rejected so that the recursive parser, printer and evaluators can never
// exhaust the stack, whatever the input.
inline constexpr int kMaxDepth = 200;
// Likewise for chains of statements (the IR's dataflow graph is walked recursively).
inline constexpr size_t kMaxStatements = 1000;
// Index arithmetic in the IR is int32, so every index value (and every partial sum of one) must
// fit in it.
inline constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

[[noreturn]] inline void fail(const std::string& msg) {
  throw InputError(msg);
}

// A character as a message shows it: printable ASCII quoted, anything else by its code, so a
// message stays on one line whatever the input holds.
inline std::string describe_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("character 0x{:02x}", u);
}

// ---------------------------------------------------------------------------------------------
// Lexer (index_notation_lexer.cc)

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

inline bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
inline bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::vector<Token> lex_formula(std::string_view s);
std::string describe(const Token& t);

// ---------------------------------------------------------------------------------------------
// Affine index arithmetic (overflow-checked)

inline bool add_overflows(int64_t a, int64_t b, int64_t* r) {
  return __builtin_add_overflow(a, b, r);
}
inline bool mul_overflows(int64_t a, int64_t b, int64_t* r) {
  return __builtin_mul_overflow(a, b, r);
}

struct Affine {
  std::vector<IndexTerm> terms;
  int64_t offset = 0;
  bool is_const() const { return terms.empty(); }
};

// ---------------------------------------------------------------------------------------------
// Parser (index_notation_parser.cc)

struct FuncInfo {
  const char* name;
  IndexNotationFunc func;
  int arity;
  ir::ExprKind binary;  // arity 2
  ir::CallOp call;      // arity 1
};
inline constexpr FuncInfo kFuncs[] = {
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
inline constexpr ir::ExprKind kBinaryKinds[] = {ir::ExprKind::kAdd, ir::ExprKind::kSub,
                                                ir::ExprKind::kMul, ir::ExprKind::kDiv};

std::vector<IndexNotationStatement> parse_statements(std::string_view formula);

// A comma-separated list of "NAME = VALUE" (extents, element types), read one entry at a time:
// blanks are skipped, the name and '=' are read here, the value's text by the caller's rule.
// Every refusal is "<list> column N: ..." (1-based) and an InputError.
class AssignmentList {
 public:
  // `list` names the list in messages ("extents"), `name_kind` what a name is ("an index name"),
  // `entries` what the commas separate ("extents").
  AssignmentList(std::string_view s, std::string list, std::string name_kind, std::string entries);
  // Reads the next "NAME =": false at the end of the list (empty, or after the last value).
  bool next();
  const std::string& name() const { return name_; }
  int name_column() const { return column(name_pos_); }
  // The value: the characters from here while `keep` holds for them; its position for messages.
  std::string_view value(bool (*keep)(char));
  size_t value_pos() const { return value_pos_; }
  // What stands at `p` (a character, or the end of the list), for "found ..." in messages.
  std::string found(size_t p) const;
  int column(size_t p) const;
  [[noreturn]] void fail_at(size_t p, const std::string& what) const;

 private:
  void skip_blanks();
  std::string_view s_;
  std::string list_, name_kind_, entries_;
  size_t i_ = 0, name_pos_ = 0, value_pos_ = 0;
  bool started_ = false;
  std::string name_;
};

struct ExtentEntry {
  std::string name;
  int64_t value;
  int column;
};
// "i=1024, j=512"
std::vector<ExtentEntry> parse_extents(std::string_view s);

// ---------------------------------------------------------------------------------------------
// Checks (index_notation_checks.cc)

IndexNotationProgram analyze(std::vector<IndexNotationStatement> stmts,
                             const std::vector<ExtentEntry>& extents);

// ---------------------------------------------------------------------------------------------
// Element types (index_notation_types.cc)

struct DtypeEntry {
  std::string name;
  DataType dtype;
  int column;
};
// "A=uint8, B=int8"
std::vector<DtypeEntry> parse_dtypes(std::string_view s);
// Gives the named tensors their types and checks every statement against index_notation.h's rules.
void assign_dtypes(IndexNotationProgram& p, const std::vector<DtypeEntry>& entries);

}  // namespace tyche::te::notation
