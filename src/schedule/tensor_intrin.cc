#include "schedule/tensor_intrin.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "arith/region.h"
#include "ir/op.h"
#include "schedule/intrin/dot.h"

namespace tyche::schedule {

namespace {

using ir::Expr;
using ir::Stmt;
using ir::Var;

// ---- construction helpers for the built-in intrinsics ----

ir::PrimFunc make_func(const std::string& name, std::vector<ir::Buffer> params, int num_outputs,
                       Stmt body) {
  ir::Block root = ir::make_block("root", {}, {}, {}, Stmt(), std::move(body));
  return ir::PrimFunc(name, std::move(params), num_outputs,
                      ir::block_realize({}, ir::make_bool(true), root));
}

// A block with regions inferred from its body, realized with `values`.
Stmt make_realize(const std::string& name, std::vector<ir::IterVar> iters, std::vector<Expr> values,
                  Stmt body) {
  ir::Block b = ir::make_block(name, iters, {}, {}, Stmt(), body);
  arith::Analyzer analyzer;
  arith::AccessRegions regions = arith::infer_access_regions(*b, &analyzer);
  b = ir::make_block(name, std::move(iters), regions.reads, regions.writes, Stmt(),
                     std::move(body));
  return ir::block_realize(std::move(values), ir::make_bool(true), b);
}

ir::IterVar iter(const Var& v, int64_t extent, ir::IterKind kind) {
  return ir::IterVar{v, ir::Range(ir::make_int(0), ir::make_int(extent)), kind};
}

Stmt loop(const Var& v, int64_t extent, Stmt body, ir::ForKind kind = ir::ForKind::kSerial) {
  return ir::for_loop(v, ir::make_int(0), ir::make_int(extent), kind, std::move(body));
}

TensorIntrin dot_4x4x4_f32() {
  const char* name = "dot_4x4x4_f32";
  auto buffers = [] {
    return std::vector<ir::Buffer>{ir::make_buffer("A", kFloat32, {4, 4}),
                                   ir::make_buffer("B", kFloat32, {4, 4}),
                                   ir::make_buffer("C", kFloat32, {4, 4})};
  };
  auto update = [](const std::vector<ir::Buffer>& p, const Expr& i, const Expr& j, const Expr& k) {
    return ir::buffer_store(p[2],
                            ir::buffer_load(p[2], {i, j}) +
                                ir::buffer_load(p[0], {i, k}) * ir::buffer_load(p[1], {k, j}),
                            {i, j});
  };
  // desc: for i, j, k: block(vi S, vj S, vk R) C[vi, vj] += A[vi, vk] * B[vk, vj]
  std::vector<ir::Buffer> d = buffers();
  Var i("i"), j("j"), k("k"), vi("vi"), vj("vj"), vk("vk");
  Stmt block =
      make_realize("update",
                   {iter(vi, 4, ir::IterKind::kSpatial), iter(vj, 4, ir::IterKind::kSpatial),
                    iter(vk, 4, ir::IterKind::kReduce)},
                   {i, j, k}, update(d, vi, vj, vk));
  ir::PrimFunc desc = make_func(name, d, 1, loop(i, 4, loop(j, 4, loop(k, 4, block))));
  // impl: k outermost, i and j unrolled; per element the k order is unchanged, so the float
  // results are the same as the description's.
  std::vector<ir::Buffer> m = buffers();
  Var ki("k"), ii("i"), ji("j");
  Stmt body = loop(ki, 4,
                   loop(ii, 4, loop(ji, 4, update(m, ii, ji, ki), ir::ForKind::kUnrolled),
                        ir::ForKind::kUnrolled));
  ir::PrimFunc impl = make_func(std::string(name) + "_impl", m, 1, body);
  return {name, desc, impl, {}};
}

TensorIntrin copy_4_f32() {
  const char* name = "copy_4_f32";
  std::vector<ir::Buffer> d = {ir::make_buffer("A", kFloat32, {4}),
                               ir::make_buffer("B", kFloat32, {4})};
  Var i("i"), vi("vi");
  Stmt block = make_realize("copy", {iter(vi, 4, ir::IterKind::kSpatial)}, {i},
                            ir::buffer_store(d[1], ir::buffer_load(d[0], {vi}), {vi}));
  ir::PrimFunc desc = make_func(name, d, 1, loop(i, 4, block));
  std::vector<ir::Buffer> m = {ir::make_buffer("A", kFloat32, {4}),
                               ir::make_buffer("B", kFloat32, {4})};
  std::vector<Stmt> stores;
  for (int x = 0; x < 4; ++x)
    stores.push_back(ir::buffer_store(m[1], ir::buffer_load(m[0], {x}), {x}));
  ir::PrimFunc impl = make_func(std::string(name) + "_impl", m, 1, ir::seq(std::move(stores)));
  return {name, desc, impl, {}};
}

// ---- validation ----

const ir::BlockNode* root_block(const ir::PrimFunc& f) {
  auto* r = f->body.defined() ? f->body.as<ir::BlockRealizeNode>() : nullptr;
  return r ? r->block.get() : nullptr;
}

void validate(const std::string& name, const ir::PrimFunc& desc, const ir::PrimFunc& impl) {
  if (!desc.defined() || !impl.defined())
    throw_error("tensor intrinsic '{}': desc and impl must be defined", name);
  const ir::BlockNode* droot = root_block(desc);
  const ir::BlockNode* iroot = root_block(impl);
  if (!droot || !iroot)
    throw_error("tensor intrinsic '{}': desc and impl must have a root block", name);
  if (droot->init.defined() || iroot->init.defined())
    throw_error("tensor intrinsic '{}': a root block must not have an init", name);
  // desc: a chain of loops around one block realize.
  Stmt s = droot->body;
  while (auto* f = s.as<ir::ForNode>()) s = f->body;
  if (!s.as<ir::BlockRealizeNode>())
    throw_error(
        "tensor intrinsic '{}': the desc root block must hold a chain of loops around one block",
        name);
  if (desc->params.size() != impl->params.size())
    throw_error("tensor intrinsic '{}': desc has {} params, impl has {}", name, desc->params.size(),
                impl->params.size());
  if (desc->num_outputs != impl->num_outputs)
    throw_error("tensor intrinsic '{}': desc has {} outputs, impl has {}", name, desc->num_outputs,
                impl->num_outputs);
  for (size_t p = 0; p < desc->params.size(); ++p) {
    const ir::Buffer& a = desc->params[p];
    const ir::Buffer& b = impl->params[p];
    if (a->dtype != b->dtype)
      throw_error("tensor intrinsic '{}': param {} is {} in desc but {} in impl", name, p,
                  a->dtype.str(), b->dtype.str());
    std::vector<int64_t> sa = ir::const_shape(a), sb = ir::const_shape(b);
    if (sa != sb)
      throw_error("tensor intrinsic '{}': param {} has shape ({}) in desc but ({}) in impl", name,
                  p, fmt::join(sa, ", "), fmt::join(sb, ", "));
  }
}

// ---- the registry ----

struct Registry {
  std::mutex mu;
  bool builtins_loaded = false;
  std::map<std::string, std::shared_ptr<const TensorIntrin>> table;
  // Overridden entries stay alive: find_tensor_intrin promises stable pointers.
  std::vector<std::shared_ptr<const TensorIntrin>> retired;

