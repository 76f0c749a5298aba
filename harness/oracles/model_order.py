"""The model-order reference a serializability check replays: which calls it applies, one history of
them, and whether a reported result is the one model order gives.

Owns `replay_steps` (the calls to replay, in model order: those the report says took effect, and
those of unknown effect that changed the world, with how far the trace shows each got), `Step`,
`Branch` (one possible model-order history: a world, the touches each replayed call made there and
what it observed) and `same_result`; `replay_marks` places the run's checkpoints and rollbacks in that
order (a `Mark`), so a rollback in the replay restores the replay's own snapshot. The search over
histories is `harness.oracles.history_search`'s; the labels a divergence gets are
`harness.oracles.anomalies`'. It reads the run; it never steers one, and it never labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.model import ToolCall
from harness.oracles import values
from harness.oracles.facts import RunFacts
from harness.oracles.replays import Hashed
from harness.run import RunResult
from harness.scheduling.checkpoints import Checkpoint, restore
from harness.tools.inputs import reference_lookup, resolve
from harness.tools.semantics import Observation, apply
from harness.world.state import WorldState
from harness.world.world import World


class Branch:
    """One possible model-order history: a world plus the touches each replayed call made."""

    __slots__ = ("expected_touches", "observations", "snapshots", "world")

    def __init__(self, world: World) -> None:
        self.world = world
        self.expected_touches: dict[str, list[tuple[str, str, str | None]]] = {}
        self.observations: dict[str, Observation] = {}
        #: This history's own snapshots, by the trace position of the run's checkpoint they stand for.
        self.snapshots: dict[int, WorldState] = {}

    def fork(self, state: WorldState) -> Branch:
        """This history, but with the world `state` (one the current world may become)."""
        twin = Branch(World.from_state(state))
        twin.world.remember_as(self.world)  # tools' memory (hermes' read tracker) goes on in the fork
        twin.expected_touches = dict(self.expected_touches)
        twin.observations = dict(self.observations)
        twin.snapshots = dict(self.snapshots)
        return twin

    def mark(self, mark: Mark) -> None:
        """Take this history's snapshot, or roll it back to one (see `apply_mark`)."""
        apply_mark(self.world, self.snapshots, mark)

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


@dataclass(frozen=True, slots=True)
class Mark:
    """A checkpoint or a rollback of the run, in model order: before the step at index `before` of the
    replayed steps (their number: after the last). `checkpoint` is the trace position of the run's
    `checkpoint` event (a rollback names the one it restores); `paths`: a rollback's scope (None: the
    whole tree)."""

    before: int
    rollback: bool
    checkpoint: int
    paths: tuple[str, ...] | None = None


def apply_mark(world: World, snapshots: dict[int, WorldState], mark: Mark) -> None:
    """In a model-order replay: a checkpoint snapshots the replay's world; a rollback restores the
    replay's snapshot (a rollback to a checkpoint the replay never took changes nothing)."""
    if not mark.rollback:
        snapshots[mark.checkpoint] = world.state()
        return
    state = snapshots.get(mark.checkpoint)
    if state is not None:
        restore(world, Checkpoint(0, "", 0, state), mark.paths)


def replay_marks(facts: RunFacts, steps: list[Step]) -> tuple[Mark, ...]:
    """The run's checkpoints and rollbacks placed among the replayed steps, in trace order. A
    checkpoint taken for a call (`before`, e.g. the runtime's `checkpoints` option) goes right before
    it; any other, and every rollback, goes before the first call in model order that had not started
    when it was taken (after the last, if every call had): the serial run reaches it at the same point
    of its work."""
    if "rollback" not in facts.kinds:
        return ()  # a checkpoint never rolled back changes nothing in the replay
    trace = facts.result.trace
    calls = facts.shape.calls
    index = {call.id: i for i, call in enumerate(calls)}
    first_start: dict[str, int] = {}
    for e in trace:
        if e["ev"] == "start":
            first_start.setdefault(e["call"], e["seq"])
    step_at = [index.get(step.call.id, len(calls)) for step in steps]

    def place(position: int) -> int:
        return sum(1 for i in step_at if i < position)

    def unstarted(seq: int) -> int:
        return next((i for i, call in enumerate(calls) if first_start.get(call.id, seq + 1) > seq), len(calls))

    marks: list[Mark] = []
    for e in trace:
        if e["ev"] == "checkpoint":
            position = index[e["before"]] if e.get("before") in index else unstarted(e["seq"])
            marks.append(Mark(place(position), False, e["seq"]))
        elif e["ev"] == "rollback" and e.get("checkpoint_seq", -1) >= 0:
            paths = tuple(e["paths"]) if e.get("paths") is not None else None
            marks.append(Mark(place(unstarted(e["seq"])), True, e["checkpoint_seq"], paths))
    return tuple(marks)


class CertainSteps:
    """The steps of a run in which every call took effect as reported, with no idempotency key and
    no torn write: each call of the scenario, certain, as it stands. The same for every such run of a
    scenario, so made once per scenario (`certain_steps`), with the replay memo's key for them
    (`calls`: the flat tuple `harness.oracles.serializability` keys a replay by, hashed once)."""

    __slots__ = ("calls", "steps")

    def __init__(self, steps: tuple[Step, ...]) -> None:
        self.steps = steps
        self.calls = Hashed(tuple(x for s in steps for x in (s.call, s.key, s.torn, s.stopped_after)))


_CERTAIN = "model_order.certain_steps"


def certain_steps(facts: RunFacts) -> CertainSteps | None:
    """What `replay_steps` returns for this run when every call was reported ok, none read another's
    value (`args_from`), no attempt carried an idempotency key and no fault was injected: then every
    call is a certain step with no key and no torn write, whatever the schedule (`must_take_effect`
    is True for an ok report; the key is an opened attempt's, None; a torn write is a `faults`
    event's). None for any other run."""
    if facts.keyed or "faults" in facts.kinds or facts.result.scenario.args_from or not facts.every_call_ok:
        return None
    derived = facts.shape.derived
    found = derived.get(_CERTAIN)
    if type(found) is not CertainSteps:
        found = derived[_CERTAIN] = CertainSteps(tuple(Step(call, True, None, False) for call in facts.shape.calls))
    return found


def replay_steps(facts: RunFacts) -> list[Step]:
    """The calls to replay, in model order: those the report says took effect, and those of unknown
    effect that changed the world (one of unknown effect that made no change in the trace had none:
    replaying it as not run is the only honest history, so it needs no branching)."""
    certain = certain_steps(facts)
    if certain is not None:
        return list(certain.steps)
    return replay_steps_of(facts)


def replay_steps_of(facts: RunFacts) -> list[Step]:
    """`replay_steps`, worked out call by call (what `certain_steps` gives at once when it can)."""
    steps: list[Step] = []
    args_from = facts.result.scenario.args_from
    earlier: set[str] = set()
    # Reads `earlier` as it grows; a producer never reported (a crashed batch) gave what it ended ok with.
    lookup = reference_lookup(facts.reported, earlier, facts.result.produced)
    for call in facts.shape.calls:
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
