#include "schedule/index_map.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "ir/op.h"

namespace tyche::schedule {

namespace {

// A tiny tokenizer over `lambda a, b: (b // 16, a, b % 16)`.
class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool done() {
    skip_space();
    return pos_ >= s_.size();
  }
  bool accept(std::string_view token) {
    skip_space();
    if (s_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    if (pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  std::optional<int64_t> integer() {
    skip_space();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (ec != std::errc()) return std::nullopt;
    pos_ = static_cast<size_t>(end - s_.data());
    return v;
  }
  std::string rest() {
    skip_space();
    return pos_ < s_.size() ? fmt::format("'{}'", s_.substr(pos_, 12)) : "the end";
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::variant<IndexMap, std::string> IndexMap::parse(std::string_view text) {
  const std::string what = fmt::format("index map '{}'", text);
  Lexer lx(text);
  if (lx.identifier() != "lambda") return what + ": expected 'lambda'";
  IndexMap map;
  do {
    std::string name = lx.identifier();
    if (name.empty()) return fmt::format("{}: expected an input name at {}", what, lx.rest());
    for (const std::string& n : map.inputs_)
      if (n == name) return fmt::format("{}: input '{}' is named twice", what, name);
    map.inputs_.push_back(std::move(name));
  } while (lx.accept(","));
  if (!lx.accept(":")) return fmt::format("{}: expected ':' at {}", what, lx.rest());
  bool parenthesized = lx.accept("(");
  do {
    if (parenthesized && lx.accept(")")) {  // a trailing comma: (a, b,)
      parenthesized = false;
      break;
    }
    std::string name = lx.identifier();
    size_t input = map.inputs_.size();
    for (size_t i = 0; i < map.inputs_.size(); ++i)
      if (map.inputs_[i] == name) input = i;
    if (input == map.inputs_.size())
      return name.empty() ? fmt::format("{}: expected an input name at {}", what, lx.rest())
                          : fmt::format("{}: '{}' is not an input", what, name);
    Output out{input, Op::kSelf, 0};
    if (lx.accept("//"))
      out.op = Op::kDiv;
    else if (lx.accept("%"))
      out.op = Op::kMod;
    if (out.op != Op::kSelf) {
      auto c = lx.integer();
      if (!c) return fmt::format("{}: expected an integer factor at {}", what, lx.rest());
      if (*c <= 0) return fmt::format("{}: factor {} is not positive", what, *c);
      out.factor = *c;
    }
    map.outputs_.push_back(out);
  } while (lx.accept(","));
  if (parenthesized && !lx.accept(")"))
    return fmt::format("{}: expected ')' at {}", what, lx.rest());
  if (!lx.done()) return fmt::format("{}: unexpected {}", what, lx.rest());
  // Each input: once as itself, or once divided and once reduced by the same factor.
  for (size_t i = 0; i < map.inputs_.size(); ++i) {
    int self = 0, div = 0, mod = 0;
    int64_t div_factor = 0, mod_factor = 0;
    for (const Output& o : map.outputs_) {
      if (o.input != i) continue;
      if (o.op == Op::kSelf) ++self;
      if (o.op == Op::kDiv) ++div, div_factor = o.factor;
      if (o.op == Op::kMod) ++mod, mod_factor = o.factor;
    }
    const std::string& n = map.inputs_[i];
    bool split = self == 0 && div == 1 && mod == 1 && div_factor == mod_factor;
    if (!(self == 1 && div == 0 && mod == 0) && !split)
      return fmt::format(
          "{}: '{}' must appear once as itself or as '{} // c' and '{} % c' with one factor c, so "
          "the map "
          "is a bijection",
          what, n, n, n);
  }
  return map;
}

std::string IndexMap::check_shape(const std::vector<int64_t>& shape) const {
  if (shape.size() != inputs_.size())
    return fmt::format("the index map takes {} indices but the buffer has {}", inputs_.size(),
                       shape.size());
  for (const Output& o : outputs_)
    if (o.op == Op::kDiv && shape[o.input] % o.factor != 0)
      return fmt::format("factor {} does not divide extent {} of '{}'", o.factor, shape[o.input],
                         inputs_[o.input]);
  return {};
}

std::vector<int64_t> IndexMap::map_shape(const std::vector<int64_t>& shape) const {
  std::vector<int64_t> out;
  for (const Output& o : outputs_)
    out.push_back(o.op == Op::kSelf  ? shape[o.input]
                  : o.op == Op::kDiv ? shape[o.input] / o.factor
                                     : o.factor);
  return out;
}

std::vector<ir::Expr> IndexMap::map_indices(const std::vector<ir::Expr>& indices) const {
  std::vector<ir::Expr> out;
  for (const Output& o : outputs_) {
    const ir::Expr& x = indices[o.input];
    if (o.op == Op::kSelf)
      out.push_back(x);
    else if (o.op == Op::kDiv)
      out.push_back(ir::floordiv(x, ir::make_int(o.factor, x.dtype())));
    else
      out.push_back(ir::floormod(x, ir::make_int(o.factor, x.dtype())));
  }
  return out;
}

std::vector<ir::Range> IndexMap::map_region(const std::vector<ir::Range>& region) const {
  std::vector<ir::Range> out;
  for (const Output& o : outputs_) {
    const ir::Range& r = region[o.input];
    if (o.op == Op::kSelf) {
      out.push_back(r);
      continue;
    }
    ir::Expr c = ir::make_int(o.factor, r.min.dtype());
    auto extent = ir::as_const_int(r.extent);
    if (extent && *extent == 1) {  // a point maps to a point
      out.emplace_back(o.op == Op::kDiv ? ir::floordiv(r.min, c) : ir::floormod(r.min, c),
                       r.extent);
    } else if (o.op == Op::kDiv) {
      ir::Expr first = ir::floordiv(r.min, c);
      ir::Expr last = ir::floordiv(r.min + r.extent - ir::make_int(1, r.min.dtype()), c);
      out.emplace_back(first, last - first + ir::make_int(1, r.min.dtype()));
    } else {
      out.emplace_back(ir::make_int(0, r.min.dtype()), c);
    }
  }
  return out;
}

std::string IndexMap::to_string() const {
  std::string s = "lambda ";
  for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i];
  s += ": (";
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Output& o = outputs_[i];
    s += i ? ", " : "";
    s += inputs_[o.input];
    if (o.op == Op::kDiv) s += fmt::format(" // {}", o.factor);
    if (o.op == Op::kMod) s += fmt::format(" % {}", o.factor);
  }
  return s + (outputs_.size() == 1 ? ",)" : ")");
}

}  // namespace tyche::schedule
