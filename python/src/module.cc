// tyche._tyche: the native half of the Python package, and how native errors become Python
// exceptions: tyche.ScheduleError for a primitive's refusal (with .code and .rendered),
// tyche.InputError (also a ValueError) for bad input, tyche.TycheError for the rest.
#include <Python.h>

#include "bindings.h"
#include "support/error.h"

namespace tyche::python {

void bind_onnx(nb::module_& m);  // ONNX models: compile, tasks, tune (bind_onnx.cc)

namespace {

PyObject* g_tyche_error = nullptr;
PyObject* g_input_error = nullptr;
PyObject* g_schedule_error = nullptr;

void raise_schedule_error(const schedule::ScheduleError& e, const std::string& rendered) {
  nb::object exc = nb::steal(PyObject_CallFunction(g_schedule_error, "s", e.reason().c_str()));
  if (!exc.is_valid()) return;  // the call set its own error
  nb::setattr(exc, "code", nb::str(schedule::error_code_name(e.code())));
  nb::setattr(exc, "rendered", nb::str(rendered.empty() ? e.reason().c_str() : rendered.c_str()));
  PyErr_SetObject(g_schedule_error, exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const ScheduleRefusal& e) {
    raise_schedule_error(e.error, e.rendered);
  } catch (const schedule::ScheduleException& e) {
    raise_schedule_error(e.error(), "");
  } catch (const nb::cast_error&) {  // a value our code read from Python did not convert
    PyErr_SetString(g_input_error,
                    "an argument has the wrong type or does not fit (an integer beyond 64 bits?)");
  } catch (const InputError& e) {
    PyErr_SetString(g_input_error, e.what());
  } catch (const Error& e) {
    PyErr_SetString(g_tyche_error, e.what());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  g_tyche_error =
      PyErr_NewExceptionWithDoc("tyche.TycheError", "An error reported by Tyche's native library.",
                                PyExc_RuntimeError, nullptr);
  nb::object input_bases = nb::make_tuple(nb::handle(g_tyche_error), nb::handle(PyExc_ValueError));
  g_input_error = PyErr_NewExceptionWithDoc(
      "tyche.InputError",
      "Bad input: an unknown name, a malformed formula or trace, a wrong argument.",
      input_bases.ptr(), nullptr);
  g_schedule_error = PyErr_NewExceptionWithDoc("tyche.ScheduleError",
                                               "A schedule primitive refused; .code names why, "
                                               ".rendered shows the IR with the statement marked.",
                                               g_tyche_error, nullptr);
  m.attr("TycheError") = nb::handle(g_tyche_error);
  m.attr("InputError") = nb::handle(g_input_error);
  m.attr("ScheduleError") = nb::handle(g_schedule_error);
  nb::register_exception_translator(translate);
}

}  // namespace tyche::python

NB_MODULE(_tyche, m) {
  using namespace tyche::python;
  m.doc() = "The native library of the tyche package (use the tyche package, not this module).";
  bind_errors(m);
  bind_program(m);
  bind_schedule(m);
  bind_kernel(m);
  bind_tune(m);
  bind_search(m);
  bind_remote(m);
  bind_onnx(m);
}
