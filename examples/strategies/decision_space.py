"""The decisions of a task's design spaces as a finite search space, for strategies that search
decision vectors (bayesian.py, reinforce.py).

A pool of fresh samples gives, for each design space, the values each of its decisions took; a
candidate picks one design space and one seen value per decision, and ``DecisionSpace.trace``
turns the picks into a trace. Values seen in valid samples are valid each on its own; a
combination may still be refused (a compute location that no longer exists), which the tuner
drops without measuring.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import tyche


def structure_key(trace: tyche.Trace) -> tuple:
    """What identifies a trace's design space: its instructions without the decisions."""
    return tuple((kind, repr(args)) for kind, args, _ in trace.instructions)


@dataclass
class Space:
    template: tyche.Trace
    indices: list[int]                                          # the sampling instructions, in order
    choices: list[list[str]] = field(default_factory=list)      # per decision: JSON of the values seen


class DecisionSpace:
    def __init__(self, task: tyche.Task, pool: int = 256, seed: int = 0):
        by_key: dict[tuple, Space] = {}
        seen: dict[tuple, list[set]] = {}
        for t in task.sample(pool, seed=seed):
            key = structure_key(t)
            if key not in by_key:
                by_key[key] = Space(template=t, indices=list(t.decisions))
                seen[key] = [set() for _ in by_key[key].indices]
            for k, v in enumerate(t.decisions.values()):
                seen[key][k].add(json.dumps(v))
        if not by_key:
            raise tyche.TycheError(f"{task.name}: no valid sample of its design spaces")
        self.spaces = list(by_key.values())
        for key, space in zip(by_key, self.spaces):
            space.choices = [sorted(s) for s in seen[key]]

    def trace(self, space: int, picks: list[int]) -> tyche.Trace:
        """The trace of design space ``space`` with decision k set to its picks[k]-th seen value."""
        s = self.spaces[space]
        return s.template.with_decisions([json.loads(s.choices[k][p]) for k, p in enumerate(picks)])
