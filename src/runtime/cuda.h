// CUDA at run time: NVRTC compiles CUDA C to PTX and a cubin for one architecture, and the driver
// API is what runs them. Both libraries are opened with dlopen, so Tyche builds and runs where
// neither exists (these machines have NVRTC and no driver) and says so in one line when asked.
#pragma once

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
Compiled compile(const std::string& source, const std::string& arch, const std::vector<std::string>& options = {},
                 const std::string& library = "");

// The driver's CUDA version (12080 for 12.8) after cuInit; throws tyche::Error in one line where
// there is no driver (libcuda.so.1, or TYCHE_CUDA_DRIVER_LIBRARY) or no device.
int driver_version(const std::string& library = "");

}  // namespace tyche::runtime::cuda
