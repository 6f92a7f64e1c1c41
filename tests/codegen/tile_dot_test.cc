// tile_dot, the CPUs' tile products (ir/expr.h), through AMX's intrinsics: a matmul whose 16 x 16
// x K tiles are tensorized with them computes the reference exactly (u8 x s8) in the interpreter
// and compiled, at every CPU level ctest runs this binary for (here as group_dots: VNNI or
// AVX512-BF16 where the CPU has them, portable vector code elsewhere), and reads its tiles as
// rows, never by gathers.
#include <gmock/gmock.h>

#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/op.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "target/cpu.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// C[i, j] += A[i, k] * B[k, j], B packed as [N/16][K/G][16][G] and each 16 x 16 x depth tile
// tensorized with `intrin` (AMX or not, as the CPU compiled for has it).
struct Tiled {
  workloads::Workload w;
  ir::PrimFunc func;
};
Tiled tiled(const std::string& intrin, int depth, const std::string& dtypes, int group,
            const std::string& sizes) {
  workloads::Workload w =
      workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", sizes, dtypes);
  schedule::Schedule sch(w.func);
  schedule::BlockRV c = sch.get_block("C").value();
  int b_read = -1;
  const auto& reads = sch.block_sref(c).value()->as_block()->reads;
  for (size_t r = 0; r < reads.size(); ++r)
    if (reads[r].buffer->name == "B") b_read = static_cast<int>(r);
  schedule::BlockRV pack = sch.cache_read(c, b_read, "global").value();
  auto st = sch.transform_layout(
      pack, 0, fmt::format("lambda k, j: (j // 16, k // {0}, j % 16, k % {0})", group));
  EXPECT_TRUE(st.ok()) << st.error().reason();
  auto l = sch.get_loops(c).value();
  auto i = sch.split(l[0], {std::nullopt, 16}).value();
  auto j = sch.split(l[1], {std::nullopt, 16}).value();
  auto k = sch.split(l[2], {std::nullopt, depth}).value();
  EXPECT_TRUE(sch.reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  st = sch.tensorize(i[1], intrin);
  EXPECT_TRUE(st.ok()) << st.error().reason();
  return {w, sch.func()};
}

struct TileDotResults {
  runtime::NDArray compiled, interpreted, expected;
  std::string assembly;
};
TileDotResults run(const Tiled& t) {
  auto inputs = workloads::make_inputs(t.w.func, 7);
  TileDotResults r;
  r.expected = t.w.reference(inputs)[0];
  r.interpreted = interp::run_on_inputs(t.func, inputs)[0];
  CompileOptions o;
  o.keep_module = true;
  auto k = compile(lower::lower(t.func).func, o);
  std::vector<runtime::NDArray> args = inputs;
  args.emplace_back(r.expected.shape(), r.expected.dtype());
  k->run(args);
  r.compiled = args.back();
  r.assembly = k->assembly();
  return r;
}

TEST(TileDot, AmxU8S8TilesAreExactEverywhere) {
  // Two tiles along i, three along j, two intrinsic calls along k.
  {
    const int depth = 64;
    Tiled t =
        tiled("x86_amx_tile_16x16x64_u8s8", depth, "A=uint8,B=int8,C=int32", 4, "i=32,j=48,k=128");
    TileDotResults r = run(t);
    runtime::Comparison c = runtime::compare(r.compiled, r.expected);
    EXPECT_TRUE(c.ok) << c.message;
    EXPECT_EQ(c.max_abs_error, 0);
    c = runtime::compare(r.interpreted, r.expected);
    EXPECT_TRUE(c.ok) << c.message;
    EXPECT_EQ(c.max_abs_error, 0);
    EXPECT_THAT(r.assembly, Not(HasSubstr("gather")));
    // AMX's instruction where the CPU has it, else each row of a tile as VNNI's where it has that.
    const target::Cpu& cpu = target::resolve_cpu("");
    if (cpu.has("amx-int8")) {
      EXPECT_THAT(r.assembly, HasSubstr("tdpbusd"));
    } else {
      EXPECT_THAT(r.assembly, Not(HasSubstr("tdpbusd")));
      if (cpu.has("avx512vnni")) {
        EXPECT_THAT(r.assembly, HasSubstr("vpdpbusd"));
      }
    }
  }
}

TEST(TileDot, AmxBFloat16TilesAccumulateInFloat32) {
  Tiled t = tiled("x86_amx_tile_16x16x32_bf16", 32, "A=bfloat16,B=bfloat16", 2, "i=16,j=32,k=96");
  TileDotResults r = run(t);
  runtime::Comparison c = runtime::compare(r.compiled, r.expected);
  EXPECT_TRUE(c.ok) << c.message;
  c = runtime::compare(r.interpreted, r.expected);
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_THAT(r.assembly, Not(HasSubstr("gather")));
}

TEST(TileDot, ShapesAndTypesAreChecked) {
  auto v = [](DataType t, int lanes) { return ir::broadcast(ir::make_const(t, 1), lanes); };
  const DataType u8 = DataType::UInt(8), s8 = DataType::Int(8);
  EXPECT_NO_THROW(ir::tile_dot(v(kInt32, 256), v(u8, 1024), v(s8, 1024), ir::make_int(16)));
  EXPECT_NO_THROW(ir::tile_dot(v(kInt32, 32), v(u8, 8), v(s8, 64), ir::make_int(2)));  // 2 x 16 x 4
  EXPECT_THROW(ir::tile_dot(v(kInt32, 256), v(u8, 1024), v(s8, 512), ir::make_int(16)),
               Error);  // b's lanes
  EXPECT_THROW(ir::tile_dot(v(kInt32, 256), v(u8, 1024), v(s8, 1024), ir::make_int(3)),
               Error);  // rows divide
  EXPECT_THROW(ir::tile_dot(v(kInt32, 32), v(u8, 6), v(s8, 48), ir::make_int(2)),
               Error);  // K = 3, G = 4
  EXPECT_THROW(ir::tile_dot(v(kFloat32, 256), v(u8, 1024), v(s8, 1024), ir::make_int(16)),
               Error);  // float acc
  EXPECT_THROW(ir::tile_dot(v(kInt32, 256), v(u8, 1024), v(s8, 1024), ir::Var("m")),
               Error);                                                  // not constant
  EXPECT_THROW(ir::call(ir::CallOp::kTileDot, {v(kInt32, 4)}), Error);  // arity
}

}  // namespace
}  // namespace tyche::codegen
