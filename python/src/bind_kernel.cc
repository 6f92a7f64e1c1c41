// Kernels from Python: build (lower + LLVM JIT), call on arrays through DLPack without copying
// (numpy, or anything that exports DLPack: C-contiguous, on the CPU, of the parameter's dtype and
// shape; 64-byte aligned, or else staged through an aligned copy), time with the runtime's
// evaluator, and show the code. A program whose weights RewriteLayout laid out anew
// (lower/layout_rewrite.h) is compiled as its main part and one preproc per weight: a call runs the
// preprocs, then the main part; timing runs them once first and times the main part alone, as a
// model runs it once its weights are loaded. Also the workloads' inputs and reference outputs, and
// the interpreter, as numpy arrays. The GIL is released while compiling, running and timing. Arrays
// are read through their __dlpack__ here (import_array), not by nanobind's argument conversion, so
// every way an argument can be wrong is a one-line InputError naming it, and an output must be
// known to be writable.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <string_view>

#include "bindings.h"
#include "codegen/c/c_codegen.h"
#include "codegen/export/export.h"
#include "codegen/llvm/layout_rewrites.h"
#include "codegen/llvm/llvm_codegen.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "lower/layout_rewrite.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "support/tensor_size.h"
#include "target/cpu.h"
#include "target/target.h"
#include "workloads/workloads.h"

namespace tyche::python {
namespace {

using Array = nb::ndarray<nb::ro>;

struct Kernel {
  ir::PrimFunc func;     // as scheduled
  ir::PrimFunc lowered;  // its main part
  std::shared_ptr<codegen::CompiledKernel> compiled;
  std::vector<codegen::CompiledRewrite> preprocs;
  std::vector<std::string> notes;  // loops not lowered as asked
  std::string cpu;
};

Kernel build(const ir::PrimFunc& func, const std::string& cpu) {
  Kernel k;
  k.func = func;
  lower::SplitProgram split = lower::split_layout_rewrites(func);
  lower::Lowered lowered = lower::lower(split.main);
  k.lowered = lowered.func;
  k.notes = lowered.notes;
  codegen::CompileOptions co;
  co.cpu = cpu;
  co.keep_module = true;  // source("llvm"/"asm")
  k.cpu = target::resolve_cpu(cpu).describe();
  k.compiled = codegen::compile(k.lowered, co);
  k.preprocs = codegen::compile_rewrites(split.rewrites, {.cpu = cpu});
  return k;
}

bool dtype_matches(const nb::dlpack::dtype& d, DataType t) {
  if (t.is_bool())
    return d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool) && d.bits == 8;
  return d.code == static_cast<uint8_t>(t.code()) && d.bits == t.bits() && d.lanes == 1;
}

std::string describe(const nb::dlpack::dtype& d) {
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int:
      return fmt::format("int{}", d.bits);
    case nb::dlpack::dtype_code::UInt:
      return fmt::format("uint{}", d.bits);
    case nb::dlpack::dtype_code::Float:
      return fmt::format("float{}", d.bits);
    case nb::dlpack::dtype_code::Bfloat:
      return fmt::format("bfloat{}", d.bits);
    case nb::dlpack::dtype_code::Bool:
      return "bool";
    default:
      return fmt::format("dtype code {} ({} bits)", d.code, d.bits);
  }
}

// The head of DLPack >= 1.0's DLManagedTensorVersioned (dlpack.h's ABI), as far as its flags.
struct DLPackVersionedHead {
  uint32_t major;
  uint32_t minor;
  void* manager_ctx;
  void (*deleter)(void*);
  uint64_t flags;
};
constexpr uint64_t kDLPackReadOnly = 1;  // DLPACK_FLAG_BITMASK_READ_ONLY
constexpr uint64_t kDLPackIsCopied = 2;  // DLPACK_FLAG_BITMASK_IS_COPIED

// The first line of a Python exception's message, for a one-line InputError.
std::string exception_line(nb::python_error& e) {
  std::string msg = nb::cast<std::string>(nb::str(e.value()));
  msg = msg.substr(0, msg.find('\n'));
  std::string type = nb::cast<std::string>(nb::str(e.type().attr("__name__")));
  return msg.empty() ? type : type + ": " + msg;
}

