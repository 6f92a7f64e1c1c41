// A whole model exported (executor/export_model.h) and built as a user's program builds it: the
// system C compiler links the static library with a driver, no Tyche library on the command line,
// and the program runs in a process of its own on misaligned buffers; its outputs are compared
// with the executor's, which runs the same plan (execution_plan.h) in-process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/onnx_builder.h"
#include "../common/process_util.h"
#include "codegen/export/runtime_symbols.h"
#include "executor/execution_plan.h"
#include "executor/executor.h"
#include "executor/export_model.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "runtime/compare.h"
#include "runtime/module.h"
#include "support/error.h"
#include "target/cpu.h"

namespace tyche::executor {
namespace {

using namespace tyche::graph;  // the models these tests build and import

namespace fs = std::filesystem;
using graph::testing::OnnxBuilder;
using ::testing::HasSubstr;

using tyche::testing::read_file;
using tyche::testing::Shell;
using tyche::testing::shell;

fs::path fresh_dir(const std::string& what) {
  return tyche::testing::fresh_dir("tyche_export_model", what);
}

// Two inputs (one named as no C identifier is), a convolution (BN folded) with relu, a residual
// block, poolings, a view, a gemm, softmax; three outputs: the last, an intermediate, and a view.
Graph small_model() {
  OnnxBuilder b;
  b.input("x", {1, 3, 7, 9}).input("bias.in", {1, 5});
  b.node("Add", {graph::testing::add_conv_residual_gemm(b, "x"), "bias.in"}, {"s"});
  b.node("Softmax", {"s"}, {"y"});
  b.output("y").output("r1").output("f");
  Graph g = import_onnx_bytes(b.bytes(), "small.onnx", ".");
  fold_batch_norm(g);
  return g;
}

// The CPU to export for: the x86-64 level below the host's best, so the library is not host-only
// code.
std::string export_cpu() {
  std::vector<std::string> levels = target::host_levels();
  return levels.size() > 1 ? levels[levels.size() - 2] : levels.back();
}

// Reads each input (in<i>.bin in argv[1]) into a buffer 4 bytes past TYCHE_ALIGNMENT, runs the
// model, writes each output (out<i>.bin); runs it again through net_packed on aligned buffers and
// checks the outputs agree, and that a null pointer is refused. argv[2] > 0 sets the pool's size.
std::string driver_source(const Graph& g) {
  std::ostringstream c;
  c << R"(#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net.h"
static char* misaligned(size_t bytes) {
  char* p = malloc(bytes + TYCHE_ALIGNMENT + 4);
  if (!p) exit(3);
  return p + (TYCHE_ALIGNMENT - (uintptr_t)p % TYCHE_ALIGNMENT) + 4;
}
static void* aligned(size_t bytes) {
  void* p = aligned_alloc(TYCHE_ALIGNMENT, (bytes + TYCHE_ALIGNMENT - 1) / TYCHE_ALIGNMENT * TYCHE_ALIGNMENT + TYCHE_ALIGNMENT);
  if (!p) exit(3);
  return p;
}
static void io(const char* dir, const char* file, void* p, size_t bytes, int write) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE* f = fopen(path, write ? "wb" : "rb");
  if (!f || (write ? fwrite(p, 1, bytes, f) : fread(p, 1, bytes, f)) != bytes) { fprintf(stderr, "cannot use %s\n", path); exit(3); }
  fclose(f);
}
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const char* dir = argv[1];
  int failures = 0;
  if (atoi(argv[2]) > 0) net_set_num_threads(atoi(argv[2]));
)";
  std::vector<std::string> args, packed;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    c << fmt::format(
        "  char* in{0} = misaligned(net_INPUT{0}_BYTES);\n  io(dir, \"in{0}.bin\", in{0}, "
        "net_INPUT{0}_BYTES, 0);\n",
        i);
    c << fmt::format(
        "  void* ain{0} = aligned(net_INPUT{0}_BYTES);\n  memcpy(ain{0}, in{0}, "
        "net_INPUT{0}_BYTES);\n",
        i);
    args.push_back(fmt::format("(const void*)in{}", i));
    packed.push_back(fmt::format("ain{}", i));
  }
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    c << fmt::format(
        "  char* out{0} = misaligned(net_OUTPUT{0}_BYTES);\n  void* aout{0} = "
        "aligned(net_OUTPUT{0}_BYTES);\n",
        o);
    args.push_back(fmt::format("(void*)out{}", o));
    packed.push_back(fmt::format("aout{}", o));
  }
  c << fmt::format("  int status = net({});\n", fmt::join(args, ", "));
  c << "  if (status != TYCHE_OK) { printf(\"net: %s\\n\", tyche_error_string(status)); return 1; "
       "}\n";
  c << fmt::format("  void* packed[] = {{{}}};\n", fmt::join(packed, ", "));
  c << "  status = net_packed(packed);\n";
  c << "  if (status != TYCHE_OK) { printf(\"net_packed: %s\\n\", tyche_error_string(status)); "
       "return 1; }\n";
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    c << fmt::format("  io(dir, \"out{0}.bin\", out{0}, net_OUTPUT{0}_BYTES, 1);\n", o);
    c << fmt::format(
        "  if (memcmp(out{0}, aout{0}, net_OUTPUT{0}_BYTES)) {{ printf(\"output {0}: the two calls "
        "differ\\n\"); ++failures; }}\n",
        o);
  }
  std::vector<std::string> null_args = args;
  null_args[0] = "NULL";
  c << fmt::format(
      "  if (net({}) != TYCHE_ERROR_NULL_ARGUMENT) {{ printf(\"a null pointer was taken\\n\"); "
      "++failures; }}\n",
      fmt::join(null_args, ", "));
  c << "  printf(failures ? \"FAILED\\n\" : \"OK\\n\");\n  return failures != 0;\n}\n";
  return c.str();
}

