#include "runtime/cuda.h"

#include <dlfcn.h>

#include <algorithm>
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
  int (*CreateProgram)(nvrtc_program*, const char*, const char*, int, const char* const*,
                       const char* const*);
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
  int (*DeviceGet)(int*, int);
  int (*DeviceGetName)(char*, int, int);
  int (*DeviceGetAttribute)(int*, int, int);
  int (*DevicePrimaryCtxRetain)(void**, int);
  int (*CtxSetCurrent)(void*);
  int (*MemAlloc)(uint64_t*, size_t);
  int (*MemFree)(uint64_t);
  int (*MemcpyHtoD)(uint64_t, const void*, size_t);
  int (*MemcpyDtoH)(void*, uint64_t, size_t);
  int (*MemsetD8)(uint64_t, unsigned char, size_t);
  int (*ModuleLoadData)(void**, const void*);
  int (*ModuleUnload)(void*);
  int (*ModuleGetFunction)(void**, void*, const char*);
  int (*LaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      void*, void**, void**);
  int (*EventCreate)(void**, unsigned);
  int (*EventRecord)(void*, void*);
  int (*EventSynchronize)(void*);
  int (*EventElapsedTime)(float*, void*, void*);
  int (*EventDestroy)(void*);
};
constexpr int kAttributeComputeCapabilityMajor = 75, kAttributeComputeCapabilityMinor = 76,
              kAttributeL2CacheSize = 38;

