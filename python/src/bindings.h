// The pieces of the extension module tyche._tyche, one file per area; what they share. The Python
// files of the package (python/tyche/) give these natives their Pythonic surface.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <optional>
#include <string>

#include "ir/function.h"
#include "runtime/ndarray.h"
#include "schedule/schedule.h"

#include "tune/measure/measure_batch.h"
#include "workloads/workloads.h"

namespace tyche::tune {
struct TuneOptions;
}

namespace tyche::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_program(nb::module_& m);   // IR, the tensor-expression front-end, workloads
void bind_schedule(nb::module_& m);  // Schedule, handles, traces
void bind_kernel(nb::module_& m);    // build, call, time, source
void bind_tune(nb::module_& m);      // rules, spaces, tune
void bind_search(nb::module_& m);    // search strategies and cost models written in Python
void bind_remote(nb::module_& m);    // measuring on other machines (a Ray cluster)

// A Schedule as Python holds it. The tuner may take the schedule back (a space function's, a
// rule's result): the holder is then empty and says so when used.
struct ScheduleHolder {
  explicit ScheduleHolder(schedule::Schedule s)
      : sch(std::make_unique<schedule::Schedule>(std::move(s))) {}
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

// A Python exception raised in a callback that native code called (a rule, a space function, the
// progress callback). The callback keeps it here, with the GIL, and throws CallbackRaised through
// the native code in its place; the binding that called into native code raises it again once it
// holds the GIL, so Python sees the original exception (a ScheduleError, a KeyboardInterrupt...).
struct PendingError {
  std::optional<nb::python_error> error;

  // Raises the kept exception, if any (GIL held).
  void raise_if_any() {
    if (!error) return;
    nb::python_error e = std::move(*error);
    error.reset();
    throw e;
  }
};
struct CallbackRaised {};  // not a tyche::Error, so no native handler takes it for its own

// Keeps what a Python callback raised, with a note saying where it was called from, and throws
// CallbackRaised (GIL held).
[[noreturn]] inline void keep_and_unwind(PendingError& pending, nb::python_error& e,
                                         const std::string& where) {
  try {
    e.value().attr("add_note")(nb::str(where.c_str()));
  } catch (const nb::python_error&) {
    // an exception object that takes no notes keeps its own message
  }
  pending.error.emplace(std::move(e));
  throw CallbackRaised{};
}

// Makes a tune use a search strategy and/or a cost model written in Python (each an adapter of
// python/tyche/strategy.py, or None for the native one named by the options); `make_task` wraps
// each task for them. The returned guard, dropped (GIL held) once the tune has returned, ends the
// tasks' lives for Python (bind_search.cc).
std::shared_ptr<void> use_python_search(tune::TuneOptions& o, nb::handle strategy,
                                        nb::handle cost_model, nb::handle make_task,
                                        const std::shared_ptr<PendingError>& pending);

// Measures a tune's batches by calling `remote` (python/tyche/ray.py) with the task's workload
// record, the traces and the batch options; None: measured here (bind_remote.cc).
tune::RemoteMeasure remote_measure_from(nb::handle remote,
                                        const std::shared_ptr<PendingError>& pending);

// On a node: the task of an ONNX model (recipe: "onnx_bytes", "input_shapes", "what") whose
// unscheduled function hashes to `hash`; models are imported once per process (bind_onnx.cc).
workloads::Workload onnx_task_workload(const nb::dict& recipe, uint64_t hash);

// The name of a Python value's type, for messages.
inline std::string python_type_name(nb::handle v) {
  return nb::cast<std::string>(nb::str(v.type().attr("__name__")));
}

// A NumPy array that takes `a` over (no copy): the array owns the NDArray and frees it with its
// last reference (bind_kernel.cc).
nb::ndarray<nb::numpy> to_numpy(runtime::NDArray a);

// The program a Python value stands for: a PrimFunc, a Workload (its func) or a Schedule (its
// current func); throws InputError otherwise.
ir::PrimFunc as_func(nb::handle value);

}  // namespace tyche::python
