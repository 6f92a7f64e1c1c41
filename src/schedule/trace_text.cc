// The trace's text form: a Python subset, one instruction per line, e.g.
//   b0 = sch.get_block(name="C")
//   l1, l2, l3 = sch.get_loops(block=b0)
//   v4, v5 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=64, decision=[16, 64])
//   l6, l7 = sch.split(loop=l1, factors=[v4, v5])
//   sch.reorder(l6, l7, l2, l3)
// Variadic parameters are positional, the rest are keywords; '#' starts a comment.
#include <fmt/format.h>

#include <cctype>
#include <unordered_map>

#include "schedule/trace.h"
#include "schedule/trace_names.h"
#include "support/error.h"

namespace tyche::schedule {

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string float_text(double f) {
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it a float when read back
  return s;
}

std::string value_text(const Value& v, const std::unordered_map<int64_t, std::string>& names) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kInt:
      return std::to_string(v.i);
    case Value::Kind::kFloat:
      return float_text(v.f);
    case Value::Kind::kBool:
      return v.i ? "True" : "False";
    case Value::Kind::kString:
      return quote(v.s);
    case Value::Kind::kList: {
      std::vector<std::string> items;
      for (const Value& x : v.list) items.push_back(value_text(x, names));
      return fmt::format("[{}]", fmt::join(items, ", "));
    }
    default: {
      auto it = names.find(v.i);
      return it == names.end() ? "?" : it->second;
    }
  }
}

}  // namespace

std::string Trace::to_text() const {
  auto names = rv_names(*this);
  std::string out;
  for (size_t i = 0; i < insts_.size(); ++i) {
    const Instruction& inst = insts_[i];
    const InstructionKind& kind = *inst.kind;
    if (!inst.outputs.empty()) {
      std::vector<std::string> targets;
      for (const Value& o : inst.outputs) targets.push_back(names.at(o.i));
      bool list_output = kind.output == OutputType::kBlocks || kind.output == OutputType::kLoops ||
                         kind.output == OutputType::kExprs;
      out += fmt::format("{}{} = ", fmt::join(targets, ", "),
                         list_output && targets.size() == 1 ? "," : "");
    }
    std::vector<std::string> args;
    for (size_t p = 0; p < inst.args.size(); ++p) {
      if (kind.params[p].variadic) {
        for (const Value& x : inst.args[p].list) args.push_back(value_text(x, names));
      } else {
        args.push_back(fmt::format("{}={}", kind.params[p].name, value_text(inst.args[p], names)));
      }
    }
    if (auto d = decisions_.find(i); d != decisions_.end())
      args.push_back("decision=" + value_text(d->second, names));
    out += fmt::format("sch.{}({})\n", kind.name, fmt::join(args, ", "));
  }
  return out;
}

// ---- parser ----

namespace {

class LineParser {
 public:
  LineParser(std::string_view line, int line_no, std::unordered_map<std::string, Value>* env,
             int64_t* next_id)
      : s_(line), line_(line_no), env_(env), next_id_(next_id) {}

  // Parses one instruction line into `inst` and its decision.
  void parse(Instruction* inst, Value* decision) {
    inst->line = line_;
    std::vector<std::string> targets;
    bool has_targets = false;
    size_t save = pos_;
    // Targets: `a, b = `, `a, = `, `(a, b) = ` or `_ = `; absent if no '=' follows a name list.
    skip_ws();
    bool paren = accept('(');
    if (paren || peek_ident()) {
      std::vector<std::string> names;
      while (peek_ident()) {
        names.push_back(ident());
        if (!accept(',')) break;
        skip_ws();
      }
      if (paren && !accept(')')) fail("expected ')' after the names being assigned");
      if (!names.empty() && accept('=')) {
        targets = std::move(names);
        has_targets = true;
      }
    }
    if (!has_targets) pos_ = save;
    skip_ws();
    size_t sch_col = pos_;
    std::string obj = peek_ident() ? ident() : "";
    if (obj != "sch") fail_at(sch_col, "expected 'sch.<instruction>(...)'");
    expect('.', "'.' after 'sch'");
    if (!peek_ident()) fail("expected an instruction name after 'sch.'");
    size_t name_col = pos_;
    std::string name = ident();
    const InstructionKind* kind = find_instruction_kind(name);
    if (!kind) fail_at(name_col, fmt::format("unknown instruction '{}'", name));
    inst->kind = kind;
    expect('(', "'(' after the instruction name");
    parse_args(*kind, inst, decision);
    skip_ws();
    if (pos_ < s_.size()) fail("unexpected text after ')'");
    bind_targets(*kind, targets, has_targets, inst);
  }

