"""Model-order serializability: did the run behave as if the calls that took effect had run alone,
one after another, in model order?

Owns the verdict and its first, usual answer. It replays, on the initial world and with the tools' pure
semantics, every call the report says took effect (ok, or an error the tool returned), skips those
the report says did not (timeout, cancelled, skipped), and tries both for `unknown` (and for a call
that started but has no result, e.g. in a hung run). Each observed result must equal its replayed
observation and the final world must equal a replayed world.

How that stays tractable when many calls have unknown effect: a call that made no change in the
trace had none (it is not replayed); the history the trace itself shows (each call stopped exactly
where it stopped) is tried first and usually settles it; calls of unknown effect that share no target
with other calls are decided on their own, at the end; only the rest multiply the histories, and past
MAX_BRANCHES the verdict says the check was limited instead of reporting what it could not establish.

Where each part lives: the calls replayed and one history of them in `harness.oracles.model_order`;
the history the trace shows, tried first, here; the search over every history the report allows in
`harness.oracles.history_search` (isolated calls of unknown effect in `harness.oracles.isolated_groups`);
the labels below in `harness.oracles.anomalies`; several agents' orders of whole turns in
`harness.oracles.turn_order`.

Divergences are labelled from the trace's touches:

- `ghost-effect`: a call reported failed (timeout, cancelled, skipped) changed the world anyway
  (a call reported `unknown` may have stopped after any of its touch points: every prefix of its
  effects is accepted);
- `duplicate-effect`: one call's effect landed more than once (retries included);
- `torn-read`: a read saw a file a sibling had truncated but not yet rewritten;
- `future-read`: a read saw a write of a call that comes later in model order;
- `stale-read`: a read ran before the write of an earlier call in model order landed;
- `lost-update`: a write erased another call's update (read-modify-write overlap, or writes that
  landed out of model order);
- `reordered-effect`: external effects landed in a different order than model order;
- `divergent-result` / `divergent-world`: a mismatch the trace does not explain further.

It reads the run; it never steers one.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace

from harness.oracles import values
from harness.oracles.anomalies import ghost_effects
from harness.oracles.facts import RunFacts
from harness.oracles.history_search import MAX_BRANCHES, search
from harness.oracles.model_order import (
    Mark,
    Step,
    apply_mark,
    certain_steps,
    observed_of,
    replay_marks,
    replay_steps_of,
    same_result,
)
from harness.oracles.reference import MEANINGS, MODEL, in_reference_order, reference_note, reference_of
from harness.oracles.replays import remembered
from harness.oracles.verdict import Verdict, passing
from harness.run import RunResult
from harness.tools.catalogue import prepare
from harness.tools.semantics import Observation, apply
from harness.tools.spec import MUTATING_OPS, ToolError, ToolIO, ToolSpec
from harness.world.state import WorldState
from harness.world.world import World, WorldError

NAME = "serializability"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)

__all__ = ["MAX_BRANCHES", "NAME", "check", "check_model_order"]


#: The passing verdict judged against model order, by oracle name (one: this oracle's).
_PASSED_MODEL: dict[str, Verdict] = {}


def check(result: RunResult) -> Verdict:
    reference, _ = reference_of(result)
    if result.agents:
        # Several agents on one world: no model order spans them, so the question is whether some
        # order of whole turns explains the run (each order judged by the model-order check below,
        # each batch in the reference order). The orders are fresh scenario objects: nothing here
        # may be cached by object identity.
        from harness.oracles import turn_order

        return _named(turn_order.check(result, lambda order: check_model_order(in_reference_order(order, reference))),
                      reference, result)
    return _named(check_model_order(in_reference_order(result, reference)), reference, result)


def _named(verdict: Verdict, reference: str, result: RunResult) -> Verdict:
    """The verdict saying which reference it was judged against (its words too, for another than model)."""
    if reference == MODEL:
        note = "; ".join(filter(None, (verdict.note, reference_note(result))))
        if verdict.ok and not verdict.violations and not note:
            # Nearly every run's: one frozen value, shared (as `Verdict.of` shares passing verdicts).
            passed = _PASSED_MODEL.get(verdict.oracle)
            if passed is None:
                passed = _PASSED_MODEL[verdict.oracle] = Verdict(verdict.oracle, True, (), "", MODEL)
            return passed
        # Built directly, not by dataclasses.replace: this runs for every run an exploration makes.
        return Verdict(verdict.oracle, verdict.ok, verdict.violations, note, MODEL)
    order = f"{reference} order"
    violations = tuple(replace(v, message=v.message.replace("model order", order)) for v in verdict.violations)
    return replace(verdict, violations=violations, reference=reference,
                   note="; ".join(filter(None, (verdict.note, f"judged against {MEANINGS[reference]}"))))


def check_model_order(result: RunResult) -> Verdict:
    """The verdict for the batches in the order `result.scenario` lists them."""
    facts = RunFacts.of(result)
    # A list, not a generator: the ghosts are reported and then excused from the world's diff. A run
    # whose every call was reported ok has none (`ghost_effects` passes over each such call).
    ghosts = [] if facts.every_call_ok else list(ghost_effects(facts))
    # Every call took effect as reported, as it stands: the steps and their memo key are the scenario's.
    certain = certain_steps(facts)
    steps = list(certain.steps) if certain is not None else replay_steps_of(facts)
    # The run's rollbacks, replayed too: a rollback restores the replay's own snapshot, so the run is
    # judged against what the serial run's rollback leaves (a torn snapshot restores something else).
    marks = replay_marks(facts, steps)
    if _trace_history_holds(facts, steps, marks, certain.calls if certain is not None and not marks else None):
        # The history the trace itself shows (every call of unknown effect stopped where it really
        # stopped) is one of the accepted ones and explains everything: no search needed. This is
        # what keeps a hung run, where every started call has unknown effect, linear.
        return Verdict.of(NAME, ghosts) if ghosts else _PASSED
    violations, note = search(facts, steps, {v.witness["call"] for v in ghosts}, marks=marks)
    return Verdict.of(NAME, [*ghosts, *violations], note)


def _trace_history_holds(facts: RunFacts, steps: list[Step], marks: tuple[Mark, ...] = (),
                         calls: Hashable | None = None) -> bool:
    """Whether the model-order replay in which each call of unknown effect goes exactly as far as the
    trace shows gives every observed result and the final world.

    The replay depends only on the initial world, the catalogue and the steps, so runs that report
    the same outcomes share it (`harness.oracles.replays`): ~450 us saved per run after the first.
    `calls`: the memo's key for these steps and marks when the caller has it already (it equals the
    flat tuple made here)."""
    result = facts.result
    catalogue = result.scenario.catalogue
    if calls is None:
        # One flat tuple, four fields a step (not a tuple a step: fewer objects kept in the memo).
        calls = (*[x for s in steps for x in (s.call, s.key, s.torn, s.stopped_after)], *marks)
    try:
        observations, final = remembered(result.initial, catalogue, calls,
                                         lambda: _replay_trace_history(result.initial, catalogue, steps, marks))
    except Exception:
        # A replay that raises past a mismatch the step-by-step check would have stopped at: let
        # that check decide, exactly as before (it raises too if the exception comes first).
        return _trace_history_holds_step_by_step(facts, steps, marks)
    reported = facts.reported
    for step, observation in zip(steps, observations, strict=True):
        if step.certain and observation is not None:
            # `same_result(observation, observed_of(facts, step.call))`, without its tuple.
            r = reported[step.call.id]
            # `values.matches` tests equality first: asked here, the usual equal value costs no call.
            if not (observation.outcome == r.outcome and observation.error == r.error
                    and (r.value == observation.value or values.matches(r.value, observation.value))):
                return False
    return final == result.final


def _replay_trace_history(initial: WorldState, catalogue: Mapping[str, ToolSpec], steps: list[Step],
                          marks: tuple[Mark, ...] = ()) -> tuple[tuple[Observation | None, ...], WorldState]:
    """Every step's observation (None for a call run partly) and the final world of the replay."""
    world = World.from_state(initial)
    observations: list[Observation | None] = []
    snapshots: dict[int, WorldState] = {}
    for index, step in enumerate(steps):
        _marks_at(world, snapshots, marks, index)
        if step.stopped_after is None:
            observations.append(apply(world, step.call, catalogue, in_place=True, idempotency_key=step.key)[1])
        else:
            _run_partly(world, step, catalogue)
            observations.append(None)
    _marks_at(world, snapshots, marks, len(steps))
    return tuple(observations), world.state()