  void add_locked(TensorIntrin intrin, bool override) {
    validate(intrin.name, intrin.desc, intrin.impl);
    auto it = table.find(intrin.name);
    if (it != table.end()) {
      if (!override) throw_error("tensor intrinsic '{}' is already registered", intrin.name);
      retired.push_back(it->second);
    }
    std::string name = intrin.name;
    table[name] = std::make_shared<const TensorIntrin>(std::move(intrin));
  }

  // The explicit table of built-in intrinsics, loaded on first use.
  void load_builtins_locked() {
    if (builtins_loaded) return;
    builtins_loaded = true;
    add_locked(dot_4x4x4_f32(), false);
    add_locked(copy_4_f32(), false);
    for (auto* isa :
         {intrin::x86_vnni_intrins, intrin::x86_avx2_intrins, intrin::x86_avx512_bf16_intrins,
          intrin::x86_amx_intrins, intrin::cuda_wmma_intrins, intrin::cuda_mma_intrins})
      for (TensorIntrin& t : isa()) add_locked(std::move(t), false);
  }
};

Registry& registry() {
  static Registry r;  // constructed on first use, not at program start
  return r;
}

}  // namespace

bool TensorIntrin::available_on(const std::vector<std::string>& features) const {
  if (requires_any.empty()) return true;
  auto has = [&](const std::string& f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  return std::any_of(requires_any.begin(), requires_any.end(),
                     [&](const std::vector<std::string>& all) {
                       return std::all_of(all.begin(), all.end(), has);
                     });
}

void register_tensor_intrin(const std::string& name, ir::PrimFunc desc, ir::PrimFunc impl,
                            bool override) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.load_builtins_locked();
  r.add_locked(TensorIntrin{name, std::move(desc), std::move(impl), {}}, override);
}

const TensorIntrin* find_tensor_intrin(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.load_builtins_locked();
  auto it = r.table.find(name);
  return it == r.table.end() ? nullptr : it->second.get();
}

std::vector<std::string> tensor_intrin_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.load_builtins_locked();
  std::vector<std::string> out;
  for (const auto& [name, intrin] : r.table) out.push_back(name);
  return out;
}

}  // namespace tyche::schedule