// Argument `obj` (`what`: "argument 2 ('C')") as an array: a numpy array as it is, anything else
// through its __dlpack__. A DLPack 1.0 capsule is asked for first: only it says whether the
// tensor is read-only or a copy. An output must be writable in place, so one whose exporter
// predates DLPack 1.0 is refused too (it cannot say; numpy >= 2.1 and recent torch, jax, cupy
// export 1.0). Inputs may be read-only.
Array import_array(nb::handle obj, const std::string& what, bool output) {
  Array a;
  // numpy's own flags say whether an array is writable; nanobind reads it by whichever of DLPack
  // 1.0, legacy DLPack or the buffer protocol the installed numpy has (numpy < 2.1 exports a
  // read-only array through the buffer protocol alone). Leaked: it must outlive the interpreter.
  static nb::handle ndarray_type =
      nb::object(nb::module_::import_("numpy").attr("ndarray")).release();
  if (nb::isinstance(obj, ndarray_type)) {
    if (output && !nb::cast<bool>(obj.attr("flags").attr("writeable")))
      throw InputError(fmt::format("{} is an output but read-only", what));
    if (!nb::try_cast(obj, a, false)) {
      PyErr_Clear();  // what nanobind's last try left
      nb::object dtype = obj.attr("dtype");
      throw InputError(
          fmt::format("{}: a numpy array of {} cannot be passed (not a number type DLPack carries)",
                      what, nb::cast<std::string>(nb::str(dtype))));
    }
    return a;
  }
  if (!nb::hasattr(obj, "__dlpack__")) {
    // the buffer protocol (memoryview, array.array): nanobind asks a writable view for an output
    nb::ndarray<> writable;
    if (output && !nb::try_cast(obj, writable, false))
      throw InputError(fmt::format("{} is an output but not a writable array", what));
    if (!nb::try_cast(obj, a, false))
      throw InputError(fmt::format("{} must be an array (numpy or DLPack), got {}", what,
                                   python_type_name(obj)));
    return a;
  }
  nb::object capsule;
  try {
    capsule = obj.attr("__dlpack__")(nb::arg("max_version") = nb::make_tuple(1, 1));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError))
      throw InputError(fmt::format("{}: its __dlpack__() raised {}", what, exception_line(e)));
    try {  // an exporter predating DLPack 1.0 takes no max_version
      capsule = obj.attr("__dlpack__")();
    } catch (nb::python_error& e2) {
      throw InputError(fmt::format("{}: its __dlpack__() raised {}", what, exception_line(e2)));
    }
  }
  if (!PyCapsule_CheckExact(capsule.ptr()))
    throw InputError(fmt::format("{}: its __dlpack__() returned {}, not a DLPack capsule", what,
                                 python_type_name(capsule)));
  const char* name = PyCapsule_GetName(capsule.ptr());
  std::string_view kind = name ? name : "";
  if (kind == "dltensor_versioned") {
    auto* head = static_cast<DLPackVersionedHead*>(PyCapsule_GetPointer(capsule.ptr(), name));
    if (head == nullptr || head->major != 1)
      throw InputError(fmt::format("{}: its DLPack capsule is of version {}, Tyche reads 1.x", what,
                                   head ? head->major : 0));
    if (output && (head->flags & kDLPackReadOnly))
      throw InputError(fmt::format("{} is an output but read-only", what));
    if (output && (head->flags & kDLPackIsCopied))
      throw InputError(fmt::format(
          "{} is an output but its exporter passed a copy (the results would not reach it)", what));
  } else if (kind == "dltensor") {
    if (output)
      throw InputError(fmt::format(
          "{} is an output, but its exporter's DLPack predates 1.0 and cannot say whether it is "
          "writable: pass a numpy array or an exporter of DLPack 1.0",
          what));
  } else {
    throw InputError(fmt::format(
        "{}: its __dlpack__() returned a capsule named '{}', not an unused DLPack tensor", what,
        kind));
  }
  if (!nb::try_cast(capsule, a, false))
    throw InputError(fmt::format("{}: its DLPack tensor could not be read", what));
  return a;
}

// The arrays of a call, each read by import_array (those from `first_output` on as outputs).
std::vector<Array> import_arrays(const nb::list& objs, const std::vector<ir::Buffer>& params,
                                 size_t first_output) {
  std::vector<Array> out;
  for (size_t i = 0; i < objs.size(); ++i) {
    std::string name = i < params.size() ? params[i]->name : "?";
    out.push_back(
        import_array(objs[i], fmt::format("argument {} ('{}')", i, name), i >= first_output));
  }
  return out;
}

