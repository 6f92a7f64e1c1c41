#include "codegen/c_codegen.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "ir/op.h"
#include "support/error.h"
#include "support/int_division.h"

namespace tyche::codegen {

namespace {

using ir::ExprKind;

const char* kPrelude = R"(#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TYCHE_MINMAX(T, S) \
  static inline T tyche_min_##S(T a, T b) { return a < b ? a : b; } \
  static inline T tyche_max_##S(T a, T b) { return a < b ? b : a; }
TYCHE_MINMAX(int8_t, i8) TYCHE_MINMAX(int16_t, i16) TYCHE_MINMAX(int32_t, i32) TYCHE_MINMAX(int64_t, i64)
TYCHE_MINMAX(uint8_t, u8) TYCHE_MINMAX(uint16_t, u16) TYCHE_MINMAX(uint32_t, u32) TYCHE_MINMAX(uint64_t, u64)
TYCHE_MINMAX(float, f32) TYCHE_MINMAX(double, f64) TYCHE_MINMAX(bool, b)
static inline float tyche_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline double tyche_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
/* bfloat16 is stored as its 16 high bits of a float; computed in float. */
static inline float tyche_bf16_to_f32(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static inline uint16_t tyche_f32_to_bf16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);  /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);  /* round to nearest even */
  return (uint16_t)(u >> 16);
}
static inline float tyche_round_bf16(float f) { return tyche_bf16_to_f32(tyche_f32_to_bf16(f)); }
)";

class CEmitter {
 public:
  explicit CEmitter(int64_t max_stack_bytes) : max_stack_bytes_(max_stack_bytes) {}

  std::string emit(const ir::PrimFunc& f) {
    out_ << kPrelude << tyche::kIntDivisionCSource << "\n\n";
    std::vector<std::string> params;
    for (const ir::Buffer& p : f->params) params.push_back(fmt::format("{}* restrict {}", memory_type(p->dtype), buffer_name(p)));
    out_ << fmt::format("void {}({}) {{\n", f->name, fmt::join(params, ", "));
    indent_ = 1;
    stmt(f->body);
    out_ << "}\n\n";
    out_ << fmt::format("void {}_packed(void** args) {{\n  {}(", f->name, f->name);
    for (size_t i = 0; i < f->params.size(); ++i)
      out_ << (i ? ", " : "") << fmt::format("({}*)args[{}]", memory_type(f->params[i]->dtype), i);
    out_ << ");\n}\n";
    return out_.str();
  }

