// Schedules from Python. Every primitive and sampling instruction is applied by its kind's name
// (ScheduleHolder.apply): the Python Schedule class generates one method per kind of the
// registry, with the kind's parameter names, so nothing here lists the primitives. Handles are
// the C++ BlockRV/LoopRV/ExprRV; a refusal raises tyche.ScheduleError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include "bindings.h"
#include "schedule/trace.h"

namespace tyche::python {

using schedule::BlockRV;
using schedule::ExprRV;
using schedule::LoopRV;
using schedule::Value;

schedule::Schedule& ScheduleHolder::get() const {
  if (!sch)
    throw Error(
        "this Schedule was handed to the tuner (returned by a rule or a space function) and is no "
        "longer usable here");
  return *sch;
}

schedule::Schedule ScheduleHolder::take() {
  schedule::Schedule s = std::move(get());
  sch.reset();
  return s;
}

namespace {

Value to_value(nb::handle v, int depth = 0) {
  if (depth > 32) throw InputError("schedule instruction arguments nest lists deeper than 32");
  if (v.is_none()) return Value::none();
  if (nb::isinstance<nb::bool_>(v)) return Value::boolean(nb::cast<bool>(v));
  if (nb::isinstance<nb::int_>(v)) return Value::integer(nb::cast<int64_t>(v));
  if (nb::isinstance<nb::float_>(v)) return Value::real(nb::cast<double>(v));
  if (nb::isinstance<nb::str>(v)) return Value::string(nb::cast<std::string>(v));
  if (nb::isinstance<BlockRV>(v)) return Value::block(nb::cast<BlockRV>(v).id);
  if (nb::isinstance<LoopRV>(v)) return Value::loop(nb::cast<LoopRV>(v).id);
  if (nb::isinstance<ExprRV>(v)) return Value::expr(nb::cast<ExprRV>(v).id);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    std::vector<Value> items;
    for (nb::handle x : v) items.push_back(to_value(x, depth + 1));
    return Value::of_list(std::move(items));
  }
  if (nb::hasattr(v, "__index__"))
    return Value::integer(nb::cast<int64_t>(v.attr("__index__")()));  // numpy integers
  throw InputError(fmt::format("cannot pass a {} to a schedule instruction", python_type_name(v)));
}

nb::object to_python(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return nb::none();
    case Value::Kind::kInt:
      return nb::int_(v.i);
    case Value::Kind::kFloat:
      return nb::float_(v.f);
    case Value::Kind::kBool:
      return nb::bool_(v.i != 0);
    case Value::Kind::kString:
      return nb::str(v.s.c_str());
    case Value::Kind::kBlockRV:
      return nb::cast(BlockRV{v.i});
    case Value::Kind::kLoopRV:
      return nb::cast(LoopRV{v.i});
    case Value::Kind::kExprRV:
      return nb::cast(ExprRV{v.i});
    case Value::Kind::kList: {
      nb::list out;
      for (const Value& x : v.list) out.append(to_python(x));
      return out;
    }
  }
  return nb::none();
}

const schedule::InstructionKind& kind_named(const std::string& name) {
  const schedule::InstructionKind* kind = schedule::find_instruction_kind(name);
  if (!kind) throw InputError(fmt::format("unknown schedule instruction '{}'", name));
  return *kind;
}

// Applies `kind` with `args` (one per parameter) and gives its outputs as Python wants them: one
// handle, a list of them, or None.
nb::object apply(ScheduleHolder& h, const std::string& name, const nb::list& args,
                 nb::handle decision) {
  const schedule::InstructionKind& kind = kind_named(name);
  std::vector<Value> values;
  for (nb::handle a : args) values.push_back(to_value(a));
  schedule::Schedule& sch = h.get();
  auto out = sch.apply_instruction(kind, std::move(values), to_value(decision));
  if (!out) throw ScheduleRefusal{out.error(), out.error().render(sch.func())};
  std::vector<Value>& outputs = out.value();
  switch (kind.output) {
    case schedule::OutputType::kNone:
      return nb::none();
    case schedule::OutputType::kBlock:
    case schedule::OutputType::kLoop:
    case schedule::OutputType::kExpr:
      return to_python(outputs.at(0));
    default:
      return to_python(Value::of_list(std::move(outputs)));
  }
}

