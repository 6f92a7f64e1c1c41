// The pieces of the extension module tyche._tyche, one file per area; what they share. The Python
// files of the package (python/tyche/) give these natives their Pythonic surface.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>

#include "ir/function.h"
#include "schedule/schedule.h"

namespace tyche::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_program(nb::module_& m);   // IR, the tensor-expression front-end, workloads
void bind_schedule(nb::module_& m);  // Schedule, handles, traces
void bind_kernel(nb::module_& m);    // build, call, time, source
void bind_tune(nb::module_& m);      // rules, spaces, tune

// A Schedule as Python holds it. The tuner may take the schedule back (a space function's, a
// rule's result): the holder is then empty and says so when used.
struct ScheduleHolder {
  explicit ScheduleHolder(schedule::Schedule s) : sch(std::make_unique<schedule::Schedule>(std::move(s))) {}
  schedule::Schedule& get() const;
  // Moves the schedule out; the holder is empty afterwards.
  schedule::Schedule take();
  std::unique_ptr<schedule::Schedule> sch;
};

// A primitive's refusal as Python sees it: the one-line reason, its code, and the IR with the
// offending statement marked (rendered at once: the statement may not outlive the schedule).
struct ScheduleRefusal {
  schedule::ScheduleError error;
  std::string rendered;
};

// The name of a Python value's type, for messages.
inline std::string python_type_name(nb::handle v) { return nb::cast<std::string>(nb::str(v.type().attr("__name__"))); }

// The program a Python value stands for: a PrimFunc, a Workload (its func) or a Schedule (its
// current func); throws InputError otherwise.
ir::PrimFunc as_func(nb::handle value);

}  // namespace tyche::python
