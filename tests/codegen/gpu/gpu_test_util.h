// What the GPU back end's tests share: schedule results unwrapped (a refusal throws its reason).
#pragma once

#include <utility>

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

}  // namespace tyche::codegen::testing
