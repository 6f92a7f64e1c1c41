"""Search strategies and cost models written in Python: they drive a short tune through the native
loop, the database holds exactly what was measured, and an exception in either stops the tune
with the records kept."""

import json
import random

import numpy as np
import pytest

import tyche

QUICK = dict(repeat=2, min_repeat_ms=2, confirm_top=0, warm_start=False)


def gmm():
    return tyche.workload("GMM-1", scale_down=True)


def records(db):
    with open(db / "records.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


class Sampler(tyche.SearchStrategy):
    """Fresh samples, remembering every call; raises in the generate call numbered `fail_at`."""

    def __init__(self, fail_at=None, seed=0):
        self.calls, self.fail_at, self.told, self.seed = [], fail_at, [], seed

    def initialize(self, task):
        super().initialize(task)
        self.calls.append("initialize")
        self.measured_at_start = len(task.measured)

    def generate(self, n):
        self.calls.append("generate")
        if self.calls.count("generate") == self.fail_at:
            raise RuntimeError("strategy gave up")
        return self.task.sample(n, seed=self.seed + len(self.calls))

    def notify(self, traces, results):
        self.calls.append("notify")
        self.told += [(str(t), r) for t, r in zip(traces, results)]


class SumModel(tyche.CostModel):
    """Scores by a feature sum; counts what it learned from; raises in predict when asked to."""

    def __init__(self, fail=False):
        self.learned, self.predicted, self.fail = 0, 0, fail

    def predict(self, task, traces):
        if self.fail:
            raise ValueError("model broke")
        self.predicted += len(traces)
        return [float(f.sum()) for f in tyche.features(task, traces)]

    def update(self, task, traces, results):
        assert all(isinstance(t, tyche.Trace) for t in traces) and len(traces) == len(results)
        self.learned += len(traces)


def test_a_python_strategy_drives_the_tune(tmp_path):
    s = Sampler()
    r = tyche.tune(gmm(), trials=12, batch=4, db=tmp_path, strategy=s, progress=False, **QUICK)
    assert r.trials == 12 and r.best_seconds > 0
    assert s.calls == ["initialize"] + ["generate", "notify"] * 3
    recs = records(tmp_path)
    assert len(recs) == 12 == len(s.told)
    assert len({rec["program"] for rec in recs}) == 12  # nothing measured twice
    assert all(res.ok and res.seconds > 0 for _, res in s.told)
    # A rerun resumes: nothing in the database is measured again.
    s2 = Sampler(seed=100)
    tyche.tune(gmm(), trials=8, batch=4, db=tmp_path, strategy=s2, progress=False, **QUICK)
    assert s2.measured_at_start == 12 and len(records(tmp_path)) == 20
    assert len({rec["program"] for rec in records(tmp_path)}) == 20


def test_a_python_cost_model_scores_and_learns(tmp_path):
    m = SumModel()
    r = tyche.tune(gmm(), trials=16, batch=8, db=tmp_path, cost_model=m, progress=False, population=40, **QUICK)
    assert r.trials == 16 and r.model == "SumModel"
    assert m.learned == 16 and m.predicted > 16
    assert len({rec["program"] for rec in records(tmp_path)}) == len(records(tmp_path)) == 16


def test_an_exception_in_the_strategy_stops_the_tune_and_keeps_the_records(tmp_path):
    s = Sampler(fail_at=3)
    with pytest.raises(RuntimeError, match="strategy gave up") as e:
        tyche.tune(gmm(), trials=40, batch=4, db=tmp_path, strategy=s, progress=False, **QUICK)
    assert any("Sampler.generate" in n for n in e.value.__notes__)
    assert len(records(tmp_path)) == 8  # the two batches measured before
    with pytest.raises(tyche.TycheError, match="has ended"):
        s.task.sample(1)


def test_an_exception_in_the_cost_model_stops_the_tune(tmp_path):
    with pytest.raises(ValueError, match="model broke") as e:
        tyche.tune(gmm(), trials=16, batch=8, db=tmp_path, cost_model=SumModel(fail=True), progress=False, population=20, **QUICK)
    assert any("SumModel.predict" in n for n in e.value.__notes__)


def test_wrong_answers_from_python_are_clear_errors(tmp_path):
    class NotTraces(tyche.SearchStrategy):
        def generate(self, n):
            return ["split(i, 4)"]

    with pytest.raises(TypeError, match="NotTraces.generate: expected tyche.Trace, got str"):
        tyche.tune(gmm(), trials=4, db=tmp_path / "a", strategy=NotTraces(), progress=False, **QUICK)

    class ShortModel(tyche.CostModel):
        def predict(self, task, traces):
            return [0.0]

    with pytest.raises(tyche.InputError, match=r"ShortModel.predict returned 1 scores for \d+ traces"):
        tyche.tune(gmm(), trials=4, db=tmp_path / "b", cost_model=ShortModel(), progress=False, population=20, **QUICK)
    with pytest.raises(TypeError, match="expected a name or a tyche.SearchStrategy"):
        tyche.tune(gmm(), trials=4, db=tmp_path / "c", strategy=object(), progress=False)


def test_a_strategy_searches_decision_vectors(tmp_path):
    """A strategy may edit whole decision vectors: here it moves tile factors between the levels
    of one sampled tile, keeping their product."""

    class EditTiles(tyche.SearchStrategy):
        def generate(self, n):
            out = []
            for t in self.task.sample(n, seed=1):
                values = list(t.decisions.values())
                i = next(k for k, v in enumerate(values) if isinstance(v, list) and v[0] > 1)
                v = values[i]
                for f in range(2, v[0] + 1):
                    if v[0] % f == 0:
                        values[i] = [v[0] // f] + v[1:-1] + [v[-1] * f]
                        break
                out.append(t.with_decisions(values))
            return out

    s = EditTiles()
    r = tyche.tune(gmm(), trials=6, batch=6, db=tmp_path, strategy=s, progress=False, **QUICK)
    assert r.trials >= 1 and len(records(tmp_path)) == r.trials


def test_with_decisions_replaces_every_decision():
    sch = tyche.Schedule(gmm())
    block = sch.get_block("Z")
    j = sch.get_loops(block)[-2]
    sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    t = sch.trace
    values = list(t.decisions.values())
    assert t.with_decisions(values) == t
    product = int(np.prod(values[0]))
    edited = t.with_decisions([[product, 1]])
    assert list(edited.decisions.values()) == [[product, 1]]
    assert t.with_decisions({list(t.decisions)[0]: [product, 1]}) == edited
    with pytest.raises(tyche.InputError, match="2 values for 1 decisions"):
        t.with_decisions([[product, 1], [1, product]])
    with pytest.raises(tyche.InputError, match="makes no decision"):
        t.with_decisions({0: [1, 1]} if 0 not in t.decisions else {999: [1, 1]})


def test_features_are_rows_per_store(tmp_path):
    seen = {}

    class Look(tyche.SearchStrategy):
        def generate(self, n):
            traces = self.task.sample(3, seed=0)
            seen["features"] = tyche.features(self.task, traces)
            seen["spaces"] = len(self.task.spaces)
            return traces[:n]

    tyche.tune(gmm(), trials=2, batch=2, db=tmp_path, strategy=Look(), progress=False, **QUICK)
    f = seen["features"]
    assert len(f) == 3 and all(a.ndim == 2 and a.shape[0] >= 1 and a.shape[1] == f[0].shape[1] > 50 for a in f)
    assert seen["spaces"] >= 1