def _marks_at(world: World, snapshots: dict[int, WorldState], marks: tuple[Mark, ...], index: int) -> None:
    for mark in marks:
        if mark.before == index:
            apply_mark(world, snapshots, mark)


def _trace_history_holds_step_by_step(facts: RunFacts, steps: list[Step], marks: tuple[Mark, ...] = ()) -> bool:
    result = facts.result
    world = World.from_state(result.initial)
    snapshots: dict[int, WorldState] = {}
    for index, step in enumerate(steps):
        _marks_at(world, snapshots, marks, index)
        if step.stopped_after is None:
            _, observation = apply(world, step.call, result.scenario.catalogue, in_place=True,
                                   idempotency_key=step.key)
            if step.certain and not same_result(observation, observed_of(facts, step.call)):
                return False
        else:
            _run_partly(world, step, result.scenario.catalogue)
    _marks_at(world, snapshots, marks, len(steps))
    return world.state() == result.final


def _run_partly(world: World, step: Step, catalogue: Mapping[str, ToolSpec]) -> None:
    """Run a call in place up to the first touch point at which it has made `step.stopped_after`
    changes (or to its end, if it makes fewer): where the trace shows it stopped."""
    prepared = prepare(step.call, catalogue)
    if isinstance(prepared, str):
        return
    spec, args = prepared
    made = [0]

    def count(op: str, target: str, digest: str | None) -> None:
        if op in MUTATING_OPS:
            made[0] += 1

    behaviour = spec.behaviour(args, ToolIO(world, step.call.id, count, step.key, torn_write=step.torn))
    try:
        while made[0] < (step.stopped_after or 0):
            next(behaviour)
    except (StopIteration, ToolError, WorldError):
        return
    behaviour.close()
