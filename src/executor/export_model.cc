#include "executor/export_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include "codegen/c/c_codegen.h"
#include "codegen/export/export.h"
#include "codegen/export/export_program.h"
#include "codegen/llvm/llvm_codegen.h"
#include "executor/execution_plan.h"
#include "executor/executor.h"
#include "graph/default_schedule.h"
#include "lower/lower.h"
#include "runtime/module.h"
#include "support/error.h"
#include "target/cpu.h"

namespace tyche::executor {

namespace {

std::string task_symbol(const std::string& name, size_t task) {
  return fmt::format("{}_t{}", name, task);
}

int64_t value_bytes(const Value& v) {
  return static_cast<int64_t>(v.bytes());
}

// `s` as the inside of a C string literal.
std::string c_string(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", c);
    else if (u < 0x20 || u >= 0x7f)
      out += fmt::format("\\{:03o}", u);
    else
      out += c;
  }
  return out;
}

// The graph's inputs, then its outputs: the entry's parameters.
std::vector<int> parameters(const Graph& g) {
  std::vector<int> out = g.inputs;
  out.insert(out.end(), g.outputs.begin(), g.outputs.end());
  return out;
}

std::vector<std::string> parameter_names(const Graph& g) {
  std::vector<std::string> names;
  for (int v : parameters(g)) names.push_back(g.value(v).name);
  return codegen::export_parameter_names(names);
}

// Each task's kernel object, compiled on several threads (each compilation is independent).
std::vector<std::string> compile_tasks(const std::vector<ir::PrimFunc>& lowered,
                                       const codegen::CompileOptions& options) {
  std::vector<std::string> objects(lowered.size());
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr error;
  auto work = [&] {
    for (size_t t; (t = next++) < lowered.size();) {
      try {
        objects[t] = codegen::compile_export_object(lowered[t], options);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  size_t threads =
      std::min<size_t>(lowered.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return objects;
}

}  // namespace

std::string export_model_header(const Graph& g, const TaskTable& table,
                                const ModelExportOptions& o) {
  codegen::check_export_name(o.name);
  const std::string& n = o.name;
  ExecutionPlan plan = plan_execution(g, table);
  std::vector<int> params = parameters(g);
  std::vector<std::string> names = parameter_names(g);
  const size_t num_inputs = g.inputs.size();
  int64_t weight_bytes = 0;
  std::vector<bool> counted(g.values.size(), false);
  for (const Location& l : plan.location) {
    if (l.kind != Location::Kind::kConstant || counted[static_cast<size_t>(l.index)]) continue;
    counted[static_cast<size_t>(l.index)] = true;
    weight_bytes += value_bytes(g.value(l.index));
  }

  std::ostringstream h;
  h << fmt::format("/* {}.h: the model {}, exported by Tyche (tyche export-model).\n", n, n);
  if (!o.description.empty())
    h << fmt::format(" * {}\n", codegen::export_comment_text(o.description));
  h << fmt::format(" * Code: machine code for {}; {}.\n", target::resolve_cpu(o.cpu).describe(),
                   o.parallel ? "parallel loops run on the library's thread pool"
                              : "serial (exported with --threads 1)");
  std::vector<std::string> proto;
  for (size_t i = 0; i < params.size(); ++i)
    proto.push_back(fmt::format("{}{}* {}", i < num_inputs ? "const " : "",
                                codegen::c_parameter_type(g.value(params[i]).dtype), names[i]));
  std::string prototype = fmt::format("int32_t {}({})", n, fmt::join(proto, ", "));
  h << " *\n *   " << prototype << ";\n *\n";
  h << " * Arguments, in order: the model's inputs, then its outputs (their names in the model\n"
    << " * quoted), dense row-major arrays (the last index varies fastest), none overlapping "
       "another,\n"
    << " * of any alignment (TYCHE_ALIGNMENT-byte aligned inputs avoid a copy in the kernels that "
       "read\n"
    << " * them; the outputs are written once, at the end, with memcpy):\n";
  size_t name_width = 0, quoted_width = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    name_width = std::max(name_width, names[i].size());
    quoted_width =
        std::max(quoted_width, codegen::export_comment_text(g.value(params[i]).name).size() + 2);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& v = g.value(params[i]);
    std::string dims;
    for (int64_t d : v.shape) dims += fmt::format("[{}]", d);
    std::string role =
        i < num_inputs ? fmt::format("input {}", i) : fmt::format("output {}", i - num_inputs);
    std::string quoted = fmt::format("\"{}\"", codegen::export_comment_text(v.name));
    h << fmt::format(" *   {:<{}}  {:<9} {:<{}} {} {}\n", names[i], name_width, role, quoted,
                     quoted_width, codegen::export_dtype_comment(v.dtype),
                     dims.empty() ? "(a scalar)" : dims);
  }
  h << " * Returns TYCHE_OK (0), or TYCHE_ERROR_NULL_ARGUMENT (nothing was computed), or\n"
    << " * TYCHE_ERROR_OUT_OF_MEMORY (the working memory, an aligned copy or an intermediate "
       "buffer; the\n"
    << " * outputs were not written); tyche_error_string(code) says which.\n"
    << " *\n"
    << fmt::format(
           " * Each call takes its working memory, {}_ARENA_BYTES, from the library's allocator (a "
           "freed\n",
           n)
    << " * block is kept for the next call on the same thread), so calls from several threads at "
       "once\n"
    << fmt::format(
           " * are safe. The weights, {}_WEIGHT_BYTES, are read-only data of the library.\n", n);
  h << codegen::export_header_opening(n, o.parallel);
  h << fmt::format("#define {}_NUM_INPUTS {}\n#define {}_NUM_OUTPUTS {}\n", n, num_inputs, n,
                   g.outputs.size());
  h << fmt::format("#define {}_ARENA_BYTES {}\n#define {}_WEIGHT_BYTES {}\n\n", n,
                   plan.memory.arena_bytes, n, weight_bytes);
  h << "/* Each input's and output's name in the model, rank, shape (an initializer: int64_t s[] "
       "=\n"
    << " * ..._SHAPE;), element count, bytes and dtype. */\n";
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& v = g.value(params[i]);
    std::string p = i < num_inputs ? fmt::format("{}_INPUT{}", n, i)
                                   : fmt::format("{}_OUTPUT{}", n, i - num_inputs);
    h << fmt::format("#define {}_NAME \"{}\"\n", p, c_string(v.name));
    h << codegen::export_argument_defines(p, v.shape, v.numel(), value_bytes(v), v.dtype);
  }
  h << "\n" << codegen::export_header_closing(n, prototype, o.parallel, "model");
  return h.str();
}

ModelExportResult export_model(const Graph& g, const TaskTable& table,
                               const std::vector<ir::PrimFunc>& programs, const std::string& dir,
                               const ModelExportOptions& o) {
  codegen::check_export_name(o.name);
  target::resolve_cpu(o.cpu);  // an unknown CPU before any work
  ModelExportResult result;
  std::string header = export_model_header(g, table, o);
  ExecutionPlan plan = plan_execution(g, table);

  // Everything compiled first: an error here writes nothing.
  std::vector<ir::PrimFunc> lowered;
  std::vector<std::vector<CompiledRewrite>> rewrites;  // for this host, to lay the weights out now
  for (size_t t = 0; t < table.tasks.size(); ++t) {
    ir::PrimFunc p = t < programs.size() && programs[t].defined()
                         ? programs[t]
                         : graph::default_schedule(table.tasks[t].func);
    lower::SplitProgram split = lower::split_layout_rewrites(p);
    rewrites.push_back(compile_rewrites(split.rewrites));
    p = split.main;
    lower::Lowered l =
        lower::lower(ir::PrimFunc(task_symbol(o.name, t), p->params, p->num_outputs, p->body));
    for (const std::string& note : l.notes)
      result.notes.push_back(fmt::format("{}: {}", table.tasks[t].name, note));
    lowered.push_back(l.func);
  }
  std::vector<std::string> objects = compile_tasks(lowered, {.cpu = o.cpu,
                                                             .keep_module = false,
                                                             .max_stack_bytes = o.max_stack_bytes,
                                                             .parallel = o.parallel});
  // Weights a kernel reads in a layout of its own are stored in that layout.
  CallWeights call_weights = rewrite_call_weights(g, table, plan, rewrites);

  // The entry: the plan's locations as the program's buffers, each weight once.
  codegen::ExportProgram program;
  program.name = o.name;
  program.num_inputs = static_cast<int>(g.inputs.size());
  program.arena_bytes = plan.memory.arena_bytes;
  program.parallel = o.parallel;
  std::map<int, int64_t> constant_index;  // value -> constant
  auto buffer = [&](const Location& l) {
    using Kind = codegen::ProgramBuffer::Kind;
    switch (l.kind) {
      case Location::Kind::kInput:
        return codegen::ProgramBuffer{Kind::kInput, l.index};
      case Location::Kind::kArena:
        return codegen::ProgramBuffer{Kind::kArena, l.offset};
      case Location::Kind::kConstant: {
        auto [it, added] =
            constant_index.emplace(l.index, static_cast<int64_t>(program.constants.size()));
        if (added) {
          const runtime::NDArray& data = g.value(l.index).constant;
          program.constants.emplace_back(static_cast<const char*>(data.data()), data.nbytes());
        }
        return codegen::ProgramBuffer{Kind::kConstant, it->second};
      }
      case Location::Kind::kNone:
        break;
    }
    throw InternalError("export: a value has no storage");
  };
  for (size_t c = 0; c < table.calls.size(); ++c) {
    codegen::ProgramCall& call = program.calls.emplace_back();
    call.kernel = task_symbol(o.name, static_cast<size_t>(table.calls[c].task));
    for (size_t a = 0; a < plan.call_args[c].size(); ++a) {
      auto rewritten = std::find_if(call_weights[c].begin(), call_weights[c].end(),
                                    [&](const auto& w) { return w.first == a; });
      if (rewritten == call_weights[c].end()) {
        call.args.push_back(buffer(plan.call_args[c][a]));
        continue;
      }
      call.args.push_back({codegen::ProgramBuffer::Kind::kConstant,
                           static_cast<int64_t>(program.constants.size())});
      const runtime::NDArray& weight = rewritten->second;
      program.constants.emplace_back(static_cast<const char*>(weight.data()), weight.nbytes());
    }
  }
  for (int out : g.outputs) {
    program.outputs.push_back(buffer(plan.location[static_cast<size_t>(out)]));
    program.output_bytes.push_back(value_bytes(g.value(out)));
  }
  std::string entry = codegen::compile_program_object(program, o.cpu);

  std::vector<std::pair<std::string, std::string>> members;
  for (size_t t = 0; t < objects.size(); ++t)
    members.emplace_back(task_symbol(o.name, t) + ".o", std::move(objects[t]));
  members.emplace_back(o.name + ".o", std::move(entry));
  members.emplace_back(codegen::export_runtime_member(), codegen::export_runtime_object());
  // In this order: a header never names an entry its library lacks.
  result.files = codegen::write_export_files(
      dir, {{"lib" + o.name + ".a", codegen::static_library(members)}, {o.name + ".h", header}});
  return result;
}

}  // namespace tyche::executor