TEST(ExportModel, ACProgramLinkingTheLibraryMatchesTheExecutorOnMisalignedBuffers) {
  Graph g = small_model();
  TaskTable table = extract_tasks(g);
  std::vector<runtime::NDArray> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    inputs.emplace_back(v.shape, v.dtype);
    inputs.back().fill_uniform(7 + i);
  }
  Executor exec(g, table, {});
  std::vector<runtime::NDArray> expected = exec.run(inputs);
  // A view among the outputs, and arena buffers shared: what the plan is for.
  EXPECT_LT(exec.memory().arena_bytes, exec.memory().naive_bytes);

  fs::path dir = fresh_dir("run");
  for (bool parallel : {true, false}) {
    SCOPED_TRACE(parallel ? "parallel" : "serial");
    ModelExportOptions o{.name = "net",
                         .cpu = export_cpu(),
                         .parallel = parallel,
                         .description = "a small model",
                         .max_stack_bytes = 64 * 1024};
    ModelExportResult r = export_model(g, table, {}, dir.string(), o);
    EXPECT_EQ(r.files,
              (std::vector<std::string>{(dir / "libnet.a").string(), (dir / "net.h").string()}));
    Shell members = shell("ar t " + (dir / "libnet.a").string());
    ASSERT_EQ(members.code, 0) << members.out;
    EXPECT_THAT(members.out, HasSubstr("net_t0.o\n"));
    EXPECT_THAT(members.out, HasSubstr("\nnet.o\ntyche_rt1_runtime.o\n"));
    EXPECT_EQ(std::count(members.out.begin(), members.out.end(), '\n'),
              static_cast<long>(table.tasks.size()) + 2)
        << members.out;

    std::ofstream(dir / "driver.c") << driver_source(g);
    fs::path exe = dir / "driver";
    Shell cc = shell(fmt::format(
        "cc -std=c11 -O1 -Wall -Werror -I {0} {0}/driver.c -L {0} -lnet -lm -lpthread -o {1}",
        dir.string(), exe.string()));
    ASSERT_EQ(cc.code, 0) << cc.out;
    Shell undefined = shell("nm -u " + exe.string());
    ASSERT_EQ(undefined.code, 0) << undefined.out;
    EXPECT_THAT(undefined.out, ::testing::Not(HasSubstr("tyche")))
        << "a Tyche symbol is left to a Tyche library";
    for (size_t i = 0; i < inputs.size(); ++i)
      std::ofstream(dir / fmt::format("in{}.bin", i), std::ios::binary)
          .write(static_cast<const char*>(inputs[i].data()),
                 static_cast<std::streamsize>(inputs[i].nbytes()));
    for (int threads : {1, 3}) {
      SCOPED_TRACE(fmt::format("{} threads", threads));
      Shell run = shell(fmt::format("{} {} {}", exe.string(), dir.string(), threads));
      EXPECT_EQ(run.code, 0) << run.out;
      EXPECT_THAT(run.out, HasSubstr("OK")) << run.out;
      for (size_t o = 0; o < expected.size(); ++o) {
        runtime::NDArray got(expected[o].shape(), expected[o].dtype());
        std::string bytes = read_file(dir / fmt::format("out{}.bin", o));
        ASSERT_EQ(bytes.size(), got.nbytes()) << "output " << o;
        std::memcpy(got.data(), bytes.data(), bytes.size());
        runtime::Comparison c = runtime::compare(got, expected[o], {.rtol = 1e-4, .atol = 1e-4});
        EXPECT_TRUE(c.ok) << "output " << o << ": " << c.message;
      }
    }
  }
  fs::remove_all(dir);
}

