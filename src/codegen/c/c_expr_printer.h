// What the C-family back ends share (the C source backend, the GPU back end's CUDA C and OpenCL
// C): names for variables and buffers, types, and expressions printed for one lane of a vector.
// Where the dialects differ (how 16-bit floats are held, the math functions' names, a 64-bit
// literal's suffix) a hook says it.
#pragma once

#include <sstream>
#include <string>
#include <unordered_map>

#include "ir/stmt.h"

namespace tyche::codegen {

class CExprPrinter {
 public:
  virtual ~CExprPrinter() = default;

 protected:
  // ---- names ----
  static std::string sanitize(const std::string& s);
  std::string unique(std::unordered_map<const void*, std::string>& names, const void* key,
                     const std::string& hint);
  std::string var_name(const ir::VarNode* v) { return unique(var_names_, v, "v_" + v->name); }
  std::string buffer_name(const ir::BufferNode* b) {
    return unique(buffer_names_, b, "b_" + b->name);
  }
  std::string buffer_name(const ir::Buffer& b) { return buffer_name(b.get()); }

  // ---- types: values are computed in scalar_type (16-bit floats in float), held in memory_type
  // ----
  static std::string scalar_type(DataType t);
  virtual std::string memory_type(DataType t);
  static std::string suffix(DataType t);  // of the min/max helpers: f32, i64, ...
  virtual std::string from_memory(const std::string& load, DataType t);
  virtual std::string to_memory(const std::string& v, DataType t);
  // A float value rounded to float16 (and held in float).
  virtual std::string round_float16(const std::string& v);
  // The name of a C99 math function for float (f64 false) or double: expf, exp, ...
  virtual std::string math(const std::string& name, bool f64);
  virtual const char* int64_suffix() { return "LL"; }

  // ---- expressions, evaluated for one lane (`lane` is a C expression, "" for scalars) ----
  std::string expr(const ir::Expr& e, const std::string& lane);
  std::string cast(DataType to, const ir::Expr& from, const std::string& lane);
  std::string binary(const ir::BinaryNode* n, const std::string& lane);
  std::string group_dot(const ir::CallNode* n, const std::string& lane);
  std::string tile_dot(const ir::CallNode* n, const std::string& lane);
  virtual std::string call(const ir::CallNode* n, const std::string& lane);
  std::string bit_call(const ir::CallNode* n, const std::vector<std::string>& args);
  // `e` in one pair of parentheses: as it is when they already enclose it whole (clang warns of
  // `if ((a == b))`).
  static std::string parenthesized(const std::string& e);

  // ---- output ----
  void line(const std::string& s) {
    *out_ << std::string(2 * static_cast<size_t>(indent_), ' ') << s << "\n";
  }
  // A store; a vector store writes each lane in turn (lanes write distinct elements).
  void store(const ir::BufferStoreNode* n);
  // The value a store writes, in memory's representation (a copy of an element as it is).
  std::string stored(const ir::Expr& value, const std::string& lane);
  // Every back end's statement printer; common_stmt prints the statements all print alike (a
  // store, a sequence, an if, a loop as a C for loop, `s`'s children through stmt()) and is false
  // for the others.
  virtual void stmt(const ir::Stmt& s) = 0;
  bool common_stmt(const ir::Stmt& s);
  void nested(const ir::Stmt& s) {
    ++indent_;
    stmt(s);
    --indent_;
  }
  std::ostringstream* out_ = nullptr;  // where line() writes
  int indent_ = 0;
  int lane_counter_ = 0;

 private:
  std::unordered_map<const void*, std::string> var_names_, buffer_names_;
  std::unordered_map<std::string, int> used_;
};

}  // namespace tyche::codegen
