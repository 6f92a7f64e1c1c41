// The CPU tensor intrinsics in code for CPUs this host may not run: objects compiled for them hold
// the instruction exactly where the CPU has it (disassembled with objdump); and the C backend's
// portable form of group_dot agrees with the reference.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "codegen/c/c_codegen.h"
#include "codegen/export/export.h"
#include "codegen/llvm/llvm_codegen.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "schedule/schedule.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A u8 x s8 -> s32 matmul with packed weights, its 16 x 4 tiles tensorized with `intrin` (lanes 16
// or 8); and a bfloat16 one with `bf16_intrin`.
ir::PrimFunc tensorized(const std::string& intrin, int lanes, bool bf16 = false) {
  auto w =
      bf16 ? workloads::from_index_notation("C[i, jo, ji] += A[i, ko*2 + ki] * P[jo, ko, ji, ki]",
                                            "i=3,jo=2,ji=16,ko=6,ki=2", "A=bfloat16,P=bfloat16")
           : workloads::from_index_notation("C[i, jo, ji] += A[i, ko*4 + ki] * P[jo, ko, ji, ki]",
                                            "i=3,jo=2,ji=16,ko=5,ki=4", "A=uint8,P=int8,C=int32");
  schedule::Schedule sch(w.func);
  auto l = sch.get_loops(sch.get_block("C").value()).value();
  auto ji = sch.split(l[2], {std::nullopt, lanes}).value();
  sch.reorder({ji[0], l[3], ji[1], l[4]}).value();
  auto st = sch.tensorize(ji[1], intrin);
  EXPECT_TRUE(st.ok()) << st.error().reason();
  return sch.func();
}

std::string disassemble(const ir::PrimFunc& f, const std::string& cpu) {
  std::string path = ::testing::TempDir() + fmt::format("/tyche_intrin_{}_{}.o", getpid(), cpu);
  compile_to_object(lower::lower(f).func, path, CompileOptions{.cpu = cpu});
  std::string text;
  if (FILE* p = popen(fmt::format("objdump -dr --no-show-raw-insn {} 2>&1", path).c_str(), "r")) {
    std::array<char, 4096> buf;
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) text.append(buf.data(), n);
    pclose(p);
  }
  std::remove(path.c_str());
  return text;
}

