"""Schedules and traces.

``Schedule`` has one method per instruction of the native registry (every primitive and sampling
instruction), generated from it with TVM's names and argument names, so a primitive added to the
C++ registry appears here without a line of Python.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from . import _tyche

_RV_TYPES = (_tyche.BlockRV, _tyche.LoopRV, _tyche.ExprRV)


class Trace:
    """The instructions a schedule applied and the decisions of its samplings.

    ``str(trace)`` is the text form (one instruction per line, a Python subset);
    ``Trace.parse(text)`` reads it (or JSON); ``trace.as_json()`` / ``Trace.from_json``
    convert; ``trace.apply_to(sch)`` replays it, with the recorded, fresh or edited decisions.
    """

    def __init__(self, native: Any):
        self._native = native

    @staticmethod
    def parse(text: str) -> "Trace":
        """The text form or JSON (when it starts with '{')."""
        return Trace(_tyche.TraceNative.parse(text))

    @staticmethod
    def from_json(value: str | dict) -> "Trace":
        return Trace(_tyche.TraceNative.from_json(value if isinstance(value, str) else json.dumps(value)))

    def to_json(self, indent: int = -1) -> str:
        return self._native.to_json(indent)

    def as_json(self) -> dict:
        return json.loads(self._native.to_json())

    def __str__(self) -> str:
        return self._native.to_text()

    def __repr__(self) -> str:
        return f"<Trace of {len(self)} instructions>"

    def __len__(self) -> int:
        return len(self._native)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.to_json() == other.to_json()

    @property
    def instructions(self) -> list[tuple[str, list, list]]:
        """(kind, arguments, outputs) per instruction, with trace-local handles."""
        return self._native.instructions()

    @property
    def decisions(self) -> dict[int, Any]:
        """The decision of each sampling instruction, by instruction index."""
        return self._native.decisions()

    def simplified(self) -> "Trace":
        """Without the lookups and samplings whose outputs nothing uses."""
        return Trace(self._native.simplified())

    def with_decision(self, index: int, decision: Any) -> "Trace":
        """The same trace with instruction ``index``'s decision replaced."""
        return Trace(self._native.with_decision(index, decision))

    def with_decisions(self, values: "list[Any] | dict[int, Any]") -> "Trace":
        """The same trace with every decision replaced: ``values`` is a list in the order of
        ``decisions`` (the sampling instructions'), or a dict by instruction index."""
        current = self.decisions
        if isinstance(values, dict):
            unknown = sorted(set(values) - set(current))
            if unknown:
                raise _tyche.InputError(f"with_decisions: instruction {unknown[0]} makes no decision")
            items = list(values.items())
        else:
            values = list(values)
            if len(values) != len(current):
                raise _tyche.InputError(f"with_decisions: {len(values)} values for {len(current)} decisions")
            items = list(zip(current, values))
        native = self._native
        for index, value in items:
            native = native.with_decision(index, value)
        return Trace(native)

    def apply_to(self, sch: "Schedule", fresh_decisions: bool = False, decisions: dict[int, Any] | None = None) -> dict:
        """Replays onto ``sch``: the recorded decisions, fresh ones, or ``decisions`` by index.

        Returns the handles it issued, by trace-local id. A refusal raises ScheduleError naming
        the instruction; ``sch`` then holds the instructions before it (replay onto a copy to
        keep it as it was).
        """
        return self._native.apply_to(sch._native, fresh_decisions, decisions or {})


