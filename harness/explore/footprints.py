"""Static knowledge for the exhaustive explorer: what each call touches and how many steps it takes,
learnt by running the scenario alone in model order with the tools' pure behaviour.

Owns the independence relation between steps of two calls: independent when their calls touch
disjoint targets (or only read the same ones), unless both steps complete their calls (a scheduler
may react to completion order). It never runs a scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.scenario.spec import Scenario
from harness.tools.catalogue import prepare
from harness.tools.spec import MUTATING_OPS, ToolError, ToolIO
from harness.world.errors import WorldError
from harness.world.world import World


@dataclass(frozen=True, slots=True)
class Footprint:
    reads: frozenset[str]
    writes: frozenset[str]
    steps: int


def footprints(scenario: Scenario) -> dict[str, Footprint]:
    world = World.from_state(scenario.world)
    found: dict[str, Footprint] = {}
    for call in scenario.calls:
        touched: list[tuple[str, str]] = []
        steps = 0
        prepared = prepare(call, scenario.catalogue)
        if not isinstance(prepared, str):
            spec, args = prepared
            def sink(op: str, target: str, digest: str | None, into: list[tuple[str, str]] = touched) -> None:
                into.append((op, target.partition("\x00")[0]))

            io = ToolIO(world, call.id, sink)
            behaviour = spec.behaviour(args, io)
            try:
                while True:
                    next(behaviour)
                    steps += 1
            except (StopIteration, ToolError, WorldError):
                pass
        found[call.id] = Footprint(frozenset(t for op, t in touched if op not in MUTATING_OPS),
                                   frozenset(t for op, t in touched if op in MUTATING_OPS), max(steps, 1))
    return found


def independent(a: str, a_completes: bool, b: str, b_completes: bool, prints: dict[str, Footprint]) -> bool:
    if a == b or (a_completes and b_completes):
        return False
    fa, fb = prints.get(a), prints.get(b)
    if fa is None or fb is None:
        return False
    return not (fa.writes & (fb.reads | fb.writes) or fb.writes & fa.reads)
