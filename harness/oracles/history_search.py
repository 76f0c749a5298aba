"""The search over model-order histories: every history the report allows, when the one the trace
shows does not explain the run.

Owns `search`: a call of unknown effect forks each history at every touch point it may have stopped
at (histories that reach the same world are one), a call the report says took effect prunes the
histories to those where it observed what the run reported, isolated calls of unknown effect are
settled last (`harness.oracles.isolated_groups`), and `MAX_BRANCHES` bounds it all: past it the
verdict says the check was limited instead of reporting what it could not establish. Which label a
divergence gets is `harness.oracles.anomalies`'. It reads the run; it never steers one.
"""

from __future__ import annotations

from harness.model import ToolCall
from harness.oracles.anomalies import explain_result, explain_world, linked
from harness.oracles.facts import RunFacts
from harness.oracles.isolated_groups import Stop, choose_stops, conflicts, isolated_groups, replay_to, settle_alone
from harness.oracles.model_order import Branch, Mark, Step, observed_of, same_result
from harness.oracles.verdict import Violation
from harness.run import RunResult
from harness.tools.semantics import partial_states
from harness.world.state import WorldState
from harness.world.world import World

#: How many model-order histories the search follows at once. Each call of unknown effect multiplies
#: them by the number of touch points it may have stopped at; past this many the search stops and the
#: verdict says the check was limited (it never reports a violation it could not establish).
MAX_BRANCHES = 64


def search(facts: RunFacts, steps: list[Step], ghost_calls: set[str], *,
           defer: bool = True, marks: tuple[Mark, ...] = ()) -> tuple[list[Violation], str]:
    """Every model-order history the report allows (a call of unknown effect stopped at any of its
    touch points), pruned call by call by the observed results; the violations if none gives the
    final world, and a note if the histories were too many to follow.

    Calls of unknown effect whose targets no call outside their group touches (`defer`) cannot
    change what another call sees, nor be changed by it: instead of multiplying every history, each
    such group is replayed last, on its own, and stopped where its targets get their final content.
    A run that rolled back (`marks`) defers nothing: a rollback may restore any target.
    """
    result = facts.result
    groups = isolated_groups(facts, steps) if defer and not marks else []
    deferred = {step.call.id for group in groups for step in group.steps}
    violations: list[Violation] = []
    branches = [Branch(World.from_state(result.initial))]
    for index, step in enumerate(steps):
        _marks_at(branches, marks, index)
        call = step.call
        if call.id in deferred:
            continue
        if not step.certain:
            forked = _fork(branches, step, result)
            if forked is None:
                return violations, _limited(steps, deferred, call)
            branches = forked
            continue
        for branch in branches:
            branch.apply(call, result, step.key)
        observed = observed_of(facts, call)
        matching = [b for b in branches if same_result(b.observations[call.id], observed)]
        if matching:
            branches = matching
        else:
            violations.append(explain_result(facts, call, branches[0], observed))
    _marks_at(branches, marks, len(steps))
    if groups:
        if any(conflicts(branch, groups) for branch in branches):
            # In some history another call touched a group's targets after all (e.g. a relative
            # path under a cwd that a call of unknown effect may not have changed): search plainly.
            return search(facts, steps, ghost_calls, defer=False)
        for group in groups:
            first: tuple[Stop, ...]
            if len(group.steps) == 1:  # the common case: decided in place, with no copy of the world
                first = (settle_alone(branches[0], group, result),)
                rest = branches[1:]
            else:
                stops = choose_stops(branches[0].world.state(), group, result, MAX_BRANCHES)
                if stops is None:
                    return violations, (
                        f"check limited: the {len(group.steps)} calls of unknown effect from {group.steps[0].call.id} "
                        f"that share targets allow more than {MAX_BRANCHES} model-order histories; the history "
                        "the trace shows does not match, and the final world was not checked")
                first, rest = stops, branches
            for branch in rest:
                for step, stop in zip(group.steps, first, strict=True):
                    replay_to(branch, step, stop, result)
    final = result.final
    if not any(branch.world.state() == final for branch in branches):
        closest = min(branches, key=lambda b: _distance(b.world.state(), final))
        violations.extend(explain_world(facts, closest, final, ghost_calls))
    return linked(violations, facts), ""


def _marks_at(branches: list[Branch], marks: tuple[Mark, ...], index: int) -> None:
    for mark in marks:
        if mark.before == index:
            for branch in branches:
                branch.mark(mark)


def _limited(steps: list[Step], deferred: set[str], at: ToolCall) -> str:
    unknown = sum(1 for s in steps if not s.certain and s.call.id not in deferred)
    return (f"check limited: {unknown} calls of unknown effect that share targets allow more than "
            f"{MAX_BRANCHES} model-order histories by {at.id}; the history the trace shows does not match, "
            f"and results from {at.id} on and the final world were not checked")


def _distance(state: WorldState, final: WorldState) -> int:
    """How many files, session values and ledgers differ: explanations use the closest history."""
    want, got = state.file_map, final.file_map
    files = sum(1 for path in want.keys() | got.keys() if want.get(path) != got.get(path))
    return (files + (state.cwd != final.cwd) + (state.env != final.env)
            + sum(1 for name in {n for n, _ in state.ledgers} | {n for n, _ in final.ledgers}
                  if state.ledger(name) != final.ledger(name)))


def _fork(branches: list[Branch], step: Step, result: RunResult) -> list[Branch] | None:
    """Each history, split by where the call may have stopped (the worlds it can leave behind,
    the one where it ran to its end last); histories that reach the same world are one. None when
    that makes more than MAX_BRANCHES."""
    forked: list[Branch] = []
    seen: set[str] = set()
    for branch in branches:
        stops = partial_states(branch.world, step.call, result.scenario.catalogue, idempotency_key=step.key,
                               torn_write=step.torn)
        branch.apply(step.call, result, step.key)  # the history in which it ran to its end
        landed = branch.world.state()
        for state in stops:
            if state != landed and state.digest() not in seen:
                seen.add(state.digest())
                forked.append(branch.fork(state))
        if landed.digest() not in seen:
            seen.add(landed.digest())
            forked.append(branch)
        if len(forked) > MAX_BRANCHES:
            return None
    return forked
