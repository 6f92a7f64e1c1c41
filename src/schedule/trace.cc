#include "schedule/trace.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>

#include "schedule/schedule.h"
#include "schedule/trace_names.h"

namespace tyche::schedule {

namespace {

using json = nlohmann::json;

void collect_rv_ids(const Value& v, std::set<int64_t>* out) {
  if (v.is_rv()) out->insert(v.i);
  for (const Value& x : v.list) collect_rv_ids(x, out);
}

std::string where(const Instruction& inst, size_t index) {
  return inst.line > 0 ? fmt::format("line {} ({})", inst.line, inst.kind->name)
                       : fmt::format("instruction {} ({})", index, inst.kind->name);
}

Value::Kind output_kind(OutputType t) {
  switch (t) {
    case OutputType::kBlock:
    case OutputType::kBlocks:
      return Value::Kind::kBlockRV;
    case OutputType::kLoop:
    case OutputType::kLoops:
      return Value::Kind::kLoopRV;
    default:
      return Value::Kind::kExprRV;
  }
}

}  // namespace

std::unordered_map<int64_t, std::string> rv_names(const Trace& trace) {
  std::unordered_map<int64_t, std::string> names;
  int64_t counter = 0;
  for (const Instruction& inst : trace.instructions())
    for (const Value& out : inst.outputs) {
      char prefix = out.kind == Value::Kind::kBlockRV  ? 'b'
                    : out.kind == Value::Kind::kLoopRV ? 'l'
                                                       : 'v';
      names[out.i] = fmt::format("{}{}", prefix, counter++);
    }
  return names;
}

Value::Kind rv_kind_of_output(const InstructionKind& kind) {
  return output_kind(kind.output);
}

void Trace::append(Instruction inst, Value decision) {
  if (decision.kind != Value::Kind::kNone) decisions_[insts_.size()] = std::move(decision);
  insts_.push_back(std::move(inst));
}

Trace Trace::simplified() const {
  std::set<int64_t> used;
  std::vector<bool> keep(insts_.size());
  for (size_t i = insts_.size(); i-- > 0;) {
    const Instruction& inst = insts_[i];
    bool needed = !inst.kind->pure;
    for (const Value& o : inst.outputs) needed = needed || used.count(o.i);
    if (!needed) continue;
    keep[i] = true;
    for (const Value& a : inst.args) collect_rv_ids(a, &used);
  }
  Trace out;
  for (size_t i = 0; i < insts_.size(); ++i) {
    if (!keep[i]) continue;
    auto d = decisions_.find(i);
    out.append(insts_[i], d == decisions_.end() ? Value::none() : d->second);
  }
  return out;
}

Trace Trace::with_decision(size_t index, Value decision) const {
  if (index >= insts_.size())
    throw InputError(fmt::format("with_decision: instruction {} does not exist (the trace has {})",
                                 index, insts_.size()));
  const InstructionKind& kind = *insts_[index].kind;
  if (!kind.is_sampling())
    throw InputError(
        fmt::format("with_decision: instruction {} ({}) does not sample", index, kind.name));
  if (!decision_matches(decision, kind.decision))
    throw InputError(
        fmt::format("with_decision: the decision for instruction {} ({}) has the wrong form", index,
                    kind.name));
  Trace out = *this;
  out.decisions_[index] = std::move(decision);
  return out;
}

const Value& Instruction::arg(std::string_view param) const {
  std::optional<size_t> i = kind->param_index(param);
  TYCHE_CHECK(i && *i < args.size(), "{} has no parameter '{}'", kind->name, param);
  return args[*i];
}

Trace Trace::with_argument(size_t index, std::string_view param, Value value) const {
  if (index >= insts_.size())
    throw InputError(fmt::format("with_argument: instruction {} does not exist (the trace has {})",
                                 index, insts_.size()));
  const InstructionKind& kind = *insts_[index].kind;
  std::optional<size_t> p = kind.param_index(param);
  if (!p)
    throw InputError(fmt::format("with_argument: {} has no parameter '{}'", kind.name, param));
  if (!value_matches(value, kind.params[*p].type))
    throw InputError(fmt::format("with_argument: '{}' of {} must be {}, got {}", param, kind.name,
                                 param_type_name(kind.params[*p].type),
                                 value_kind_name(value.kind)));
  Trace out = *this;
  out.insts_[index].args[*p] = std::move(value);
  return out;
}

Status Trace::apply_to(Schedule& sch, const ReplayOptions& options) const {
  std::unordered_map<int64_t, Value> env;  // trace id -> handle in sch
  std::function<Result<Value>(const Value&)> translate = [&](const Value& v) -> Result<Value> {
    if (v.is_rv()) {
      auto it = env.find(v.i);
      if (it == env.end() || it->second.kind != v.kind)
        return ScheduleError(ErrorCode::kStaleHandle,
                             "uses a handle no earlier instruction defined");
      return it->second;
    }
    if (v.kind != Value::Kind::kList) return v;
    std::vector<Value> items;
    for (const Value& x : v.list) {
      TYCHE_TRY_ASSIGN(t, translate(x));
      items.push_back(std::move(t));
    }
    return Value::of_list(std::move(items));
  };
  size_t end = std::min(options.stop_before, insts_.size());
  for (size_t i = 0; i < end; ++i) {
    const Instruction& inst = insts_[i];
    std::vector<Value> args;
    for (const Value& a : inst.args) {
      auto t = translate(a);
      if (!t)
        return ScheduleError(t.error().code(),
                             fmt::format("{}: {}", where(inst, i), t.error().reason()));
      args.push_back(std::move(t).value());
    }
    Value decision;
    if (auto o = options.overrides.find(i); o != options.overrides.end()) {
      decision = o->second;
    } else if (!options.fresh_decisions) {
      if (auto d = decisions_.find(i); d != decisions_.end()) decision = d->second;
    }
    auto out = sch.apply_instruction(*inst.kind, std::move(args), std::move(decision));
    if (!out)
      return ScheduleError(out.error().code(),
                           fmt::format("{}: {}", where(inst, i), out.error().reason()));
    const std::vector<Value>& produced = out.value();
    if (inst.outputs.empty()) continue;  // a hand-written line that binds nothing
    if (produced.size() != inst.outputs.size())
      return ScheduleError(ErrorCode::kInvalidArgument,
                           fmt::format("{}: produced {} outputs, the trace names {}",
                                       where(inst, i), produced.size(), inst.outputs.size()));
    for (size_t k = 0; k < produced.size(); ++k) env[inst.outputs[k].i] = produced[k];
  }
  if (options.handles) *options.handles = std::move(env);
  return ok_status();
}

// ---- JSON ----

namespace {

json value_to_json(const Value& v, const std::unordered_map<int64_t, std::string>& names) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return nullptr;
    case Value::Kind::kInt:
      return v.i;
    case Value::Kind::kFloat:
      return v.f;
    case Value::Kind::kBool:
      return v.i != 0;
    case Value::Kind::kString:
      return v.s;
    case Value::Kind::kList: {
      json arr = json::array();
      for (const Value& x : v.list) arr.push_back(value_to_json(x, names));
      return arr;
    }
    default: {
      auto it = names.find(v.i);
      return json{{"rv", it == names.end() ? std::string("?") : it->second}};
    }
  }
}