 private:
  void parse_args(const InstructionKind& kind, Instruction* inst, Value* decision) {
    std::vector<std::optional<Value>> args(kind.params.size());
    int variadic = -1;
    for (size_t p = 0; p < kind.params.size(); ++p)
      if (kind.params[p].variadic) variadic = static_cast<int>(p);
    std::vector<Value> positional;
    size_t next_positional = 0;
    bool seen_keyword = false;
    skip_ws();
    if (!accept(')')) {
      while (true) {
        skip_ws();
        size_t col = pos_;
        std::string keyword;
        if (peek_ident()) {
          size_t save = pos_;
          std::string id = ident();
          skip_ws();
          if (accept('='))
            keyword = id;
          else
            pos_ = save;
        }
        Value v = value();
        if (keyword.empty()) {
          if (seen_keyword) fail_at(col, "positional argument after a keyword argument");
          if (variadic >= 0) {
            positional.push_back(std::move(v));
          } else {
            if (next_positional >= kind.params.size())
              fail_at(col, fmt::format("{} takes {} arguments", kind.name, kind.params.size()));
            check_arg(kind, next_positional, v, col);
            args[next_positional++] = std::move(v);
          }
        } else if (keyword == "decision") {
          if (!kind.is_sampling()) fail_at(col, fmt::format("{} takes no decision", kind.name));
          if (!decision_matches(v, kind.decision))
            fail_at(col, fmt::format("the decision of {} must be {}", kind.name,
                                     kind.decision == DecisionType::kInt ? "an integer"
                                                                         : "a list of integers"));
          *decision = std::move(v);
          seen_keyword = true;
        } else {
          seen_keyword = true;
          size_t p = 0;
          while (p < kind.params.size() && kind.params[p].name != keyword) ++p;
          if (p == kind.params.size()) {
            std::vector<std::string_view> known;
            for (const Param& q : kind.params) known.push_back(q.name);
            fail_at(col, fmt::format("{} has no argument '{}' (arguments: {})", kind.name, keyword,
                                     fmt::join(known, ", ")));
          }
          if (args[p]) fail_at(col, fmt::format("argument '{}' given twice", keyword));
          check_arg(kind, p, v, col);
          args[p] = std::move(v);
        }
        skip_ws();
        if (accept(')')) break;
        expect(',', "',' or ')'");
        skip_ws();
        if (accept(')')) break;  // trailing comma
      }
    }
    if (variadic >= 0 && !args[variadic]) {
      Value list = Value::of_list(std::move(positional));
      check_arg(kind, variadic, list, pos_);
      args[variadic] = std::move(list);
    }
    for (size_t p = 0; p < kind.params.size(); ++p) {
      if (!args[p]) {
        if (!kind.params[p].default_value)
          fail(fmt::format("{}: missing argument '{}'", kind.name, kind.params[p].name));
        args[p] = *kind.params[p].default_value;
      }
      inst->args.push_back(std::move(*args[p]));
    }
  }

  void check_arg(const InstructionKind& kind, size_t p, const Value& v, size_t col) {
    if (!value_matches(v, kind.params[p].type))
      fail_at(col,
              fmt::format("argument '{}' of {} must be {}, got {}", kind.params[p].name, kind.name,
                          param_type_name(kind.params[p].type), value_kind_name(v.kind)));
  }

