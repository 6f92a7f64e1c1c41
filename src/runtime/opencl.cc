#include "runtime/opencl.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>

#include "runtime/compiler_log.h"
#include "support/error.h"

namespace tyche::runtime::opencl {

namespace {

// The part of OpenCL 1.2's C API used here, declared from the specification (a stable ABI), so
// that no OpenCL header is needed to build.
using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_ulong = uint64_t;
using cl_handle = void*;  // platform, device, context, queue, mem, program, kernel, event

constexpr cl_int kSuccess = 0;
constexpr cl_int kBuildProgramFailure = -11;
constexpr cl_int kPlatformNotFound = -1001;  // CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found none
constexpr cl_ulong kDeviceTypeAll = 0xFFFFFFFF;
constexpr cl_uint kPlatformName = 0x0902;
constexpr cl_uint kDeviceName = 0x102B, kDeviceMaxWorkGroupSize = 0x1004,
                  kDeviceLocalMemSize = 0x1023, kDeviceGlobalMemSize = 0x101F;
constexpr cl_ulong kQueueProfilingEnable = 1 << 1;
constexpr cl_ulong kMemReadWrite = 1 << 0;
constexpr cl_uint kProgramBuildLog = 0x1183;
constexpr cl_uint kProfilingCommandStart = 0x1282, kProfilingCommandEnd = 0x1283;
constexpr cl_uint kTrue = 1;

struct Api {
  cl_int (*GetPlatformIDs)(cl_uint, cl_handle*, cl_uint*);
  cl_int (*GetPlatformInfo)(cl_handle, cl_uint, size_t, void*, size_t*);
  cl_int (*GetDeviceIDs)(cl_handle, cl_ulong, cl_uint, cl_handle*, cl_uint*);
  cl_int (*GetDeviceInfo)(cl_handle, cl_uint, size_t, void*, size_t*);
  cl_handle (*CreateContext)(const intptr_t*, cl_uint, const cl_handle*,
                             void (*)(const char*, const void*, size_t, void*), void*, cl_int*);
  cl_handle (*CreateCommandQueue)(cl_handle, cl_handle, cl_ulong, cl_int*);
  cl_handle (*CreateBuffer)(cl_handle, cl_ulong, size_t, void*, cl_int*);
  cl_int (*EnqueueWriteBuffer)(cl_handle, cl_handle, cl_uint, size_t, size_t, const void*, cl_uint,
                               const cl_handle*, cl_handle*);
  cl_int (*EnqueueReadBuffer)(cl_handle, cl_handle, cl_uint, size_t, size_t, void*, cl_uint,
                              const cl_handle*, cl_handle*);
  cl_handle (*CreateProgramWithSource)(cl_handle, cl_uint, const char**, const size_t*, cl_int*);
  cl_int (*BuildProgram)(cl_handle, cl_uint, const cl_handle*, const char*,
                         void (*)(cl_handle, void*), void*);
  cl_int (*GetProgramBuildInfo)(cl_handle, cl_handle, cl_uint, size_t, void*, size_t*);
  cl_handle (*CreateKernel)(cl_handle, const char*, cl_int*);
  cl_int (*SetKernelArg)(cl_handle, cl_uint, size_t, const void*);
  cl_int (*EnqueueNDRangeKernel)(cl_handle, cl_handle, cl_uint, const size_t*, const size_t*,
                                 const size_t*, cl_uint, const cl_handle*, cl_handle*);
  cl_int (*WaitForEvents)(cl_uint, const cl_handle*);
  cl_int (*GetEventProfilingInfo)(cl_handle, cl_uint, size_t, void*, size_t*);
  cl_int (*ReleaseEvent)(cl_handle);
  cl_int (*ReleaseKernel)(cl_handle);
  cl_int (*ReleaseProgram)(cl_handle);
  cl_int (*ReleaseMemObject)(cl_handle);
  cl_int (*ReleaseCommandQueue)(cl_handle);
  cl_int (*ReleaseContext)(cl_handle);
};

std::string error_name(cl_int code) {
  static const std::map<cl_int, const char*> names = {{-1, "CL_DEVICE_NOT_FOUND"},
                                                      {-2, "CL_DEVICE_NOT_AVAILABLE"},
                                                      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
                                                      {-5, "CL_OUT_OF_RESOURCES"},
                                                      {-6, "CL_OUT_OF_HOST_MEMORY"},
                                                      {-11, "CL_BUILD_PROGRAM_FAILURE"},
                                                      {-30, "CL_INVALID_VALUE"},
                                                      {-33, "CL_INVALID_DEVICE"},
                                                      {-34, "CL_INVALID_CONTEXT"},
                                                      {-38, "CL_INVALID_MEM_OBJECT"},
                                                      {-43, "CL_INVALID_BUILD_OPTIONS"},
                                                      {-44, "CL_INVALID_PROGRAM"},
                                                      {-46, "CL_INVALID_KERNEL_NAME"},
                                                      {-48, "CL_INVALID_KERNEL"},
                                                      {-49, "CL_INVALID_ARG_INDEX"},
                                                      {-50, "CL_INVALID_ARG_VALUE"},
                                                      {-51, "CL_INVALID_ARG_SIZE"},
                                                      {-52, "CL_INVALID_KERNEL_ARGS"},
                                                      {-53, "CL_INVALID_WORK_DIMENSION"},
                                                      {-54, "CL_INVALID_WORK_GROUP_SIZE"},
                                                      {-55, "CL_INVALID_WORK_ITEM_SIZE"},
                                                      {-61, "CL_INVALID_BUFFER_SIZE"},
                                                      {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
                                                      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"}};
  auto it = names.find(code);
  return it != names.end() ? fmt::format("{} ({})", it->second, code)
                           : fmt::format("error {}", code);
}

void check(cl_int code, const char* call) {
  if (code != kSuccess) throw_error("OpenCL: {} failed: {}", call, error_name(code));
}

// Loaded once per path and never closed (the ICD loader keeps its vendors' libraries).
const Api& api(const std::string& requested) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Api>> loaded;
  std::string path = requested;
  if (path.empty()) {
    const char* env = std::getenv("TYCHE_OPENCL_LIBRARY");
    path = env && *env ? env : "libOpenCL.so.1";
  }
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(path); it != loaded.end()) return *it->second;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    throw_error(
        "OpenCL: cannot load {} ({}); install an OpenCL ICD loader and platform, e.g. apt-get "
        "install ocl-icd-libopencl1 pocl-opencl-icd",
        path, why ? why : "unknown reason");
  }
  auto a = std::make_unique<Api>();
  auto bind = [&](auto& fn, const char* name) {
    void* sym = dlsym(lib, name);
    if (!sym) throw_error("OpenCL: {} lacks {}", path, name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
  bind(a->GetPlatformIDs, "clGetPlatformIDs");
  bind(a->GetPlatformInfo, "clGetPlatformInfo");
  bind(a->GetDeviceIDs, "clGetDeviceIDs");
  bind(a->GetDeviceInfo, "clGetDeviceInfo");
  bind(a->CreateContext, "clCreateContext");
  bind(a->CreateCommandQueue, "clCreateCommandQueue");
  bind(a->CreateBuffer, "clCreateBuffer");
  bind(a->EnqueueWriteBuffer, "clEnqueueWriteBuffer");
  bind(a->EnqueueReadBuffer, "clEnqueueReadBuffer");
  bind(a->CreateProgramWithSource, "clCreateProgramWithSource");
  bind(a->BuildProgram, "clBuildProgram");
  bind(a->GetProgramBuildInfo, "clGetProgramBuildInfo");
  bind(a->CreateKernel, "clCreateKernel");
  bind(a->SetKernelArg, "clSetKernelArg");
  bind(a->EnqueueNDRangeKernel, "clEnqueueNDRangeKernel");
  bind(a->WaitForEvents, "clWaitForEvents");
  bind(a->GetEventProfilingInfo, "clGetEventProfilingInfo");
  bind(a->ReleaseEvent, "clReleaseEvent");
  bind(a->ReleaseKernel, "clReleaseKernel");
  bind(a->ReleaseProgram, "clReleaseProgram");
  bind(a->ReleaseMemObject, "clReleaseMemObject");
  bind(a->ReleaseCommandQueue, "clReleaseCommandQueue");
  bind(a->ReleaseContext, "clReleaseContext");
  return *loaded.emplace(path, std::move(a)).first->second;
}

std::string info_string(cl_int (*get)(cl_handle, cl_uint, size_t, void*, size_t*), cl_handle h,
                        cl_uint what) {
  size_t size = 0;
  check(get(h, what, 0, nullptr, &size), "clGet*Info");
  std::string s(size, '\0');
  check(get(h, what, size, s.data(), nullptr), "clGet*Info");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace

struct Device::State {
  const Api* cl = nullptr;
  cl_handle device = nullptr;
  std::shared_ptr<void> context, queue;
};

Device Device::open(const std::string& library) {
  const Api& cl = api(library);
  cl_uint n = 0;
  cl_int code = cl.GetPlatformIDs(0, nullptr, &n);
  if (code == kPlatformNotFound || (code == kSuccess && n == 0))
    throw_error(
        "OpenCL: no platform found (the ICD loader lists none; install one, e.g. apt-get install "
        "pocl-opencl-icd)");
  check(code, "clGetPlatformIDs");
  std::vector<cl_handle> platforms(n);
  check(cl.GetPlatformIDs(n, platforms.data(), nullptr), "clGetPlatformIDs");
  Device d;
  auto s = std::make_shared<State>();
  s->cl = &cl;
  for (cl_handle p : platforms) {
    cl_uint devices = 0;
    if (cl.GetDeviceIDs(p, kDeviceTypeAll, 1, &s->device, &devices) == kSuccess && devices > 0) {
      d.info_.platform = info_string(cl.GetPlatformInfo, p, kPlatformName);
      break;
    }
  }
  if (!s->device) throw_error("OpenCL: none of the {} platform(s) has a device", n);
  d.info_.name = info_string(cl.GetDeviceInfo, s->device, kDeviceName);
  check(cl.GetDeviceInfo(s->device, kDeviceMaxWorkGroupSize, sizeof(size_t),
                         &d.info_.max_work_group_size, nullptr),
        "clGetDeviceInfo");
  check(cl.GetDeviceInfo(s->device, kDeviceLocalMemSize, sizeof(uint64_t), &d.info_.local_mem_bytes,
                         nullptr),
        "clGetDeviceInfo");
  check(cl.GetDeviceInfo(s->device, kDeviceGlobalMemSize, sizeof(uint64_t),
                         &d.info_.global_mem_bytes, nullptr),
        "clGetDeviceInfo");
  cl_handle context = cl.CreateContext(nullptr, 1, &s->device, nullptr, nullptr, &code);
  check(code, "clCreateContext");
  s->context = std::shared_ptr<void>(context, [r = cl.ReleaseContext](void* h) { r(h); });
  cl_handle queue = cl.CreateCommandQueue(context, s->device, kQueueProfilingEnable, &code);
  check(code, "clCreateCommandQueue");
  s->queue = std::shared_ptr<void>(queue, [r = cl.ReleaseCommandQueue](void* h) { r(h); });
  d.state_ = std::move(s);
  return d;
}

Buffer Device::allocate(size_t bytes) const {
  const Api& cl = *state_->cl;
  cl_int code = kSuccess;
  cl_handle mem =
      cl.CreateBuffer(state_->context.get(), kMemReadWrite, bytes == 0 ? 1 : bytes, nullptr, &code);
  check(code, "clCreateBuffer");
  Buffer b;
  b.mem_ = std::shared_ptr<void>(mem, [r = cl.ReleaseMemObject](void* h) { r(h); });
  b.bytes_ = bytes;
  return b;
}

void Device::write(const Buffer& to, const void* from, size_t bytes) const {
  if (bytes > to.bytes())
    throw_error("OpenCL: writing {} bytes into a buffer of {}", bytes, to.bytes());
  check(state_->cl->EnqueueWriteBuffer(state_->queue.get(), to.handle(), kTrue, 0, bytes, from, 0,
                                       nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void Device::read(const Buffer& from, void* to, size_t bytes) const {
  if (bytes > from.bytes())
    throw_error("OpenCL: reading {} bytes from a buffer of {}", bytes, from.bytes());
  check(state_->cl->EnqueueReadBuffer(state_->queue.get(), from.handle(), kTrue, 0, bytes, to, 0,
                                      nullptr, nullptr),
        "clEnqueueReadBuffer");
}

Program Device::build(const std::string& source, const std::string& options) const {
  const Api& cl = *state_->cl;
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int code = kSuccess;
  cl_handle program = cl.CreateProgramWithSource(state_->context.get(), 1, &text, &length, &code);
  check(code, "clCreateProgramWithSource");
  Program p;
  p.program_ = std::shared_ptr<void>(program, [r = cl.ReleaseProgram](void* h) { r(h); });
  code = cl.BuildProgram(program, 1, &state_->device, options.c_str(), nullptr, nullptr);
  if (code == kBuildProgramFailure) {
    size_t size = 0;
    cl.GetProgramBuildInfo(program, state_->device, kProgramBuildLog, 0, nullptr, &size);
    std::string log(size, '\0');
    cl.GetProgramBuildInfo(program, state_->device, kProgramBuildLog, size, log.data(), nullptr);
    throw_error("OpenCL: the program does not build: {}", first_error_line(log, "no build log"));
  }
  check(code, "clBuildProgram");
  return p;
}

double Device::run(const Program& program, const std::string& kernel, const std::vector<Arg>& args,
                   const std::vector<size_t>& global, const std::vector<size_t>& local) const {
  const Api& cl = *state_->cl;
  if (global.empty() || global.size() > 3)
    throw_error("OpenCL: {} work dimensions (1 to 3 are possible)", global.size());
  if (!local.empty() && local.size() != global.size())
    throw_error("OpenCL: {} work-group dimensions for {} work dimensions", local.size(),
                global.size());
  cl_int code = kSuccess;
  cl_handle k = cl.CreateKernel(program.handle(), kernel.c_str(), &code);
  if (code != kSuccess)
    throw_error("OpenCL: no kernel {} in the program: {}", kernel, error_name(code));
  std::shared_ptr<void> owned(k, [r = cl.ReleaseKernel](void* h) { r(h); });
  for (size_t i = 0; i < args.size(); ++i) {
    cl_handle mem = args[i].buffer ? args[i].buffer->handle() : nullptr;
    code = args[i].buffer ? cl.SetKernelArg(k, static_cast<cl_uint>(i), sizeof(cl_handle), &mem)
                          : cl.SetKernelArg(k, static_cast<cl_uint>(i), args[i].bytes.size(),
                                            args[i].bytes.data());
    if (code != kSuccess) throw_error("OpenCL: argument {} of {}: {}", i, kernel, error_name(code));
  }
  cl_handle event = nullptr;
  code = cl.EnqueueNDRangeKernel(state_->queue.get(), k, static_cast<cl_uint>(global.size()),
                                 nullptr, global.data(), local.empty() ? nullptr : local.data(), 0,
                                 nullptr, &event);
  if (code != kSuccess) throw_error("OpenCL: launching {}: {}", kernel, error_name(code));
  std::shared_ptr<void> done(event, [r = cl.ReleaseEvent](void* h) { r(h); });
  check(cl.WaitForEvents(1, &event), "clWaitForEvents");
  cl_ulong start = 0, end = 0;
  check(cl.GetEventProfilingInfo(event, kProfilingCommandStart, sizeof(start), &start, nullptr),
        "clGetEventProfilingInfo");
  check(cl.GetEventProfilingInfo(event, kProfilingCommandEnd, sizeof(end), &end, nullptr),
        "clGetEventProfilingInfo");
  return static_cast<double>(end - start) * 1e-9;
}

}  // namespace tyche::runtime::opencl
