// One tuning task as the tuner's modules see it: the function being scheduled and the target.
// Rules, postprocessors, mutators and space generators are initialized with it.
#pragma once

#include "ir/function.h"
#include "target/target.h"

namespace tyche::tune {

// The tuner names the target description as its own (target/target.h).
using target::Target;

struct TuneContext {
  ir::PrimFunc func;
  Target target;
};

}  // namespace tyche::tune
