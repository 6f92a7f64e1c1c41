// The on-disk kernel cache (TYCHE_KERNEL_CACHE): a kernel compiled once is loaded from its entry
// by the next compile, runs the same, and a damaged entry or an unwritable folder only costs a
// compile.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/llvm/llvm_codegen.h"
#include "lower/lower.h"
#include "runtime/compare.h"
#include "workloads/workloads.h"

namespace tyche::codegen {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

// Sets TYCHE_KERNEL_CACHE for one test and puts back what it was.
class CacheDir {
 public:
  explicit CacheDir(const fs::path& dir) {
    if (const char* old = std::getenv("TYCHE_KERNEL_CACHE")) old_ = old;
    setenv("TYCHE_KERNEL_CACHE", dir.c_str(), 1);
  }
  ~CacheDir() {
    if (old_)
      setenv("TYCHE_KERNEL_CACHE", old_->c_str(), 1);
    else
      unsetenv("TYCHE_KERNEL_CACHE");
  }

 private:
  std::optional<std::string> old_;
};

std::vector<runtime::NDArray> run(const CompiledKernel& k, const workloads::Workload& w) {
  std::vector<runtime::NDArray> args = workloads::make_inputs(w.func, 3);
  size_t n = args.size();
  for (const auto& e : w.reference(args)) args.emplace_back(e.shape(), e.dtype());
  k.run(args);
  return {args.begin() + static_cast<long>(n), args.end()};
}

TEST(KernelCache, ASecondCompileLoadsTheEntryAndADamagedOneIsCompiledAgain) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("tyche_kcache_{}", getpid());
  fs::remove_all(dir);
  CacheDir env(dir);
  workloads::Workload w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  ir::PrimFunc lowered = lower::lower(w.func).func;
  auto expected = w.reference(workloads::make_inputs(w.func, 3));

  std::unique_ptr<CompiledKernel> first = compile(lowered, {});
  std::vector<fs::path> written = entries(dir);
  ASSERT_EQ(written.size(), 1u);
  auto stamp = fs::last_write_time(written[0]);
  std::unique_ptr<CompiledKernel> second = compile(lowered, {});
  EXPECT_EQ(entries(dir), written);
  EXPECT_EQ(fs::last_write_time(written[0]), stamp);  // read, not written again
  for (const auto* k : {first.get(), second.get()}) {
    std::vector<runtime::NDArray> got = run(*k, w);
    EXPECT_TRUE(runtime::compare(got[0], expected[0]).ok);
  }
  // Another CPU level is another entry; keep_module (the IR is wanted) bypasses the cache.
  compile(lowered, {.cpu = "x86-64"});
  EXPECT_EQ(entries(dir).size(), 2u);
  CompileOptions keep;
  keep.keep_module = true;
  compile(lowered, keep)->llvm_ir();

  // A truncated entry is compiled again and rewritten whole.
  fs::resize_file(written[0], fs::file_size(written[0]) / 2);
  std::unique_ptr<CompiledKernel> third = compile(lowered, {});
  EXPECT_TRUE(runtime::compare(run(*third, w)[0], expected[0]).ok);
  EXPECT_GT(fs::file_size(written[0]), 16u);
  EXPECT_NE(fs::last_write_time(written[0]), stamp);
  fs::remove_all(dir);
}

TEST(KernelCache, AnUnwritableFolderOnlyCostsTheCompile) {
  fs::path file = fs::path(::testing::TempDir()) / fmt::format("tyche_kcache_file_{}", getpid());
  std::ofstream(file) << "not a folder";
  CacheDir env(file / "sub");
  workloads::Workload w = workloads::scaled_down(workloads::get_preset("GMM-1"));
  std::unique_ptr<CompiledKernel> k = compile(lower::lower(w.func).func, {});
  EXPECT_TRUE(
      runtime::compare(run(*k, w)[0], w.reference(workloads::make_inputs(w.func, 3))[0]).ok);
  fs::remove(file);
}

}  // namespace
}  // namespace tyche::codegen