// Throws InputError unless every parameter of `func` can be allocated here: its bytes fit 64 bits
// and the tensor limit (support/tensor_size.h); checked before any is.
void check_sizes(const ir::PrimFunc& func) {
  for (const ir::Buffer& b : func->params)
    tensor_size(fmt::format("tensor '{}' of {}", b->name, func->name), ir::const_shape(b),
                b->dtype);
}

// Throws InputError unless `a` fits parameter `b` (argument `i`): on the CPU, of its dtype and
// shape, C-contiguous.
void check_array(const Array& a, const ir::Buffer& b, size_t i) {
  std::vector<int64_t> want = ir::const_shape(b);
  std::vector<int64_t> got;
  for (size_t d = 0; d < a.ndim(); ++d) got.push_back(static_cast<int64_t>(a.shape(d)));
  std::string what = fmt::format("argument {} ('{}')", i, b->name);
  if (a.device_type() != nb::device::cpu::value) throw InputError(what + " is not in CPU memory");
  if (!dtype_matches(a.dtype(), b->dtype))
    throw InputError(
        fmt::format("{} must be {}, got {}", what, b->dtype.str(), describe(a.dtype())));
  if (got != want)
    throw InputError(fmt::format("{} must have shape ({}), got ({})", what, fmt::join(want, ", "),
                                 fmt::join(got, ", ")));
  int64_t expected_stride = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (got[d] != 1 && a.stride(d) != expected_stride)
      throw InputError(what + " is not C-contiguous");
    expected_stride *= got[d];
  }
}

// The pointers a kernel call passes, after checking `args` against the kernel's parameters
// (InputError naming the first that does not fit). Generated code assumes every parameter is
// 64-byte aligned (as TVM's does) and that none overlaps another: an array that is not aligned is
// staged through an aligned copy, written back after the call when it is an output.
struct CallArgs {
  std::vector<Array> arrays;  // as passed (keeps their exporters' memory alive)
  std::vector<void*> ptrs;
  std::vector<std::pair<size_t, runtime::NDArray>> staged;  // (argument, its aligned copy)
  size_t first_output = 0;

  void write_back() const {
    for (const auto& [i, copy] : staged)
      if (i >= first_output)
        std::memcpy(const_cast<void*>(arrays[i].data()), copy.data(), copy.nbytes());
  }
};

CallArgs prepare_call(const Kernel& k, const nb::list& objs) {
  const std::vector<ir::Buffer>& params = k.func->params;
  if (objs.size() != params.size())
    throw InputError(fmt::format("{} takes {} arrays (inputs, then outputs), got {}", k.func->name,
                                 params.size(), objs.size()));
  CallArgs call;
  call.first_output = params.size() - static_cast<size_t>(k.func->num_outputs);
  call.arrays = import_arrays(objs, params, call.first_output);
  const std::vector<Array>& args = call.arrays;
  std::vector<std::pair<const char*, const char*>> ranges;
  for (size_t i = 0; i < args.size(); ++i) {
    check_array(args[i], params[i], i);
    const char* p = static_cast<const char*>(args[i].data());
    ranges.emplace_back(p, p + args[i].nbytes());
    if (reinterpret_cast<uintptr_t>(p) % 64 == 0) {
      call.ptrs.push_back(const_cast<char*>(p));
      continue;
    }
    runtime::NDArray copy(ir::const_shape(params[i]), params[i]->dtype);
    if (i < call.first_output)
      std::memcpy(copy.data(), p, copy.nbytes());  // an output is written whole
    call.ptrs.push_back(copy.data());
    call.staged.emplace_back(i, std::move(copy));
  }
  for (size_t i = call.first_output; i < ranges.size(); ++i)
    for (size_t j = 0; j < ranges.size(); ++j)
      if (i != j && ranges[i].first < ranges[j].second && ranges[j].first < ranges[i].second)
        throw InputError(fmt::format("argument {} ('{}') overlaps argument {} ('{}') in memory", i,
                                     params[i]->name, j, params[j]->name));
  return call;
}

