// Exported kernels are built as a user's program builds them: the system C compiler links the
// static library (or compiles the C) with a driver, no Tyche library on the command line, and the
// program runs in a process of its own; its outputs are compared with the references.
#include <gmock/gmock.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../common/process_util.h"
#include "codegen/export/export.h"
#include "codegen/export/runtime_symbols.h"
#include "runtime/compare.h"
#include "runtime/module.h"
#include "schedules.h"
#include "target/cpu.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using tyche::testing::read_file;
using tyche::testing::Shell;
using tyche::testing::shell;
using tyche::testing::write_file;

fs::path fresh_dir(const std::string& what) {
  return tyche::testing::fresh_dir("tyche_export", what);
}

// One scaled-down preset of a family, scheduled (parallel, vectorized), with its data.
struct Kernel {
  std::string name;  // k_<family>
  workloads::Workload w;
  ir::PrimFunc scheduled;
  std::vector<runtime::NDArray> inputs, expected;
};

std::vector<Kernel> every_family() {
  std::vector<Kernel> out;
  for (const std::string& op : workloads::op_names()) {
    Kernel k;
    std::string lower_op;
    for (char c : op) lower_op += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    k.name = "k_" + lower_op;
    k.w = workloads::scaled_down(workloads::get_preset(op + "-1"));
    k.scheduled = test_schedules::parallel_vectorized(k.w.func);
    k.inputs = workloads::make_inputs(k.w.func, 5);
    k.expected = k.w.reference(k.inputs);
    out.push_back(std::move(k));
  }
  return out;
}

