#include "schedule/intrin/dot.h"

#include "arith/region.h"
#include "ir/op.h"

namespace tyche::schedule::intrin {

namespace {

ir::PrimFunc make_func(const std::string& name, std::vector<ir::Buffer> params, ir::Stmt body) {
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), std::move(body));
  return ir::PrimFunc(name, std::move(params), 1, ir::block_realize({}, ir::make_bool(true), root));
}

std::vector<ir::Buffer> params(int lanes, int group, DataType a, DataType b, DataType acc) {
  return {ir::make_buffer("A", a, {ir::make_int(group)}), ir::make_buffer("B", b, {ir::make_int(lanes), ir::make_int(group)}),
          ir::make_buffer("C", acc, {ir::make_int(lanes)})};
}

ir::Expr widen(ir::Expr e, DataType t) { return e.dtype() == t ? e : ir::cast(t, e); }

}  // namespace

TensorIntrin dot_intrin(const std::string& name, int lanes, int group, DataType a, DataType b, DataType acc,
                        std::vector<std::vector<std::string>> requires_any) {
  std::vector<ir::Buffer> d = params(lanes, group, a, b, acc);
  ir::Var i("i"), k("k"), vi("vi"), vk("vk");
  ir::Stmt update = ir::buffer_store(
      d[2], ir::buffer_load(d[2], {vi}) + widen(ir::buffer_load(d[0], {vk}), acc) * widen(ir::buffer_load(d[1], {vi, vk}), acc),
      {vi});
  std::vector<ir::IterVar> iters = {ir::IterVar{vi, ir::Range(ir::make_int(0), ir::make_int(lanes)), ir::IterKind::kSpatial},
                                    ir::IterVar{vk, ir::Range(ir::make_int(0), ir::make_int(group)), ir::IterKind::kReduce}};
  ir::Block block = ir::make_block("update", iters, {}, {}, ir::Stmt(), update);
  arith::Analyzer analyzer;
  arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
  block = ir::make_block("update", iters, regions.reads, regions.writes, ir::Stmt(), update);
  ir::Stmt nest = ir::for_loop(
      i, ir::make_int(0), ir::make_int(lanes), ir::ForKind::kSerial,
      ir::for_loop(k, ir::make_int(0), ir::make_int(group), ir::ForKind::kSerial, ir::block_realize({i, k}, ir::make_bool(true), block)));
  ir::PrimFunc desc = make_func(name, d, nest);

  std::vector<ir::Buffer> m = params(lanes, group, a, b, acc);
  auto vec = [](int n) { return ir::ramp(ir::make_int(0), ir::make_int(1), n); };
  // B's rows and columns as vectors: (0, 0, .., 0, 1, ..), (0, 1, .., g-1, 0, ..); once flattened
  // the index folds back into one ramp, a contiguous load.
  ir::Expr flat = vec(lanes * group), g = ir::broadcast(ir::make_int(group), lanes * group);
  ir::Expr dot = ir::group_dot(ir::buffer_load(m[2], {vec(lanes)}), ir::buffer_load(m[0], {vec(group)}),
                               ir::buffer_load(m[1], {ir::floordiv(flat, g), ir::floormod(flat, g)}));
  ir::PrimFunc impl = make_func(name + "_impl", m, ir::buffer_store(m[2], dot, {vec(lanes)}));
  return {name, desc, impl, std::move(requires_any)};
}

}  // namespace tyche::schedule::intrin
