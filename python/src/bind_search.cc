// Search strategies and cost models written in Python (python/tyche/strategy.py). The native
// tuning loop stays in charge: it asks the strategy for traces between batches, replays and
// validates them, builds, measures and records them, and tells the strategy and the model how they
// ran. Python runs only inside those calls, each under the GIL, which the rest of the tune leaves
// released. An exception raised there is kept and unwinds the tune (the records of the batches
// already measured are in the database); tyche.tune raises it again.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <unordered_set>
#include <utility>

#include "bindings.h"
#include "support/error.h"
#include "support/random.h"
#include "tune/cost_model/cost_model.h"
#include "tune/search/search_strategy.h"
#include "tune/task/tune.h"

namespace tyche::python {
namespace {

// A task as strategies and models see it while its tune runs; afterwards every call refuses.
struct SearchTaskHandle {
  tune::SearchTask* task = nullptr;
  std::shared_ptr<bool> alive;
  std::string name;

  tune::SearchTask& get() const {
    if (!*alive)
      throw Error(fmt::format("the tune of {} has ended: its task can no longer be used", name));
    return *task;
  }
};

// The Python Task object of each task of a tune, by workload hash.
struct TaskRegistry {
  nb::object make_task;  // tyche.strategy.Task, given a SearchTaskHandle
  std::map<uint64_t, nb::object> tasks;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  nb::object task(uint64_t workload) const {
    auto it = tasks.find(workload);
    if (it == tasks.end())
      throw Error(
          "a Python strategy or cost model was given a program of a task it was not told of");
    return it->second;
  }
};

// A Python object that native code may copy and drop without the GIL: the reference is shared,
// and the last owner drops it with the GIL held (the tune destroys strategies and models, and
// copies its options, with the GIL released).
using PyRef = std::shared_ptr<nb::object>;
PyRef py_ref(nb::handle h) {
  return PyRef(new nb::object(nb::borrow(h)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
}

// Runs f, which calls `name`.`method` in Python, with the GIL: a Python exception is kept and
// unwinds the tune; a result of the wrong type is an InputError saying what `returns` should be.
template <typename F>
void call_python(PendingError& pending, const std::string& name, const char* method,
                 const char* returns, F&& f) {
  nb::gil_scoped_acquire gil;
  try {
    f();
  } catch (nb::python_error& e) {
    keep_and_unwind(pending, e, fmt::format("raised in {}.{}", name, method));
  } catch (const nb::cast_error&) {
    throw InputError(fmt::format("{}.{} must return {}", name, method, returns));
  }
}

std::string class_name(const PyRef& adapter) {
  return nb::cast<std::string>(adapter->attr("name"));
}

nb::list native_traces(const std::vector<const schedule::Trace*>& traces) {
  nb::list out;
  for (const schedule::Trace* t : traces) out.append(nb::cast(*t));
  return out;
}

// The seconds a model or strategy is told: None for a failed program.
nb::object seconds_or_none(double s) {
  return std::isfinite(s) && s > 0 ? nb::object(nb::float_(s)) : nb::none();
}

class PythonStrategy : public tune::SearchStrategy {
 public:
  static constexpr int kAttempts = 4;
  PythonStrategy(PyRef adapter, std::shared_ptr<TaskRegistry> registry,
                 std::shared_ptr<PendingError> pending)
      : adapter_(std::move(adapter)),
        registry_(std::move(registry)),
        pending_(std::move(pending)),
        name_(class_name(adapter_)) {}
  std::string name() const override { return name_; }

  void initialize(tune::SearchTask* task, int64_t seed) override {
    task_ = task;
    rng_ = RandomEngine(seed);
    call("initialize", [&] { adapter_->attr("initialize")(registry_->task(task->workload)); });
  }

  // The traces the strategy proposes, replayed and validated: those the postprocessors refuse,
  // those measured before and repeats are dropped (the tune counts the refusals). A proposal of
  // which nothing is left is asked for again, a few times, before the task's search ends.
  std::vector<tune::Trial> generate(int count) override {
    std::vector<tune::Trial> out;
    for (int attempt = 0; attempt < kAttempts && out.empty(); ++attempt) {
      std::vector<schedule::Trace> traces;
      call("generate", [&] {
        nb::object proposed = adapter_->attr("generate")(count);
        traces = nb::cast<std::vector<schedule::Trace>>(proposed);
      });
      if (traces.empty()) break;  // the strategy has nothing more
      std::unordered_set<uint64_t> taken;
      for (const schedule::Trace& t : traces) {
        if (static_cast<int>(out.size()) >= count) break;
        std::optional<tune::Trial> trial = task_->replay(t, rng_.fork().seed());
        if (!trial || task_->measured.count(trial->program_hash) ||
            !taken.insert(trial->program_hash).second)
          continue;
        out.push_back(std::move(*trial));
      }
    }
    return out;
  }

  void notify(const std::vector<tune::Trial>& trials) override {
    call("notify", [&] {
      std::vector<const schedule::Trace*> traces;
      nb::list results;
      for (const tune::Trial& t : trials) {
        traces.push_back(&t.trace);
        results.append(nb::make_tuple(seconds_or_none(t.ranked_seconds), t.error));
      }
      adapter_->attr("notify")(native_traces(traces), results);
    });
  }

 private:
  template <typename F>
  void call(const char* method, F&& f) {
    call_python(*pending_, name_, method, "a list of tyche.Trace", std::forward<F>(f));
  }

  PyRef adapter_;
  std::shared_ptr<TaskRegistry> registry_;
  std::shared_ptr<PendingError> pending_;
  std::string name_;
  tune::SearchTask* task_ = nullptr;
  RandomEngine rng_{0};
};

class PythonCostModel : public tune::CostModel {
 public:
  PythonCostModel(PyRef adapter, std::shared_ptr<TaskRegistry> registry,
                  std::shared_ptr<PendingError> pending)
      : adapter_(std::move(adapter)),
        registry_(std::move(registry)),
        pending_(std::move(pending)),
        name_(class_name(adapter_)) {}
  std::string name() const override { return name_; }

  void update(const std::vector<tune::ModelCandidate>& candidates,
              const std::vector<double>& seconds) override {
    for (const auto& group : by_workload(candidates)) {
      const uint64_t workload =
          group.first;  // named, not bound: clang 14 captures no structured binding
      const std::vector<size_t>& indices = group.second;
      call("update", [&] {
        nb::list s;
        for (size_t i : indices) s.append(seconds_or_none(seconds[i]));
        adapter_->attr("update")(registry_->task(workload), traces_of(candidates, indices), s);
      });
    }
  }

  std::vector<double> predict(const std::vector<tune::ModelCandidate>& candidates) override {
    std::vector<double> out(candidates.size(), 0.0);
    for (const auto& group : by_workload(candidates)) {
      const uint64_t workload = group.first;
      const std::vector<size_t>& indices = group.second;
      call("predict", [&] {
        std::vector<double> scores = nb::cast<std::vector<double>>(
            adapter_->attr("predict")(registry_->task(workload), traces_of(candidates, indices)));
        if (scores.size() != indices.size())
          throw InputError(fmt::format("{}.predict returned {} scores for {} traces", name_,
                                       scores.size(), indices.size()));
        for (size_t k = 0; k < indices.size(); ++k) out[indices[k]] = scores[k];
      });
    }
    return out;
  }

  void update_features(const std::vector<tune::ModelInput>&, const std::vector<double>&) override {
    throw Error(fmt::format(
        "{}: a cost model written in Python learns from traces, not from feature rows", name_));
  }
  std::vector<double> predict_features(const std::vector<tune::ModelInput>&) override {
    throw Error(
        fmt::format("{}: a cost model written in Python scores traces, not feature rows", name_));
  }
  void save(const std::string&) const override {
    throw Error(fmt::format("{}: a cost model written in Python is saved from Python, not by Tyche",
                            name_));
  }

 private:
  // Candidate indices by workload, in order of first appearance.
  static std::vector<std::pair<uint64_t, std::vector<size_t>>> by_workload(
      const std::vector<tune::ModelCandidate>& candidates) {
    std::vector<std::pair<uint64_t, std::vector<size_t>>> out;
    std::map<uint64_t, size_t> slot;
    for (size_t i = 0; i < candidates.size(); ++i) {
      auto [it, fresh] = slot.emplace(candidates[i].workload, out.size());
      if (fresh) out.push_back({candidates[i].workload, {}});
      out[it->second].second.push_back(i);
    }
    return out;
  }

  nb::list traces_of(const std::vector<tune::ModelCandidate>& candidates,
                     const std::vector<size_t>& indices) const {
    std::vector<const schedule::Trace*> traces;
    for (size_t i : indices) {
      if (!candidates[i].trace)
        throw Error(fmt::format("{}: a candidate came without its trace", name_));
      traces.push_back(candidates[i].trace.get());
    }
    return native_traces(traces);
  }

  template <typename F>
  void call(const char* method, F&& f) {
    call_python(*pending_, name_, method, "a list of numbers", std::forward<F>(f));
  }

  PyRef adapter_;
  std::shared_ptr<TaskRegistry> registry_;
  std::shared_ptr<PendingError> pending_;
  std::string name_;
};

// Features of traces replayed on the task: (values as bytes of float32, rows, columns) each.
std::vector<std::tuple<nb::bytes, int, int>> task_features(
    const SearchTaskHandle& h, const std::vector<schedule::Trace>& traces) {
  tune::SearchTask& task = h.get();
  std::vector<tune::ModelCandidate> candidates;
  {
    nb::gil_scoped_release release;
    for (size_t i = 0; i < traces.size(); ++i) {
      std::optional<tune::Trial> t = task.replay(traces[i], 0);
      if (!t)
        throw InputError(fmt::format(
            "features: trace {} does not replay on {} (the postprocessors refuse it)", i, h.name));
      candidates.push_back(task.model_candidate(*t));
    }
  }
  std::vector<tune::ModelInput> inputs;
  {
    nb::gil_scoped_release release;
    inputs = tune::extract_features(candidates, task.threads);
  }
  std::vector<std::tuple<nb::bytes, int, int>> out;
  for (const tune::ModelInput& in : inputs)
    out.emplace_back(nb::bytes(reinterpret_cast<const char*>(in.features.values.data()),
                               in.features.values.size() * sizeof(float)),
                     in.features.rows, tune::feature_count());
  return out;
}

// Up to n fresh samples of the design spaces (with their decisions), from `seed`.
std::vector<schedule::Trace> task_sample(const SearchTaskHandle& h, int n, int64_t seed) {
  tune::SearchTask& task = h.get();
  if (n < 0) throw InputError("sample: the number of samples must not be negative");
  nb::gil_scoped_release release;
  RandomEngine rng(seed);
  std::vector<schedule::Trace> out;
  for (int tries = 0; static_cast<int>(out.size()) < n && tries < 4 * n + 16; ++tries) {
    RandomEngine r = rng.fork();
    if (std::optional<tune::Trial> t = task.sample(r)) out.push_back(std::move(t->trace));
  }
  return out;
}

}  // namespace

std::shared_ptr<void> use_python_search(tune::TuneOptions& o, nb::handle strategy,
                                        nb::handle cost_model, nb::handle make_task,
                                        const std::shared_ptr<PendingError>& pending) {
  if (strategy.is_none() && cost_model.is_none()) return nullptr;
  // The registry holds Python objects: created here with the GIL, dropped with it.
  std::shared_ptr<TaskRegistry> registry(new TaskRegistry, [](TaskRegistry* r) {
    nb::gil_scoped_acquire gil;
    delete r;
  });
  registry->make_task = nb::borrow(make_task);
  o.on_search_task = [registry, pending](tune::SearchTask& s) {
    nb::gil_scoped_acquire gil;
    std::string name = s.context.func->name;
    try {
      registry->tasks[s.workload] =
          registry->make_task(SearchTaskHandle{&s, registry->alive, name});
    } catch (nb::python_error& e) {
      keep_and_unwind(*pending, e, "raised while wrapping the task for Python");
    }
  };
  if (!strategy.is_none()) {
    PyRef adapter = py_ref(strategy);
    o.make_strategy = [adapter, registry, pending]() -> tune::SearchStrategyPtr {
      nb::gil_scoped_acquire gil;
      return std::make_unique<PythonStrategy>(adapter, registry, pending);
    };
  }
  if (!cost_model.is_none()) {
    PyRef adapter = py_ref(cost_model);
    o.make_cost_model = [adapter, registry, pending]() -> std::unique_ptr<tune::CostModel> {
      nb::gil_scoped_acquire gil;
      return std::make_unique<PythonCostModel>(adapter, registry, pending);
    };
  }
  // Dropped by the caller once the tune has returned (GIL held): the tasks are gone.
  return std::shared_ptr<void>(nullptr, [registry](void*) {
    *registry->alive = false;
    registry->tasks.clear();
  });
}

void bind_search(nb::module_& m) {
  nb::class_<SearchTaskHandle>(m, "SearchTaskNative",
                               "A tuning task as a Python strategy or cost model sees it.")
      .def_prop_ro("name", [](const SearchTaskHandle& h) { return h.name; })
      .def_prop_ro(
          "workload",
          [](const SearchTaskHandle& h) { return fmt::format("{:016x}", h.get().workload); })
      .def("spaces", [](const SearchTaskHandle& h) { return h.get().spaces; })
      .def("sample", &task_sample, nb::arg("n"), nb::arg("seed"))
      .def("measured", [](const SearchTaskHandle& h) { return h.get().measured_traces; })
      .def("features", &task_features, nb::arg("traces"));
}

}  // namespace tyche::python
