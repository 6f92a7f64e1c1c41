// OpenCL devices, opened at run time: the ICD loader (libOpenCL.so.1, or TYCHE_OPENCL_LIBRARY) is
// loaded with dlopen, so Tyche builds and runs where OpenCL is absent and says so in one line
// when asked for it. On these machines the platform is PoCL, which runs OpenCL C on the CPU:
// work-groups, local memory and barriers execute as they would on a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tyche::runtime::opencl {

struct DeviceInfo {
  std::string platform;  // "Portable Computing Language"
  std::string name;      // "pthread-skylake-avx512-AMD EPYC"
  size_t max_work_group_size = 0;
  uint64_t local_mem_bytes = 0;
  uint64_t global_mem_bytes = 0;
};

class Device;

// Device memory; released when the last copy goes.
class Buffer {
 public:
  size_t bytes() const { return bytes_; }
  void* handle() const { return mem_.get(); }

 private:
  friend class Device;
  std::shared_ptr<void> mem_;
  size_t bytes_ = 0;
};

// One kernel argument: a buffer, or a scalar's bytes.
struct Arg {
  const Buffer* buffer = nullptr;
  std::vector<uint8_t> bytes;
  static Arg of(const Buffer& b) { return Arg{&b, {}}; }
  template <typename T>
  static Arg scalar(T value) {
    Arg a;
    a.bytes.resize(sizeof(T));
    std::memcpy(a.bytes.data(), &value, sizeof(T));
    return a;
  }
};

// A program built for the device; its kernels are looked up by name when launched.
class Program {
 public:
  void* handle() const { return program_.get(); }

 private:
  friend class Device;
  std::shared_ptr<void> program_;
};

// A context and an in-order, profiling command queue on one device. Every failure throws
// tyche::Error with one line naming the call and OpenCL's error code.
class Device {
 public:
  // The first device of the first platform that has one. `library` overrides
  // TYCHE_OPENCL_LIBRARY, which overrides libOpenCL.so.1.
  static Device open(const std::string& library = "");

  const DeviceInfo& info() const { return info_; }
  Buffer allocate(size_t bytes) const;
  void write(const Buffer& to, const void* from, size_t bytes) const;
  void read(const Buffer& from, void* to, size_t bytes) const;
  // A build failure's message is one line: the first error the compiler reported.
  Program build(const std::string& source, const std::string& options = "") const;
  // Runs `kernel` over `global` work-items in work-groups of `local` (empty: the implementation
  // chooses), waits for it, and returns its time on the device in seconds (profiling events).
  double run(const Program& program, const std::string& kernel, const std::vector<Arg>& args,
             const std::vector<size_t>& global, const std::vector<size_t>& local = {}) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  DeviceInfo info_;
};

}  // namespace tyche::runtime::opencl