 private:
  // ---- names and types ----
  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    return out;
  }
  std::string unique(std::unordered_map<const void*, std::string>& names, const void* key, const std::string& hint) {
    auto it = names.find(key);
    if (it != names.end()) return it->second;
    std::string base = sanitize(hint.empty() ? "v" : hint);
    std::string name = base;
    for (int k = 1; used_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    used_.insert({name, 1});
    return names[key] = name;
  }
  std::string var_name(const ir::VarNode* v) { return unique(var_names_, v, "v_" + v->name); }
  std::string buffer_name(const ir::Buffer& b) { return unique(buffer_names_, b.get(), "b_" + b->name); }

  static std::string scalar_type(DataType t) {
    if (t.is_bool()) return "bool";
    if (t.is_float()) return t.bits() == 64 ? "double" : "float";  // 16-bit floats computed in float
    if (t.is_int()) return fmt::format("int{}_t", t.bits());
    if (t.is_uint()) return fmt::format("uint{}_t", t.bits());
    throw Error(fmt::format("C backend: unsupported type {}", t.str()));
  }
  static std::string memory_type(DataType t) {
    if (t.is_bfloat16()) return "uint16_t";
    if (t.is_float() && t.bits() == 16) return "_Float16";
    return scalar_type(t.element_of());
  }
  static std::string suffix(DataType t) {
    if (t.is_bool()) return "b";
    if (t.is_float()) return t.bits() == 64 ? "f64" : "f32";
    return fmt::format("{}{}", t.is_int() ? "i" : "u", t.bits());
  }

  // ---- expressions, evaluated for one lane (`lane` is a C expression, "" for scalars) ----
  std::string expr(const ir::Expr& e, const std::string& lane) {
    DataType t = e.dtype();
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = e.as<ir::IntImmNode>()->value;
        if (t.is_bool()) return v ? "true" : "false";
        if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
        return fmt::format("(({}){}{})", scalar_type(t), v, t.bits() > 32 ? "LL" : "");
      }
      case ExprKind::kFloatImm: {
        double v = e.as<ir::FloatImmNode>()->value;
        bool f64 = t.bits() == 64;
        if (std::isnan(v)) return f64 ? "((double)NAN)" : "((float)NAN)";
        if (std::isinf(v)) return v > 0 ? (f64 ? "((double)INFINITY)" : "INFINITY") : (f64 ? "(-(double)INFINITY)" : "(-INFINITY)");
        return fmt::format("(({}){:.17g})", scalar_type(t), v);
      }
      case ExprKind::kVar: return var_name(e.as<ir::VarNode>());
      case ExprKind::kNot: return fmt::format("(!{})", expr(e.as<ir::NotNode>()->a, lane));
      case ExprKind::kSelect: {
        auto* n = e.as<ir::SelectNode>();
        // Both sides may be evaluated (as in generated vector code): use temporaries-free ternary
        // on values; C evaluates only one side, which is also allowed.
        return fmt::format("({} ? {} : {})", expr(n->condition, lane), expr(n->true_value, lane), expr(n->false_value, lane));
      }
      case ExprKind::kCast: return cast(t, e.as<ir::CastNode>()->value, lane);
      case ExprKind::kBufferLoad: {
        auto* n = e.as<ir::BufferLoadNode>();
        std::string load = fmt::format("{}[{}]", buffer_name(n->buffer), expr(n->indices.at(0), lane));
        return from_memory(load, t);
      }
      case ExprKind::kCall: return call(e.as<ir::CallNode>(), lane);
      case ExprKind::kRamp: {
        auto* n = e.as<ir::RampNode>();
        TYCHE_CHECK(!lane.empty(), "C backend: a vector expression outside a vector statement");
        return fmt::format("({} + ({}) * ({}){})", expr(n->base, ""), expr(n->stride, ""), scalar_type(n->base.dtype()), lane);
      }
      case ExprKind::kBroadcast: return expr(e.as<ir::BroadcastNode>()->value, "");
      case ExprKind::kLet: throw Error("C backend: let expressions are not supported");
      default: return binary(e.as_binary(), lane);
    }
  }

  std::string from_memory(const std::string& load, DataType t) {
    if (t.is_bfloat16()) return fmt::format("tyche_bf16_to_f32({})", load);
    if (t.is_float() && t.bits() == 16) return fmt::format("((float){})", load);
    return load;
  }
  std::string to_memory(const std::string& v, DataType t) {
    if (t.is_bfloat16()) return fmt::format("tyche_f32_to_bf16({})", v);
    if (t.is_float() && t.bits() == 16) return fmt::format("((_Float16)({}))", v);
    return v;
  }

  std::string cast(DataType to, const ir::Expr& from, const std::string& lane) {
    std::string v = expr(from, lane);
    if (to.is_bool()) return fmt::format("(({}) != 0)", v);
    std::string c = fmt::format("(({})({}))", scalar_type(to), v);
    if (to.is_bfloat16()) return fmt::format("tyche_round_bf16({})", c);
    if (to.is_float() && to.bits() == 16) return fmt::format("((float)(_Float16)({}))", c);
    return c;
  }

  std::string binary(const ir::BinaryNode* n, const std::string& lane) {
    TYCHE_CHECK(n, "C backend: unknown expression");
    std::string a = expr(n->a, lane), b = expr(n->b, lane);
    DataType t = n->a.dtype();
    auto infix = [&](const char* op) { return fmt::format("({} {} {})", a, op, b); };
    switch (n->kind) {
      case ExprKind::kAdd: return infix("+");
      case ExprKind::kSub: return infix("-");
      case ExprKind::kMul: return infix("*");
      case ExprKind::kDiv: return infix("/");
      case ExprKind::kFloorDiv:
        return t.is_uint() ? infix("/") : fmt::format("(({})tyche_floordiv({}, {}))", scalar_type(t), a, b);
      case ExprKind::kFloorMod:
        return t.is_uint() ? infix("%") : fmt::format("(({})tyche_floormod({}, {}))", scalar_type(t), a, b);
      case ExprKind::kMin: return fmt::format("tyche_min_{}({}, {})", suffix(t), a, b);
      case ExprKind::kMax: return fmt::format("tyche_max_{}({}, {})", suffix(t), a, b);
      case ExprKind::kEQ: return infix("==");
      case ExprKind::kNE: return infix("!=");
      case ExprKind::kLT: return infix("<");
      case ExprKind::kLE: return infix("<=");
      case ExprKind::kGT: return infix(">");
      case ExprKind::kGE: return infix(">=");
      case ExprKind::kAnd: return infix("&&");
      case ExprKind::kOr: return infix("||");
      default: throw InternalError("C backend: unexpected binary operator");
    }
  }

  std::string call(const ir::CallNode* n, const std::string& lane) {
    std::vector<std::string> args;
    for (const ir::Expr& a : n->args) args.push_back(expr(a, lane));
    DataType t = n->args.back().dtype();
    bool f64 = t.is_float() && t.bits() == 64;
    auto fn = [&](const char* name) { return fmt::format("{}{}({})", name, f64 ? "" : "f", args[0]); };
    switch (n->op) {
      case ir::CallOp::kExp: return fn("exp");
      case ir::CallOp::kLog: return fn("log");
      case ir::CallOp::kSqrt: return fn("sqrt");
      case ir::CallOp::kRsqrt: return fmt::format("(1 / {})", fn("sqrt"));
      case ir::CallOp::kTanh: return fn("tanh");
      case ir::CallOp::kErf: return fn("erf");
      case ir::CallOp::kFloor: return t.is_float() ? fn("floor") : args[0];
      case ir::CallOp::kCeil: return t.is_float() ? fn("ceil") : args[0];
      case ir::CallOp::kSigmoid: return fmt::format("tyche_sigmoid{}({})", f64 ? "" : "f", args[0]);
      case ir::CallOp::kAbs:
        if (t.is_float()) return fn("fabs");
        return fmt::format("(({0}) < 0 ? -({0}) : ({0}))", args[0]);
      case ir::CallOp::kPow: return fmt::format("pow{}({}, {})", f64 ? "" : "f", args[0], args[1]);
      case ir::CallOp::kIfThenElse: return fmt::format("({} ? {} : {})", args[0], args[1], args[2]);  // C is lazy
    }
    throw InternalError("C backend: unknown call");
  }

  // ---- statements ----
  void line(const std::string& s) { out_ << std::string(2 * indent_, ' ') << s << "\n"; }

  void stmt(const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kBufferStore: {
        auto* n = s.as<ir::BufferStoreNode>();
        int lanes = n->value.dtype().lanes();
        DataType elem = n->value.dtype().element_of();
        if (lanes == 1) {
          line(fmt::format("{}[{}] = {};", buffer_name(n->buffer), expr(n->indices.at(0), ""), to_memory(expr(n->value, ""), elem)));
          return;
        }
        // A vector store: every lane in turn (lanes write distinct elements).
        std::string lane = fmt::format("lane{}", lane_counter_++);
        line(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{", lane, lanes));
        ++indent_;
        line(fmt::format("{}[{}] = {};", buffer_name(n->buffer), expr(n->indices.at(0), lane), to_memory(expr(n->value, lane), elem)));
        --indent_;
        line("}");
        return;
      }
      case ir::StmtKind::kSeqStmt:
        for (const ir::Stmt& c : s.as<ir::SeqStmtNode>()->seq) stmt(c);
        return;
      case ir::StmtKind::kIfThenElse: {
        auto* n = s.as<ir::IfThenElseNode>();
        line(fmt::format("if ({}) {{", expr(n->condition, "")));
        ++indent_;
        stmt(n->then_case);
        --indent_;
        if (n->else_case.defined()) {
          line("} else {");
          ++indent_;
          stmt(n->else_case);
          --indent_;
        }
        line("}");
        return;
      }
      case ir::StmtKind::kEvaluate: line(fmt::format("(void)({});", expr(s.as<ir::EvaluateNode>()->value, ""))); return;
      case ir::StmtKind::kFor: {
        auto* f = s.as<ir::ForNode>();
        std::string v = var_name(f->loop_var.get());
        std::string t = scalar_type(f->loop_var.dtype());
        if (f->for_kind == ir::ForKind::kParallel) line("#pragma omp parallel for");
        line(fmt::format("for ({0} {1} = {2}; {1} < {2} + {3}; ++{1}) {{", t, v, expr(f->min, ""), expr(f->extent, "")));
        ++indent_;
        stmt(f->body);
        --indent_;
        line("}");
        return;
      }
      case ir::StmtKind::kAllocate: {
        auto* n = s.as<ir::AllocateNode>();
        auto size = ir::as_const_int(n->buffer->shape.at(0));
        if (!size) throw Error(fmt::format("C backend: buffer '{}' has a non-constant size", n->buffer->name));
        std::string name = buffer_name(n->buffer);
        std::string type = memory_type(n->buffer->dtype);
        int64_t bytes = *size * n->buffer->dtype.bytes();
        line("{");
        ++indent_;
        bool heap = bytes > max_stack_bytes_;
        if (heap) line(fmt::format("{0}* restrict {1} = ({0}*)aligned_alloc(64, {2});", type, name, (bytes + 63) / 64 * 64));
        else line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", type, name, *size));
        stmt(n->body);
        if (heap) line(fmt::format("free({});", name));
        --indent_;
        line("}");
        return;
      }
      case ir::StmtKind::kBlock:
      case ir::StmtKind::kBlockRealize: throw Error("C backend: the function still has blocks: lower it first");
    }
  }

  int64_t max_stack_bytes_;
  std::ostringstream out_;
  int indent_ = 0;
  int lane_counter_ = 0;
  std::unordered_map<const void*, std::string> var_names_, buffer_names_;
  std::unordered_map<std::string, int> used_;
};

}  // namespace

std::string emit_c(const ir::PrimFunc& lowered, int64_t max_stack_bytes) { return CEmitter(max_stack_bytes).emit(lowered); }

}  // namespace tyche::codegen
