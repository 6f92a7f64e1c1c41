#include "ir/printer.h"

#include <fmt/format.h>

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "ir/op.h"

namespace tyche::ir {

class Printer {
 public:
  std::string out;
  PrintOptions options;

  std::string expr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        DataType t = e.dtype();
        if (t.is_bool()) return v ? "True" : "False";
        if (t == kInt32) return std::to_string(v);
        return fmt::format("{}({})", t.str(), v);
      }
      case ExprKind::kFloatImm:
        return float_literal(e.as<FloatImmNode>()->value, e.dtype());
      case ExprKind::kVar:
        return var_name(static_cast<const VarNode*>(e.get()));
      case ExprKind::kNot:
        return "not " + operand(e.as<NotNode>()->a, 3, false);
      case ExprKind::kSelect: {
        auto* n = e.as<SelectNode>();
        return fmt::format("select({}, {}, {})", expr(n->condition), expr(n->true_value),
                           expr(n->false_value));
      }
      case ExprKind::kCast:
        return fmt::format("{}({})", e.dtype().str(), expr(e.as<CastNode>()->value));
      case ExprKind::kBufferLoad: {
        auto* n = e.as<BufferLoadNode>();
        return fmt::format("{}[{}]", buffer_name(n->buffer), exprs(n->indices));
      }
      case ExprKind::kCall: {
        auto* n = e.as<CallNode>();
        return fmt::format("{}({})", call_op_name(n->op), exprs(n->args));
      }
      case ExprKind::kRamp: {
        auto* n = e.as<RampNode>();
        return fmt::format("ramp({}, {}, {})", expr(n->base), expr(n->stride), n->lanes);
      }
      case ExprKind::kBroadcast: {
        auto* n = e.as<BroadcastNode>();
        return fmt::format("broadcast({}, {})", expr(n->value), n->lanes);
      }
      case ExprKind::kLet: {
        auto* n = e.as<LetNode>();
        return fmt::format("let({} = {}, {})", var_name(n->var.get()), expr(n->value),
                           expr(n->body));
      }
      default:
        return binary(static_cast<const BinaryNode*>(e.get()), e);
    }
  }

  void stmt(const Stmt& s, int indent) {
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        auto* n = s.as<BufferStoreNode>();
        return line(indent, fmt::format("{}[{}] = {}", buffer_name(n->buffer), exprs(n->indices),
                                        expr(n->value)));
      }
      case StmtKind::kSeqStmt:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) stmt(c, indent);
        return;
      case StmtKind::kIfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        line(indent, fmt::format("if {}:", expr(n->condition)));
        stmt(n->then_case, indent + 1);
        if (n->else_case.defined()) {
          line(indent, "else:");
          stmt(n->else_case, indent + 1);
        }
        return;
      }
      case StmtKind::kEvaluate:
        return line(indent, "evaluate(" + expr(s.as<EvaluateNode>()->value) + ")");
      case StmtKind::kFor:
        return for_loop(s.as<ForNode>(), indent);
      case StmtKind::kBlock:
        return block(s.as<BlockNode>(), nullptr, indent);
      case StmtKind::kBlockRealize: {
        auto* n = s.as<BlockRealizeNode>();
        return block(n->block.get(), n, indent);
      }
      case StmtKind::kAllocate: {
        auto* n = s.as<AllocateNode>();
        line(indent, fmt::format("{} = allocate({}, \"{}\", \"{}\")", define_buffer(n->buffer),
                                 shape(n->buffer), n->buffer->dtype.str(), n->buffer->scope));
        return stmt(n->body, indent);
      }
    }
  }

  void func(const PrimFunc& f) {
    std::vector<std::string> params;
    for (const Buffer& b : f->params) {
      std::string name = define_buffer(b);
      params.push_back(fmt::format("{}: Buffer({}, \"{}\"{})", name, shape(b), b->dtype.str(),
                                   buffer_extras(b)));
    }
    out += "@prim_func\n";
    out += fmt::format("def {}({}):\n", f->name, fmt::join(params, ", "));
    std::vector<std::string> outs;
    for (const Buffer& b : f.outputs()) outs.push_back(buffer_name(b));
    line(1, fmt::format("# outputs: {}", fmt::join(outs, ", ")));
    stmt(f->body, 1);
  }

  std::string annotation(const AnnotationValue& v) {
    if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    if (auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
    return fmt::format("\"{}\"", std::get<std::string>(v));
  }

 private:
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_;

  // Python operator precedence, higher binds tighter.
  static int precedence(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kOr:
        return 1;
      case ExprKind::kAnd:
        return 2;
      case ExprKind::kNot:
        return 3;
      case ExprKind::kEQ:
      case ExprKind::kNE:
      case ExprKind::kLT:
      case ExprKind::kLE:
      case ExprKind::kGT:
      case ExprKind::kGE:
        return 4;
      case ExprKind::kAdd:
      case ExprKind::kSub:
        return 5;
      case ExprKind::kMul:
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
        return 6;
      case ExprKind::kDiv:
        return e.dtype().is_float() ? 6 : 10;  // int division prints as a call
      case ExprKind::kIntImm:
        return (e.as<IntImmNode>()->value < 0) ? 7 : 10;
      case ExprKind::kFloatImm:
        return 10;
      default:
        return 10;
    }
  }

  std::string fresh_name(const void* key, const std::string& hint) {
    std::string base = hint.empty() ? "v" : hint;
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    used_.insert(name);
    names_[key] = name;
    return name;
  }
  std::string var_name(const VarNode* v) {
    auto it = names_.find(v);
    return it != names_.end() ? it->second : fresh_name(v, v->name);
  }
  std::string define_buffer(const Buffer& b) {
    auto it = names_.find(b.get());
    return it != names_.end() ? it->second : fresh_name(b.get(), b->name);
  }
  std::string buffer_name(const Buffer& b) { return define_buffer(b); }

  static std::string float_literal(double v, DataType t) {
    if (!std::isfinite(v)) {
      return fmt::format("{}(\"{}\")", t.str(), std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    }
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    if (t == kFloat32) return s + "f";
    if (t == kFloat64) return s;
    return fmt::format("{}({})", t.str(), s);
  }

  std::string exprs(const std::vector<Expr>& es) {
    std::vector<std::string> parts;
    for (const Expr& e : es) parts.push_back(expr(e));
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  // Parenthesizes `e` when it binds looser than its context; right operands of
  // non-associative operators also need parentheses at equal precedence.
  std::string operand(const Expr& e, int context, bool right) {
    int p = precedence(e);
    std::string s = expr(e);
    return (p < context || (right && p == context)) ? "(" + s + ")" : s;
  }

  std::string binary(const BinaryNode* n, const Expr& self) {
    ExprKind k = n->kind;
    switch (k) {
      case ExprKind::kMin:
      case ExprKind::kMax:
        return fmt::format("{}({}, {})", binary_op_name(k), expr(n->a), expr(n->b));
      case ExprKind::kDiv:
        if (!self.dtype().is_float())
          return fmt::format("truncdiv({}, {})", expr(n->a), expr(n->b));
        break;
      default:
        break;
    }
    const char* op = k == ExprKind::kFloorDiv   ? "//"
                     : k == ExprKind::kFloorMod ? "%"
                                                : binary_op_name(k);
    int p = precedence(self);
    // Comparisons do not chain the way we mean; always parenthesize nested ones.
    bool cmp = is_comparison(k);
    std::string lhs = cmp ? operand(n->a, p + 1, false) : operand(n->a, p, false);
    // At equal precedence a right operand keeps its parentheses unless regrouping cannot change
    // the value: integer + over +, integer * over *, and/or over themselves.
    ExprKind rk = n->b.kind();
    bool regroupable =
        rk == k && (k == ExprKind::kAnd || k == ExprKind::kOr ||
                    ((k == ExprKind::kAdd || k == ExprKind::kMul) && self.dtype().is_int_like()));
    std::string rhs = operand(n->b, p, !regroupable);
    return fmt::format("{} {} {}", lhs, op, rhs);
  }

  std::string shape(const Buffer& b) {
    std::string s = exprs(b->shape);
    return b->shape.size() == 1 ? "(" + s + ",)" : "(" + s + ")";
  }
  std::string buffer_extras(const Buffer& b) {
    std::string s;
    if (b->scope != "global") s += fmt::format(", scope=\"{}\"", b->scope);
    if (!b->strides.empty()) s += fmt::format(", strides=({})", exprs(b->strides));
    return s;
  }

  void line(int indent, const std::string& text) {
    out.append(static_cast<size_t>(indent) * 2, ' ');
    out += text;
    if (mark_next_) out += "  # <-- here";
    mark_next_ = false;
    out += '\n';
  }
  bool mark_next_ = false;

  std::string annotations(const Annotations& anns) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : anns) parts.push_back(fmt::format("\"{}\": {}", k, annotation(v)));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }

  void for_loop(const ForNode* n, int indent) {
    std::string name = var_name(n->loop_var.get());
    std::string range = is_const_int(n->min, 0)
                            ? expr(n->extent)
                            : fmt::format("{}, {}", expr(n->min), expr(n->min + n->extent));
    std::string kind = n->for_kind == ForKind::kSerial ? "range" : for_kind_name(n->for_kind);
    std::string extra;
    if (n->for_kind == ForKind::kThreadBinding)
      extra += fmt::format(", thread=\"{}\"", n->thread_tag);
    if (!n->annotations.empty()) extra += ", annotations=" + annotations(n->annotations);
    mark_next_ = options.highlight == n;
    line(indent, fmt::format("for {} in {}({}{}):", name, kind, range, extra));
    stmt(n->body, indent + 1);
  }

  std::string region(const BufferRegion& r) {
    std::vector<std::string> parts;
    for (const Range& rg : r.region) {
      if (is_const_int(rg.extent, 1))
        parts.push_back(expr(rg.min));
      else
        parts.push_back(fmt::format("{}:{}", expr(rg.min), expr(rg.min + rg.extent)));
    }
    return fmt::format("{}[{}]", buffer_name(r.buffer), fmt::join(parts, ", "));
  }
  std::string regions(const std::vector<BufferRegion>& rs) {
    std::vector<std::string> parts;
    for (const BufferRegion& r : rs) parts.push_back(region(r));
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  void block(const BlockNode* b, const BlockRealizeNode* realize, int indent) {
    mark_next_ = options.highlight == b || (realize && options.highlight == realize);
    line(indent, fmt::format("with block(\"{}\"):", b->name));
    int in = indent + 1;
    for (size_t i = 0; i < b->iter_vars.size(); ++i) {
      const IterVar& iv = b->iter_vars[i];
      std::string dom = is_const_int(iv.dom.min, 0) ? expr(iv.dom.extent)
                                                    : fmt::format("({}, {})", expr(iv.dom.min),
                                                                  expr(iv.dom.min + iv.dom.extent));
      std::string binding = realize ? ", " + expr(realize->iter_values[i]) : "";
      line(in, fmt::format("{} = axis.{}({}{})", var_name(iv.var.get()), iter_kind_name(iv.kind),
                           dom, binding));
    }
    if (realize && !is_const_int(realize->predicate, 1))
      line(in, "where(" + expr(realize->predicate) + ")");
    if (!b->reads.empty() || !b->writes.empty() || b->name != "root") {
      line(in, "reads(" + regions(b->reads) + ")");
      line(in, "writes(" + regions(b->writes) + ")");
    }
    if (!b->annotations.empty()) line(in, "block_attr(" + annotations(b->annotations) + ")");
    for (const Buffer& buf : b->alloc_buffers) {
      std::string name = define_buffer(buf);
      line(in, fmt::format("{} = alloc_buffer({}, \"{}\"{})", name, shape(buf), buf->dtype.str(),
                           buffer_extras(buf)));
    }
    if (b->init.defined()) {
      line(in, "with init():");
      stmt(b->init, in + 1);
    }
    stmt(b->body, in);
  }
};

std::string to_string(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  return Printer().expr(e);
}
std::string to_string(const Stmt& s) {
  if (!s.defined()) return "<undefined>\n";
  Printer p;
  p.stmt(s, 0);
  return p.out;
}
std::string to_string(const PrimFunc& f) {
  Printer p;
  p.func(f);
  return p.out;
}
std::string to_string(const PrimFunc& f, const PrintOptions& options) {
  Printer p;
  p.options = options;
  p.func(f);
  return p.out;
}
std::string to_string(const AnnotationValue& v) {
  return Printer().annotation(v);
}

}  // namespace tyche::ir