TEST(ExportModel, TheHeaderDocumentsTheArgumentsAndTheCodes) {
  Graph g = small_model();
  TaskTable table = extract_tasks(g);
  ModelExportOptions o{.name = "net",
                       .cpu = "x86-64-v3",
                       .parallel = true,
                       .description = "small.onnx */ tuned",
                       .max_stack_bytes = 64 * 1024};
  std::string h = export_model_header(g, table, o);
  EXPECT_THAT(
      h, HasSubstr(
             "int32_t net(const float* x, const float* bias_in, float* y, float* r1, float* f);"));
  EXPECT_THAT(h, HasSubstr("small.onnx * / tuned"));
  EXPECT_THAT(h, HasSubstr("machine code for x86-64-v3 (256-bit vectors)"));
  EXPECT_THAT(h, HasSubstr("#define net_INPUT1_NAME \"bias.in\""));
  EXPECT_THAT(h, HasSubstr("#define net_INPUT0_SHAPE {1, 3, 7, 9}"));
  EXPECT_THAT(h, HasSubstr("#define net_OUTPUT1_BYTES 1512"));  // r1: 1x6x7x9 floats
  EXPECT_THAT(h, HasSubstr("#define net_OUTPUT2_DTYPE \"float32\""));
  EXPECT_THAT(h, HasSubstr("#define net_NUM_OUTPUTS 3"));
  EXPECT_THAT(h, HasSubstr(fmt::format("#define net_ARENA_BYTES {}",
                                       plan_execution(g, table).memory.arena_bytes)));
  EXPECT_THAT(h, HasSubstr(fmt::format("#define TYCHE_ERROR_OUT_OF_MEMORY {}",
                                       static_cast<int>(runtime::kKernelOutOfMemory))));
  EXPECT_THAT(h, HasSubstr("of any alignment"));
  EXPECT_THAT(h, HasSubstr("void net_set_num_threads(int n);"));
  EXPECT_THAT(h, HasSubstr("int32_t net_packed(void** args);"));
  o.parallel = false;
  EXPECT_THAT(export_model_header(g, table, o), HasSubstr("serial (exported with --threads 1)"));
  // The header is C++ too.
  fs::path dir = fresh_dir("header");
  std::ofstream(dir / "net.h") << h;
  std::ofstream(dir / "use.cc") << "#include \"net.h\"\nint main() { return net_NUM_INPUTS == 2 && "
                                   "tyche_error_string(TYCHE_OK)[0] ? 0 : 1; }\n";
  Shell cxx = shell(
      fmt::format("c++ -std=c++17 -Wall -Werror -fsyntax-only -I {0} {0}/use.cc", dir.string()));
  EXPECT_EQ(cxx.code, 0) << cxx.out;
  fs::remove_all(dir);
}

TEST(ExportModel, RefusalsLeaveTheDirectoryAsItWas) {
  Graph g = small_model();
  TaskTable table = extract_tasks(g);
  fs::path dir = fresh_dir("refused");
  std::ofstream(dir / "keep.txt") << "kept";
  auto refused = [&](ModelExportOptions o, const std::string& out, const std::string& message) {
    try {
      export_model(g, table, {}, out, o);
    } catch (const Error& e) {
      return std::string(e.what()).find(message) != std::string::npos
                 ? ::testing::AssertionSuccess()
                 : ::testing::AssertionFailure() << e.what();
    }
    return ::testing::AssertionFailure() << "not refused";
  };
  ModelExportOptions o{.name = "net",
                       .cpu = "x86-64",
                       .parallel = true,
                       .description = "",
                       .max_stack_bytes = 64 * 1024};
  ModelExportOptions bad = o;
  bad.name = "my-net";
  EXPECT_TRUE(refused(bad, dir.string(), "'my-net' is not a C identifier"));
  bad.name = "tyche_net";
  EXPECT_TRUE(refused(bad, dir.string(), "names starting with 'tyche_' are the runtime's"));
  bad = o;
  bad.cpu = "pentium-9000";
  EXPECT_TRUE(refused(bad, dir.string(), "unknown CPU 'pentium-9000'"));
  EXPECT_TRUE(refused(o, (dir / "keep.txt" / "sub").string(), "cannot create the directory"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"keep.txt"});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tyche::executor