// A C program that runs every kernel on the inputs in argv[1] (<name>_in<i>.bin), through its
// packed entry and its prototype, writes the outputs (<name>_out<i>.bin), checks the two calls
// agree, that a null pointer is refused and that misaligned buffers (malloc'd, 4 bytes past
// TYCHE_ALIGNMENT) give the same outputs; argv[2] > 0 sets the pool's size.
std::string driver_source(const std::vector<Kernel>& kernels) {
  std::ostringstream c;
  c << "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n";
  c << "void* " << kExportRuntimePrefix
    << "alloc(int64_t bytes);  /* the runtime's, hidden but linked in */\n";
  for (const Kernel& k : kernels) c << fmt::format("#include \"{}.h\"\n", k.name);
  c << R"(
static size_t rounded(size_t bytes) { return (bytes + TYCHE_ALIGNMENT - 1) / TYCHE_ALIGNMENT * TYCHE_ALIGNMENT; }
static void* buffer(size_t bytes) {
  void* p = aligned_alloc(TYCHE_ALIGNMENT, rounded(bytes) + TYCHE_ALIGNMENT);
  if (!p) exit(3);
  return p;
}
static void* load(const char* dir, const char* file, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  void* p = buffer(bytes);
  FILE* f = fopen(path, "rb");
  if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(3); }
  fclose(f);
  return p;
}
static void save(const char* dir, const char* file, const void* p, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", path); exit(3); }
  fclose(f);
}
static int failures = 0;
static void expect(int status, int wanted, const char* what) {
  if (status != wanted) { printf("%s: %s, expected %s\n", what, tyche_error_string(status), tyche_error_string(wanted)); ++failures; }
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const char* dir = argv[1];
  int threads = atoi(argv[2]);
)";
  for (const Kernel& k : kernels) {
    const auto& params = k.scheduled->params;
    size_t num_inputs = params.size() - static_cast<size_t>(k.scheduled->num_outputs);
    c << fmt::format("  {{ /* {} */\n", k.name);
    c << fmt::format("    if (threads > 0) {}_set_num_threads(threads);\n", k.name);
    std::vector<std::string> args, second;
    for (size_t i = 0; i < params.size(); ++i) {
      const ir::Buffer& b = params[i];
      int64_t bytes = 1;
      for (int64_t d : ir::const_shape(b)) bytes *= d;
      bytes *= b->dtype.bytes();
      std::string macro = fmt::format("{}_{}_BYTES", k.name, b->name);
      c << fmt::format("    _Static_assert({} == {}, \"the header's size of {}\");\n", macro, bytes,
                       b->name);
      if (i < num_inputs) {
        c << fmt::format("    void* a{0} = load(dir, \"{1}_in{0}.bin\", {2});\n", i, k.name, macro);
        args.push_back(fmt::format("a{}", i));
        second.push_back(fmt::format("a{}", i));
      } else {
        c << fmt::format("    void* a{0} = buffer({1});\n    void* b{0} = buffer({1});\n", i,
                         macro);
        args.push_back(fmt::format("a{}", i));
        second.push_back(fmt::format("b{}", i));
      }
    }
    c << fmt::format("    void* packed[] = {{{}}};\n", fmt::join(args, ", "));
    c << fmt::format("    expect({}_packed(packed), TYCHE_OK, \"{} (packed)\");\n", k.name, k.name);
    c << fmt::format("    expect({}({}), TYCHE_OK, \"{}\");\n", k.name, fmt::join(second, ", "),
                     k.name);
    for (size_t i = num_inputs; i < params.size(); ++i) {
      std::string macro = fmt::format("{}_{}_BYTES", k.name, params[i]->name);
      c << fmt::format("    save(dir, \"{}_out{}.bin\", a{}, {});\n", k.name, i - num_inputs, i,
                       macro);
      c << fmt::format(
          "    if (memcmp(a{0}, b{0}, {1})) {{ printf(\"{2}: the two calls differ\\n\"); "
          "++failures; }}\n",
          i, macro, k.name);
    }
    std::vector<std::string> null_args = args, misaligned_args;
    null_args[0] = "NULL";
    c << fmt::format("    expect({}({}), TYCHE_ERROR_NULL_ARGUMENT, \"{} with a null pointer\");\n",
                     k.name, fmt::join(null_args, ", "), k.name);
    for (size_t i = 0; i < params.size(); ++i) {
      std::string macro = fmt::format("{}_{}_BYTES", k.name, params[i]->name);
      c << fmt::format(
          "    char* m{0} = malloc({1} + TYCHE_ALIGNMENT + 4);\n    if (!m{0}) exit(3);\n", i,
          macro);
      c << fmt::format(
          "    char* s{0} = m{0} + (TYCHE_ALIGNMENT - (uintptr_t)m{0} % TYCHE_ALIGNMENT) + 4;\n",
          i);
      if (i < num_inputs) c << fmt::format("    memcpy(s{0}, a{0}, {1});\n", i, macro);
      misaligned_args.push_back(fmt::format("(void*)s{}", i));
    }
    c << fmt::format("    expect({}({}), TYCHE_OK, \"{} with misaligned pointers\");\n", k.name,
                     fmt::join(misaligned_args, ", "), k.name);
    for (size_t i = num_inputs; i < params.size(); ++i) {
      std::string macro = fmt::format("{}_{}_BYTES", k.name, params[i]->name);
      c << fmt::format(
          "    if (memcmp(a{0}, s{0}, {1})) {{ printf(\"{2}: misaligned buffers give other "
          "outputs\\n\"); ++failures; }}\n",
          i, macro, k.name);
    }
    for (size_t i = 0; i < num_inputs; ++i) {
      std::string macro = fmt::format("{}_{}_BYTES", k.name, params[i]->name);
      c << fmt::format(
          "    if (memcmp(a{0}, s{0}, {1})) {{ printf(\"{2}: a misaligned input was written\\n\"); "
          "++failures; }}\n",
          i, macro, k.name);
    }
    for (size_t i = 0; i < params.size(); ++i)
      c << fmt::format("    free(a{0});\n    free(m{0});\n", i);
    for (size_t i = num_inputs; i < params.size(); ++i) c << fmt::format("    free(b{});\n", i);
    c << "  }\n";
  }
  // The runtime's allocator reports exhaustion (kernels then return TYCHE_ERROR_OUT_OF_MEMORY,
  // as Tyche's own do:
  // Codegen.KernelsRefuseNullPointersComputeOnMisalignedOnesAndReportExhaustion).
  c << "  if (" << kExportRuntimePrefix
    << "alloc((int64_t)1 << 62)) { printf(\"a 4 EiB allocation succeeded\\n\"); ++failures; }\n";
  c << "  printf(failures ? \"FAILED\\n\" : \"OK\\n\");\n  return failures != 0;\n}\n";
  return c.str();
}

