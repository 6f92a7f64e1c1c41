#include "codegen/c_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "codegen/captures.h"
#include "codegen/runtime_symbols.h"
#include "ir/op.h"
#include "runtime/module.h"
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

/* Stack buffers are written under conditions GCC cannot always follow (the interpreter, which
   fills allocations with NaN, checks that nothing is read before it is written). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* Helpers a kernel may not all use. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

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

// The declaration of what generated code calls; the definition is the exported runtime's.
std::string parallel_for_declaration() {
  return fmt::format("int32_t {}parallel_for(int64_t n, int32_t (*body)(int64_t begin, int64_t end, void* env), void* env);\n",
                     kExportRuntimePrefix);
}

class CEmitter {
 public:
  explicit CEmitter(const COptions& options) : options_(options) {}

  std::string emit(const ir::PrimFunc& f) {
    func_name_ = f->name;
    std::ostringstream head;
    head << kPrelude << tyche::kIntDivisionCSource << "\n#pragma GCC diagnostic pop\n";
    if (options_.parallel) head << parallel_for_declaration();
    head << "\n";

    // Parameters as the header declares them (c_parameter_type); where the elements are held
    // in another C type (float16 as _Float16), a local pointer of that type.
    std::vector<std::string> params, locals, names;
    for (size_t i = 0; i < f->params.size(); ++i) {
      const ir::Buffer& p = f->params[i];
      std::string qualifier = i < f->params.size() - static_cast<size_t>(f->num_outputs) ? "const " : "";
      std::string abi = c_parameter_type(p->dtype), held = memory_type(p->dtype), name = buffer_name(p);
      if (abi == held) {
        params.push_back(fmt::format("{}{}* restrict {}", qualifier, abi, name));
        names.push_back(name);
      } else {
        params.push_back(fmt::format("{}{}* restrict {}_bits", qualifier, abi, name));
        names.push_back(name + "_bits");
        locals.push_back(fmt::format("{0}{1}* restrict {2} = ({0}{1}*){2}_bits;", qualifier, held, name));
      }
      abi_types_.push_back(qualifier + abi);
    }
    // The code goes in `static <name>_body`; `<name>` refuses null pointers and calls it, on
    // 64-byte aligned copies of the buffers that are not aligned (`<name>_staged`).
    out_ = &body_;
    *out_ << fmt::format("static int32_t {}_body({}) {{\n", f->name, fmt::join(params, ", "));
    indent_ = 1;
    for (const std::string& l : locals) line(l);
    stmt(f->body);
    line("return 0;");
    *out_ << "}\n\n";
    if (!names.empty()) emit_staged(f, params, names);
    *out_ << fmt::format("int32_t {}({}) {{\n", f->name, fmt::join(params, ", "));
    if (!names.empty()) {
      std::vector<std::string> nulls, misaligned;
      for (const std::string& n : names) {
        nulls.push_back("!" + n);
        misaligned.push_back(fmt::format("((uintptr_t){} % {})", n, runtime::kKernelAlignment));
      }
      line(fmt::format("if ({}) return {};", fmt::join(nulls, " || "), static_cast<int>(runtime::kKernelNullArgument)));
      line(fmt::format("if ({}) return {}_staged({});", fmt::join(misaligned, " || "), f->name, fmt::join(names, ", ")));
    }
    line(fmt::format("return {}_body({});", f->name, fmt::join(names, ", ")));
    *out_ << "}\n\n";
    *out_ << fmt::format("int32_t {}_packed(void** args) {{\n  return {}(", f->name, f->name);
    for (size_t i = 0; i < f->params.size(); ++i) *out_ << (i ? ", " : "") << fmt::format("({}*)args[{}]", abi_types_[i], i);
    *out_ << ");\n}\n";
    return head.str() + hoisted_ + body_.str();
  }

 private:
  // `static int32_t <name>_staged(...)`: the body run on aligned copies of the misaligned
  // buffers (inputs copied in, outputs copied back after it); out of memory, nothing computed,
  // when a copy cannot be allocated.
  void emit_staged(const ir::PrimFunc& f, const std::vector<std::string>& params, const std::vector<std::string>& names) {
    size_t num_inputs = f->params.size() - static_cast<size_t>(f->num_outputs);
    *out_ << fmt::format("static int32_t {}_staged({}) {{\n", f->name, fmt::join(params, ", "));
    std::vector<std::string> temps, args;
    for (size_t i = 0; i < names.size(); ++i) temps.push_back(fmt::format("temp{}", i));
    line(fmt::format("void* {} = NULL;", fmt::join(temps, " = NULL; void* ")));
    line(fmt::format("int32_t status = {};", static_cast<int>(runtime::kKernelOutOfMemory)));
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < names.size(); ++i) {
      int64_t elements = 1;
      for (const ir::Expr& d : f->params[i]->shape) {
        auto c = ir::as_const_int(d);
        if (!c) throw Error(fmt::format("C backend: parameter '{}' has a symbolic shape", f->params[i]->name));
        elements *= *c;
      }
      bytes.push_back(elements * f->params[i]->dtype.bytes());
      int64_t rounded = std::max<int64_t>(1, (bytes.back() + 63) / 64) * 64;
      std::string copy = i < num_inputs ? fmt::format(" memcpy({}, {}, {});", temps[i], names[i], bytes.back()) : "";
      line(fmt::format("if ((uintptr_t){} % {}) {{ if (!({} = aligned_alloc(64, {}))) goto done;{} }}", names[i],
                       runtime::kKernelAlignment, temps[i], rounded, copy));
      args.push_back(fmt::format("{0} ? ({1}*){0} : {2}", temps[i], abi_types_[i], names[i]));
    }
    line(fmt::format("status = {}_body({});", f->name, fmt::join(args, ", ")));
    for (size_t i = num_inputs; i < names.size(); ++i) line(fmt::format("if ({0}) memcpy({1}, {0}, {2});", temps[i], names[i], bytes[i]));
    *out_ << "done:\n";
    for (const std::string& t : temps) line(fmt::format("free({});", t));
    line("return status;");
    *out_ << "}\n\n";
  }

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
  std::string buffer_name(const ir::BufferNode* b) { return unique(buffer_names_, b, "b_" + b->name); }
  std::string buffer_name(const ir::Buffer& b) { return buffer_name(b.get()); }

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

  // group_dot (ir/expr.h) at one lane: acc + a[0] * b[G*lane] + ..., in order; integers summed as
  // uint32 (wrapping, as int32 does in the instructions).
  std::string group_dot(const ir::CallNode* n, const std::string& lane) {
    TYCHE_CHECK(!lane.empty(), "C backend: a vector expression outside a vector statement");
    const int g = n->args[1].dtype().lanes();
    bool ints = n->dtype.is_integer();
    std::string sum = ints ? fmt::format("(uint32_t)({})", expr(n->args[0], lane)) : expr(n->args[0], lane);
    for (int t = 0; t < g; ++t) {
      std::string a = expr(n->args[1], fmt::format("{}", t));
      std::string b = expr(n->args[2], fmt::format("({} * {} + {})", g, lane, t));
      sum = ints ? fmt::format("({} + (uint32_t)((int32_t)({}) * (int32_t)({})))", sum, a, b)
                 : fmt::format("({} + (float)({}) * (float)({}))", sum, a, b);
    }
    return ints ? fmt::format("(int32_t){}", sum) : sum;
  }

  // tile_dot (ir/expr.h) at one lane of the M x N tile: group_dot's sum over a row of a and a
  // column of b, t in order.
  std::string tile_dot(const ir::CallNode* n, const std::string& lane) {
    TYCHE_CHECK(!lane.empty(), "C backend: a vector expression outside a vector statement");
    const ir::TileDotShape s = ir::tile_dot_shape(n);
    const int cols = s.n, k = s.k, g = s.g;
    bool ints = n->dtype.is_integer();
    const std::string row = fmt::format("(({}) / {})", lane, cols), col = fmt::format("(({}) % {})", lane, cols);
    std::string sum = ints ? fmt::format("(uint32_t)({})", expr(n->args[0], lane)) : expr(n->args[0], lane);
    for (int t = 0; t < k; ++t) {
      std::string a = expr(n->args[1], fmt::format("({} * {} + {})", row, k, t));
      std::string b = expr(n->args[2], fmt::format("({} + {} * {})", (t / g) * cols * g + t % g, col, g));
      sum = ints ? fmt::format("({} + (uint32_t)((int32_t)({}) * (int32_t)({})))", sum, a, b)
                 : fmt::format("({} + (float)({}) * (float)({}))", sum, a, b);
    }
    return ints ? fmt::format("(int32_t){}", sum) : sum;
  }

  std::string call(const ir::CallNode* n, const std::string& lane) {
    if (n->op == ir::CallOp::kGroupDot) return group_dot(n, lane);
    if (n->op == ir::CallOp::kTileDot) return tile_dot(n, lane);
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
      case ir::CallOp::kRound: return t.is_float() ? fn("nearbyint") : args[0];
      case ir::CallOp::kSigmoid: return fmt::format("tyche_sigmoid{}({})", f64 ? "" : "f", args[0]);
      case ir::CallOp::kAbs:
        if (t.is_float()) return fn("fabs");
        return fmt::format("(({0}) < 0 ? -({0}) : ({0}))", args[0]);
      case ir::CallOp::kPow: return fmt::format("pow{}({}, {})", f64 ? "" : "f", args[0], args[1]);
      case ir::CallOp::kIfThenElse: return fmt::format("({} ? {} : {})", args[0], args[1], args[2]);  // C is lazy
      case ir::CallOp::kGroupDot:
      case ir::CallOp::kTileDot: break;  // group_dot() and tile_dot() above
    }
    throw InternalError("C backend: unknown call");
  }

  // `e` in one pair of parentheses: as it is when they already enclose it whole (clang warns of
  // `if ((a == b))`).
  static std::string parenthesized(const std::string& e) {
    if (e.size() >= 2 && e.front() == '(' && e.back() == ')') {
      int depth = 0;
      size_t i = 0;
      for (; i < e.size(); ++i) {
        depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
        if (depth == 0) break;
      }
      if (i == e.size() - 1) return e;
    }
    return "(" + e + ")";
  }

  // ---- statements ----
  void line(const std::string& s) { *out_ << std::string(2 * indent_, ' ') << s << "\n"; }

  // Leaves the function with `status` after freeing the heap buffers allocated so far in it.
  void return_status(const std::string& status) {
    std::string frees;
    for (auto it = live_heap_.rbegin(); it != live_heap_.rend(); ++it) frees += fmt::format("free({}); ", *it);
    line(fmt::format("{{ {}return {}; }}", frees, status));
  }

  // A parallel loop: its body becomes `static int32_t <func>_parallel_<k>(begin, end, env)`,
  // defined before the kernel, with its captures in a struct; the loop becomes a call of the
  // exported runtime's parallel_for, whose status is passed on.
  void parallel_loop(const ir::ForNode* f) {
    detail::FreeVars free;
    free.add_parallel_body(f);
    std::string fn = fmt::format("{}_parallel_{}", func_name_, parallel_count_++);
    std::string env_type = fmt::format("struct {}_env", fn);
    std::vector<std::string> fields, values;
    for (const ir::VarNode* v : free.vars) {
      fields.push_back(fmt::format("{} {};", scalar_type(v->dtype), var_name(v)));
      values.push_back(var_name(v));
    }
    for (const ir::BufferNode* b : free.buffers) {
      fields.push_back(fmt::format("void* {};", buffer_name(b)));
      values.push_back(fmt::format("(void*){}", buffer_name(b)));
    }
    if (fields.empty()) {  // C has no empty structs
      fields.push_back("char unused;");
      values.push_back("0");
    }

    std::ostringstream outlined;
    std::ostringstream* saved_out = out_;
    int saved_indent = indent_;
    std::vector<std::string> saved_heap = std::move(live_heap_);
    live_heap_.clear();
    out_ = &outlined;
    indent_ = 0;
    line(fmt::format("{} {{ {} }};", env_type, fmt::join(fields, " ")));
    line(fmt::format("static int32_t {}(int64_t task_begin, int64_t task_end, void* env_) {{", fn));
    indent_ = 1;
    line(fmt::format("const {0}* env = (const {0}*)env_;", env_type));
    for (const ir::VarNode* v : free.vars) line(fmt::format("const {0} {1} = env->{1};", scalar_type(v->dtype), var_name(v)));
    for (const ir::BufferNode* b : free.buffers)
      line(fmt::format("{0}* restrict {1} = ({0}*)env->{1};", memory_type(b->dtype), buffer_name(b)));
    line("(void)env;");
    line("for (int64_t task = task_begin; task < task_end; ++task) {");
    indent_ = 2;
    std::string t = scalar_type(f->loop_var.dtype());
    line(fmt::format("const {0} {1} = ({0})({2} + task);", t, var_name(f->loop_var.get()), expr(f->min, "")));
    line(fmt::format("(void){};", var_name(f->loop_var.get())));
    stmt(f->body);
    indent_ = 1;
    line("}");
    line("return 0;");
    indent_ = 0;
    line("}");
    line("");
    hoisted_ += outlined.str();
    out_ = saved_out;
    indent_ = saved_indent;
    live_heap_ = std::move(saved_heap);

    std::string env = fmt::format("env_{}", fn);
    line("{");
    ++indent_;
    line(fmt::format("{} {} = {{ {} }};", env_type, env, fmt::join(values, ", ")));
    line(fmt::format("const int32_t status = {}parallel_for((int64_t)({}), {}, &{});", kExportRuntimePrefix, expr(f->extent, ""), fn, env));
    line("if (status != 0)");
    ++indent_;
    return_status("status");
    --indent_;
    --indent_;
    line("}");
  }

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
        line(fmt::format("if {} {{", parenthesized(expr(n->condition, ""))));
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
        if (f->for_kind == ir::ForKind::kParallel && options_.parallel) {
          parallel_loop(f);
          return;
        }
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
        bool heap = bytes > options_.max_stack_bytes;
        if (heap) {
          line(fmt::format("{0}* restrict {1} = ({0}*)aligned_alloc(64, {2});", type, name, (bytes + 63) / 64 * 64));
          line(fmt::format("if (!{})", name));
          ++indent_;
          return_status(std::to_string(static_cast<int>(runtime::kKernelOutOfMemory)));
          --indent_;
          live_heap_.push_back(name);
        } else {
          line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", type, name, *size));
        }
        stmt(n->body);
        if (heap) {
          live_heap_.pop_back();
          line(fmt::format("free({});", name));
        }
        --indent_;
        line("}");
        return;
      }
      case ir::StmtKind::kBlock:
      case ir::StmtKind::kBlockRealize: throw Error("C backend: the function still has blocks: lower it first");
    }
  }

  COptions options_;
  std::string func_name_;
  std::ostringstream body_;              // the kernel and its packed entry
  std::string hoisted_;                  // outlined parallel bodies, defined before the kernel
  std::ostringstream* out_ = &body_;     // where line() writes
  std::vector<std::string> abi_types_;   // of the parameters, as the packed entry casts them
  std::vector<std::string> live_heap_;   // heap buffers of the function being written, outermost first
  int parallel_count_ = 0;
  int indent_ = 0;
  int lane_counter_ = 0;
  std::unordered_map<const void*, std::string> var_names_, buffer_names_;
  std::unordered_map<std::string, int> used_;
};

}  // namespace

std::string emit_c(const ir::PrimFunc& lowered, const COptions& options) { return CEmitter(options).emit(lowered); }

std::string c_parameter_type(DataType dtype) {
  if (dtype.is_float() && dtype.bits() == 16) return "uint16_t";  // float16 and bfloat16: the bits
  if (dtype.is_bool()) return "bool";
  if (dtype.is_float()) return dtype.bits() == 64 ? "double" : "float";
  if (dtype.is_int()) return fmt::format("int{}_t", dtype.bits());
  if (dtype.is_uint()) return fmt::format("uint{}_t", dtype.bits());
  throw Error(fmt::format("C backend: unsupported type {}", dtype.str()));
}

}  // namespace tyche::codegen
