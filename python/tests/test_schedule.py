"""Schedules from Python: methods generated from the registry, sampling distributions, traces
Python -> text -> native -> Python, and refusals as exceptions."""

import collections
import inspect
import json

import pytest

import tyche
from tyche.schedule import INSTRUCTION_NAMES


def gmm():
    return tyche.workload("GMM-1", scale_down=True)  # 1 x 32 x 32 x 32


def test_every_registry_instruction_is_a_method_with_tvm_argument_names():
    for name in ["get_block", "get_loops", "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind",
                 "compute_at", "reverse_compute_at", "compute_inline", "reverse_compute_inline", "cache_read",
                 "cache_write", "rfactor", "decompose_reduction", "blockize", "tensorize", "annotate",
                 "sample_perfect_tile", "sample_categorical", "sample_compute_location", "transform_layout",
                 "pad_einsum"]:
        assert name in INSTRUCTION_NAMES and callable(getattr(tyche.Schedule, name))
    assert list(inspect.signature(tyche.Schedule.split).parameters) == ["self", "loop", "factors"]
    assert list(inspect.signature(tyche.Schedule.sample_perfect_tile).parameters) == [
        "self", "loop", "n", "max_innermost_factor", "decision"]
    assert list(inspect.signature(tyche.Schedule.cache_read).parameters) == [
        "self", "block", "read_buffer_index", "storage_scope"]
    assert inspect.signature(tyche.Schedule.compute_at).parameters["preserve_unit_loops"].default is False


def test_random_variables_are_factors():
    sch = tyche.Schedule(gmm(), seed=3)
    block = sch.get_block("Z")
    b, i, j, k = sch.get_loops(block)
    assert isinstance(i, tyche.LoopRV) and isinstance(block, tyche.BlockRV)
    tiles = sch.sample_perfect_tile(i, n=3, max_innermost_factor=8)
    assert all(isinstance(t, tyche.ExprRV) for t in tiles)
    values = [sch.get(t) for t in tiles]
    assert values[0] * values[1] * values[2] == 32 and values[2] <= 8
    i0, i1, i2 = sch.split(i, factors=tiles)
    assert [sch.loop_extent(x) for x in (i0, i1, i2)] == values
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i0, j0, i1, j1)
    sch.vectorize(j1)
    sch.parallel(i0)
    assert sch.block_name(block) == "Z" and sch.iter_kinds(block) == "SSSR"
    assert sch.block_buffers(block) == {"reads": [("X", [1, 32, 32], "float32"), ("Y", [1, 32, 32], "float32")],
                                        "writes": [("Z", [1, 32, 32], "float32")]}


def test_sample_perfect_tile_is_uniform_over_factorizations():
    sch = tyche.Schedule(gmm(), seed=11)
    (_, i, _, _) = sch.get_loops(sch.get_block("Z"))
    counts = collections.Counter()
    for _ in range(1200):
        a, b = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
        counts[(sch.get(a), sch.get(b))] += 1
    # 32 = a * b with b <= 16: (2,16) (4,8) (8,4) (16,2) (32,1), 240 each on average
    assert set(counts) == {(2, 16), (4, 8), (8, 4), (16, 2), (32, 1)}
    assert all(170 <= c <= 310 for c in counts.values()), counts


def test_sample_categorical_follows_its_probabilities():
    sch = tyche.Schedule(gmm(), seed=5)
    draws = collections.Counter(sch.get(sch.sample_categorical([16, 64, 512], [0.6, 0.3, 0.1])) for _ in range(3000))
    assert abs(draws[16] / 3000 - 0.6) < 0.04 and abs(draws[64] / 3000 - 0.3) < 0.04 and abs(draws[512] / 3000 - 0.1) < 0.03
    assert sch.get(sch.sample_categorical([1, 2], [0.5, 0.5], decision=1)) == 2


def test_sample_compute_location_then_compute_at():
    w = tyche.formula("C[i,j] += A[i,k] * B[k,j]; D[i,j] = max(C[i,j], 0)", i=16, j=16, k=8)
    seen = set()
    for seed in range(24):
        sch = tyche.Schedule(w, seed=seed)
        block = sch.get_block("C")
        choices = sch.compute_location_choices(block)
        loc = sch.sample_compute_location(block)
        sch.compute_at(block, loc)
        assert sch.trace.decisions[1] in choices
        seen.add(sch.trace.decisions[1])
    # stay where it is (-1), or under D's loop i (0) or j (1); a reduction cannot be inlined
    assert seen == {-1, 0, 1}