void write_inputs(const std::vector<Kernel>& kernels, const fs::path& dir) {
  for (const Kernel& k : kernels)
    for (size_t i = 0; i < k.inputs.size(); ++i)
      write_file(dir / fmt::format("{}_in{}.bin", k.name, i), k.inputs[i].data(),
                 k.inputs[i].nbytes());
}

::testing::AssertionResult outputs_match(const std::vector<Kernel>& kernels, const fs::path& dir) {
  for (const Kernel& k : kernels) {
    for (size_t i = 0; i < k.expected.size(); ++i) {
      runtime::NDArray actual(k.expected[i].shape(), k.expected[i].dtype());
      std::string bytes = read_file(dir / fmt::format("{}_out{}.bin", k.name, i));
      if (bytes.size() != actual.nbytes())
        return ::testing::AssertionFailure() << k.name << ": no output " << i;
      std::memcpy(actual.data(), bytes.data(), bytes.size());
      runtime::Comparison c = runtime::compare(actual, k.expected[i]);
      if (!c.ok)
        return ::testing::AssertionFailure() << k.name << " (" << k.w.name << "): " << c.message;
    }
  }
  return ::testing::AssertionSuccess();
}

// Every family's kernel in one library, built into one program with cc: no Tyche library on the
// link line, no Tyche symbol left undefined; right on one thread and on three.
TEST(Export, EveryPresetFamilyLinksIntoOneProgramWithoutTyche) {
  std::vector<Kernel> kernels = every_family();
  fs::path dir = fresh_dir("llvm");
  for (const Kernel& k : kernels) {
    // Written for the x86-64 level below the host's best, so the library is not host-only code.
    std::vector<std::string> levels = target::host_levels();
    ExportOptions o{.name = k.name,
                    .target = "llvm",
                    .cpu = levels.size() > 1 ? levels[levels.size() - 2] : levels.back(),
                    .parallel = true,
                    .library = "families",
                    .description = k.w.name,
                    .max_stack_bytes = 64 * 1024};
    ASSERT_NO_THROW(export_kernel(k.scheduled, dir.string(), o)) << k.name;
  }
  Shell members = shell(fmt::format("ar t {}", (dir / "libfamilies.a").string()));
  ASSERT_EQ(members.code, 0) << members.out;
  EXPECT_THAT(members.out, HasSubstr("tyche_rt1_runtime.o"));
  EXPECT_EQ(std::count(members.out.begin(), members.out.end(), '\n'),
            static_cast<long>(kernels.size()) + 1)
      << members.out;

  std::ofstream(dir / "driver.c") << driver_source(kernels);
  fs::path exe = dir / "driver";
  Shell cc = shell(fmt::format(
      "cc -std=c11 -O1 -Wall -Werror -I {0} {0}/driver.c -L {0} -lfamilies -lm -lpthread -o {1}",
      dir.string(), exe.string()));
  ASSERT_EQ(cc.code, 0) << cc.out;
  Shell undefined = shell("nm -u " + exe.string());
  ASSERT_EQ(undefined.code, 0) << undefined.out;
  EXPECT_THAT(undefined.out, ::testing::Not(HasSubstr("tyche")))
      << "a Tyche symbol is left to a Tyche library";
  write_inputs(kernels, dir);
  for (int threads : {1, 3}) {
    Shell run = shell(fmt::format("{} {} {}", exe.string(), dir.string(), threads));
    EXPECT_EQ(run.code, 0) << run.out;
    EXPECT_THAT(run.out, HasSubstr("OK")) << run.out;
    EXPECT_TRUE(outputs_match(kernels, dir)) << threads << " threads";
  }
  fs::remove_all(dir);
}

