// The lexer of index-notation formulas, and the scanner of the "NAME = VALUE" lists beside them.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <utility>

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

// ---------------------------------------------------------------------------------------------
// "NAME = VALUE" lists (extents, element types)

AssignmentList::AssignmentList(std::string_view s, std::string list, std::string name_kind,
                               std::string entries)
    : s_(s),
      list_(std::move(list)),
      name_kind_(std::move(name_kind)),
      entries_(std::move(entries)) {}

void AssignmentList::skip_blanks() {
  while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
}

int AssignmentList::column(size_t p) const {
  return static_cast<int>(std::min<size_t>(p, std::numeric_limits<int>::max() - 1)) + 1;
}

std::string AssignmentList::found(size_t p) const {
  return p >= s_.size() ? "end of " + list_ : describe_char(s_[p]);
}

void AssignmentList::fail_at(size_t p, const std::string& what) const {
  fail(fmt::format("{} column {}: {}", list_, column(p), what));
}

bool AssignmentList::next() {
  skip_blanks();
  if (i_ == s_.size()) return false;
  if (started_) {
    if (s_[i_] != ',')
      fail_at(i_, fmt::format("expected ',' between {}, found {}", entries_, found(i_)));
    ++i_;
    skip_blanks();
  }
  started_ = true;
  name_pos_ = i_;
  if (i_ >= s_.size() || !is_ident_start(s_[i_]))
    fail_at(i_, fmt::format("expected {}, found {}", name_kind_, found(i_)));
  while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
  name_ = std::string(s_.substr(name_pos_, i_ - name_pos_));
  skip_blanks();
  if (i_ >= s_.size() || s_[i_] != '=')
    fail_at(i_, fmt::format("expected '=' after '{}', found {}", name_, found(i_)));
  ++i_;
  skip_blanks();
  return true;
}

std::string_view AssignmentList::value(bool (*keep)(char)) {
  value_pos_ = i_;
  while (i_ < s_.size() && keep(s_[i_])) ++i_;
  return s_.substr(value_pos_, i_ - value_pos_);
}

}  // namespace tyche::te::notation