def paper_schedule(sch):
    block = sch.get_block("Z")
    b, i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i0, j0, i1, j1)
    return sch


def test_trace_python_to_text_to_native_to_python():
    sch = paper_schedule(tyche.Schedule(gmm(), seed=1))
    text = str(sch.trace)
    assert "sch.sample_perfect_tile(loop=l" in text and "= sch.split(loop=" in text
    parsed = tyche.Trace.parse(text)
    assert parsed == sch.trace and str(parsed) == text
    replayed = tyche.Schedule(gmm())
    parsed.apply_to(replayed)
    assert str(replayed.func) == str(sch.func)
    as_json = sch.trace.as_json()
    assert as_json["format"] == "tyche.trace"
    assert tyche.Trace.from_json(as_json) == sch.trace
    assert tyche.Trace.parse(json.dumps(as_json)) == sch.trace
    kinds = [name for name, _, _ in sch.trace.instructions]
    assert kinds[:3] == ["get_block", "get_loops", "sample_perfect_tile"]


def test_replay_with_fresh_and_edited_decisions():
    sch = paper_schedule(tyche.Schedule(gmm(), seed=1))
    trace = sch.trace
    index = next(i for i, (name, _, _) in enumerate(trace.instructions) if name == "sample_perfect_tile")
    edited = trace.with_decision(index, [4, 8])
    s2 = tyche.Schedule(gmm())
    edited.apply_to(s2)
    assert "for i_1 in range(8)" in str(s2.func)
    s3 = tyche.Schedule(gmm())
    trace.apply_to(s3, decisions={index: [2, 16]})
    assert "for i_1 in range(16)" in str(s3.func)
    funcs = set()
    for seed in range(12):
        s = tyche.Schedule(gmm(), seed=seed)
        trace.apply_to(s, fresh_decisions=True)
        funcs.add(str(s.func))
    assert len(funcs) > 3
    with pytest.raises(tyche.InputError):
        trace.with_decision(0, [1, 2])  # get_block does not sample
    for bad in ({0: [1, 2]}, {99: 3}, {-1: 3}, {"a": 3}):
        with pytest.raises(tyche.InputError, match="apply_to"):
            trace.apply_to(tyche.Schedule(gmm()), decisions=bad)


def test_refusals_are_schedule_errors_and_leave_the_program_unchanged():
    sch = tyche.Schedule(gmm())
    block = sch.get_block("Z")
    b, i, j, k = sch.get_loops(block)
    before = str(sch.func)
    with pytest.raises(tyche.ScheduleError) as bad:
        sch.split(i, [3, 5])
    assert bad.value.code == "invalid_factors" and "Z" in bad.value.rendered
    assert str(sch.func) == before
    sch.split(i, [4, 8])
    with pytest.raises(tyche.ScheduleError) as stale:
        sch.split(i, [2, 16])  # consumed by the split
    assert stale.value.code == "stale_handle"
    with pytest.raises(tyche.ScheduleError, match="no block named 'nope'") as unknown:
        sch.get_block("nope")
    assert unknown.value.code == "unknown_block"
    with pytest.raises(tyche.ScheduleError) as kind:
        sch.vectorize(block)
    assert kind.value.code in ("invalid_argument", "wrong_handle_kind")
    with pytest.raises(tyche.ScheduleError) as red:
        sch.vectorize(k)
    assert red.value.code == "invalid_loop_kind"
    with pytest.raises(TypeError, match="unexpected keyword"):
        sch.split(j, factor=[4, 8])
    with pytest.raises(TypeError, match="missing"):
        sch.split(j)
    with pytest.raises(tyche.InputError, match="cannot pass"):
        sch.split(j, [object(), 8])
    with pytest.raises(tyche.InputError, match="does not fit"):
        sch.split(j, [2 ** 70, None])
    with pytest.raises(tyche.InputError, match="nest lists deeper"):
        sch.split(j, [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])
    with pytest.raises(tyche.InputError):
        tyche.Trace.parse("l1 = sch.no_such_primitive(x=1)")
    with pytest.raises(tyche.InputError):
        tyche.Trace.from_json('{"format": "tyche.trace", "version": 99, "instructions": []}')


def test_copy_keeps_handles_and_forks():
    sch = tyche.Schedule(gmm(), seed=2)
    _, i, _, _ = sch.get_loops(sch.get_block("Z"))
    other = sch.copy()
    other.split(i, [4, 8])
    assert "i_0" in str(other.func) and "i_0" not in str(sch.func)
    sch.split(i, [8, 4])