  void bind_targets(const InstructionKind& kind, const std::vector<std::string>& targets,
                    bool has_targets, Instruction* inst) {
    if (!has_targets) return;
    if (kind.output == OutputType::kNone)
      fail_at(0, fmt::format("{} produces nothing to assign", kind.name));
    bool single = kind.output == OutputType::kBlock || kind.output == OutputType::kLoop ||
                  kind.output == OutputType::kExpr;
    if (single && targets.size() != 1)
      fail_at(0, fmt::format("{} produces one value, not {}", kind.name, targets.size()));
    for (const std::string& t : targets) {
      Value rv;
      rv.kind = rv_kind_of_output(kind);
      rv.i = (*next_id_)++;
      if (t != "_") (*env_)[t] = rv;
      inst->outputs.push_back(rv);
    }
  }

  // Arguments are flat lists; the limit keeps a malicious line from exhausting the stack.
  static constexpr int kMaxNesting = 32;

  Value value(int depth = 0) {
    skip_ws();
    size_t col = pos_;
    if (pos_ >= s_.size()) fail("expected a value");
    char c = s_[pos_];
    if (c == '[' || c == '(') {
      if (depth >= kMaxNesting) fail(fmt::format("lists nest deeper than {}", kMaxNesting));
      char close = c == '[' ? ']' : ')';
      ++pos_;
      std::vector<Value> items;
      skip_ws();
      if (!accept(close)) {
        while (true) {
          items.push_back(value(depth + 1));
          skip_ws();
          if (accept(close)) break;
          expect(',', fmt::format("',' or '{}'", close));
          skip_ws();
          if (accept(close)) break;
        }
      }
      return Value::of_list(std::move(items));
    }
    if (c == '"' || c == '\'') return Value::string(string_literal());
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')
      return number();
    if (peek_ident()) {
      std::string id = ident();
      if (id == "None") return Value::none();
      if (id == "True") return Value::boolean(true);
      if (id == "False") return Value::boolean(false);
      auto it = env_->find(id);
      if (it == env_->end()) fail_at(col, fmt::format("'{}' is not defined", id));
      return it->second;
    }
    fail(fmt::format("unexpected '{}'", c));
  }

  Value number() {
    size_t col = pos_;
    size_t end = pos_;
    if (end < s_.size() && (s_[end] == '-' || s_[end] == '+')) ++end;
    bool is_float = false;
    while (end < s_.size()) {
      char c = s_[end];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++end;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++end;
        if ((c == 'e' || c == 'E') && end < s_.size() && (s_[end] == '-' || s_[end] == '+')) ++end;
      } else {
        break;
      }
    }
    std::string text(s_.substr(pos_, end - pos_));
    pos_ = end;
    try {
      size_t used = 0;
      if (is_float) {
        double f = std::stod(text, &used);
        if (used == text.size()) return Value::real(f);
      } else {
        long long i = std::stoll(text, &used);
        if (used == text.size()) return Value::integer(i);
      }
    } catch (const std::exception&) {
    }
    fail_at(col, fmt::format("malformed number '{}'", text));
  }

  std::string string_literal() {
    char q = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  bool peek_ident() const {
    return pos_ < s_.size() &&
           (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_');
  }
  std::string ident() {
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool accept(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!accept(c)) fail("expected " + what);
  }
  [[noreturn]] void fail(const std::string& msg) { fail_at(pos_, msg); }
  [[noreturn]] void fail_at(size_t col, const std::string& msg) {
    throw InputError(fmt::format("trace line {}, column {}: {}", line_, col + 1, msg));
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_;
  std::unordered_map<std::string, Value>* env_;
  int64_t* next_id_;
};

// The line without a trailing comment ('#' outside a string).
std::string_view strip_comment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

}  // namespace

Trace Trace::parse_text(std::string_view text) {
  Trace trace;
  std::unordered_map<std::string, Value> env;
  int64_t next_id = 0;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = strip_comment(text.substr(start, end - start));
    ++line_no;
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Instruction inst;
    Value decision;
    LineParser(line, line_no, &env, &next_id).parse(&inst, &decision);
    trace.append(std::move(inst), std::move(decision));
  }
  return trace;
}

}  // namespace tyche::schedule
