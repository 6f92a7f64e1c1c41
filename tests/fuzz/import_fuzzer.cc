// libFuzzer harness of the ONNX importer (scripts/fuzz_importer.sh builds it with ASan and UBSan
// into build-fuzz and runs it): each input is the bytes of a model, imported as `tyche import`
// would (shapes inferred, constants folded). A refusal (tyche::Error) is the expected outcome of
// a malformed model; anything else that leaves the importer (another exception, a crash, a leak,
// undefined behaviour, a timeout, more memory than -rss_limit_mb) is a finding.
//
// With TYCHE_FUZZ_PIPELINE=1 a model that imports also goes through the rest of `tyche import`
// (batch norms folded, NHWC layout, fused tasks extracted): slower, deeper.
//
// External data is looked for in a folder of its own, FUZZ_DIR/model (TYCHE_FUZZ_DIR, default
// ./fuzz-dir), which holds weights.bin (4096 bytes a valid external tensor may point into) and a
// symlink that leaves the folder; beside the folder lies sentinel.txt with a secret. An import
// that succeeds must not carry the secret in any of its constants: a model may only read its own
// folder (docs/security.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "graph/layout.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/tasks.h"
#include "support/error.h"

namespace {

constexpr std::string_view kSecret = "TYCHE-FUZZ-SENTINEL-7f3a9c1e5b";

std::string g_dir;        // the model's folder
bool g_pipeline = false;  // TYCHE_FUZZ_PIPELINE=1: the rest of `tyche import` too

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void make_dir() {
  const char* env = std::getenv("TYCHE_FUZZ_DIR");
  std::filesystem::path root = std::filesystem::absolute(env && *env ? env : "fuzz-dir");
  std::filesystem::path model = root / "model";
  std::filesystem::create_directories(model);
  write_file(root / "sentinel.txt", std::string(kSecret) + "\n");
  std::string weights(4096, '\0');
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = static_cast<char>((i * 37) & 0x3f);  // small floats' bytes
  write_file(model / "weights.bin", weights);
  std::error_code ec;
  std::filesystem::remove(model / "outside.bin", ec);
  std::filesystem::create_symlink("../sentinel.txt", model / "outside.bin", ec);
  g_dir = model.string();
}

// The first constant of the graph whose bytes hold the secret (read from the sentinel, or left in
// memory that was not initialized), or nullptr.
const tyche::graph::Value* leaks_secret(const tyche::graph::Graph& g) {
  for (int id = 0; id < static_cast<int>(g.values.size()); ++id) {
    const tyche::runtime::NDArray& c = g.value(id).constant;
    if (!c.defined()) continue;
    std::string_view bytes(static_cast<const char*>(c.data()), c.nbytes());
    if (bytes.find(kSecret) != std::string_view::npos) return &g.value(id);
  }
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  make_dir();
  // A valid model may hold large tensors; the limit keeps the fuzzer's memory under -rss_limit_mb
  // while still refusing every shape whose size would wrap (an environment setting wins).
  setenv("TYCHE_MAX_TENSOR_BYTES", "64M", 0);
  const char* pipeline = std::getenv("TYCHE_FUZZ_PIPELINE");
  g_pipeline = pipeline && std::string(pipeline) == "1";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    tyche::graph::Graph g = tyche::graph::import_onnx_bytes(bytes, "fuzz", g_dir, {});
    // libFuzzer learns the secret from these very comparisons and writes it into raw_data: a
    // model that carries the secret itself may hold it in a constant.
    const bool carried = bytes.find(kSecret) != std::string::npos;
    if (const tyche::graph::Value* v = carried ? nullptr : leaks_secret(g)) {
      std::fprintf(stderr,
                   "==FUZZ== constant '%s' (%zu bytes) holds the sentinel's secret: read from "
                   "outside the model's "
                   "folder, or memory left uninitialized\n",
                   v->name.c_str(), v->constant.nbytes());
      std::abort();
    }
    if (g_pipeline) {  // as tyche import goes on: batch norms folded, NHWC, the tasks extracted
      tyche::graph::fold_batch_norm(g);
      tyche::graph::convert_layout(g, tyche::graph::Layout::kNHWC);
      tyche::graph::apply_dtype(g, "float32");
      tyche::graph::extract_tasks(g);
    }
  } catch (const tyche::Error&) {
    // refused: the expected outcome of a malformed model
  }
  return 0;
}
