// Runs the `tyche` binary and checks exit codes and the one-line error contract.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Result {
  int code;
  std::string out, err;
};

Result run(const std::string& args) {
  std::string bin = std::string(TYCHE_BINARY_DIR) + "/tools/tyche";
  // One file per call and process: ctest runs the tests of this binary in parallel.
  static int calls = 0;
  std::string err_file = testing::TempDir() + "/tyche_cli_stderr_" + std::to_string(getpid()) + "_" +
                         std::to_string(calls++) + ".txt";
  std::string cmd = bin + " " + args + " 2>" + err_file;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = fopen(err_file.c_str(), "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    fclose(f);
  }
  std::remove(err_file.c_str());
  return r;
}

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expect_usage_error(const std::string& args, const std::string& needle) {
  Result r = run(args);
  EXPECT_EQ(r.code, 2) << args;
  EXPECT_EQ(count_lines(r.err), 1) << args << " stderr: " << r.err;
  EXPECT_THAT(r.err, testing::HasSubstr(needle)) << args;
  EXPECT_EQ(r.out, "") << args;
}

TEST(Cli, ListsWorkloads) {
  Result r = run("workloads");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, testing::HasSubstr("GMM-4"));
  EXPECT_THAT(r.out, testing::HasSubstr("2.1475"));  // 2 * 1024^3 FLOP
  EXPECT_EQ(count_lines(r.out), 57);
}

TEST(Cli, ShowPrintsIr) {
  Result r = run("show GMM-1");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, testing::HasSubstr("with block(\"Z\")"));
  r = run("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4,k=4");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, testing::HasSubstr("axis.reduce(4, k)"));
}

TEST(Cli, CheckPassesWithExitZero) {
  Result r = run("check GMM-4 --scale-down");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("max abs error"));
  EXPECT_THAT(r.out, testing::HasSubstr("OK"));
  r = run("check C2D-1 --scale-down");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("check 'O[n,h,w,co] += I[n,h*2+rh,w*2+rw,ci] * W[rh,rw,ci,co]' --extents n=1,h=4,w=4,co=4,rh=3,rw=3,ci=2");
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Cli, BadInputsExitTwoWithOneLine) {
  expect_usage_error("show NOPE-1", "unknown workload");
  expect_usage_error("check GMM-9 --scale-down", "unknown workload");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j' --extents i=4,j=4,k=4", "column");
  expect_usage_error("check 'C[i,j] += A[i,k] * * B[k,j]' --extents i=4,j=4,k=4", "column 20");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]'", "--extents");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4", "'k'");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=4,k=4,z=3", "'z'");
  expect_usage_error("show 'C[i,j] += A[i,k] * B[k,j]' --extents i=4,j=x,k=4", "extents");
  expect_usage_error("frobnicate", "frobnicate");
  expect_usage_error("show", "workload");
  expect_usage_error("check GMM-1 --bogus", "bogus");
}

}  // namespace
