"""The model-order reference a serializability check replays: which calls it applies, one history of
them, and whether a reported result is the one model order gives.

Owns `replay_steps` (the calls to replay, in model order: those the report says took effect, and
those of unknown effect that changed the world, with how far the trace shows each got), `Step`,
`Branch` (one possible model-order history: a world, the touches each replayed call made there and
what it observed) and `same_result`. The search over histories is `harness.oracles.history_search`'s;
the labels a divergence gets are `harness.oracles.anomalies`'. It reads the run; it never steers one,
and it never labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.model import ToolCall
from harness.oracles import values
from harness.oracles.facts import RunFacts
from harness.run import RunResult
from harness.tools.inputs import reference_lookup, resolve
from harness.tools.semantics import Observation, apply
from harness.world.state import WorldState
from harness.world.world import World


class Branch:
    """One possible model-order history: a world plus the touches each replayed call made."""

    __slots__ = ("expected_touches", "observations", "world")

    def __init__(self, world: World) -> None:
        self.world = world
        self.expected_touches: dict[str, list[tuple[str, str, str | None]]] = {}
        self.observations: dict[str, Observation] = {}

    def fork(self, state: WorldState) -> Branch:
        """This history, but with the world `state` (one the current world may become)."""
        twin = Branch(World.from_state(state))
        twin.world.remember_as(self.world)  # tools' memory (hermes' read tracker) goes on in the fork
        twin.expected_touches = dict(self.expected_touches)
        twin.observations = dict(self.observations)
        return twin

    def apply(self, call: ToolCall, result: RunResult, key: str | None) -> Observation:
        recorded: list[tuple[str, str, str | None]] = []
        _, observation = apply(self.world, call, result.scenario.catalogue, in_place=True, idempotency_key=key,
                               sink=lambda op, target, digest: recorded.append(
                                   (op, target.partition("\x00")[0], digest)))
        self.expected_touches[call.id] = recorded
        self.observations[call.id] = observation
        return observation


@dataclass(frozen=True, slots=True)
class Step:
    """A call the replay applies. `certain`: the report says it took effect, so its observation
    must match. Otherwise its effect is unknown and `stopped_after` is how far the trace shows it
    got: None, to its end; n, it was stopped after n effects."""

    call: ToolCall
    certain: bool
    key: str | None
    torn: bool
    stopped_after: int | None = None


def replay_steps(facts: RunFacts) -> list[Step]:
    """The calls to replay, in model order: those the report says took effect, and those of unknown
    effect that changed the world (one of unknown effect that made no change in the trace had none:
    replaying it as not run is the only honest history, so it needs no branching)."""
    steps: list[Step] = []
    args_from = facts.result.scenario.args_from
    earlier: set[str] = set()
    # Reads `earlier` as it grows; a producer never reported (a crashed batch) gave what it ended ok with.
    lookup = reference_lookup(facts.reported, earlier, facts.result.produced)
    for call in facts.result.scenario.calls:
        # The serial reference reads args_from as model order does: every earlier call has ended, so a
        # consumer gets what its producer returned (nothing if it failed). The data-flow oracle judges
        # when the run read it; here only the effects of the resolved call are compared.
        if args_from:
            call, _ = resolve(call, args_from.get(call.id), lookup)
        earlier.add(call.id)
        effect = facts.must_take_effect(call.id)
        if effect is False:
            continue
        attempts = facts.opened_attempts(call.id)
        key = attempts[0].key if attempts else None
        torn = False
        for a in attempts:  # a loop, not any(): this runs for every call of a 100,000-call batch
            if "torn_write" in a.injected:
                torn = True
                break
        if effect:
            steps.append(Step(call, True, key, torn))
            continue
        effects = [t for t in facts.touches_of(call.id) if t.mutating]
        if not effects:
            continue
        stopped_after = None
        changed_by = {t.attempt for t in effects}
        if len(changed_by) == 1:
            (number,) = changed_by
            attempt = next((a for a in reversed(attempts) if a.attempt == number), None)
            if attempt is not None and attempt.outcome not in ("ok", "error"):
                stopped_after = len(effects)  # interrupted, or still running when the run stopped
        steps.append(Step(call, False, key, torn, stopped_after))
    return steps


def observed_of(facts: RunFacts, call: ToolCall) -> tuple[Any, Any, Any]:
    """What the run reported for `call`: its outcome, value and error."""
    reported = facts.reported[call.id]
    return reported.outcome, reported.value, reported.error


def same_result(observation: Observation, observed: tuple[Any, Any, Any]) -> bool:
    """Whether a reported result is the model-order one; its value compared as a value (the JSON
    text or `str()` of the value is that value: `harness.oracles.values`)."""
    outcome, value, error = observed
    return observation.outcome == outcome and observation.error == error and values.matches(value, observation.value)
