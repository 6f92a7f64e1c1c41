"""Schedule rules (transformation modules): the built-in ones, and how Python rules join them.

A built-in rule takes its configuration as keywords overriding the C++ defaults, e.g.
``multi_level_tiling(structure="SSRSRS", reuse_write={"req": "may", "levels": [1, 2]})``.
A rule written in Python is any object with ``apply(sch, block) -> list[Schedule]`` (and
optionally a ``name``); it returns the schedules that follow from applying it to ``block``
(``[sch]`` when it does not apply) and may sample, so the search explores its decisions.
"""

from __future__ import annotations

from typing import Any

from . import _tyche
from .schedule import Schedule

__all__ = ["Rule", "add_rfactor", "auto_bind", "auto_inline", "cross_thread_reduction", "default", "multi_level_tiling",
           "parallel_vectorize_unroll", "random_compute_location"]


class Rule:
    """A built-in rule (or the base of a Python one: override ``apply``)."""

    def __init__(self, native: Any = None):
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name() if self._native is not None else type(self).__name__

    def apply(self, sch: Schedule, block: _tyche.BlockRV) -> list[Schedule]:
        """The schedules that follow from ``sch`` by applying the rule to ``block`` (``sch`` stays as it was)."""
        if self._native is None:
            raise NotImplementedError(f"{type(self).__name__}.apply")
        return [Schedule._from_native(s) for s in self._native.apply(sch.copy()._native, block)]

    def __repr__(self) -> str:
        return f"<Rule {self.name}>"


def _builtin(name: str):
    def make(**options) -> Rule:
        return Rule(_tyche.builtin_rule(name, options))
    make.__name__ = name
    make.__doc__ = f"The built-in {name} rule; keywords override its configuration."
    return make


auto_inline = _builtin("auto_inline")
multi_level_tiling = _builtin("multi_level_tiling")
parallel_vectorize_unroll = _builtin("parallel_vectorize_unroll")
random_compute_location = _builtin("random_compute_location")
add_rfactor = _builtin("add_rfactor")
cross_thread_reduction = _builtin("cross_thread_reduction")
auto_bind = _builtin("auto_bind")


def default(target: str = "llvm") -> list[Rule]:
    """The rules tyche.tune uses when no space is given (TVM's defaults for the target)."""
    return [Rule(r) for r in _tyche.default_rules(target)]


def _adapter(rule: Any):
    """A Python rule as the native side calls it: native schedule in, native schedules out."""
    def apply(native_sch, block):
        out = rule.apply(Schedule._from_native(native_sch), block)
        if out is None:
            raise TypeError(f"rule {getattr(rule, 'name', type(rule).__name__)!r} returned None; "
                            "return a list of schedules ([sch] where it does not apply)")
        if isinstance(out, Schedule):
            out = [out]
        return [s._native if isinstance(s, Schedule) else s for s in out]
    return apply


def native_space(space: Any) -> Any:
    """The native form of a ``space`` argument: None (the default rules), a list of rules, or a
    function ``space(sch)`` writing a probabilistic schedule."""
    if space is None or space == "default":
        return None
    if isinstance(space, str):
        raise _tyche.InputError(f"space: unknown space '{space}' (expected 'default', a list of rules or a function)")
    if isinstance(space, Rule) or hasattr(space, "apply"):
        space = [space]
    if isinstance(space, (list, tuple)):
        items = []
        for r in space:
            if isinstance(r, Rule) and r._native is not None:
                items.append(r._native)
            elif hasattr(r, "apply"):
                items.append((getattr(r, "name", None) or type(r).__name__, _adapter(r)))
            else:
                raise _tyche.InputError(f"space: {r!r} is not a rule (no apply(sch, block) method)")
        return items
    if callable(space):
        return lambda native_sch: space(Schedule._from_native(native_sch))
    raise _tyche.InputError("space: expected None, a list of rules, or a function of a Schedule")


def generate_space(program: Any, space: Any = None, target: str = "llvm", seed: int = 0) -> list[Schedule]:
    """The design spaces of ``program``: schedules whose traces the search samples and mutates."""
    if hasattr(program, "_native"):
        program = program._native
    return [Schedule._from_native(s) for s in _tyche.generate_space(program, native_space(space), target, seed)]