Value value_from_json(const json& j, const std::unordered_map<std::string, Value>& env,
                      const std::string& ctx) {
  if (j.is_null()) return Value::none();
  if (j.is_boolean()) return Value::boolean(j.get<bool>());
  if (j.is_number_integer() || j.is_number_unsigned()) return Value::integer(j.get<int64_t>());
  if (j.is_number_float()) return Value::real(j.get<double>());
  if (j.is_string()) return Value::string(j.get<std::string>());
  if (j.is_array()) {
    std::vector<Value> items;
    for (const json& x : j) items.push_back(value_from_json(x, env, ctx));
    return Value::of_list(std::move(items));
  }
  if (j.is_object() && j.size() == 1 && j.contains("rv") && j["rv"].is_string()) {
    auto it = env.find(j["rv"].get<std::string>());
    if (it == env.end())
      throw InputError(fmt::format("{}: '{}' is not defined", ctx, j["rv"].get<std::string>()));
    return it->second;
  }
  throw InputError(fmt::format("{}: unexpected value {}", ctx, j.dump()));
}

}  // namespace

std::string Trace::to_json(int indent) const {
  auto names = rv_names(*this);
  json insts = json::array();
  for (size_t i = 0; i < insts_.size(); ++i) {
    const Instruction& inst = insts_[i];
    json args = json::object();
    for (size_t p = 0; p < inst.args.size(); ++p)
      args[std::string(inst.kind->params[p].name)] = value_to_json(inst.args[p], names);
    json outs = json::array();
    for (const Value& o : inst.outputs) outs.push_back(names.at(o.i));
    json entry = {{"kind", inst.kind->name}, {"args", args}, {"outputs", outs}};
    if (auto d = decisions_.find(i); d != decisions_.end())
      entry["decision"] = value_to_json(d->second, names);
    insts.push_back(entry);
  }
  json root = {{"format", "tyche.trace"}, {"version", kFormatVersion}, {"instructions", insts}};
  return root.dump(indent);
}