// Copies arrays into NDArrays shaped and typed as `buffers` (checked as for a kernel call).
std::vector<runtime::NDArray> to_ndarrays(const std::vector<ir::Buffer>& buffers,
                                          const nb::list& objs, const std::string& what) {
  if (objs.size() != buffers.size())
    throw InputError(
        fmt::format("{} takes {} input arrays, got {}", what, buffers.size(), objs.size()));
  std::vector<Array> arrays = import_arrays(objs, buffers, buffers.size());
  std::vector<runtime::NDArray> out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    check_array(arrays[i], buffers[i], i);
    runtime::NDArray a(ir::const_shape(buffers[i]), buffers[i]->dtype);
    std::memcpy(a.data(), arrays[i].data(), a.nbytes());
    out.push_back(std::move(a));
  }
  return out;
}

nb::list to_numpy_list(std::vector<runtime::NDArray> arrays) {
  nb::list out;
  for (runtime::NDArray& a : arrays) out.append(nb::cast(to_numpy(std::move(a))));
  return out;
}

}  // namespace

nb::ndarray<nb::numpy> to_numpy(runtime::NDArray a) {
  auto* owner = new runtime::NDArray(std::move(a));
  nb::capsule deleter(owner, [](void* p) noexcept { delete static_cast<runtime::NDArray*>(p); });
  std::vector<size_t> shape(owner->shape().begin(), owner->shape().end());
  DataType t = owner->dtype();
  nb::dlpack::dtype d{t.is_bool() ? static_cast<uint8_t>(nb::dlpack::dtype_code::Bool)
                                  : static_cast<uint8_t>(t.code()),
                      static_cast<uint8_t>(t.is_bool() ? 8 : t.bits()), 1};
  return nb::ndarray<nb::numpy>(owner->data(), shape.size(), shape.data(), deleter, nullptr, d);
}

