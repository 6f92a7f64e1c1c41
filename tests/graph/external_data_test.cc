// A model is untrusted input: its external data is read from its own folder and nowhere else,
// and every size is checked before anything is read or allocated (docs/security.md). A sentinel
// file sits next to the model's folder; no refusal may read it, and each is one line naming the
// tensor and the location.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "../common/onnx_builder.h"
#include "graph/onnx_import.h"
#include "support/error.h"
#include "support/tensor_size.h"

namespace tyche::graph {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::OnnxBuilder;

// tmp/<test>/sentinel.bin (outside) and tmp/<test>/model/{w.bin, m.onnx}.
class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("tyche_external_{}_{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model" / "sub");
    write(root_ / "sentinel.bin", std::string(16, 'S'));
    write(root_ / "model" / "w.bin", weights());
    write(root_ / "model" / "sub" / "w.bin", weights());
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::string weights() {
    std::string w(16, '\0');
    float v[4] = {1, 2, 3, 4};
    std::memcpy(w.data(), v, 16);
    return w;
  }
  static void write(const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }

  // A model adding an external [4] float weight to its input.
  std::string model(const std::vector<std::pair<std::string, std::string>>& entries,
                    std::vector<int64_t> shape = {4}) {
    OnnxBuilder b;
    b.input("x", {4}).output("y").external("W", shape, entries).node("Add", {"x", "W"}, {"y"});
    std::string path = (root_ / "model" / "m.onnx").string();
    write(path, b.bytes());
    return path;
  }

  std::string error_of(const std::vector<std::pair<std::string, std::string>>& entries,
                       std::vector<int64_t> shape = {4}) {
    std::string path = model(entries, std::move(shape));
    try {
      import_onnx(path);
    } catch (const InputError& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_EQ(msg.find("SSSS"), std::string::npos) << msg;
      return msg;
    }
    return "no error";
  }

  fs::path root_;
};

TEST_F(ExternalData, ReadsARelativeFileInsideTheModelsFolder) {
  for (const char* location : {"w.bin", "sub/w.bin", "./sub/w.bin"}) {
    Graph g = import_onnx(model({{"location", location}, {"offset", "0"}, {"length", "16"}}));
    const Value& w = g.value(g.nodes.at(0).inputs.at(1));
    ASSERT_TRUE(w.is_constant()) << location;
    EXPECT_EQ(w.constant.get_flat(3), 4.0) << location;
  }
  // An offset into a larger file, and no length (the tensor's bytes).
  write(root_ / "model" / "w.bin", std::string(8, 'x') + weights());
  Graph g = import_onnx(model({{"location", "w.bin"}, {"offset", "8"}}));
  EXPECT_EQ(g.value(g.nodes.at(0).inputs.at(1)).constant.get_flat(0), 1.0);
}

TEST_F(ExternalData, RefusesLocationsOutsideTheModelsFolder) {
  std::string outside = (root_ / "sentinel.bin").string();
  EXPECT_THAT(error_of({{"location", outside}}),
              AllOf(HasSubstr("tensor 'W'"), HasSubstr(outside), HasSubstr("is absolute")));
  EXPECT_THAT(error_of({{"location", "/etc/passwd"}, {"length", "16"}}), HasSubstr("is absolute"));
  EXPECT_THAT(error_of({{"location", "/proc/self/environ"}}), HasSubstr("is absolute"));
  EXPECT_THAT(error_of({{"location", "/dev/zero"}}), HasSubstr("is absolute"));
  EXPECT_THAT(error_of({{"location", "/dev/stdin"}}), HasSubstr("is absolute"));
  EXPECT_THAT(error_of({{"location", "../sentinel.bin"}}),
              AllOf(HasSubstr("'../sentinel.bin'"), HasSubstr("'..'")));
  EXPECT_THAT(error_of({{"location", "sub/../../sentinel.bin"}}), HasSubstr("'..'"));
  EXPECT_THAT(error_of({{"location", "../../../../../../etc/passwd"}}), HasSubstr("'..'"));
  // A symlink inside the folder that points out of it (to a file, a device, a folder above).
  fs::create_symlink(root_ / "sentinel.bin", root_ / "model" / "link.bin");
  EXPECT_THAT(error_of({{"location", "link.bin"}}),
              AllOf(HasSubstr("'link.bin'"), HasSubstr("outside the model's folder")));
  fs::create_symlink("/dev/zero", root_ / "model" / "zero.bin");
  EXPECT_THAT(error_of({{"location", "zero.bin"}}), HasSubstr("outside the model's folder"));
  fs::create_directory_symlink(root_, root_ / "model" / "up");
  EXPECT_THAT(error_of({{"location", "up/sentinel.bin"}}), HasSubstr("outside the model's folder"));
  // A symlink that stays inside is followed.
  fs::create_symlink(root_ / "model" / "w.bin", root_ / "model" / "alias.bin");
  EXPECT_NO_THROW(import_onnx(model({{"location", "alias.bin"}})));
}

