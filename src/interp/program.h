// Internal: a PrimFunc compiled for the interpreter (nodes.h) together with the slots its nodes
// point into. Compilation is split by IR family: compile_expr.cc (scalars), compile_vector.cc
// (vectors), compile_stmt.cc (statements, blocks, allocations); program.cc binds parameters.
#pragma once

#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interp/nodes.h"
#include "ir/function.h"
#include "ir/stmt.h"

namespace tyche::interp::detail {

class Program {
 public:
  explicit Program(const ir::PrimFunc& func);

  void run(std::vector<runtime::NDArray>& args);
  std::vector<runtime::NDArray> run_on_inputs(const std::vector<runtime::NDArray>& inputs);

  // Where a variable's value lives while it is in scope (exactly one pointer is set).
  struct VarSlot {
    int64_t* i = nullptr;
    double* f = nullptr;
    VecSlot* v = nullptr;
  };

  // Bindings made in a lexical scope; the previous ones come back when it ends, so a variable or
  // buffer bound twice (shadowing, sibling loops reusing a Var) gets a slot per binding site.
  class Scope {
   public:
    explicit Scope(Program& p) : p_(p) {}
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    VarSlot bind_var(const ir::Var& v);
    BufferState* bind_buffer(const ir::Buffer& b);

   private:
    Program& p_;
    std::vector<std::pair<const ir::VarNode*, std::optional<VarSlot>>> vars_;
    std::vector<std::pair<const ir::BufferNode*, BufferState*>> buffers_;
  };

  // compile_expr.cc: scalar expressions of integer/bool class and of float class. Each converts
  // an expression of the other class (truncating float -> int).
  IntPtr compile_int(const ir::Expr& e);
  FloatPtr compile_float(const ir::Expr& e);
  // compile_vector.cc: an expression with `lanes` lanes (a scalar is broadcast).
  VecPtr compile_vec(const ir::Expr& e, int lanes);
  // compile_stmt.cc
  ExecPtr compile_stmt(const ir::Stmt& s);

  // Helpers shared by the compile_*.cc files.
  VarSlot lookup_var(const ir::VarNode* v) const;
  BufferState* lookup_buffer(const ir::Buffer& b) const;
  // Compiles a Let's value and binds its variable in `scope`; the returned Exec stores the value.
  ExecPtr compile_let_binding(Scope& scope, const ir::LetNode* let);
  LaneMask* lane_mask() { return &mask_; }

 private:
  struct ParamDim {
    enum Kind { kConst, kDefine, kCheck } kind = kConst;
    int64_t value = 0;        // kConst
    int64_t* slot = nullptr;  // kDefine: the shape variable this dimension defines
    IntPtr expr;              // kCheck: must equal the argument's extent
  };
  struct Param {
    BufferState* state = nullptr;
    std::vector<ParamDim> dims;
    std::vector<IntPtr> strides;  // empty: compact row-major
    int last_param_needed = -1;   // highest param whose shape defines a variable dims/strides use
  };

  void compile_params(Scope& scope);
  // Binds args[0, count) to the first `count` params (checking shapes and dtypes).
  void bind_params(std::vector<runtime::NDArray>& args, size_t count);

  ir::PrimFunc func_;
  // Deques: compiled nodes hold pointers to these, which must stay put as slots are added.
  std::deque<int64_t> ivars_;
  std::deque<double> fvars_;
  std::deque<VecSlot> vvars_;
  std::deque<BufferState> buffers_;
  std::unordered_map<const ir::VarNode*, VarSlot> var_map_;
  std::unordered_map<const ir::BufferNode*, BufferState*> buffer_map_;
  std::unordered_map<const int64_t*, int> defining_param_;  // shape variable slot -> param
  LaneMask mask_;
  std::vector<Param> params_;
  ExecPtr body_;
};

// The checked index computation of a scalar or vector access to `buffer`.
ScalarAccess compile_access(Program& p, const ir::Buffer& buffer,
                            const std::vector<ir::Expr>& indices, bool is_store);
VecAccess compile_vec_access(Program& p, const ir::Buffer& buffer,
                             const std::vector<ir::Expr>& indices, int lanes, bool is_store);

// Fills a freshly allocated buffer with NaN (floats) or 0xA5 bytes (integers, bool).
void poison(BufferState& b);

}  // namespace tyche::interp::detail