Trace Trace::from_json(std::string_view text) {
  try {
    return from_json_unchecked(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("trace JSON: {}", e.what()));
  }
}

Trace Trace::from_json_unchecked(std::string_view text) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) throw InputError("trace JSON: not valid JSON");
  if (!root.is_object() || !root.contains("format") || root["format"] != "tyche.trace")
    throw InputError("trace JSON: not a Tyche trace (expected \"format\": \"tyche.trace\")");
  if (!root.contains("version") || !root["version"].is_number_integer() ||
      root["version"].get<int>() != kFormatVersion)
    throw InputError(fmt::format("trace JSON: unsupported version {} (this build reads version {})",
                                 root.contains("version") ? root["version"].dump() : "(none)",
                                 kFormatVersion));
  if (!root.contains("instructions") || !root["instructions"].is_array())
    throw InputError("trace JSON: missing the \"instructions\" array");
  Trace trace;
  std::unordered_map<std::string, Value> env;
  int64_t next_id = 0;
  size_t index = 0;
  for (const json& entry : root["instructions"]) {
    std::string ctx = fmt::format("trace JSON: instruction {}", index);
    if (!entry.is_object() || !entry.contains("kind") || !entry["kind"].is_string())
      throw InputError(ctx + ": expected an object with a \"kind\"");
    std::string name = entry["kind"].get<std::string>();
    const InstructionKind* kind = find_instruction_kind(name);
    if (!kind) throw InputError(fmt::format("{}: unknown instruction '{}'", ctx, name));
    ctx += fmt::format(" ({})", name);
    Instruction inst{kind, {}, {}, 0};
    json args = entry.value("args", json::object());
    if (!args.is_object()) throw InputError(ctx + ": \"args\" must be an object");
    for (auto it = args.begin(); it != args.end(); ++it) {
      bool known = false;
      for (const Param& p : kind->params) known = known || p.name == it.key();
      if (!known) throw InputError(fmt::format("{}: unknown argument '{}'", ctx, it.key()));
    }
    for (const Param& p : kind->params) {
      std::string pname(p.name);
      Value v;
      if (args.contains(pname))
        v = value_from_json(args[pname], env, ctx);
      else if (p.default_value)
        v = *p.default_value;
      else
        throw InputError(fmt::format("{}: missing argument '{}'", ctx, pname));
      if (!value_matches(v, p.type))
        throw InputError(
            fmt::format("{}: argument '{}' must be {}", ctx, pname, param_type_name(p.type)));
      inst.args.push_back(std::move(v));
    }
    Value decision;
    if (entry.contains("decision")) {
      if (!kind->is_sampling()) throw InputError(ctx + ": takes no decision");
      decision = value_from_json(entry["decision"], env, ctx);
      if (!decision_matches(decision, kind->decision))
        throw InputError(ctx + ": the decision has the wrong form");
    }
    json outs = entry.value("outputs", json::array());
    if (!outs.is_array()) throw InputError(ctx + ": \"outputs\" must be an array");
    for (const json& o : outs) {
      if (!o.is_string()) throw InputError(ctx + ": outputs must be names");
      Value rv;
      rv.kind = output_kind(kind->output);
      rv.i = next_id++;
      env[o.get<std::string>()] = rv;
      inst.outputs.push_back(rv);
    }
    if (kind->output == OutputType::kNone && !inst.outputs.empty())
      throw InputError(ctx + ": produces no outputs");
    bool single = kind->output == OutputType::kBlock || kind->output == OutputType::kLoop ||
                  kind->output == OutputType::kExpr;
    if (single && inst.outputs.size() > 1) throw InputError(ctx + ": produces one output");
    trace.append(std::move(inst), std::move(decision));
    ++index;
  }
  return trace;
}

Trace Trace::parse(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return from_json(text);
  return parse_text(text);
}

ir::PrimFunc apply_trace_file(const ir::PrimFunc& func, const std::string& path, int64_t seed) {
  std::ifstream in(path);
  if (!in || !std::filesystem::is_regular_file(path))
    throw Error(fmt::format("cannot read trace file '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  Trace trace;
  try {
    trace = Trace::parse(text.str());
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  Schedule sch(func, ScheduleOptions{.seed = seed, .trace = false});
  auto st = trace.apply_to(sch);
  if (!st.ok()) throw Error(fmt::format("{}: {}", path, st.error().reason()));
  return sch.func();
}

}  // namespace tyche::schedule