// Opens the first of `candidates` that loads; the error names them all and the last reason.
void* open_first(const std::vector<std::string>& candidates, const char* what,
                 const char* install) {
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

std::vector<std::string> candidates(const std::string& requested, const char* env,
                                    std::vector<std::string> defaults) {
  if (!requested.empty()) return {requested};
  if (const char* e = std::getenv(env); e && *e) return {e};
  return defaults;
}

const Nvrtc& nvrtc(const std::string& requested) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Nvrtc>> loaded;
  std::vector<std::string> paths = candidates(requested, "TYCHE_NVRTC_LIBRARY",
                                              {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
  std::string key = paths.front() + (paths.size() > 1 ? "..." : "");
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) return *it->second;
  void* lib = open_first(
      paths, "NVRTC", "install the CUDA toolkit's NVRTC (cuda-nvrtc) or set TYCHE_NVRTC_LIBRARY");
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

Compiled compile(const std::string& source, const std::string& arch,
                 const std::vector<std::string>& options, const std::string& library) {
  if (!std::regex_match(arch, std::regex("sm_[0-9]{2,3}[a-z]?")))
    throw_error("CUDA: the architecture must be a real one such as sm_90, got '{}'", arch);
  const Nvrtc& n = nvrtc(library);
  nvrtc_program program = nullptr;
  int code = n.CreateProgram(&program, source.c_str(), "tyche.cu", 0, nullptr, nullptr);
  if (code != kNvrtcSuccess)
    throw_error("CUDA: nvrtcCreateProgram failed: {}", n.GetErrorString(code));
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
    std::replace(out.log.begin(), out.log.end(), '\0',
                 '\n');  // NVRTC separates ptxas's part with a NUL
  }
  if (code == kNvrtcCompilation)
    throw_error("CUDA: the program does not compile for {}: {}", arch, first_error_line(out.log));
  if (code != kNvrtcSuccess)
    throw_error("CUDA: NVRTC refused the compilation for {}: {} ({})", arch, n.GetErrorString(code),
                first_error_line(out.log));
  if (n.GetPTXSize(program, &size) != kNvrtcSuccess) throw_error("CUDA: nvrtcGetPTXSize failed");
  out.ptx.resize(size);
  n.GetPTX(program, out.ptx.data());
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (n.GetCUBINSize(program, &size) != kNvrtcSuccess)
    throw_error("CUDA: nvrtcGetCUBINSize failed");
  out.cubin.resize(size);
  n.GetCUBIN(program, out.cubin.data());
  return out;
}

namespace {

// The driver, loaded once per path, with cuInit done.
const Driver& driver(const std::string& library) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Driver>> loaded;
  std::vector<std::string> paths =
      candidates(library, "TYCHE_CUDA_DRIVER_LIBRARY", {"libcuda.so.1"});
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(paths.front());
  if (it != loaded.end()) return *it->second;
  void* lib = open_first(paths, "the CUDA driver",
                         "no NVIDIA driver is installed here (CUDA code compiles without one, and "
                         "runs only with one)");
  auto d = std::make_unique<Driver>();
  const char* what = "the CUDA driver";
  bind(lib, d->Init, "cuInit", what);
  bind(lib, d->DriverGetVersion, "cuDriverGetVersion", what);
  bind(lib, d->DeviceGetCount, "cuDeviceGetCount", what);
  bind(lib, d->GetErrorString, "cuGetErrorString", what);
  bind(lib, d->DeviceGet, "cuDeviceGet", what);
  bind(lib, d->DeviceGetName, "cuDeviceGetName", what);
  bind(lib, d->DeviceGetAttribute, "cuDeviceGetAttribute", what);
  bind(lib, d->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", what);
  bind(lib, d->CtxSetCurrent, "cuCtxSetCurrent", what);
  bind(lib, d->MemAlloc, "cuMemAlloc_v2", what);
  bind(lib, d->MemFree, "cuMemFree_v2", what);
  bind(lib, d->MemcpyHtoD, "cuMemcpyHtoD_v2", what);
  bind(lib, d->MemcpyDtoH, "cuMemcpyDtoH_v2", what);
  bind(lib, d->MemsetD8, "cuMemsetD8_v2", what);
  bind(lib, d->ModuleLoadData, "cuModuleLoadData", what);
  bind(lib, d->ModuleUnload, "cuModuleUnload", what);
  bind(lib, d->ModuleGetFunction, "cuModuleGetFunction", what);
  bind(lib, d->LaunchKernel, "cuLaunchKernel", what);
  bind(lib, d->EventCreate, "cuEventCreate", what);
  bind(lib, d->EventRecord, "cuEventRecord", what);
  bind(lib, d->EventSynchronize, "cuEventSynchronize", what);
  bind(lib, d->EventElapsedTime, "cuEventElapsedTime", what);
  bind(lib, d->EventDestroy, "cuEventDestroy_v2", what);
  const char* s = nullptr;
  if (int code = d->Init(0); code != 0) {
    d->GetErrorString(code, &s);
    throw_error("CUDA: cuInit failed: {} ({})", s ? s : "unknown error", code);
  }
  return *loaded.emplace(paths.front(), std::move(d)).first->second;
}

void check(const Driver& d, int code, const char* call) {
  if (code == 0) return;
  const char* s = nullptr;
  d.GetErrorString(code, &s);
  throw_error("CUDA: {} failed: {} ({})", call, s ? s : "unknown error", code);
}

}  // namespace

int driver_version(const std::string& library) {
  const Driver* d = &driver(library);
  auto check = [&](int code, const char* call) { cuda::check(*d, code, call); };
  int count = 0;
  check(d->DeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw_error("CUDA: the driver sees no device");
  int version = 0;
  check(d->DriverGetVersion(&version), "cuDriverGetVersion");
  return version;
}

struct Device::State {
  const Driver* driver = nullptr;
  void* context = nullptr;
  int device = 0;
  void bind() const { check(*driver, driver->CtxSetCurrent(context), "cuCtxSetCurrent"); }
};

Device Device::open(int ordinal, const std::string& library) {
  Device dev;
  dev.state_ = std::make_shared<State>();
  State& st = *dev.state_;
  st.driver = &driver(library);
  const Driver& d = *st.driver;
  int count = 0;
  check(d, d.DeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw_error("CUDA: no device {} (the driver sees {})", ordinal, count);
  check(d, d.DeviceGet(&st.device, ordinal), "cuDeviceGet");
  check(d, d.DevicePrimaryCtxRetain(&st.context, st.device), "cuDevicePrimaryCtxRetain");
  st.bind();
  char name[256] = {};
  check(d, d.DeviceGetName(name, sizeof name - 1, st.device), "cuDeviceGetName");
  dev.name_ = name;
  int major = 0, minor = 0, l2 = 0;
  check(d, d.DeviceGetAttribute(&major, kAttributeComputeCapabilityMajor, st.device),
        "cuDeviceGetAttribute");
  check(d, d.DeviceGetAttribute(&minor, kAttributeComputeCapabilityMinor, st.device),
        "cuDeviceGetAttribute");
  check(d, d.DeviceGetAttribute(&l2, kAttributeL2CacheSize, st.device), "cuDeviceGetAttribute");
  dev.arch_ = fmt::format("sm_{}{}", major, minor);
  dev.l2_bytes_ = l2;
  return dev;
}

Device::Memory Device::allocate(size_t bytes) const {
  state_->bind();
  const Driver* d = state_->driver;
  uint64_t address = 0;
  check(*d, d->MemAlloc(&address, std::max<size_t>(bytes, 1)), "cuMemAlloc");
  auto state = state_;
  Memory m;
  m.bytes = bytes;
  m.ptr = std::shared_ptr<void>(reinterpret_cast<void*>(address), [state](void* p) {
    state->bind();
    state->driver->MemFree(reinterpret_cast<uint64_t>(p));
  });
  return m;
}

void Device::write(const Memory& to, const void* from, size_t bytes) const {
  state_->bind();
  check(*state_->driver, state_->driver->MemcpyHtoD(to.address(), from, bytes), "cuMemcpyHtoD");
}

void Device::read(const Memory& from, void* to, size_t bytes) const {
  state_->bind();
  check(*state_->driver, state_->driver->MemcpyDtoH(to, from.address(), bytes), "cuMemcpyDtoH");
}

void Device::fill(const Memory& m, uint8_t value) const {
  state_->bind();
  check(*state_->driver, state_->driver->MemsetD8(m.address(), value, m.bytes), "cuMemsetD8");
}

Device::Module Device::load(const std::vector<char>& cubin) const {
  state_->bind();
  void* module = nullptr;
  check(*state_->driver, state_->driver->ModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  auto state = state_;
  return Module{
      std::shared_ptr<void>(module, [state](void* p) { state->driver->ModuleUnload(p); })};
}

double Device::launch(const Module& module, const std::string& kernel,
                      const std::vector<uint64_t>& args, const std::array<int64_t, 3>& grid,
                      const std::array<int64_t, 3>& block, int64_t dynamic_shared_bytes) const {
  state_->bind();
  const Driver& d = *state_->driver;
  void* function = nullptr;
  check(d, d.ModuleGetFunction(&function, module.handle.get(), kernel.c_str()),
        "cuModuleGetFunction");
  std::vector<uint64_t> values = args;
  std::vector<void*> params;
  for (uint64_t& v : values) params.push_back(&v);
  void *start = nullptr, *stop = nullptr;
  check(d, d.EventCreate(&start, 0), "cuEventCreate");
  check(d, d.EventCreate(&stop, 0), "cuEventCreate");
  std::shared_ptr<void> events(nullptr, [&](void*) {
    d.EventDestroy(start);
    d.EventDestroy(stop);
  });
  check(d, d.EventRecord(start, nullptr), "cuEventRecord");
  auto u = [](int64_t x) { return static_cast<unsigned>(x); };
  check(d,
        d.LaunchKernel(function, u(grid[0]), u(grid[1]), u(grid[2]), u(block[0]), u(block[1]),
                       u(block[2]), u(dynamic_shared_bytes), nullptr, params.data(), nullptr),
        "cuLaunchKernel");
  check(d, d.EventRecord(stop, nullptr), "cuEventRecord");
  check(d, d.EventSynchronize(stop), "cuEventSynchronize (the kernel failed)");
  float ms = 0;
  check(d, d.EventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  return ms * 1e-3;
}

}  // namespace tyche::runtime::cuda
