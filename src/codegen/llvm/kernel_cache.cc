#include "codegen/llvm/kernel_cache.h"

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tyche::codegen::detail {

namespace {

// Bumped when anything that shapes the object besides the module, the CPU and LLVM changes (the
// optimization pipeline, the code generation options).
constexpr const char* kCacheFormat = "tyche-kernel-cache-2";
constexpr char kMagic[8] = {'T', 'Y', 'K', 'O', 'B', 'J', '0', '1'};

// FNV-1a from `basis`: two passes with different bases make a 128-bit key.
uint64_t fnv(const std::string& s, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

std::optional<std::string> kernel_cache_path(const llvm::Module& module, const std::string& cpu,
                                             const std::string& features) {
  const char* dir = std::getenv("TYCHE_KERNEL_CACHE");
  if (!dir || !*dir) return std::nullopt;
  // Bitcode, not the textual IR: the same module gives the same bytes, and the IR printer's
  // column tracking made the key a noticeable part of a cached compile.
  std::string key;
  llvm::raw_string_ostream os(key);
  llvm::WriteBitcodeToFile(module, os);
  os.flush();
  key += fmt::format("\n{}\n{}\n{}\n{}\n", cpu, features, LLVM_VERSION_STRING, kCacheFormat);
  uint64_t a = fnv(key, 0xcbf29ce484222325ULL), b = fnv(key, a ^ 0x9e3779b97f4a7c15ULL);
  return fmt::format("{}/{:016x}{:016x}.o", dir, a, b);
}

std::string read_cached_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string data = buffer.str();
  uint64_t size = 0;
  if (data.size() < sizeof(kMagic) + sizeof(size) ||
      std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0)
    return "";
  std::memcpy(&size, data.data() + sizeof(kMagic), sizeof(size));
  if (size != data.size() - sizeof(kMagic) - sizeof(size)) return "";
  return data.substr(sizeof(kMagic) + sizeof(size));
}

void write_cached_object(const std::string& path, const std::string& object) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  fs::create_directories(target.parent_path(), ec);
  std::string tmp = fmt::format("{}.{}.{}.tmp", path, getpid(),
                                std::hash<std::thread::id>{}(std::this_thread::get_id()));
  uint64_t size = object.size();
  bool ok = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    ok = out.write(kMagic, sizeof(kMagic)) &&
         out.write(reinterpret_cast<const char*>(&size), sizeof(size)) &&
         out.write(object.data(), static_cast<std::streamsize>(object.size())) && out.flush();
  }
  if (ok) fs::rename(tmp, target, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr, "tyche: cannot write the kernel cache in '%s' (TYCHE_KERNEL_CACHE)\n",
                   target.parent_path().c_str());
  }
}

}  // namespace tyche::codegen::detail