const char* output_name(schedule::OutputType t) {
  switch (t) {
    case schedule::OutputType::kNone:
      return "none";
    case schedule::OutputType::kBlock:
      return "block";
    case schedule::OutputType::kLoop:
      return "loop";
    case schedule::OutputType::kExpr:
      return "expr";
    case schedule::OutputType::kBlocks:
      return "blocks";
    case schedule::OutputType::kLoops:
      return "loops";
    case schedule::OutputType::kExprs:
      return "exprs";
  }
  return "?";
}

// The registry as Python reads it to generate the Schedule's methods.
nb::list instruction_kinds() {
  nb::list out;
  for (const schedule::InstructionKind* k : schedule::instruction_kinds()) {
    nb::list params;
    for (const schedule::Param& p : k->params) {
      nb::dict d;
      d["name"] = std::string(p.name);
      d["type"] = schedule::param_type_name(p.type);
      d["variadic"] = p.variadic;
      d["has_default"] = p.default_value.has_value();
      d["default"] = p.default_value ? to_python(*p.default_value) : nb::none();
      params.append(d);
    }
    nb::dict d;
    d["name"] = std::string(k->name);
    d["params"] = params;
    d["output"] = output_name(k->output);
    d["sampling"] = k->is_sampling();
    d["pure"] = k->pure;
    out.append(d);
  }
  return out;
}

template <typename RV>
void bind_rv(nb::module_& m, const char* name, const char* prefix, const char* doc) {
  nb::class_<RV>(m, name, doc)
      .def(nb::init<int64_t>(), nb::arg("id"))
      .def_ro("id", &RV::id)
      .def("__eq__",
           [](const RV& a, nb::handle b) {
             return nb::isinstance<RV>(b) && nb::cast<RV>(b).id == a.id;
           })
      .def("__hash__", [](const RV& a) { return std::hash<int64_t>()(a.id); })
      .def("__repr__", [prefix](const RV& a) { return fmt::format("{}{}", prefix, a.id); });
}

const ir::BlockNode* block_of(const ScheduleHolder& h, const BlockRV& b) {
  return h.get().block_sref(b).value()->as_block();
}

}  // namespace

