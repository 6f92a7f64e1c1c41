#include "codegen/c/c_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "codegen/c/c_expr_printer.h"
#include "codegen/captures.h"
#include "codegen/export/runtime_symbols.h"
#include "ir/op.h"
#include "runtime/module.h"
#include "support/error.h"
#include "support/int_division.h"

namespace tyche::codegen {

namespace {

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
  return fmt::format(
      "int32_t {}parallel_for(int64_t n, int32_t (*body)(int64_t begin, int64_t end, void* env), "
      "void* env);\n",
      kExportRuntimePrefix);
}

class CEmitter : public CExprPrinter {
 public:
  explicit CEmitter(const COptions& options) : options_(options) { out_ = &body_; }

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
      std::string qualifier =
          i < f->params.size() - static_cast<size_t>(f->num_outputs) ? "const " : "";
      std::string abi = c_parameter_type(p->dtype), held = memory_type(p->dtype),
                  name = buffer_name(p);
      if (abi == held) {
        params.push_back(fmt::format("{}{}* restrict {}", qualifier, abi, name));
        names.push_back(name);
      } else {
        params.push_back(fmt::format("{}{}* restrict {}_bits", qualifier, abi, name));
        names.push_back(name + "_bits");
        locals.push_back(
            fmt::format("{0}{1}* restrict {2} = ({0}{1}*){2}_bits;", qualifier, held, name));
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
      line(fmt::format("if ({}) return {};", fmt::join(nulls, " || "),
                       static_cast<int>(runtime::kKernelNullArgument)));
      line(fmt::format("if ({}) return {}_staged({});", fmt::join(misaligned, " || "), f->name,
                       fmt::join(names, ", ")));
    }
    line(fmt::format("return {}_body({});", f->name, fmt::join(names, ", ")));
    *out_ << "}\n\n";
    *out_ << fmt::format("int32_t {}_packed(void** args) {{\n  return {}(", f->name, f->name);
    for (size_t i = 0; i < f->params.size(); ++i)
      *out_ << (i ? ", " : "") << fmt::format("({}*)args[{}]", abi_types_[i], i);
    *out_ << ");\n}\n";
    return head.str() + hoisted_ + body_.str();
  }

