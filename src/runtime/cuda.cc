#include "runtime/cuda.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <type_traits>

#include "runtime/compiler_log.h"
#include "support/error.h"

namespace tyche::runtime::cuda {

namespace {

// The part of NVRTC's and the driver's C APIs used here, declared from their documentation, so
// that no CUDA header is needed to build.
using nvrtc_program = void*;
constexpr int kNvrtcSuccess = 0;
constexpr int kNvrtcCompilation = 6;  // NVRTC_ERROR_COMPILATION

struct Nvrtc {
  int (*Version)(int*, int*);
  int (*CreateProgram)(nvrtc_program*, const char*, const char*, int, const char* const*, const char* const*);
  int (*CompileProgram)(nvrtc_program, int, const char* const*);
  int (*GetProgramLogSize)(nvrtc_program, size_t*);
  int (*GetProgramLog)(nvrtc_program, char*);
  int (*GetPTXSize)(nvrtc_program, size_t*);
  int (*GetPTX)(nvrtc_program, char*);
  int (*GetCUBINSize)(nvrtc_program, size_t*);
  int (*GetCUBIN)(nvrtc_program, char*);
  int (*DestroyProgram)(nvrtc_program*);
  const char* (*GetErrorString)(int);
};

struct Driver {
  int (*Init)(unsigned);
  int (*DriverGetVersion)(int*);
  int (*DeviceGetCount)(int*);
  int (*GetErrorString)(int, const char**);
};

// Opens the first of `candidates` that loads; the error names them all and the last reason.
void* open_first(const std::vector<std::string>& candidates, const char* what, const char* install) {
  std::string why;
  for (const std::string& path : candidates) {
    if (void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    why = e ? e : "unknown reason";
  }
  std::string names;
  for (const std::string& c : candidates) names += (names.empty() ? "" : ", ") + c;
  throw_error("CUDA: cannot load {} ({}: {}); {}", what, names, why, install);
}

template <typename Fn>
void bind(void* lib, Fn& fn, const char* name, const char* what) {
  void* sym = dlsym(lib, name);
  if (!sym) throw_error("CUDA: {} lacks {}", what, name);
  fn = reinterpret_cast<Fn>(sym);
}

std::vector<std::string> candidates(const std::string& requested, const char* env, std::vector<std::string> defaults) {
  if (!requested.empty()) return {requested};
  if (const char* e = std::getenv(env); e && *e) return {e};
  return defaults;
}

const Nvrtc& nvrtc(const std::string& requested) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Nvrtc>> loaded;
  std::vector<std::string> paths = candidates(requested, "TYCHE_NVRTC_LIBRARY", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
  std::string key = paths.front() + (paths.size() > 1 ? "..." : "");
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return *it->second;
  void* lib = open_first(paths, "NVRTC", "install the CUDA toolkit's NVRTC (cuda-nvrtc) or set TYCHE_NVRTC_LIBRARY");
  auto n = std::make_unique<Nvrtc>();
  bind(lib, n->Version, "nvrtcVersion", "NVRTC");
  bind(lib, n->CreateProgram, "nvrtcCreateProgram", "NVRTC");
  bind(lib, n->CompileProgram, "nvrtcCompileProgram", "NVRTC");
  bind(lib, n->GetProgramLogSize, "nvrtcGetProgramLogSize", "NVRTC");
  bind(lib, n->GetProgramLog, "nvrtcGetProgramLog", "NVRTC");
  bind(lib, n->GetPTXSize, "nvrtcGetPTXSize", "NVRTC");
  bind(lib, n->GetPTX, "nvrtcGetPTX", "NVRTC");
  bind(lib, n->GetCUBINSize, "nvrtcGetCUBINSize", "NVRTC");
  bind(lib, n->GetCUBIN, "nvrtcGetCUBIN", "NVRTC");
  bind(lib, n->DestroyProgram, "nvrtcDestroyProgram", "NVRTC");
  bind(lib, n->GetErrorString, "nvrtcGetErrorString", "NVRTC");
  return *loaded.emplace(key, std::move(n)).first->second;
}


}  // namespace

std::string nvrtc_version(const std::string& library) {
  const Nvrtc& n = nvrtc(library);
  int major = 0, minor = 0;
  if (n.Version(&major, &minor) != kNvrtcSuccess) throw_error("CUDA: nvrtcVersion failed");
  return fmt::format("{}.{}", major, minor);
}

Compiled compile(const std::string& source, const std::string& arch, const std::vector<std::string>& options, const std::string& library) {
  if (!std::regex_match(arch, std::regex("sm_[0-9]{2,3}[a-z]?")))
    throw_error("CUDA: the architecture must be a real one such as sm_90, got '{}'", arch);
  const Nvrtc& n = nvrtc(library);
  nvrtc_program program = nullptr;
  int code = n.CreateProgram(&program, source.c_str(), "tyche.cu", 0, nullptr, nullptr);
  if (code != kNvrtcSuccess) throw_error("CUDA: nvrtcCreateProgram failed: {}", n.GetErrorString(code));
  std::shared_ptr<void> owned(program, [destroy = n.DestroyProgram](void* p) { destroy(&p); });
  std::vector<std::string> all = {"--gpu-architecture=" + arch, "--std=c++17"};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  code = n.CompileProgram(program, static_cast<int>(argv.size()), argv.data());
  Compiled out;
  size_t size = 0;
  if (n.GetProgramLogSize(program, &size) == kNvrtcSuccess && size > 1) {
    out.log.resize(size);
    n.GetProgramLog(program, out.log.data());
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (code == kNvrtcCompilation) throw_error("CUDA: the program does not compile for {}: {}", arch, first_error_line(out.log));
  if (code != kNvrtcSuccess) throw_error("CUDA: NVRTC refused the compilation for {}: {} ({})", arch, n.GetErrorString(code), first_error_line(out.log));
  if (n.GetPTXSize(program, &size) != kNvrtcSuccess) throw_error("CUDA: nvrtcGetPTXSize failed");
  out.ptx.resize(size);
  n.GetPTX(program, out.ptx.data());
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (n.GetCUBINSize(program, &size) != kNvrtcSuccess) throw_error("CUDA: nvrtcGetCUBINSize failed");
  out.cubin.resize(size);
  n.GetCUBIN(program, out.cubin.data());
  return out;
}

int driver_version(const std::string& library) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Driver>> loaded;
  std::vector<std::string> paths = candidates(library, "TYCHE_CUDA_DRIVER_LIBRARY", {"libcuda.so.1"});
  const Driver* d = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = loaded.find(paths.front());
    if (it == loaded.end()) {
      void* lib = open_first(paths, "the CUDA driver", "no NVIDIA driver is installed here (CUDA code compiles without one, and runs only with one)");
      auto drv = std::make_unique<Driver>();
      bind(lib, drv->Init, "cuInit", "the CUDA driver");
      bind(lib, drv->DriverGetVersion, "cuDriverGetVersion", "the CUDA driver");
      bind(lib, drv->DeviceGetCount, "cuDeviceGetCount", "the CUDA driver");
      bind(lib, drv->GetErrorString, "cuGetErrorString", "the CUDA driver");
      it = loaded.emplace(paths.front(), std::move(drv)).first;
    }
    d = it->second.get();
  }
  auto check = [&](int code, const char* call) {
    if (code == 0) return;
    const char* s = nullptr;
    d->GetErrorString(code, &s);
    throw_error("CUDA: {} failed: {} ({})", call, s ? s : "unknown error", code);
  };
  check(d->Init(0), "cuInit");
  int count = 0;
  check(d->DeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw_error("CUDA: the driver sees no device");
  int version = 0;
  check(d->DriverGetVersion(&version), "cuDriverGetVersion");
  return version;
}

}  // namespace tyche::runtime::cuda