void bind_schedule(nb::module_& m) {
  bind_rv<BlockRV>(m, "BlockRV", "b", "A handle to a block of a schedule.");
  bind_rv<LoopRV>(m, "LoopRV", "l", "A handle to a loop of a schedule.");
  bind_rv<ExprRV>(m, "ExprRV", "v", "A sampled integer: usable wherever a factor is expected.");
  m.def("instruction_kinds", &instruction_kinds);

  nb::class_<ScheduleHolder>(m, "ScheduleNative")
      .def(
          "__init__",
          [](ScheduleHolder* self, nb::handle func, int64_t seed, bool debug_verify) {
            schedule::ScheduleOptions o;
            o.seed = seed;
            o.debug_verify = debug_verify;
            new (self) ScheduleHolder(schedule::Schedule(as_func(func), o));
          },
          nb::arg("func"), nb::arg("seed") = -1, nb::arg("debug_verify") = false)
      .def_prop_ro("func", [](const ScheduleHolder& h) { return h.get().func(); })
      .def("copy", [](const ScheduleHolder& h) { return ScheduleHolder(h.get().copy()); })
      .def("apply", &apply, nb::arg("kind"), nb::arg("args"),
           nb::arg("decision").none() = nb::none())
      .def("trace",
           [](const ScheduleHolder& h) -> std::optional<schedule::Trace> {
             const schedule::Trace* t = h.get().trace();
             return t ? std::optional(*t) : std::nullopt;
           })
      .def("get", [](const ScheduleHolder& h, const ExprRV& v) { return h.get().get(v).value(); })
      .def("block_name",
           [](const ScheduleHolder& h, const BlockRV& b) { return block_of(h, b)->name; })
      .def("loop_extent",
           [](const ScheduleHolder& h, const LoopRV& l) -> std::optional<int64_t> {
             const ir::ForNode* f = h.get().loop_sref(l).value()->as_for();
             const auto* imm = f->extent.as<ir::IntImmNode>();
             return imm ? std::optional(imm->value) : std::nullopt;
           })
      .def("iter_kinds",
           [](const ScheduleHolder& h, const BlockRV& b) {
             std::string kinds;  // one letter per block iterator: S spatial, R reduce, O opaque
             for (const ir::IterVar& iv : block_of(h, b)->iter_vars)
               kinds += iv.kind == ir::IterKind::kSpatial  ? 'S'
                        : iv.kind == ir::IterKind::kReduce ? 'R'
                                                           : 'O';
             return kinds;
           })
      .def("block_buffers",
           [](const ScheduleHolder& h, const BlockRV& b) {
             // the buffers the block reads and writes, in the order cache_read/cache_write index
             // them
             auto describe = [](const std::vector<ir::BufferRegion>& regions) {
               nb::list out;
               for (const ir::BufferRegion& r : regions)
                 out.append(nb::make_tuple(r.buffer->name, ir::const_shape(r.buffer),
                                           r.buffer->dtype.str()));
               return out;
             };
             const ir::BlockNode* block = block_of(h, b);
             nb::dict d;
             d["reads"] = describe(block->reads);
             d["writes"] = describe(block->writes);
             return d;
           })
      .def(
          "compute_location_choices",
          [](const ScheduleHolder& h, const BlockRV& b, bool useful_only) {
            return h.get().compute_location_choices(b, useful_only).value();
          },
          nb::arg("block"), nb::arg("useful_only") = false)
      .def_prop_ro("usable", [](const ScheduleHolder& h) { return h.sch != nullptr; });

  nb::class_<schedule::Trace>(m, "TraceNative")
      .def("to_text", &schedule::Trace::to_text)
      .def("to_json", &schedule::Trace::to_json, nb::arg("indent") = -1)
      .def_static("parse", [](const std::string& s) { return schedule::Trace::parse(s); })
      .def_static("from_json", [](const std::string& s) { return schedule::Trace::from_json(s); })
      .def("__len__", &schedule::Trace::size)
      .def("simplified", &schedule::Trace::simplified)
      .def("with_decision", [](const schedule::Trace& t, size_t index,
                               nb::handle d) { return t.with_decision(index, to_value(d)); })
      .def("decisions",
           [](const schedule::Trace& t) {
             nb::dict out;
             for (const auto& [i, d] : t.decisions()) out[nb::int_(i)] = to_python(d);
             return out;
           })
      .def("instructions",
           [](const schedule::Trace& t) {
             nb::list out;  // (kind, args, outputs) with trace-local handles
             for (const schedule::Instruction& inst : t.instructions()) {
               nb::list args, outs;
               for (const Value& a : inst.args) args.append(to_python(a));
               for (const Value& o : inst.outputs) outs.append(to_python(o));
               out.append(nb::make_tuple(std::string(inst.kind->name), args, outs));
             }
             return out;
           })
      .def(
          "apply_to",
          [](const schedule::Trace& t, ScheduleHolder& h, bool fresh, const nb::dict& overrides) {
            schedule::ReplayOptions o;
            o.fresh_decisions = fresh;
            for (auto [k, v] : overrides) {
              if (!nb::isinstance<nb::int_>(k))
                throw InputError("apply_to: decisions are keyed by instruction index");
              int64_t i = nb::cast<int64_t>(k);
              if (i < 0 || static_cast<size_t>(i) >= t.size() ||
                  !t.instructions()[static_cast<size_t>(i)].kind->is_sampling())
                throw InputError(fmt::format(
                    "apply_to: instruction {} of the trace is not a sampling instruction", i));
              o.overrides[static_cast<size_t>(i)] = to_value(v);
            }
            std::unordered_map<int64_t, Value> handles;
            o.handles = &handles;
            schedule::Schedule& sch = h.get();
            schedule::Status s = t.apply_to(sch, o);
            if (!s) throw ScheduleRefusal{s.error(), s.error().render(sch.func())};
            nb::dict out;  // trace-local id -> the handle issued in the schedule
            for (const auto& [id, v] : handles) out[nb::int_(id)] = to_python(v);
            return out;
          },
          nb::arg("sch"), nb::arg("fresh_decisions") = false, nb::arg("decisions") = nb::dict());
}

}  // namespace tyche::python
