// CUDA at run time: NVRTC compiles CUDA C to PTX and a cubin for one architecture, and the driver
// API is what runs them. Both libraries are opened with dlopen, so Tyche builds and runs where
// neither exists (these machines have NVRTC and no driver) and says so in one line when asked.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tyche::runtime::cuda {

struct Compiled {
  std::string ptx;
  std::vector<char> cubin;  // an ELF for the architecture compiled for
  std::string log;          // the compiler's warnings, if any
};

// NVRTC's version, "13.0". `library` overrides TYCHE_NVRTC_LIBRARY, which overrides the search
// libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.
std::string nvrtc_version(const std::string& library = "");

// CUDA C to PTX and a cubin for `arch` ("sm_90"). Throws tyche::Error in one line: the library
// missing, an architecture NVRTC refuses, or the compiler's first error.
Compiled compile(const std::string& source, const std::string& arch,
                 const std::vector<std::string>& options = {}, const std::string& library = "");

// The driver's CUDA version (12080 for 12.8) after cuInit; throws tyche::Error in one line where
// there is no driver (libcuda.so.1, or TYCHE_CUDA_DRIVER_LIBRARY) or no device.
int driver_version(const std::string& library = "");

// A GPU through the driver API: its primary context, memory, cubins loaded as modules, kernels
// launched and timed by events. Every failure throws tyche::Error with one line naming the call
// and the driver's error.
class Device {
 public:
  // Device `ordinal` (0: the first). Throws where there is no driver or no such device.
  static Device open(int ordinal = 0, const std::string& library = "");

  const std::string& name() const { return name_; }
  const std::string& arch() const { return arch_; }  // "sm_90" (its compute capability)
  int64_t l2_bytes() const { return l2_bytes_; }

  // Device memory, freed when the last copy goes.
  struct Memory {
    std::shared_ptr<void> ptr;  // holds a CUdeviceptr
    size_t bytes = 0;
    uint64_t address() const { return reinterpret_cast<uint64_t>(ptr.get()); }
  };
  Memory allocate(size_t bytes) const;
  void write(const Memory& to, const void* from, size_t bytes) const;
  void read(const Memory& from, void* to, size_t bytes) const;
  void fill(const Memory& m, uint8_t value) const;  // evicts what L2 held when m is larger than it

  // A cubin (runtime::cuda::compile's), loaded; unloaded when the last copy goes.
  struct Module {
    std::shared_ptr<void> handle;
  };
  Module load(const std::vector<char>& cubin) const;
  // Launches `kernel` of `module` with device pointers `args`, waits, and returns its time on
  // the device in seconds (events around it).
  double launch(const Module& module, const std::string& kernel, const std::vector<uint64_t>& args,
                const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block,
                int64_t dynamic_shared_bytes = 0) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::string name_, arch_;
  int64_t l2_bytes_ = 0;
};

}  // namespace tyche::runtime::cuda
