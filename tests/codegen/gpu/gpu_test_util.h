// What the GPU back end's tests share: schedule results unwrapped (a refusal throws its reason).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "runtime/cuda.h"
#include "runtime/opencl.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace tyche::codegen::testing {

template <typename T>
T ok(schedule::Result<T> r) {
  if (!r.ok()) throw Error(r.error().reason());
  return std::move(r).value();
}
inline void ok(const schedule::Status& s) {
  if (!s.ok()) throw Error(s.error().reason());
}

// The OpenCL device, or nullopt with why not in `why` (the tests then skip, saying so).
inline std::optional<runtime::opencl::Device> open_device(std::string& why) {
  try {
    return runtime::opencl::Device::open();
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

// Why NVRTC cannot compile here ("" if it can).
inline std::string nvrtc_missing() {
  try {
    runtime::cuda::nvrtc_version();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace tyche::codegen::testing

#define NVRTC_OR_SKIP()                                                        \
  if (std::string missing = ::tyche::codegen::testing::nvrtc_missing(); !missing.empty()) \
  GTEST_SKIP() << missing
#define OPEN_OR_SKIP(d)                          \
  std::string why;                               \
  auto d = ::tyche::codegen::testing::open_device(why); \
  if (!d) GTEST_SKIP() << why;