 private:
  // `static int32_t <name>_staged(...)`: the body run on aligned copies of the misaligned
  // buffers (inputs copied in, outputs copied back after it); out of memory, nothing computed,
  // when a copy cannot be allocated.
  void emit_staged(const ir::PrimFunc& f, const std::vector<std::string>& params,
                   const std::vector<std::string>& names) {
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
        if (!c)
          throw Error(
              fmt::format("C backend: parameter '{}' has a symbolic shape", f->params[i]->name));
        elements *= *c;
      }
      bytes.push_back(elements * f->params[i]->dtype.bytes());
      int64_t rounded = std::max<int64_t>(1, (bytes.back() + 63) / 64) * 64;
      std::string copy = i < num_inputs
                             ? fmt::format(" memcpy({}, {}, {});", temps[i], names[i], bytes.back())
                             : "";
      line(fmt::format(
          "if ((uintptr_t){} % {}) {{ if (!({} = aligned_alloc(64, {}))) goto done;{} }}", names[i],
          runtime::kKernelAlignment, temps[i], rounded, copy));
      args.push_back(fmt::format("{0} ? ({1}*){0} : {2}", temps[i], abi_types_[i], names[i]));
    }
    line(fmt::format("status = {}_body({});", f->name, fmt::join(args, ", ")));
    for (size_t i = num_inputs; i < names.size(); ++i)
      line(fmt::format("if ({0}) memcpy({1}, {0}, {2});", temps[i], names[i], bytes[i]));
    *out_ << "done:\n";
    for (const std::string& t : temps) line(fmt::format("free({});", t));
    line("return status;");
    *out_ << "}\n\n";
  }

  // ---- statements ----
  // Leaves the function with `status` after freeing the heap buffers allocated so far in it.
  void return_status(const std::string& status) {
    std::string frees;
    for (auto it = live_heap_.rbegin(); it != live_heap_.rend(); ++it)
      frees += fmt::format("free({}); ", *it);
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
    for (const ir::VarNode* v : free.vars)
      line(fmt::format("const {0} {1} = env->{1};", scalar_type(v->dtype), var_name(v)));
    for (const ir::BufferNode* b : free.buffers)
      line(fmt::format("{0}* restrict {1} = ({0}*)env->{1};", memory_type(b->dtype),
                       buffer_name(b)));
    line("(void)env;");
    line("for (int64_t task = task_begin; task < task_end; ++task) {");
    indent_ = 2;
    std::string t = scalar_type(f->loop_var.dtype());
    line(fmt::format("const {0} {1} = ({0})({2} + task);", t, var_name(f->loop_var.get()),
                     expr(f->min, "")));
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
    line(fmt::format("const int32_t status = {}parallel_for((int64_t)({}), {}, &{});",
                     kExportRuntimePrefix, expr(f->extent, ""), fn, env));
    line("if (status != 0)");
    ++indent_;
    return_status("status");
    --indent_;
    --indent_;
    line("}");
  }

  void stmt(const ir::Stmt& s) override {
    if (auto* f = s.as<ir::ForNode>();
        f && f->for_kind == ir::ForKind::kParallel && options_.parallel) {
      parallel_loop(f);
      return;
    }
    if (common_stmt(s)) return;
    switch (s.kind()) {
      case ir::StmtKind::kEvaluate:
        line(fmt::format("(void)({});", expr(s.as<ir::EvaluateNode>()->value, "")));
        return;
      case ir::StmtKind::kAllocate: {
        auto* n = s.as<ir::AllocateNode>();
        auto size = ir::as_const_int(n->buffer->shape.at(0));
        if (!size)
          throw Error(
              fmt::format("C backend: buffer '{}' has a non-constant size", n->buffer->name));
        std::string name = buffer_name(n->buffer);
        std::string type = memory_type(n->buffer->dtype);
        int64_t bytes = *size * n->buffer->dtype.bytes();
        line("{");
        ++indent_;
        bool heap = bytes > options_.max_stack_bytes;
        if (heap) {
          line(fmt::format("{0}* restrict {1} = ({0}*)aligned_alloc(64, {2});", type, name,
                           (bytes + 63) / 64 * 64));
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
      case ir::StmtKind::kBlockRealize:
        throw Error("C backend: the function still has blocks: lower it first");
      case ir::StmtKind::kBufferStore:
      case ir::StmtKind::kSeqStmt:
      case ir::StmtKind::kIfThenElse:
      case ir::StmtKind::kFor:
        return;  // common_stmt's
    }
  }

  COptions options_;
  std::string func_name_;
  std::ostringstream body_;             // the kernel and its packed entry
  std::string hoisted_;                 // outlined parallel bodies, defined before the kernel
  std::vector<std::string> abi_types_;  // of the parameters, as the packed entry casts them
  std::vector<std::string>
      live_heap_;  // heap buffers of the function being written, outermost first
  int parallel_count_ = 0;
};

}  // namespace

std::string emit_c(const ir::PrimFunc& lowered, const COptions& options) {
  return CEmitter(options).emit(lowered);
}

std::string c_parameter_type(DataType dtype) {
  if (dtype.is_float() && dtype.bits() == 16) return "uint16_t";  // float16 and bfloat16: the bits
  if (dtype.is_bool()) return "bool";
  if (dtype.is_float()) return dtype.bits() == 64 ? "double" : "float";
  if (dtype.is_int()) return fmt::format("int{}_t", dtype.bits());
  if (dtype.is_uint()) return fmt::format("uint{}_t", dtype.bits());
  throw Error(fmt::format("C backend: unsupported type {}", dtype.str()));
}

}  // namespace tyche::codegen