void bind_kernel(nb::module_& m) {
  nb::class_<Kernel>(m, "KernelNative")
      .def_ro("func", &Kernel::func)
      .def_ro("lowered", &Kernel::lowered)
      .def_ro("notes", &Kernel::notes)
      .def_ro("cpu", &Kernel::cpu)
      .def_prop_ro("layout_rewrites",
                   [](const Kernel& k) {
                     std::vector<size_t> params;
                     for (const codegen::CompiledRewrite& p : k.preprocs) params.push_back(p.param);
                     return params;
                   })
      .def_prop_ro("compile_seconds", [](const Kernel& k) { return k.compiled->compile_seconds(); })
      .def("run",
           [](const Kernel& k, const nb::list& args) {
             CallArgs call = prepare_call(k, args);
             {
               nb::gil_scoped_release release;
               std::vector<runtime::NDArray> packed;
               codegen::apply_rewrites(k.preprocs, k.func, call.ptrs, packed);
               k.compiled->run(call.ptrs.data());
             }
             call.write_back();
             return call.staged.size();  // arrays that could not be passed without a copy
           })
      .def("time",
           [](const Kernel& k, const nb::list& args, int warmup, int number, int repeat,
              int min_repeat_ms, bool flush_cache) {
             if (repeat <= 0 || number <= 0 || warmup < 0 || min_repeat_ms < 0)
               throw InputError(
                   "time: repeat and number must be positive, warmup and min_repeat_ms not "
                   "negative");
             CallArgs call = prepare_call(k, args);
             runtime::TimeOptions o;
             o.warmup = warmup;
             o.number = number;
             o.repeat = repeat;
             o.min_repeat_ms = min_repeat_ms;
             o.flush_cache = flush_cache;
             std::vector<runtime::NDArray> packed;
             runtime::TimeResult t;
             {
               nb::gil_scoped_release release;
               codegen::apply_rewrites(k.preprocs, k.func, call.ptrs,
                                       packed);  // once, untimed: the weights' load
               for (size_t i = 0; i < args.size(); ++i)
                 o.flush_ranges.emplace_back(call.ptrs[i], call.arrays[i].nbytes());
               t = runtime::time_function([&] { k.compiled->run(call.ptrs.data()); }, o);
             }
             call.write_back();
             nb::dict d;
             d["seconds"] = t.seconds;
             d["number"] = t.number;
             d["median"] = t.median;
             d["min"] = t.min;
             d["mean"] = t.mean;
             d["cv"] = t.cv;
             return d;
           })
      .def("source", [](const Kernel& k, const std::string& kind) {
        if (kind == "c") return codegen::emit_c(k.lowered);
        if (kind == "llvm") return k.compiled->llvm_ir();
        if (kind == "asm") return k.compiled->assembly();
        if (kind == "ir") return ir::to_string(k.lowered);
        if (kind == "tir") return ir::to_string(k.func);
        throw InputError(
            fmt::format("unknown source kind '{}' (expected c, llvm, asm, ir or tir)", kind));
      });

  m.def(
      "build",
      [](nb::handle program, const std::string& cpu) {
        ir::PrimFunc func = as_func(program);
        nb::gil_scoped_release release;
        return build(func, cpu);
      },
      nb::arg("program"), nb::arg("cpu") = "");
  m.def(
      "export_kernel",
      [](nb::handle program, const std::string& dir, const std::string& name,
         const std::string& target, const std::string& cpu, bool parallel,
         const std::string& library) {
        ir::PrimFunc func = as_func(program);
        codegen::ExportOptions o{.name = name,
                                 .target = target,
                                 .cpu = cpu,
                                 .parallel = parallel,
                                 .library = library,
                                 .description = fmt::format("{}, exported from Python", func->name),
                                 .max_stack_bytes = 64 * 1024};
        nb::gil_scoped_release release;
        try {
          return codegen::export_kernel(func, dir, o).files;
        } catch (const Error& e) {  // a bad name, CPU, target or directory: the caller's input
          throw InputError(e.what());
        }
      },
      nb::arg("program"), nb::arg("dir"), nb::arg("name"), nb::arg("target"), nb::arg("cpu"),
      nb::arg("parallel"), nb::arg("library"));
  m.def(
      "parse_target",
      [](const std::string& text) {
        target::Target t = target::Target::parse(text);
        nb::dict d;
        d["kind"] = t.kind;
        d["cpu"] = t.cpu;
        d["num_cores"] = t.num_cores;
        d["arch"] = t.arch;
        return d;
      },
      nb::arg("text"),
      "A target's text form (target/target.h) as a dict: kind, cpu, num_cores, arch.");
  m.def(
      "describe_cpu", [](const std::string& cpu) { return target::resolve_cpu(cpu).describe(); },
      nb::arg("cpu") = "");
  m.def("set_num_threads", [](int n) {
    if (n <= 0 || n > max_threads())
      throw InputError(
          fmt::format("set_num_threads: the count must be from 1 to {} (4 x the CPUs), got {}",
                      max_threads(), n));
    runtime::ThreadPool::global().set_num_threads(n);
  });
  m.def("num_threads", [] { return runtime::ThreadPool::global().num_threads(); });
  m.def("max_threads", &max_threads,
        "The most threads Tyche's pool may run: 4 x the CPUs this process may use.");
  m.def(
      "tensor_bytes",
      [](const std::string& what, const std::vector<int64_t>& shape, const std::string& dtype) {
        return tensor_size(what, shape, DataType::parse(dtype)).bytes;
      },
      nb::arg("what"), nb::arg("shape"), nb::arg("dtype"),
      "A tensor's bytes; InputError past 64 bits or the tensor limit.");

  m.def("workload_inputs", [](const workloads::Workload& w, uint64_t seed) {
    check_sizes(w.func);
    return to_numpy_list(workloads::make_inputs(w.func, seed));
  });
  m.def("workload_reference", [](const workloads::Workload& w, const nb::list& inputs) {
    check_sizes(w.func);
    std::vector<runtime::NDArray> in = to_ndarrays(w.func.inputs(), inputs, w.name);
    std::vector<runtime::NDArray> out;
    {
      nb::gil_scoped_release release;
      out = w.reference(in);
    }
    return to_numpy_list(std::move(out));
  });
  m.def("interpret", [](nb::handle program, const nb::list& inputs) {
    ir::PrimFunc func = as_func(program);
    check_sizes(func);
    std::vector<runtime::NDArray> in = to_ndarrays(func.inputs(), inputs, func->name);
    std::vector<runtime::NDArray> out;
    {
      nb::gil_scoped_release release;
      out = interp::run_on_inputs(func, in);
    }
    return to_numpy_list(std::move(out));
  });
}

}  // namespace tyche::python
