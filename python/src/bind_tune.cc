// Design spaces and tuning from Python. The built-in schedule rules (their configurations given
// as keyword overrides of the C++ defaults), rules written in Python and space functions (the
// paper's ScheduleFn) become the native SpaceGenerator; the search then replays and mutates their
// traces natively. Python runs only while the spaces are generated and when progress is shown;
// the GIL is released for the rest of the tune.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>

#include "bindings.h"
#include "interp/interpreter.h"
#include "tune/space/schedule_rule.h"
#include "tune/space/space_generator.h"
#include "tune/task/tune.h"

namespace tyche::python {
namespace {

using tune::ScheduleRulePtr;

// Assigns the fields named in `overrides` (a dict) through `setters`; an unknown name is an
// InputError listing the known ones.
using Setters = std::map<std::string, std::function<void(nb::handle)>>;
void apply_overrides(const char* what, const nb::dict& overrides, const Setters& setters) {
  for (auto [key, value] : overrides) {
    std::string k = nb::cast<std::string>(key);
    auto it = setters.find(k);
    if (it == setters.end()) {
      std::vector<std::string> known;
      for (const auto& [name, set] : setters) known.push_back(name);
      throw InputError(
          fmt::format("{}: unknown option '{}' (known: {})", what, k, fmt::join(known, ", ")));
    }
    try {
      it->second(value);
    } catch (const nb::cast_error&) {
      throw InputError(fmt::format("{}: option '{}' has the wrong type", what, k));
    }
  }
}

template <typename T>
std::function<void(nb::handle)> set(T& field) {
  return [&field](nb::handle v) { field = nb::cast<T>(v); };
}

tune::ReuseConfig reuse_config(nb::handle v) {
  tune::ReuseConfig c;
  std::string req;
  Setters s{{"req", set(req)},
            {"levels", set(c.levels)},
            {"scope", set(c.scope)},
            {"only_along_output_row", set(c.only_along_output_row)}};
  apply_overrides("reuse", nb::cast<nb::dict>(v), s);
  if (req == "no" || req.empty())
    c.req = tune::ReuseConfig::Kind::kNo;
  else if (req == "may")
    c.req = tune::ReuseConfig::Kind::kMay;
  else if (req == "must")
    c.req = tune::ReuseConfig::Kind::kMust;
  else
    throw InputError(fmt::format("reuse: req must be 'no', 'may' or 'must', got '{}'", req));
  return c;
}

ScheduleRulePtr builtin_rule(const std::string& name, const nb::dict& o) {
  if (name == "auto_inline") {
    tune::AutoInlineConfig c;
    apply_overrides(name.c_str(), o,
                    {{"into_producer", set(c.into_producer)},
                     {"into_consumer", set(c.into_consumer)},
                     {"inline_const_tensor", set(c.inline_const_tensor)},
                     {"disallow_if_then_else", set(c.disallow_if_then_else)},
                     {"require_injective", set(c.require_injective)},
                     {"require_ordered", set(c.require_ordered)},
                     {"disallow_op", set(c.disallow_op)}});
    return tune::auto_inline(c);
  }
  if (name == "multi_level_tiling") {
    tune::MultiLevelTilingConfig c;
    apply_overrides(name.c_str(), o,
                    {{"structure", set(c.structure)},
                     {"tile_binds", set(c.tile_binds)},
                     {"max_innermost_factor", set(c.max_innermost_factor)},
                     {"max_innermost_reduction_factor", set(c.max_innermost_reduction_factor)},
                     {"reuse_read", [&](nb::handle v) { c.reuse_read = reuse_config(v); }},
                     {"reuse_write", [&](nb::handle v) { c.reuse_write = reuse_config(v); }},
                     {"padded_rows", set(c.padded_rows)},
                     {"panel_width", set(c.panel_width)}});
    return tune::multi_level_tiling(c);
  }
  if (name == "parallel_vectorize_unroll") {
    tune::ParallelVectorizeUnrollConfig c;
    apply_overrides(name.c_str(), o,
                    {{"max_jobs_per_core", set(c.max_jobs_per_core)},
                     {"max_vectorize_extent", set(c.max_vectorize_extent)},
                     {"unroll_max_steps", set(c.unroll_max_steps)},
                     {"unroll_explicit", set(c.unroll_explicit)}});
    return tune::parallel_vectorize_unroll(c);
  }
  if (name == "random_compute_location") {
    apply_overrides(name.c_str(), o, {});
    return tune::random_compute_location();
  }
  if (name == "add_rfactor") {
    int64_t jobs = 16, innermost = -1;
    apply_overrides(name.c_str(), o,
                    {{"max_jobs_per_core", set(jobs)}, {"max_innermost_factor", set(innermost)}});
    return tune::add_rfactor(jobs, innermost);
  }
  if (name == "cross_thread_reduction" || name == "auto_bind") {
    std::vector<int64_t> extents;
    bool given = false;
    apply_overrides(name.c_str(), o, {{"thread_extents", [&](nb::handle v) {
                                         extents = nb::cast<std::vector<int64_t>>(v);
                                         given = true;
                                       }}});
    if (name == "auto_bind") return given ? tune::auto_bind(extents) : tune::auto_bind();
    return given ? tune::cross_thread_reduction(extents) : tune::cross_thread_reduction();
  }
  throw InputError(fmt::format("unknown schedule rule '{}'", name));
}

// A rule written in Python: `apply` is the package's adapter, (native schedule, block) -> list of
// native schedules, which the rule hands back to the tuner.
ScheduleRulePtr python_rule(std::string name, nb::callable apply,
                            std::shared_ptr<PendingError> pending) {
  auto fn = std::make_shared<nb::object>(std::move(apply));
  return tune::make_rule(name, [fn, name, pending](schedule::Schedule sch,
                                                   const schedule::BlockRV& block) {
    auto sref = sch.block_sref(block);
    std::string where = fmt::format("raised in schedule rule '{}' applied to block '{}'", name,
                                    sref.ok() ? sref.value()->as_block()->name : std::string("?"));
    nb::gil_scoped_acquire gil;
    std::vector<schedule::Schedule> out;
    try {
      nb::object given = nb::cast(ScheduleHolder(std::move(sch)));
      nb::object result = (*fn)(given, block);
      std::vector<ScheduleHolder*> holders;
      for (nb::handle r : result) {
        if (!nb::isinstance<ScheduleHolder>(r))
          throw InputError(fmt::format("rule '{}' returned a {} where a Schedule belongs", name,
                                       python_type_name(r)));
        holders.push_back(&nb::cast<ScheduleHolder&>(r));
      }
      for (size_t i = 0; i < holders.size(); ++i) {
        // the same schedule twice: the second is a copy of the first
        size_t first = std::find(holders.begin(), holders.end(), holders[i]) - holders.begin();
        out.push_back(first < i ? out[first].copy() : holders[i]->take());
      }
    } catch (nb::python_error& e) {
      keep_and_unwind(*pending, e, where);
    }
    return out;
  });
}

// A space function (the paper's ScheduleFn): `fn` is the package's adapter taking the native
// schedule, which the tuner takes back afterwards.
tune::SpaceGeneratorPtr python_space(nb::callable fn_, std::shared_ptr<PendingError> pending) {
  auto fn = std::make_shared<nb::object>(std::move(fn_));
  return tune::schedule_fn([fn, pending](schedule::Schedule& sch) -> schedule::Status {
    nb::gil_scoped_acquire gil;
    nb::object given = nb::cast(ScheduleHolder(std::move(sch)));
    ScheduleHolder& h = nb::cast<ScheduleHolder&>(given);
    try {
      (*fn)(given);
    } catch (nb::python_error& e) {
      if (h.sch) sch = h.take();
      keep_and_unwind(*pending, e, "raised in the space function");
    }
    sch = h.take();
    return schedule::ok_status();
  });
}

// The native space of a Python `space` argument: None (the target's default rules), a list of
// rules (native ones, or (name, adapter) pairs for Python rules), or a space function's adapter.
tune::SpaceGeneratorPtr make_space(nb::handle space, const std::shared_ptr<PendingError>& pending) {
  if (space.is_none()) return nullptr;
  if (nb::isinstance<nb::list>(space)) {
    std::vector<ScheduleRulePtr> rules;
    for (nb::handle r : space) {
      if (nb::isinstance<tune::ScheduleRule>(r))
        rules.push_back(nb::cast<ScheduleRulePtr>(r));
      else if (nb::isinstance<nb::tuple>(r) && nb::len(r) == 2)
        rules.push_back(
            python_rule(nb::cast<std::string>(r[0]), nb::borrow<nb::callable>(r[1]), pending));
      else
        throw InputError(
            "space: a rule list holds tyche.rules rules or objects with an apply(sch, block) "
            "method");
    }
    return tune::post_order_apply(std::move(rules));
  }
  if (nb::isinstance<nb::callable>(space))
    return python_space(nb::borrow<nb::callable>(space), pending);
  throw InputError("space: expected None, a list of rules or a function of a Schedule");
}

// A Python program as a tuning task; one without a reference is checked against the interpreter.
workloads::Workload as_workload(nb::handle program) {
  if (nb::isinstance<workloads::Workload>(program)) return nb::cast<workloads::Workload>(program);
  workloads::Workload w;
  w.func = as_func(program);
  w.name = w.func->name;
  w.op = "python";
  ir::PrimFunc func = w.func;
  w.reference = [func](const std::vector<runtime::NDArray>& inputs) {
    return interp::run_on_inputs(func, inputs);
  };
  return w;
}

nb::dict task_result(const tune::TaskResult& t) {
  nb::dict d;
  d["name"] = t.name;
  d["shape"] = t.shape;
  d["flop"] = t.flop;
  d["trials"] = t.trials;
  d["failed"] = t.failed;
  d["best_seconds"] = t.best_seconds;
  d["search_best_seconds"] = t.search_best_seconds;
  d["confirmed"] = t.confirmed;
  d["warm_start"] = t.warm_start;
  d["best_trace"] = t.best_trace_text;
  d["refusals"] = t.refusals;
  nb::list history;
  for (const tune::TunePoint& p : t.history) {
    nb::dict h;
    h["trials"] = p.trials;
    h["best_seconds"] = p.best_seconds;
    h["measured_best_seconds"] = p.measured_best_seconds;
    h["elapsed_s"] = p.elapsed_s;
    history.append(h);
  }
  d["history"] = history;
  return d;
}

nb::dict run_tune(nb::handle program, nb::handle space, const nb::dict& options,
                  nb::handle progress, nb::handle strategy, nb::handle cost_model,
                  nb::handle make_task, nb::handle remote) {
  auto pending = std::make_shared<PendingError>();
  tune::TuneTask task;
  task.workload = as_workload(program);
  task.space = make_space(space, pending);
  tune::TuneOptions o;
  std::string target_text = "llvm";
  apply_overrides("tune", options,
                  {{"trials", set(o.trials)},
                   {"batch", set(o.batch)},
                   {"db", set(o.db_dir)},
                   {"strategy", set(o.strategy)},
                   {"cost_model", set(o.cost_model)},
                   {"model", set(o.model_path)},
                   {"warm_start", set(o.warm_start)},
                   {"seed", set(o.seed)},
                   {"threads", set(o.threads)},
                   {"target", set(target_text)},
                   {"worker", set(o.runner.worker_path)},
                   {"timeout_s", set(o.runner.timeout_s)},
                   {"confirm_top", set(o.confirm_top)},
                   {"confirm_rounds", set(o.confirm_rounds)},
                   {"population", set(o.evolutionary.population)},
                   {"generations", set(o.evolutionary.generations)},
                   {"repeat", set(o.runner.time.repeat)},
                   {"min_repeat_ms", set(o.runner.time.min_repeat_ms)}});
  if (o.db_dir.empty())
    throw InputError("tune: db (a directory for the tuning records) is required");
  target::Target target = target::Target::parse(target_text);
  std::shared_ptr<void> python_search =
      use_python_search(o, strategy, cost_model, make_task, pending);
  o.remote_measure = remote_measure_from(remote, pending);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  // At the end of each round: a signal (Ctrl-C) or an exception of the progress callback stops
  // the tune after what was measured is saved, and is raised once the tune has returned.
  auto on_progress = [&](const tune::TuneProgress& p) {
    nb::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      // The fastest time as measured, as `tyche tune` prints: the search's drift-corrected
      // ranking (task->best_seconds) can be faster than anything that ran.
      if (!progress.is_none())
        progress(p.trials, p.budget, p.task->name, p.task->search_best_seconds, p.elapsed_s);
    } catch (nb::python_error& e) {
      pending->error.emplace(std::move(e));
      stop = true;
    }
  };
  tune::TuneResult r;
  try {
    nb::gil_scoped_release release;
    r = tune::tune({task}, target, o, on_progress);
  } catch (const CallbackRaised&) {
    // a rule, the space function, a Python strategy or cost model raised: below
  }
  python_search.reset();
  pending->raise_if_any();
  nb::dict d;
  d["task"] = task_result(r.tasks.at(0));
  d["resumed_records"] = r.resumed_records;
  d["model"] = r.model;
  d["warnings"] = r.warnings;
  nb::dict times;
  times["search"] = r.times.search;
  times["build"] = r.times.build;
  times["run"] = r.times.run;
  times["model"] = r.times.model;
  times["database"] = r.times.database;
  times["confirm"] = r.times.confirm;
  times["total"] = r.times.total;
  d["times"] = times;
  d["target"] = target.str();
  return d;
}

}  // namespace

