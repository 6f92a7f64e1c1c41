// The Program: scopes, parameter binding and running; and the public entry points.
#include "interp/interpreter.h"

#include <fmt/format.h>

#include "interp/program.h"
#include "ir/functor.h"
#include "ir/op.h"
#include "ir/printer.h"

namespace tyche::interp {

namespace detail {

using namespace ir;

namespace {

std::string shape_text(const Buffer& b) {
  std::vector<std::string> dims;
  for (const Expr& d : b->shape) dims.push_back(to_string(d));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// The variables an expression reads.
class VarCollector : public StmtExprVisitor {
 public:
  std::vector<const VarNode*> vars;
  void visit_var(const VarNode* v) override { vars.push_back(v); }
};

}  // namespace

Program::Scope::~Scope() {
  for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
    if (it->second)
      p_.var_map_[it->first] = *it->second;
    else
      p_.var_map_.erase(it->first);
  }
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) {
    if (it->second)
      p_.buffer_map_[it->first] = it->second;
    else
      p_.buffer_map_.erase(it->first);
  }
}

Program::VarSlot Program::Scope::bind_var(const Var& v) {
  VarSlot s;
  DataType t = v.dtype();
  if (t.lanes() > 1)
    s.v = &p_.vvars_.emplace_back();
  else if (t.is_float())
    s.f = &p_.fvars_.emplace_back(0.0);
  else if (t.is_int_like())
    s.i = &p_.ivars_.emplace_back(0);
  else
    throw_error("interp: variable '{}' has type {}", v.name(), t.str());
  auto it = p_.var_map_.find(v.get());
  vars_.emplace_back(v.get(),
                     it == p_.var_map_.end() ? std::nullopt : std::optional<VarSlot>(it->second));
  p_.var_map_[v.get()] = s;
  return s;
}

BufferState* Program::Scope::bind_buffer(const Buffer& b) {
  BufferState* s = &p_.buffers_.emplace_back();
  s->node = b.get();
  auto it = p_.buffer_map_.find(b.get());
  buffers_.emplace_back(b.get(), it == p_.buffer_map_.end() ? nullptr : it->second);
  p_.buffer_map_[b.get()] = s;
  return s;
}

Program::VarSlot Program::lookup_var(const VarNode* v) const {
  auto it = var_map_.find(v);
  if (it == var_map_.end()) throw_error("interp: unbound variable '{}'", v->name);
  return it->second;
}

BufferState* Program::lookup_buffer(const Buffer& b) const {
  auto it = buffer_map_.find(b.get());
  if (it == buffer_map_.end())
    throw_error("interp: buffer '{}' is neither a parameter nor allocated in an enclosing scope",
                b->name);
  return it->second;
}

Program::Program(const PrimFunc& func) : func_(func) {
  if (!func.defined()) throw_error("interp: undefined PrimFunc");
  int outputs = func->num_outputs;
  if (outputs < 0 || outputs > static_cast<int>(func->params.size()))
    throw_error("interp: '{}' declares {} outputs but has {} params", func->name, outputs,
                func->params.size());
  Scope scope(*this);  // the parameters and shape variables stay bound for the whole program
  compile_params(scope);
  body_ = compile_stmt(func->body);
}

void Program::compile_params(Scope& scope) {
  const std::vector<Buffer>& ps = func_->params;
  params_.resize(ps.size());
  // First the dimensions that are constants or define a shape variable, then those to check.
  for (size_t i = 0; i < ps.size(); ++i) {
    const Buffer& b = ps[i];
    if (!b.defined()) throw_error("interp: parameter {} of '{}' is undefined", i, func_->name);
    if (buffer_map_.count(b.get())) throw_error("interp: buffer '{}' is passed twice", b->name);
    with_storage(b->dtype, []<typename T>() {});
    Param& p = params_[i];
    p.state = scope.bind_buffer(b);
    for (const Expr& d : b->shape) {
      ParamDim dim;
      if (auto c = as_const_int(d)) {
        dim.value = *c;
      } else if (auto* v = d.as<VarNode>(); v && !var_map_.count(v) && d.dtype().is_int_like()) {
        dim.kind = ParamDim::kDefine;
        dim.slot = scope.bind_var(Var(std::static_pointer_cast<const VarNode>(d.ptr()))).i;
        defining_param_[dim.slot] = static_cast<int>(i);
      } else {
        dim.kind = ParamDim::kCheck;
      }
      p.dims.push_back(std::move(dim));
    }
  }
  auto needed = [&](const Expr& e) {
    VarCollector c;
    c.visit_expr(e);
    int last = -1;
    for (const VarNode* v : c.vars) {
      auto it = var_map_.find(v);
      if (it != var_map_.end() && it->second.i)
        last = std::max(last, defining_param_[it->second.i]);
    }
    return last;
  };
  for (size_t i = 0; i < ps.size(); ++i) {
    Param& p = params_[i];
    for (size_t d = 0; d < p.dims.size(); ++d) {
      if (p.dims[d].kind != ParamDim::kCheck) continue;
      p.dims[d].expr = compile_int(ps[i]->shape[d]);
      p.last_param_needed = std::max(p.last_param_needed, needed(ps[i]->shape[d]));
    }
    if (!ps[i]->strides.empty() && ps[i]->strides.size() != p.dims.size())
      throw_error("interp: buffer '{}' has {} strides for {} dimensions", ps[i]->name,
                  ps[i]->strides.size(), p.dims.size());
    for (const Expr& s : ps[i]->strides) {
      p.strides.push_back(compile_int(s));
      p.last_param_needed = std::max(p.last_param_needed, needed(s));
    }
  }
}

void Program::bind_params(std::vector<runtime::NDArray>& args, size_t count) {
  const std::vector<Buffer>& ps = func_->params;
  auto mismatch = [&](size_t i) {
    throw_error("argument {} ('{}'): shape [{}] does not match the parameter's shape {}", i,
                ps[i]->name, fmt::join(args[i].shape(), ", "), shape_text(ps[i]));
  };
  for (size_t i = 0; i < count; ++i) {
    const runtime::NDArray& a = args[i];
    if (!a.defined()) throw_error("argument {} ('{}') is an undefined array", i, ps[i]->name);
    if (a.dtype() != ps[i]->dtype)
      throw_error("argument {} ('{}'): dtype {} does not match the parameter's {}", i, ps[i]->name,
                  a.dtype().str(), ps[i]->dtype.str());
    Param& p = params_[i];
    if (a.ndim() != static_cast<int>(p.dims.size())) mismatch(i);
    for (size_t d = 0; d < p.dims.size(); ++d) {
      if (p.dims[d].kind == ParamDim::kConst && p.dims[d].value != a.shape()[d]) mismatch(i);
      if (p.dims[d].kind == ParamDim::kDefine) *p.dims[d].slot = a.shape()[d];
    }
  }
  for (size_t i = 0; i < count; ++i) {
    runtime::NDArray& a = args[i];
    Param& p = params_[i];
    bool checkable = p.last_param_needed < static_cast<int>(count);  // else run() checks it
    for (size_t d = 0; d < p.dims.size() && checkable; ++d) {
      if (p.dims[d].kind == ParamDim::kCheck && p.dims[d].expr->eval() != a.shape()[d]) mismatch(i);
    }
    BufferState& s = *p.state;
    s.data = static_cast<uint8_t*>(a.data());
    s.array = &a;
    s.shape = a.shape();
    s.size = a.numel();
    size_t n = s.shape.size();
    s.strides.assign(n, 1);
    for (size_t d = n; d-- > 1;) s.strides[d - 1] = s.strides[d] * s.shape[d];
    s.compact = true;
    if (!p.strides.empty() && checkable) {
      int64_t reach = 1;
      for (size_t d = 0; d < n; ++d) {
        int64_t st = p.strides[d]->eval();
        if (st < 0) throw_error("argument {} ('{}'): negative stride {}", i, ps[i]->name, st);
        s.compact = s.compact && st == s.strides[d];
        s.strides[d] = st;
        reach += (s.shape[d] - 1) * st;
      }
      if (s.size > 0 && reach > s.size)
        throw_error("argument {} ('{}'): strides reach element {} of an array of {}", i,
                    ps[i]->name, reach - 1, s.size);
    }
  }
}

void Program::run(std::vector<runtime::NDArray>& args) {
  if (args.size() != params_.size())
    throw_error("'{}' takes {} arguments ({} inputs, then {} outputs), got {}", func_->name,
                params_.size(), params_.size() - func_->num_outputs, func_->num_outputs,
                args.size());
  bind_params(args, args.size());
  struct Unbind {  // the caller's arrays may die after this call
    std::vector<Param>& ps;
    ~Unbind() {
      for (Param& p : ps) {
        p.state->data = nullptr;
        p.state->array = nullptr;
      }
    }
  } unbind{params_};
  body_->exec();
}

std::vector<runtime::NDArray> Program::run_on_inputs(const std::vector<runtime::NDArray>& inputs) {
  size_t num_inputs = params_.size() - func_->num_outputs;
  if (inputs.size() != num_inputs)
    throw_error("'{}' takes {} inputs, got {}", func_->name, num_inputs, inputs.size());
  // Copies, so that a program writing to an input cannot corrupt the caller's data.
  std::vector<runtime::NDArray> args;
  for (const runtime::NDArray& a : inputs) args.push_back(a.defined() ? a.copy() : a);
  bind_params(args, num_inputs);
  for (size_t i = num_inputs; i < params_.size(); ++i) {
    const Buffer& b = func_->params[i];
    std::vector<int64_t> shape;
    for (ParamDim& d : params_[i].dims) {
      bool known = d.kind == ParamDim::kConst ||
                   (d.kind == ParamDim::kCheck &&
                    params_[i].last_param_needed < static_cast<int>(num_inputs));
      if (!known)
        throw_error("cannot infer the shape {} of output '{}' from the inputs", shape_text(b),
                    b->name);
      shape.push_back(d.kind == ParamDim::kConst ? d.value : d.expr->eval());
      if (shape.back() < 0)
        throw_error("output '{}' would have a negative extent {}", b->name, shape.back());
    }
    args.emplace_back(std::move(shape), b->dtype);
  }
  run(args);
  return {std::make_move_iterator(args.begin() + num_inputs), std::make_move_iterator(args.end())};
}

}  // namespace detail

CompiledFunc::CompiledFunc(const ir::PrimFunc& func)
    : program_(std::make_unique<detail::Program>(func)) {}
CompiledFunc::~CompiledFunc() = default;
CompiledFunc::CompiledFunc(CompiledFunc&&) noexcept = default;
CompiledFunc& CompiledFunc::operator=(CompiledFunc&&) noexcept = default;

void CompiledFunc::run(std::vector<runtime::NDArray>& args) {
  program_->run(args);
}
std::vector<runtime::NDArray> CompiledFunc::run_on_inputs(
    const std::vector<runtime::NDArray>& inputs) {
  return program_->run_on_inputs(inputs);
}

void run(const ir::PrimFunc& func, std::vector<runtime::NDArray>& args) {
  detail::Program(func).run(args);
}

std::vector<runtime::NDArray> run_on_inputs(const ir::PrimFunc& func,
                                            const std::vector<runtime::NDArray>& inputs) {
  return detail::Program(func).run_on_inputs(inputs);
}

}  // namespace tyche::interp
