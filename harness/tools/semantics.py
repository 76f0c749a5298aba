"""Each tool's deterministic semantics as a pure function: (world, call) -> (new world, observation).

Owns the serial reference: the same behaviour generator the simulation runs, driven to the end with
no time and no interleaving. Oracles replay calls in model order through this function; because it
is the very same code, a divergence always means the schedule (not a second model of the tool) is
to blame. It never mutates the world it is given unless asked to (`in_place=True`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.model import JSONValue, Outcome, ToolCall
from harness.tools.catalogue import BUILTIN, prepare
from harness.tools.spec import ToolError, ToolIO, ToolSpec, TouchSink
from harness.world.errors import WorldError
from harness.world.state import WorldState
from harness.world.world import World


@dataclass(frozen=True, slots=True)
class Observation:
    """What a call returns when it runs alone: ok with a value, or error with a message."""

    outcome: Outcome
    value: JSONValue = None
    error: str | None = None


def partial_states(world: World, call: ToolCall, catalogue: Mapping[str, ToolSpec] = BUILTIN, *,
                   idempotency_key: str | None = None, torn_write: bool = False) -> list[WorldState]:
    """Every world the call can leave behind if it is stopped at one of its touch points: before it
    started, after each stretch between touch points, and after it finished (distinct, in order).
    This is what "effect unknown" can mean for a call abandoned mid-flight."""
    target = world.clone()
    states = [target.state()]
    prepared = prepare(call, catalogue)
    if not isinstance(prepared, str):
        spec, args = prepared
        behaviour = spec.behaviour(args, ToolIO(target, call.id, None, idempotency_key, torn_write=torn_write))
        try:
            while True:
                next(behaviour)
                states.append(target.state())
        except (StopIteration, ToolError, WorldError):
            states.append(target.state())
    distinct: list[WorldState] = []
    for state in states:
        if state not in distinct:
            distinct.append(state)
    return distinct


def apply(world: World, call: ToolCall, catalogue: Mapping[str, ToolSpec] = BUILTIN, *,
          in_place: bool = False, idempotency_key: str | None = None,
          sink: TouchSink | None = None) -> tuple[World, Observation]:
    """Run `call` alone on (a copy of) `world`; returns the resulting world and the observation."""
    target = world if in_place else world.clone()
    prepared = prepare(call, catalogue)
    if isinstance(prepared, str):
        return target, Observation(Outcome.ERROR, error=prepared)
    spec, args = prepared
    io = ToolIO(target, call.id, sink, idempotency_key)
    behaviour = spec.behaviour(args, io)
    try:
        while True:
            next(behaviour)
    except StopIteration as stop:
        return target, Observation(Outcome.OK, value=stop.value)
    except (ToolError, WorldError) as exc:
        return target, Observation(Outcome.ERROR, error=str(exc))