TEST(CpuIntrinsics, ObjectsHoldTheInstructionWhereTheCpuHasIt) {
  if (std::system("objdump --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no objdump";
  ir::PrimFunc zmm = tensorized("x86_avx512_vnni_dot_16x4_u8s8", 16),
               ymm = tensorized("x86_avx_vnni_dot_8x4_u8s8", 8);
  ir::PrimFunc bf16 = tensorized("x86_avx512_bf16_dot_16x2_bf16", 16, true);
  // Sapphire Rapids: AVX512-VNNI (EVEX, zmm) and AVX512-BF16.
  std::string spr = disassemble(zmm, "sapphirerapids");
  EXPECT_THAT(spr, HasSubstr("vpdpbusd"));
  EXPECT_THAT(spr, HasSubstr("zmm"));
  EXPECT_THAT(disassemble(bf16, "sapphirerapids"), HasSubstr("vdpbf16ps"));
  // Alder Lake: no AVX-512, AVX-VNNI's VEX form on ymm; the 16-lane form is split in two.
  for (const ir::PrimFunc& f : {ymm, zmm}) {
    std::string adl = disassemble(f, "alderlake");
    EXPECT_THAT(adl, HasSubstr("{vex} vpdpbusd"));
    EXPECT_THAT(adl, Not(HasSubstr("zmm")));
  }
  EXPECT_THAT(disassemble(bf16, "alderlake"), Not(HasSubstr("vdpbf16ps")));
  // Zen 3: AVX2 only; the portable form (vpmaddwd or plain multiplies), never the instruction.
  for (const ir::PrimFunc& f : {zmm, ymm, tensorized("x86_avx2_dot_8x4_u8s8", 8)}) {
    std::string zen3 = disassemble(f, "znver3");
    EXPECT_THAT(zen3, Not(HasSubstr("vpdpbusd")));
    EXPECT_THAT(zen3, Not(HasSubstr("zmm")));
  }
  EXPECT_THAT(disassemble(bf16, "znver3"), Not(HasSubstr("vdpbf16ps")));
}

// AMX: the tiles tensorized with its intrinsics become tile loads, tdpbusd or tdpbf16ps and tile
// stores for a CPU with AMX (LLVM configuring the tiles: ldtilecfg), and group_dots elsewhere.
ir::PrimFunc amx_tiled(bool bf16) {
  auto w =
      workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", "i=32,j=32,k=128",
                                     bf16 ? "A=bfloat16,B=bfloat16" : "A=uint8,B=int8,C=int32");
  const int group = bf16 ? 2 : 4, depth = bf16 ? 32 : 64;
  schedule::Schedule sch(w.func);
  schedule::BlockRV c = sch.get_block("C").value();
  schedule::BlockRV pack = sch.cache_read(c, 1, "global").value();
  EXPECT_EQ(sch.block_sref(pack).value()->as_block()->reads[0].buffer->name, "B");
  EXPECT_TRUE(
      sch.transform_layout(pack, 0,
                           fmt::format("lambda k, j: (j // 16, k // {0}, j % 16, k % {0})", group))
          .ok());
  auto l = sch.get_loops(c).value();
  auto i = sch.split(l[0], {std::nullopt, 16}).value();
  auto j = sch.split(l[1], {std::nullopt, 16}).value();
  auto k = sch.split(l[2], {std::nullopt, depth}).value();
  EXPECT_TRUE(sch.reorder({i[0], j[0], k[0], i[1], j[1], k[1]}).ok());
  auto st = sch.tensorize(i[1], bf16 ? "x86_amx_tile_16x16x32_bf16" : "x86_amx_tile_16x16x64_u8s8");
  EXPECT_TRUE(st.ok()) << st.error().reason();
  return sch.func();
}

TEST(CpuIntrinsics, AmxObjectsHoldTheTileInstructions) {
  if (std::system("objdump --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no objdump";
  ir::PrimFunc u8s8 = amx_tiled(false), bf16 = amx_tiled(true);
  // Sapphire Rapids: AMX-TILE, AMX-INT8, AMX-BF16.
  std::string spr = disassemble(u8s8, "sapphirerapids");
  for (const char* insn : {"ldtilecfg", "tileloadd", "tdpbusd", "tilestored", "tilerelease"})
    EXPECT_THAT(spr, HasSubstr(insn));
  // The entry asks the OS for the tile state before anything runs (kKernelNoTileState if refused).
  EXPECT_THAT(spr, HasSubstr("tyche_request_tiles"));
  EXPECT_THAT(spr, Not(HasSubstr("vpdpbusd")));
  spr = disassemble(bf16, "sapphirerapids");
  for (const char* insn : {"ldtilecfg", "tileloadd", "tdpbf16ps", "tilestored"})
    EXPECT_THAT(spr, HasSubstr(insn));
  // Zen 4 (AVX512-VNNI and -BF16, no AMX): the tiles are rows of VNNI or BF16 dot products.
  std::string zen4 = disassemble(u8s8, "znver4");
  EXPECT_THAT(zen4, Not(HasSubstr("tdpbusd")));
  EXPECT_THAT(zen4, Not(HasSubstr("ldtilecfg")));
  EXPECT_THAT(zen4, Not(HasSubstr("request_tiles")));
  EXPECT_THAT(zen4, HasSubstr("vpdpbusd"));
  EXPECT_THAT(disassemble(bf16, "znver4"), HasSubstr("vdpbf16ps"));
  // Zen 3: AVX2 only.
  std::string zen3 = disassemble(u8s8, "znver3");
  EXPECT_THAT(zen3, Not(HasSubstr("tdpbusd")));
  EXPECT_THAT(zen3, Not(HasSubstr("vpdpbusd")));
}

// An exported AMX kernel asks the exported runtime for the tile state: the two link into a shared
// library with nothing undefined but the C libraries'.
TEST(CpuIntrinsics, ExportedAmxKernelsLinkWithTheRuntime) {
  ir::PrimFunc f = amx_tiled(false);
  ir::PrimFunc lowered =
      lower::lower(ir::PrimFunc("amx_export", f->params, f->num_outputs, f->body)).func;
  std::string base = ::testing::TempDir() + fmt::format("/tyche_amx_export_{}", getpid());
  std::ofstream(base + "_k.o", std::ios::binary)
      << compile_export_object(lowered, CompileOptions{.cpu = "sapphirerapids"});
  std::ofstream(base + "_rt.o", std::ios::binary) << export_runtime_object();
  std::string undefined;
  if (FILE* p = popen(fmt::format("nm -u {}_k.o", base).c_str(), "r")) {
    std::array<char, 4096> buf;
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) undefined.append(buf.data(), n);
    pclose(p);
  }
  EXPECT_THAT(undefined, HasSubstr("tyche_rt1_request_tiles"));
  EXPECT_EQ(std::system(
                fmt::format(
                    "cc -shared -o {0}.so {0}_k.o {0}_rt.o -Wl,--no-undefined -lm -lpthread", base)
                    .c_str()),
            0);
  for (const char* ext : {"_k.o", "_rt.o", ".so"}) std::remove((base + ext).c_str());
}

// The C backend writes group_dot and tile_dot lane by lane: the exported C of a tensorized program
// agrees with the reference exactly.
void expect_c_source_exact(const workloads::Workload& w, const ir::PrimFunc& f,
                           const std::string& name) {
  ir::PrimFunc lowered = lower::lower(ir::PrimFunc(name, f->params, f->num_outputs, f->body)).func;
  std::string source = emit_c(lowered, {});
  EXPECT_THAT(source, HasSubstr("(uint32_t)"));
  std::string base = ::testing::TempDir() + fmt::format("/tyche_{}_c_{}", name, getpid());
  std::ofstream(base + ".c") << source;
  ASSERT_EQ(std::system(
                fmt::format("cc -std=c11 -O1 -Wall -Werror -shared -fPIC -o {0}.so {0}.c -lm", base)
                    .c_str()),
            0)
      << source;
  void* lib = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  auto entry = reinterpret_cast<int32_t (*)(void**)>(dlsym(lib, (name + "_packed").c_str()));
  ASSERT_NE(entry, nullptr);
  auto inputs = workloads::make_inputs(w.func, 4);
  auto expected = w.reference(inputs);
  runtime::NDArray out(expected[0].shape(), kInt32);
  std::vector<void*> args = {inputs[0].data(), inputs[1].data(), out.data()};
  EXPECT_EQ(entry(args.data()), 0);
  runtime::Comparison c = runtime::compare(out, expected[0]);
  EXPECT_TRUE(c.ok) << c.message;
  EXPECT_EQ(c.max_abs_error, 0);
  dlclose(lib);
  std::remove((base + ".c").c_str());
  std::remove((base + ".so").c_str());
}

TEST(CpuIntrinsics, CSourceComputesTheSame) {
  auto w = workloads::from_index_notation("C[i, jo, ji] += A[i, ko*4 + ki] * P[jo, ko, ji, ki]",
                                          "i=3,jo=2,ji=16,ko=5,ki=4", "A=uint8,P=int8,C=int32");
  expect_c_source_exact(w, tensorized("x86_avx512_vnni_dot_16x4_u8s8", 16), "vnni");
  auto gmm = workloads::from_index_notation("C[i, j] += A[i, k] * B[k, j]", "i=32,j=32,k=128",
                                            "A=uint8,B=int8,C=int32");
  expect_c_source_exact(gmm, amx_tiled(false), "amx");
}

}  // namespace
}  // namespace tyche::codegen