// The same as portable C: every kernel's source and the runtime's, compiled with the driver.
TEST(Export, EveryPresetFamilyAsCSourceCompilesAndAgrees) {
  std::vector<Kernel> kernels = every_family();
  fs::path dir = fresh_dir("c");
  std::string sources;
  for (const Kernel& k : kernels) {
    ExportOptions o{.name = k.name,
                    .target = "c",
                    .cpu = "",
                    .parallel = true,
                    .library = "",
                    .description = k.w.name,
                    .max_stack_bytes = 64 * 1024};
    ASSERT_NO_THROW(export_kernel(k.scheduled, dir.string(), o)) << k.name;
    sources += " " + (dir / (k.name + ".c")).string();
  }
  std::ofstream(dir / "driver.c") << driver_source(kernels);
  fs::path exe = dir / "driver";
  Shell cc =
      shell(fmt::format("cc -std=c11 -O1 -Wall -Werror -I {0} {0}/driver.c{1} "
                        "{0}/tyche_rt1_runtime.c -lm -lpthread -o {2}",
                        dir.string(), sources, exe.string()));
  ASSERT_EQ(cc.code, 0) << cc.out.substr(0, 4000);
  write_inputs(kernels, dir);
  Shell run = shell(fmt::format("{} {} 2", exe.string(), dir.string()));
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_TRUE(outputs_match(kernels, dir));
  fs::remove_all(dir);
}

TEST(Export, TheHeaderDocumentsThePrototypeShapesAndCodes) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ExportOptions o{.name = "gemm",
                  .target = "llvm",
                  .cpu = "x86-64-v3",
                  .parallel = true,
                  .library = "",
                  .description = "GMM-1, scaled down",
                  .max_stack_bytes = 64 * 1024};
  std::string h = export_header(w.func, o);
  const ir::Buffer& z = w.func->params[2];
  std::vector<int64_t> shape = ir::const_shape(z);
  EXPECT_THAT(h, HasSubstr("int32_t gemm(const float* X, const float* Y, float* Z);"));
  EXPECT_THAT(h, HasSubstr("GMM-1, scaled down"));
  EXPECT_THAT(h, HasSubstr("machine code for x86-64-v3 (256-bit vectors)"));
  EXPECT_THAT(h, HasSubstr(fmt::format("#define gemm_Z_SHAPE {{{}}}", fmt::join(shape, ", "))));
  EXPECT_THAT(h, HasSubstr("#define gemm_NUM_INPUTS 2"));
  EXPECT_THAT(h, HasSubstr(fmt::format("#define TYCHE_ERROR_OUT_OF_MEMORY {}",
                                       static_cast<int>(runtime::kKernelOutOfMemory))));
  EXPECT_THAT(h, HasSubstr(fmt::format("#define TYCHE_ERROR_NO_TILE_STATE {}",
                                       static_cast<int>(runtime::kKernelNoTileState))));
  EXPECT_THAT(h, HasSubstr("the OS refused the AMX tile state"));
  EXPECT_THAT(h, HasSubstr("void gemm_set_num_threads(int n);"));
  EXPECT_THAT(h, HasSubstr("#ifndef TYCHE_EXPORT_gemm_H"));
  o.parallel = false;
  EXPECT_THAT(export_header(w.func, o), HasSubstr("serial (exported with --threads 1)"));
}

