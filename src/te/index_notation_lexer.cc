// The lexer of index-notation formulas.
#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "support/error.h"
#include "te/index_notation_syntax.h"

namespace tyche::te::notation {

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

}  // namespace tyche::te::notation