void bind_tune(nb::module_& m) {
  nb::class_<tune::ScheduleRule>(m, "RuleNative", "A built-in schedule rule.")
      .def("name", &tune::ScheduleRule::name)
      .def(
          "apply",
          [](tune::ScheduleRule& rule, ScheduleHolder& h, const schedule::BlockRV& block,
             const std::string& target) {
            schedule::Schedule sch = h.take();
            rule.initialize(tune::TuneContext{sch.func(), target::Target::parse(target)});
            std::vector<ScheduleHolder> out;
            for (schedule::Schedule& s : rule.apply(std::move(sch), block))
              out.emplace_back(std::move(s));
            return out;
          },
          nb::arg("sch"), nb::arg("block"), nb::arg("target") = "llvm");
  m.def("builtin_rule", &builtin_rule, nb::arg("name"), nb::arg("options") = nb::dict());
  m.def(
      "default_rules",
      [](const std::string& target) { return tune::default_rules(target::Target::parse(target)); },
      nb::arg("target") = "llvm");
  m.def(
      "generate_space",
      [](nb::handle program, nb::handle space, const std::string& target, int64_t seed) {
        ir::PrimFunc func = as_func(program);
        auto pending = std::make_shared<PendingError>();
        tune::SpaceGeneratorPtr gen = make_space(space, pending);
        tune::TuneContext context{func, target::Target::parse(target)};
        if (!gen) gen = tune::post_order_apply(tune::default_rules(context.target));
        std::vector<schedule::Schedule> spaces;
        try {
          nb::gil_scoped_release release;
          gen->initialize(context);
          spaces = gen->generate(context, seed);
        } catch (const CallbackRaised&) {
          pending->raise_if_any();
        }
        std::vector<ScheduleHolder> out;
        for (schedule::Schedule& s : spaces) out.emplace_back(std::move(s));
        return out;
      },
      nb::arg("program"), nb::arg("space").none(), nb::arg("target") = "llvm", nb::arg("seed") = 0);
  m.def("tune", &run_tune, nb::arg("program"), nb::arg("space").none(), nb::arg("options"),
        nb::arg("progress").none(), nb::arg("strategy").none() = nb::none(),
        nb::arg("cost_model").none() = nb::none(), nb::arg("make_task").none() = nb::none(),
        nb::arg("remote").none() = nb::none());
}

}  // namespace tyche::python