class Schedule:
    """A schedule of a program: primitives addressed by handles, every call traced.

    ``Schedule(func, seed=0)`` where ``func`` is a PrimFunc, a Workload or a Schedule (its current
    program). Handles (BlockRV, LoopRV, ExprRV) are Python objects; an ExprRV (a sampled integer)
    can be given wherever a factor is expected. A primitive that refuses raises
    ``tyche.ScheduleError`` and leaves the program unchanged.
    """

    def __init__(self, func: Any, seed: int = -1, debug_verify: bool = False):
        self._native = _tyche.ScheduleNative(func, seed, debug_verify)

    @classmethod
    def _from_native(cls, native: Any) -> "Schedule":
        sch = cls.__new__(cls)
        sch._native = native
        return sch

    @property
    def func(self) -> _tyche.PrimFunc:
        """The program as scheduled so far."""
        return self._native.func

    mod = func  # TVM's name

    @property
    def trace(self) -> Trace:
        return Trace(self._native.trace())

    def copy(self) -> "Schedule":
        """An independent schedule at the same point; every handle stays valid in it."""
        return Schedule._from_native(self._native.copy())

    def get(self, rv: _tyche.ExprRV) -> int:
        """The integer a sampled ExprRV holds."""
        return self._native.get(rv)

    def block_name(self, block: _tyche.BlockRV) -> str:
        return self._native.block_name(block)

    def loop_extent(self, loop: _tyche.LoopRV) -> int | None:
        """The loop's extent, or None when it is not a constant."""
        return self._native.loop_extent(loop)

    def iter_kinds(self, block: _tyche.BlockRV) -> str:
        """One letter per block iterator: S spatial, R reduction, O opaque."""
        return self._native.iter_kinds(block)

    def block_buffers(self, block: _tyche.BlockRV) -> dict[str, list[tuple[str, list[int], str]]]:
        """(name, shape, dtype) of the buffers the block reads and writes, in the order
        cache_read's read_buffer_index and cache_write's write_buffer_index count them."""
        return self._native.block_buffers(block)

    def compute_location_choices(self, block: _tyche.BlockRV, useful_only: bool = False) -> list[int]:
        """The decisions sample_compute_location may take for ``block`` now: -1 (stay), -2 (inline,
        when legal) and each legal loop's index; ``useful_only``: only the loops a fresh draw picks
        from, those where the block's region changes from one iteration to the next."""
        return self._native.compute_location_choices(block, useful_only)

    def show(self) -> None:
        print(self.func)

    def __str__(self) -> str:
        return str(self.func)


def _make_method(kind: dict):
    name = kind["name"]
    params = kind["params"]
    variadic = len(params) == 1 and params[0]["variadic"]

    if variadic:
        def method(self, *items):
            # sch.reorder(l1, l2) or sch.reorder([l1, l2])
            if len(items) == 1 and isinstance(items[0], (list, tuple)):
                items = tuple(items[0])
            return self._native.apply(name, [list(items)])
        sig = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
               inspect.Parameter(params[0]["name"], inspect.Parameter.VAR_POSITIONAL)]
    else:
        names = [p["name"] for p in params]
        defaults = {p["name"]: p["default"] for p in params if p["has_default"]}
        sampling = kind["sampling"]

        def method(self, *args, **kwargs):
            decision = kwargs.pop("decision", None) if sampling else None
            if len(args) > len(names):
                raise TypeError(f"{name}() takes {len(names)} arguments, got {len(args)}")
            values = dict(zip(names, args))
            for k, v in kwargs.items():
                if k not in names:
                    raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
                if k in values:
                    raise TypeError(f"{name}() got multiple values for argument '{k}'")
                values[k] = v
            missing = [n for n in names if n not in values and n not in defaults]
            if missing:
                raise TypeError(f"{name}() missing argument(s): {', '.join(missing)}")
            return self._native.apply(name, [values[n] if n in values else defaults[n] for n in names], decision)

        sig = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        sig += [inspect.Parameter(p["name"], inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                  default=p["default"] if p["has_default"] else inspect.Parameter.empty) for p in params]
        if sampling:
            sig.append(inspect.Parameter("decision", inspect.Parameter.KEYWORD_ONLY, default=None))
    method.__name__ = name
    method.__qualname__ = f"Schedule.{name}"
    method.__signature__ = inspect.Signature(sig)
    args_doc = ", ".join(f"{p['name']}: {p['type']}" for p in params)
    method.__doc__ = (f"The {name} instruction ({args_doc}) -> {kind['output']}."
                      + (" A sampling instruction: ``decision=`` fixes its outcome." if kind["sampling"] else ""))
    return method


for _kind in _tyche.instruction_kinds():
    setattr(Schedule, _kind["name"], _make_method(_kind))
INSTRUCTION_NAMES = [k["name"] for k in _tyche.instruction_kinds()]