TEST_F(ExternalData, RefusesWhatIsNotARegularFileOrDoesNotExist) {
  EXPECT_THAT(error_of({{"location", "missing.bin"}}),
              AllOf(HasSubstr("'missing.bin'"), HasSubstr("cannot open")));
  EXPECT_THAT(error_of({{"location", "sub"}}), HasSubstr("not a regular file"));
  ASSERT_EQ(mkfifo((root_ / "model" / "fifo.bin").c_str(), 0600), 0);
  EXPECT_THAT(error_of({{"location", "fifo.bin"}}),
              HasSubstr("not a regular file"));  // never blocks
  EXPECT_THAT(error_of({{"offset", "0"}}), HasSubstr("without a location"));
  EXPECT_THAT(error_of({{"location", ""}}), HasSubstr("without a location"));
}

TEST_F(ExternalData, ChecksOffsetAndLengthBeforeReading) {
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"offset", "abc"}}),
              AllOf(HasSubstr("offset='abc'"), HasSubstr("tensor 'W'")));
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"offset", "-1"}}), HasSubstr("offset='-1'"));
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"length", "12345678901234567890123"}}),
              HasSubstr("length='12345678901234567890123'"));
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"offset", "4"}}), HasSubstr("past its end"));
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"offset", "18446744073709551615"}}),
              HasSubstr("offset="));
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"offset", "9223372036854775807"}}),
              HasSubstr("past its end"));
  // A length that disagrees with the shape is refused before anything is allocated for it.
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"length", "3221225472"}}),
              HasSubstr("has length 3221225472"));
  EXPECT_THAT(error_of({{"location", "w.bin"}, {"length", "3221225472"}}, {805306368}),
              HasSubstr("past its end"));
}

TEST_F(ExternalData, AModelGivenAsBytesNamesNoExternalData) {
  OnnxBuilder b;
  b.input("x", {4})
      .output("y")
      .external("W", {4}, {{"location", "w.bin"}})
      .node("Add", {"x", "W"}, {"y"});
  try {
    import_onnx_bytes(b.bytes(), "bytes", "");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()),
                AllOf(HasSubstr("tensor 'W'"), HasSubstr("'w.bin'"), HasSubstr("given as bytes")));
  }
  EXPECT_NO_THROW(import_onnx_bytes(b.bytes(), "bytes", (root_ / "model").string()));
}

// Sizes whose bytes wrap modulo 2^64, or that pass the tensor limit, are refused before any
// allocation: the process stays small.
TEST(ImportSizes, RefusesWrappingAndOversizedTensorsBeforeAllocating) {
  auto error_of = [](const std::string& bytes) -> std::string {
    try {
      import_onnx_bytes(bytes, "m.onnx", ".");
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  int64_t g = int64_t{1} << 30;
  OnnxBuilder wrap;  // 2^30 * 2^30 * 4 floats: 2^64 bytes, which wrap to 0 = the empty raw data
  wrap.input("x", {1}).output("y").raw("W", {g, g, 4}, "").node("Add", {"x", "W"}, {"y"});
  EXPECT_THAT(error_of(wrap.bytes()), AllOf(HasSubstr("tensor 'W'"), HasSubstr("64 bits")));
  OnnxBuilder input;
  input.input("x", {g, g, 4}).output("y").node("Relu", {"x"}, {"y"});
  EXPECT_THAT(error_of(input.bytes()), AllOf(HasSubstr("input 'x'"), HasSubstr("64 bits")));
  OnnxBuilder empty;  // 2^31 floats with no data: refused by its count, never allocated
  empty.input("x", {1}).output("y").raw("W", {int64_t{1} << 31}, "").node("Add", {"x", "W"}, {"y"});
  struct rusage before {
  }, after{};
  getrusage(RUSAGE_SELF, &before);
  EXPECT_THAT(error_of(empty.bytes()),
              AllOf(HasSubstr("tensor 'W' holds 0 bytes"), HasSubstr("needs 8589934592")));
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 256 * 1024);  // KiB: nothing near 8 GiB was touched
  OnnxBuilder
      reshape;  // 17 x 1085102592571150096 wraps to 16, the input's count (found by the fuzzer)
  reshape.input("x", {16})
      .ints("s", {17, 1085102592571150096})
      .output("y")
      .node("Reshape", {"x", "s"}, {"y"});
  EXPECT_THAT(error_of(reshape.bytes()),
              AllOf(HasSubstr("Reshape"), HasSubstr("more elements than 64 bits")));
  OnnxBuilder unknown;
  unknown.input("x", {1}).output("y").raw("W", {1}, "", 99).node("Add", {"x", "W"}, {"y"});
  EXPECT_THAT(error_of(unknown.bytes()), HasSubstr("has type number 99 (not an ONNX type)"));
  set_tensor_byte_limit(1 << 20);
  OnnxBuilder big;
  big.input("x", {1 << 20}).output("y").node("Relu", {"x"}, {"y"});
  EXPECT_THAT(error_of(big.bytes()),
              AllOf(HasSubstr("input 'x'"), HasSubstr("over the limit of 1.0 MiB")));
  set_tensor_byte_limit(0);
  EXPECT_THAT(error_of(big.bytes()), HasSubstr("no error"));
}

}  // namespace
}  // namespace tyche::graph
