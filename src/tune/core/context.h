// One tuning task as the tuner's modules see it: the function being scheduled and the target.
// Rules, postprocessors, mutators and space generators are initialized with it.
#pragma once

#include "ir/function.h"
#include "target/target.h"

namespace tyche::tune {

struct TuneContext {
  ir::PrimFunc func;
  target::Target target;
};

}  // namespace tyche::tune
