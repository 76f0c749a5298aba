"""PCT, probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte; ASPLOS 2010),
order-first: the explorer decides which in-flight call takes its next step.

Owns the chooser and its guarantee. Each run gives the n entities (the calls, and time: letting the
clock run to the next timer) distinct random priorities d .. d+n-1 and picks d-1 change points among
the first k steps of the run; at every step the enabled entity with the highest priority proceeds,
and at the i-th change point the one that just stepped drops to priority i. A bug of depth d (one
that needs d ordering constraints) is then found by one run with probability at least
1 / (n * k**(d-1)), provided it shows within the horizon k, which the engine fixes before the runs.
It never reads latencies.
"""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

from harness.sim.arbiter import call_of


def bound(n: int, k: int, depth: int) -> float:
    """The per-run probability PCT guarantees for a depth-`depth` bug."""
    return 1.0 / float(max(1, n) * max(1, k) ** max(0, depth - 1))


def miss_bound(per_run: float, runs: int) -> float:
    """An upper bound on the probability that `runs` independent PCT runs all miss the bug."""
    return (1.0 - per_run) ** runs


class PCT:
    def __init__(self, rng: Random, calls: Sequence[str], horizon: int, depth: int = 3) -> None:
        if depth < 1:
            raise ValueError("depth must be >= 1")
        order = list(calls)
        rng.shuffle(order)
        self.priority = {call: depth + i for i, call in enumerate(order)}
        steps = max(horizon, depth)
        self.change_points = {step: depth - 1 - i for i, step in enumerate(sorted(rng.sample(range(1, steps + 1),
                                                                                             depth - 1)))}

    def fork(self) -> PCT:
        """A chooser in the state this one is in, with its own priorities: it makes the choices this
        one would make from here. A search that runs many batches with the same entities and seed
        draws their priorities and change points once and forks an unused chooser for each run."""
        forked = PCT.__new__(PCT)
        forked.priority = dict(self.priority)
        forked.change_points = self.change_points  # only read
        return forked

    def choose(self, enabled: Sequence[str], step: int) -> str:
        # A retry's steps (`call#2`) share their call's priority.
        picked = max(enabled, key=lambda entry: (self.priority.get(call_of(entry), 0), -enabled.index(entry)))
        lowered = self.change_points.get(step + 1)
        if lowered is not None:
            self.priority[call_of(picked)] = lowered
        return picked
