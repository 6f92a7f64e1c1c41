#include "schedule/intrin/dot.h"

#include "arith/region.h"
#include "ir/op.h"

namespace tyche::schedule::intrin {

ir::PrimFunc intrin_func(const std::string& name, std::vector<ir::Buffer> params, ir::Stmt body) {
  ir::Block root = ir::make_block("root", {}, {}, {}, ir::Stmt(), std::move(body));
  return ir::PrimFunc(name, std::move(params), 1, ir::block_realize({}, ir::make_bool(true), root));
}

namespace {

std::vector<ir::Buffer> params(int lanes, int group, DataType a, DataType b, DataType acc) {
  return {ir::make_buffer("A", a, {ir::make_int(group)}),
          ir::make_buffer("B", b, {ir::make_int(lanes), ir::make_int(group)}),
          ir::make_buffer("C", acc, {ir::make_int(lanes)})};
}

ir::Expr widen(ir::Expr e, DataType t) {
  return e.dtype() == t ? e : ir::cast(t, e);
}

}  // namespace

TensorIntrin dot_intrin(const std::string& name, int lanes, int group, DataType a, DataType b,
                        DataType acc, std::vector<std::vector<std::string>> requires_any) {
  std::vector<ir::Buffer> d = params(lanes, group, a, b, acc);
  ir::Var i("i"), k("k"), vi("vi"), vk("vk");
  ir::Stmt update = ir::buffer_store(
      d[2],
      ir::buffer_load(d[2], {vi}) +
          widen(ir::buffer_load(d[0], {vk}), acc) * widen(ir::buffer_load(d[1], {vi, vk}), acc),
      {vi});
  std::vector<ir::IterVar> iters = {
      ir::IterVar{vi, ir::Range(ir::make_int(0), ir::make_int(lanes)), ir::IterKind::kSpatial},
      ir::IterVar{vk, ir::Range(ir::make_int(0), ir::make_int(group)), ir::IterKind::kReduce}};
  ir::Block block = ir::make_block("update", iters, {}, {}, ir::Stmt(), update);
  arith::Analyzer analyzer;
  arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
  block = ir::make_block("update", iters, regions.reads, regions.writes, ir::Stmt(), update);
  ir::Stmt nest =
      ir::for_loop(i, ir::make_int(0), ir::make_int(lanes), ir::ForKind::kSerial,
                   ir::for_loop(k, ir::make_int(0), ir::make_int(group), ir::ForKind::kSerial,
                                ir::block_realize({i, k}, ir::make_bool(true), block)));
  ir::PrimFunc desc = intrin_func(name, d, nest);

  std::vector<ir::Buffer> m = params(lanes, group, a, b, acc);
  auto vec = [](int n) { return ir::ramp(ir::make_int(0), ir::make_int(1), n); };
  // B's rows and columns as vectors: (0, 0, .., 0, 1, ..), (0, 1, .., g-1, 0, ..); once flattened
  // the index folds back into one ramp, a contiguous load.
  ir::Expr flat = vec(lanes * group), g = ir::broadcast(ir::make_int(group), lanes * group);
  ir::Expr dot =
      ir::group_dot(ir::buffer_load(m[2], {vec(lanes)}), ir::buffer_load(m[0], {vec(group)}),
                    ir::buffer_load(m[1], {ir::floordiv(flat, g), ir::floormod(flat, g)}));
  ir::PrimFunc impl = intrin_func(name + "_impl", m, ir::buffer_store(m[2], dot, {vec(lanes)}));
  return {name, desc, impl, std::move(requires_any)};
}

TensorIntrin tile_intrin(const std::string& name, int rows, int lanes, int depth, DataType a,
                         DataType b, DataType acc,
                         std::vector<std::vector<std::string>> requires_any) {
  const int group = 32 / a.bits();
  auto make_params = [&] {
    return std::vector<ir::Buffer>{
        ir::make_buffer("A", a, {ir::make_int(rows), ir::make_int(depth)}),
        ir::make_buffer("B", b,
                        {ir::make_int(depth / group), ir::make_int(lanes), ir::make_int(group)}),
        ir::make_buffer("C", acc, {ir::make_int(rows), ir::make_int(lanes)})};
  };
  std::vector<ir::Buffer> d = make_params();
  ir::Var i("i"), j("j"), k("k"), vi("vi"), vj("vj"), vk("vk");
  ir::Expr g = ir::make_int(group);
  ir::Stmt update = ir::buffer_store(
      d[2],
      ir::buffer_load(d[2], {vi, vj}) +
          widen(ir::buffer_load(d[0], {vi, vk}), acc) *
              widen(ir::buffer_load(d[1], {ir::floordiv(vk, g), vj, ir::floormod(vk, g)}), acc),
      {vi, vj});
  auto range = [](int n) { return ir::Range(ir::make_int(0), ir::make_int(n)); };
  std::vector<ir::IterVar> iters = {ir::IterVar{vi, range(rows), ir::IterKind::kSpatial},
                                    ir::IterVar{vj, range(lanes), ir::IterKind::kSpatial},
                                    ir::IterVar{vk, range(depth), ir::IterKind::kReduce}};
  ir::Block block = ir::make_block("update", iters, {}, {}, ir::Stmt(), update);
  arith::Analyzer analyzer;
  arith::AccessRegions regions = arith::infer_access_regions(*block, &analyzer);
  block = ir::make_block("update", iters, regions.reads, regions.writes, ir::Stmt(), update);
  auto loop = [](const ir::Var& v, int n, ir::Stmt body) {
    return ir::for_loop(v, ir::make_int(0), ir::make_int(n), ir::ForKind::kSerial, std::move(body));
  };
  ir::PrimFunc desc = intrin_func(
      name, d,
      loop(i, rows,
           loop(j, lanes,
                loop(k, depth, ir::block_realize({i, j, k}, ir::make_bool(true), block)))));

  // Each buffer as one vector of its lanes in order (a row-major tile); flattened into the
  // program's arrays they are rows of consecutive elements (arith::tile_index).
  std::vector<ir::Buffer> m = make_params();
  auto whole = [](const ir::Buffer& buf) {
    std::vector<int64_t> shape = ir::const_shape(buf);
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    ir::Expr rest = ir::ramp(ir::make_int(0), ir::make_int(1), static_cast<int>(n));
    std::vector<ir::Expr> idx(shape.size());
    for (size_t dim = shape.size(); dim-- > 0;) {
      ir::Expr e = ir::broadcast(ir::make_int(shape[dim]), static_cast<int>(n));
      idx[dim] = dim ? ir::floormod(rest, e) : rest;
      rest = ir::floordiv(rest, e);
    }
    return ir::buffer_load(buf, idx);
  };
  auto indices = [](const ir::Expr& load) { return load.as<ir::BufferLoadNode>()->indices; };
  ir::Expr product = ir::tile_dot(whole(m[2]), whole(m[0]), whole(m[1]), ir::make_int(rows));
  ir::PrimFunc impl =
      intrin_func(name + "_impl", m, ir::buffer_store(m[2], product, indices(whole(m[2]))));
  return {name, desc, impl, std::move(requires_any)};
}

}  // namespace tyche::schedule::intrin