// Kernels accumulate in a library; exporting one again replaces it; refusals change no file.
TEST(Export, LibrariesAccumulateAndRefusalsLeaveFilesAsTheyWere) {
  auto w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  const ir::PrimFunc& func = w.func;
  fs::path dir = fresh_dir("lib");
  ExportOptions o{.name = "one",
                  .target = "llvm",
                  .cpu = "x86-64",
                  .parallel = false,
                  .library = "both",
                  .description = "",
                  .max_stack_bytes = 64 * 1024};
  export_kernel(func, dir.string(), o);
  o.name = "two";
  export_kernel(func, dir.string(), o);
  export_kernel(func, dir.string(), o);
  Shell members = shell("ar t " + (dir / "libboth.a").string());
  EXPECT_EQ(members.out, "one.o\ntyche_rt1_runtime.o\ntwo.o\n");
  Shell symbols = shell("nm -g --defined-only " + (dir / "libboth.a").string());
  for (const char* s : {" T one", " T two", " T two_packed", " T two_set_num_threads",
                        " W tyche_rt1_parallel_for", " W tyche_rt1_alloc"})
    EXPECT_THAT(symbols.out, HasSubstr(s));
  EXPECT_FALSE(fs::exists(dir / "tyche_rt1_runtime.c"));
  // The header is C++ too.
  std::ofstream(dir / "use.cc") << "#include \"two.h\"\nint main() { return two_NUM_ARGS == 3 && "
                                   "tyche_error_string(TYCHE_OK)[0] ? 0 : 1; }\n";
  Shell cxx = shell(
      fmt::format("c++ -std=c++17 -Wall -Werror -fsyntax-only -I {0} {0}/use.cc", dir.string()));
  EXPECT_EQ(cxx.code, 0) << cxx.out;

  auto refused = [&](ExportOptions bad, const std::string& message) {
    try {
      export_kernel(func, dir.string(), bad);
    } catch (const Error& e) {
      return std::string(e.what()).find(message) != std::string::npos
                 ? ::testing::AssertionSuccess()
                 : ::testing::AssertionFailure() << e.what();
    }
    return ::testing::AssertionFailure() << "not refused";
  };
  std::string before = read_file(dir / "libboth.a");
  ExportOptions bad = o;
  bad.name = "3d";
  EXPECT_TRUE(refused(bad, "'3d' is not a C identifier"));
  bad.name = "tyche_gemm";
  EXPECT_TRUE(refused(bad, "names starting with 'tyche_' are the runtime's"));
  bad = o;
  bad.cpu = "pentium-9000";
  EXPECT_TRUE(refused(bad, "unknown CPU 'pentium-9000'"));
  bad = o;
  bad.target = "wasm";
  EXPECT_TRUE(refused(bad, "unknown target 'wasm'"));
  bad = o;
  bad.library = "my-lib";
  EXPECT_TRUE(refused(bad, "'my-lib' cannot name a library"));
  bad = o;
  bad.name = "expf";
  EXPECT_TRUE(refused(bad, "'expf' is a function of the C library"));
  bad.name = "_gemm";
  EXPECT_TRUE(refused(bad, "names starting with '_'"));
  bad.name = "one_packed";  // one.o defines it
  EXPECT_TRUE(refused(bad, "'one_packed' is already defined by one.o"));
  bad = o;
  bad.target = "c";
  bad.cpu = "";
  EXPECT_TRUE(refused(bad, "--library is for --target llvm"));
  EXPECT_EQ(read_file(dir / "libboth.a"), before);
  EXPECT_FALSE(fs::exists(dir / "one_packed.h"));
  // A damaged library (cut inside its last member) is refused and kept; nothing else is written.
  std::string damaged = before.substr(0, before.size() - 7);
  write_file(dir / "libcut.a", damaged.data(), damaged.size());
  bad = o;
  bad.name = "three";
  bad.library = "cut";
  EXPECT_TRUE(refused(
      bad, "libcut.a' exists and is not a static library, or is damaged; it was left as it is"));
  EXPECT_EQ(read_file(dir / "libcut.a"), damaged);
  EXPECT_FALSE(fs::exists(dir / "three.h"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tyche::codegen
