"""Model-order serializability: did the run behave as if the calls that took effect had run alone,
one after another, in model order?

Owns the replay and the anomaly labels. It replays, on the initial world and with the tools' pure
semantics, every call the report says took effect (ok, or an error the tool returned), skips those
the report says did not (timeout, cancelled, skipped), and tries both for `unknown` (and for a call
that started but has no result, e.g. in a hung run). Each observed result must equal its replayed
observation and the final world must equal a replayed world.

How that stays tractable when many calls have unknown effect: a call that made no change in the
trace had none (it is not replayed); the history the trace itself shows (each call stopped exactly
where it stopped) is tried first and usually settles it; calls of unknown effect that share no target
with other calls are decided on their own, at the end; only the rest multiply the histories, and past
MAX_BRANCHES the verdict says the check was limited instead of reporting what it could not establish.

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

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.model import Outcome, ToolCall
from harness.oracles import values
from harness.oracles.facts import RunFacts, Touch
from harness.oracles.replays import remembered
from harness.oracles.verdict import Verdict, Violation, calls_named
from harness.run import RunResult
from harness.tools.catalogue import prepare
from harness.tools.inputs import reference_lookup, resolve
from harness.tools.semantics import Observation, apply, partial_states
from harness.tools.spec import MUTATING_OPS, ToolError, ToolIO, ToolSpec
from harness.world.state import WorldState, content_digest
from harness.world.world import World, WorldError

NAME = "serializability"
#: How many model-order histories the search follows at once. Each call of unknown effect multiplies
#: them by the number of touch points it may have stopped at; past this many the search stops and the
#: verdict says the check was limited (it never reports a violation it could not establish).
MAX_BRANCHES = 64


class _Branch:
    """One possible model-order history: a world plus the touches each replayed call made."""

    __slots__ = ("expected_touches", "observations", "world")

    def __init__(self, world: World) -> None:
        self.world = world
        self.expected_touches: dict[str, list[tuple[str, str, str | None]]] = {}
        self.observations: dict[str, Observation] = {}

    def fork(self, state: WorldState) -> _Branch:
        """This history, but with the world `state` (one the current world may become)."""
        twin = _Branch(World.from_state(state))
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
class _Step:
    """A call the replay applies. `certain`: the report says it took effect, so its observation
    must match. Otherwise its effect is unknown and `stopped_after` is how far the trace shows it
    got: None, to its end; n, it was stopped after n effects."""

    call: ToolCall
    certain: bool
    key: str | None
    torn: bool
    stopped_after: int | None = None


def check(result: RunResult) -> Verdict:
    if result.agents:
        # Several agents on one world: no model order spans them, so the question is whether some
        # order of whole turns explains the run (each order judged by the model-order check below).
        # The orders are fresh scenario objects: nothing here may be cached by object identity.
        from harness.oracles import turn_order

        return turn_order.check(result, check_model_order)
    return check_model_order(result)


def check_model_order(result: RunResult) -> Verdict:
    """The verdict for the batches in the order `result.scenario` lists them."""
    facts = RunFacts.of(result)
    # A list, not a generator: the ghosts are reported and then excused from the world's diff.
    ghosts = list(_ghost_effects(facts))
    steps = _steps(facts)
    if _trace_history_holds(facts, steps):
        # The history the trace itself shows (every call of unknown effect stopped where it really
        # stopped) is one of the accepted ones and explains everything: no search needed. This is
        # what keeps a hung run, where every started call has unknown effect, linear.
        return Verdict.of(NAME, ghosts)
    violations, note = _search(facts, steps, {v.witness["call"] for v in ghosts})
    return Verdict.of(NAME, [*ghosts, *violations], note)


def _steps(facts: RunFacts) -> list[_Step]:
    """The calls to replay, in model order: those the report says took effect, and those of unknown
    effect that changed the world (one of unknown effect that made no change in the trace had none:
    replaying it as not run is the only honest history, so it needs no branching)."""
    steps: list[_Step] = []
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
            steps.append(_Step(call, True, key, torn))
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
        steps.append(_Step(call, False, key, torn, stopped_after))
    return steps


def _observed(facts: RunFacts, call: ToolCall) -> tuple[Any, Any, Any]:
    reported = facts.reported[call.id]
    return reported.outcome, reported.value, reported.error


def _trace_history_holds(facts: RunFacts, steps: list[_Step]) -> bool:
    """Whether the model-order replay in which each call of unknown effect goes exactly as far as the
    trace shows gives every observed result and the final world.

    The replay depends only on the initial world, the catalogue and the steps, so runs that report
    the same outcomes share it (`harness.oracles.replays`): ~450 us saved per run after the first."""
    result = facts.result
    catalogue = result.scenario.catalogue
    try:
        observations, final = remembered(
            # One flat tuple, four fields a step (not a tuple a step: fewer objects kept in the memo).
            result.initial, catalogue, tuple([x for s in steps for x in (s.call, s.key, s.torn, s.stopped_after)]),
            lambda: _replay_trace_history(result.initial, catalogue, steps))
    except Exception:
        # A replay that raises past a mismatch the step-by-step check would have stopped at: let
        # that check decide, exactly as before (it raises too if the exception comes first).
        return _trace_history_holds_step_by_step(facts, steps)
    for step, observation in zip(steps, observations, strict=True):
        if step.certain and observation is not None and not _same(observation, _observed(facts, step.call)):
            return False
    return final == result.final


def _replay_trace_history(initial: WorldState, catalogue: Mapping[str, ToolSpec],
                          steps: list[_Step]) -> tuple[tuple[Observation | None, ...], WorldState]:
    """Every step's observation (None for a call run partly) and the final world of the replay."""
    world = World.from_state(initial)
    observations: list[Observation | None] = []
    for step in steps:
        if step.stopped_after is None:
            observations.append(apply(world, step.call, catalogue, in_place=True, idempotency_key=step.key)[1])
        else:
            _run_partly(world, step, catalogue)
            observations.append(None)
    return tuple(observations), world.state()


def _trace_history_holds_step_by_step(facts: RunFacts, steps: list[_Step]) -> bool:
    result = facts.result
    world = World.from_state(result.initial)
    for step in steps:
        if step.stopped_after is None:
            _, observation = apply(world, step.call, result.scenario.catalogue, in_place=True,
                                   idempotency_key=step.key)
            if step.certain and not _same(observation, _observed(facts, step.call)):
                return False
        else:
            _run_partly(world, step, result.scenario.catalogue)
    return world.state() == result.final


def _run_partly(world: World, step: _Step, catalogue: Mapping[str, ToolSpec]) -> None:
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


def _search(facts: RunFacts, steps: list[_Step], ghost_calls: set[str], *,
            defer: bool = True) -> tuple[list[Violation], str]:
    """Every model-order history the report allows (a call of unknown effect stopped at any of its
    touch points), pruned call by call by the observed results; the violations if none gives the
    final world, and a note if the histories were too many to follow.

    Calls of unknown effect whose targets no call outside their group touches (`defer`) cannot
    change what another call sees, nor be changed by it: instead of multiplying every history, each
    such group is replayed last, on its own, and stopped where its targets get their final content.
    """
    result = facts.result
    groups = _isolated_groups(facts, steps) if defer else []
    deferred = {step.call.id for group in groups for step in group.steps}
    violations: list[Violation] = []
    branches = [_Branch(World.from_state(result.initial))]
    for step in steps:
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
        observed = _observed(facts, call)
        matching = [b for b in branches if _same(b.observations[call.id], observed)]
        if matching:
            branches = matching
        else:
            violations.append(_explain_result(facts, call, branches[0], observed))
    if groups:
        if any(_conflicts(branch, groups) for branch in branches):
            # In some history another call touched a group's targets after all (e.g. a relative
            # path under a cwd that a call of unknown effect may not have changed): search plainly.
            return _search(facts, steps, ghost_calls, defer=False)
        for group in groups:
            first: tuple[_Stop, ...]
            if len(group.steps) == 1:  # the common case: decided in place, with no copy of the world
                first = (_settle_alone(branches[0], group, result),)
                rest = branches[1:]
            else:
                stops = _choose_stops(branches[0].world.state(), group, result)
                if stops is None:
                    return violations, (
                        f"check limited: the {len(group.steps)} calls of unknown effect from {group.steps[0].call.id} "
                        f"that share targets allow more than {MAX_BRANCHES} model-order histories; the history "
                        "the trace shows does not match, and the final world was not checked")
                first, rest = stops, branches
            for branch in rest:
                for step, stop in zip(group.steps, first, strict=True):
                    _replay_to(branch, step, stop, result)
    final = result.final
    if not any(branch.world.state() == final for branch in branches):
        closest = min(branches, key=lambda b: _distance(b.world.state(), final))
        violations.extend(_explain_world(facts, closest, final, ghost_calls))
    return _linked(violations, facts), ""


#: Violations on a target that make a later read of it see other content than in model order.
_UPSTREAM = ("lost-update", "torn-read", "stale-read", "future-read", "ghost-effect", "duplicate-effect",
             "divergent-world")


def _linked(violations: list[Violation], facts: RunFacts) -> list[Violation]:
    """A read no racing write explains (`divergent-result`) of a target another violation of this run
    is about read what that violation left: say so, and name its calls, instead of leaving the reader
    to look for the bug in how that call was run. A file no lost update or misread by its writers
    explains (`divergent-world`) follows in the same way from a race on it by a call that did not
    write it (a torn read that made a patch fail, say)."""
    if not any(_unexplained(v) for v in violations):
        return violations
    linked = []
    for v in violations:
        if _unexplained(v):
            target = v.witness["target"]
            cause = next((u for u in violations if u is not v and u.label in _UPSTREAM and u.label != v.label
                          and u.witness.get("target") == target), None)
            if cause is not None:
                calls = [c for c in calls_named(cause.witness, facts.position) if c != v.witness.get("call")]
                v = Violation(v.label, f"{v.message}, what the {cause.label} on it left"
                              + (f" ({', '.join(calls)})" if calls else ""),
                              {**v.witness, "follows": cause.label, "upstream": calls}, v.kind)
        linked.append(v)
    return linked


def _unexplained(v: Violation) -> bool:
    return ((v.label == "divergent-result" and "read_at_ms" in v.witness)
            or (v.label == "divergent-world" and "target" in v.witness))


def _limited(steps: list[_Step], deferred: set[str], at: ToolCall) -> str:
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


@dataclass(frozen=True, slots=True)
class _Group:
    """Calls of unknown effect that share targets only among themselves, in model order."""

    steps: tuple[_Step, ...]
    touched: frozenset[str]
    written: frozenset[str]
    names: tuple[str, ...]  # the targets' identities and every spelling used for them


def _footprint(op: str, target: str) -> tuple[list[str], list[str]]:
    """What one touch reads and writes, for grouping. A change to a path also changes the listing of
    every directory above it (`dir:` keys: changes in one directory commute with each other, not with
    a listing of it)."""
    identity = target.partition("\x00")[0]
    if identity.startswith(("session:", "ledger:")) or not identity.startswith("/"):
        return [identity], [identity] if op in MUTATING_OPS else []
    touched = [identity, f"dir:{identity}"] if op == "list" else [identity]
    if op not in MUTATING_OPS:
        return touched, []
    parents = [f"dir:{p}" for p in _ancestors(identity)]
    return touched, [identity, *parents]


def _ancestors(path: str) -> list[str]:
    found = []
    while path not in ("/", ""):
        path = path.rsplit("/", 1)[0] or "/"
        found.append(path)
    return found


def _isolated_groups(facts: RunFacts, steps: list[_Step]) -> list[_Group]:
    """The calls of unknown effect, grouped by conflicts (one writes what another touches), keeping
    only groups no other call conflicts with: what each call touches in the replay where every call
    runs to its end and in the trace (touches of calls not replayed, e.g. ghosts, count too)."""
    result = facts.result
    world = World.from_state(result.initial)
    touched: dict[str, set[str]] = {}
    written: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    replayed: list[tuple[str, str, str]] = []  # (call, op, raw target), replay then trace
    for step in steps:
        seen = _Recorder()
        apply(world, step.call, result.scenario.catalogue, in_place=True, idempotency_key=step.key, sink=seen)
        replayed.extend((step.call.id, op, target) for op, target in seen)
        names[step.call.id] = {name for _, target in seen for name in target.split("\x00")}
    replayed.extend((t.call, t.op, t.target) for t in facts.touches)
    touchers: dict[str, set[str]] = {}
    writers: dict[str, set[str]] = {}
    for call_id, op, target in replayed:
        reads, writes = _footprint(op, target)
        touched.setdefault(call_id, set()).update(reads)
        written.setdefault(call_id, set()).update(writes)
        names.setdefault(call_id, set()).add(target.partition("\x00")[0])
        for key in reads:
            touchers.setdefault(key, set()).add(call_id)
        for key in writes:
            writers.setdefault(key, set()).add(call_id)
    unknown = [step for step in steps if not step.certain]
    # Union-find over the calls of unknown effect: a written target joins its writers and touchers.
    parent = {step.call.id: step.call.id for step in unknown}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for key in sorted(writers):
        if key not in touchers:
            continue  # e.g. files created in one directory that nobody lists
        joined = sorted(c for c in writers[key] | touchers[key] if c in parent)
        for other in joined[1:]:
            parent[root(other)] = root(joined[0])
    by_root: dict[str, list[_Step]] = {}
    for step in unknown:
        by_root.setdefault(root(step.call.id), []).append(step)
    groups = []
    for members in by_root.values():
        ids = {step.call.id for step in members}
        group_t = set().union(*(touched.get(c, set()) for c in ids))
        group_w = set().union(*(written.get(c, set()) for c in ids))
        if (all(touchers.get(k, set()) <= ids for k in group_w)
                and all(writers.get(k, set()) <= ids for k in group_t)):
            groups.append(_Group(tuple(members), frozenset(group_t), frozenset(group_w),
                                 tuple(sorted(set().union(*(names.get(c, set()) for c in ids))))))
    return groups


class _Recorder(list[tuple[str, str]]):
    """A touch sink that keeps (op, raw target) pairs."""

    def __call__(self, op: str, target: str, digest: str | None) -> None:
        self.append((op, target))


def _conflicts(branch: _Branch, groups: list[_Group]) -> bool:
    """Whether, in this history, a replayed call touched what a deferred group writes or wrote what
    it touches (footprints can differ between histories)."""
    written = frozenset().union(*(group.written for group in groups))
    touched = frozenset().union(*(group.touched for group in groups))
    for touches in branch.expected_touches.values():
        for op, target, _ in touches:
            reads, writes = _footprint(op, target)
            if any(k in written for k in reads) or any(k in touched for k in writes):
                return True
    return False


#: A call's stop: after this many steps between touch points (None: it ran to its end).
_Stop = int | None


def _choose_stops(base: WorldState, group: _Group, result: RunResult) -> tuple[_Stop, ...] | None:
    """Where each call of the group stopped, in a history that gives the group's targets their final
    content (every call run to its end if none does: the final world then differs whichever way it
    went); None if the group has more than MAX_BRANCHES histories."""
    wanted = _view(result.final, group.names)
    frontier: dict[str, tuple[WorldState, tuple[_Stop, ...]]] = {base.digest(): (base, ())}
    for step in group.steps:
        reached: dict[str, tuple[WorldState, tuple[_Stop, ...]]] = {}
        for state, stops in frontier.values():
            for stop, after in _stops(state, step, result):
                reached.setdefault(after.digest(), (after, (*stops, stop)))
            if len(reached) > MAX_BRANCHES:
                return None
        frontier = reached
    for state, stops in frontier.values():
        if _view(state, group.names) == wanted:
            return stops
    return tuple(None for _ in group.steps)


def _stops(state: WorldState, step: _Step, result: RunResult) -> list[tuple[_Stop, WorldState]]:
    """Every world the call can leave behind from `state`: stopped after 0, 1, ... steps, or at its end."""
    world = World.from_state(state)
    found: list[tuple[_Stop, WorldState]] = [(0, state)]
    prepared = prepare(step.call, result.scenario.catalogue)
    if isinstance(prepared, str):
        return found
    spec, args = prepared
    behaviour = spec.behaviour(args, ToolIO(world, step.call.id, None, step.key, torn_write=step.torn))
    count = 0
    try:
        while True:
            next(behaviour)
            count += 1
            found.append((count, world.state()))
    except (StopIteration, ToolError, WorldError):
        found.append((None, world.state()))
    return found


def _settle_alone(branch: _Branch, group: _Group, result: RunResult) -> _Stop:
    """Replay a group's only call in place, stopped at the first of its touch points at which its
    targets look as they do in the final world (or at its end if none does); returns where."""
    (step,) = group.steps
    world = branch.world
    wanted = _live_view(result.world, group.names)
    recorded: list[tuple[str, str, str | None]] = []
    branch.expected_touches[step.call.id] = recorded
    if _live_view(world, group.names) == wanted:
        return 0
    prepared = prepare(step.call, result.scenario.catalogue)
    if isinstance(prepared, str):
        return None
    spec, args = prepared
    behaviour = spec.behaviour(args, ToolIO(
        world, step.call.id,
        lambda op, target, digest: recorded.append((op, target.partition("\x00")[0], digest)),
        step.key, torn_write=step.torn))
    count = 0
    try:
        while True:
            next(behaviour)
            count += 1
            if _live_view(world, group.names) == wanted:
                behaviour.close()
                return count
    except (StopIteration, ToolError, WorldError):
        return None


def _live_view(world: World, names: tuple[str, ...]) -> tuple[object, ...]:
    """`_view` of a live world, read target by target (no snapshot of the whole tree)."""
    view: list[object] = []
    for name in names:
        if name == "session:cwd":
            view.append(world.cwd)
        elif name.startswith("session:env:"):
            view.append(world.env.get(name.removeprefix("session:env:")))
        elif name.startswith("ledger:"):
            ledger = world.ledgers.get(name.removeprefix("ledger:"))
            view.append(ledger.entries if ledger is not None else ())
        elif world.fs.islink(name):
            view.append(("link", world.fs.readlink(name)))
        elif world.is_dir(name):
            view.append(("dir",))
        elif world.exists(name):
            view.append(world.read_text(name))
        else:
            view.append(None)
    return tuple(view)


def _replay_to(branch: _Branch, step: _Step, stop: _Stop, result: RunResult) -> None:
    """Replay a call on the history's world, stopped after `stop` steps (None: to its end)."""
    if stop is None:
        branch.apply(step.call, result, step.key)
        return
    recorded: list[tuple[str, str, str | None]] = []
    branch.expected_touches[step.call.id] = recorded
    prepared = prepare(step.call, result.scenario.catalogue)
    if stop == 0 or isinstance(prepared, str):
        return
    spec, args = prepared
    behaviour = spec.behaviour(args, ToolIO(
        branch.world, step.call.id,
        lambda op, target, digest: recorded.append((op, target.partition("\x00")[0], digest)),
        step.key, torn_write=step.torn))
    try:
        for _ in range(stop):
            next(behaviour)
    except (StopIteration, ToolError, WorldError):
        return
    behaviour.close()


def _view(state: WorldState, names: tuple[str, ...]) -> tuple[object, ...]:
    """What a world holds under each target name: a file's kind and content, a session value, a
    ledger's entries."""
    files, dirs, links = state.file_map, set(state.dirs), dict(state.symlinks)
    env = dict(state.env)
    view: list[object] = []
    for name in names:
        if name == "session:cwd":
            view.append(state.cwd)
        elif name.startswith("session:env:"):
            view.append(env.get(name.removeprefix("session:env:")))
        elif name.startswith("ledger:"):
            view.append(state.ledger(name.removeprefix("ledger:")))
        elif name in links:
            view.append(("link", links[name]))
        elif name in dirs:
            view.append(("dir",))
        else:
            view.append(files.get(name))
    return tuple(view)


def _fork(branches: list[_Branch], step: _Step, result: RunResult) -> list[_Branch] | None:
    """Each history, split by where the call may have stopped (the worlds it can leave behind,
    the one where it ran to its end last); histories that reach the same world are one. None when
    that makes more than MAX_BRANCHES."""
    forked: list[_Branch] = []
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


def _same(observation: Observation, observed: tuple[Any, Any, Any]) -> bool:
    """Whether a reported result is the model-order one; its value compared as a value (the JSON
    text or `str()` of the value is that value: `harness.oracles.values`)."""
    outcome, value, error = observed
    return observation.outcome == outcome and observation.error == error and values.matches(value, observation.value)


def _ghost_effects(facts: RunFacts) -> Iterator[Violation]:
    rollbacks: list[tuple[int, int, frozenset[str] | None]] | None = None  # read from the trace when first needed
    reported_results = facts.reported
    for call in facts.result.scenario.calls:
        reported_result = reported_results.get(call.id)
        if reported_result is not None and reported_result.outcome is Outcome.OK:
            continue  # reported ok: it must have taken effect (what `must_take_effect` says first)
        if facts.must_take_effect(call.id) is not False:
            continue
        if rollbacks is None:
            rollbacks = _rollbacks(facts)
        landed = [t for t in facts.touches_of(call.id) if t.mutating and not _undone(t, rollbacks)]
        if landed:
            reported = facts.reported.get(call.id)
            outcome = reported.outcome.value if reported else "no result"
            yield Violation(
                "ghost-effect",
                f"{call.id} was reported {outcome} but changed {landed[0].target} at {landed[0].t} ms",
                {"call": call.id, "reported": outcome,
                 "reported_at_ms": reported.end_ms if reported else None,
                 "effects": [{"t": t.t, "op": t.op, "target": t.target} for t in landed]},
            )


def _rollbacks(facts: RunFacts) -> list[tuple[int, int, frozenset[str] | None]]:
    """(checkpoint seq, rollback seq, the files it restored or None for the whole tree) of each rollback."""
    return [(e.get("checkpoint_seq", -1), e["seq"], frozenset(e["paths"]) if e.get("paths") is not None else None)
            for e in facts.result.trace if e["ev"] == "rollback"]


def _undone(touch: Touch, rollbacks: list[tuple[int, int, frozenset[str] | None]]) -> bool:
    """Whether a rollback to a snapshot taken before `touch` restored its file after it: the effect of
    a failed call that the runtime's checkpoint undid is no ghost (ledgers and the shell are not in a
    checkpoint, so their changes always count)."""
    path = touch.target.partition("\x00")[0]
    if not path.startswith("/"):
        return False
    return any(taken < touch.seq < undone and (scope is None or path in scope) for taken, undone, scope in rollbacks)


# -- results ---------------------------------------------------------------------------------


def _explain_result(facts: RunFacts, call: ToolCall, branch: _Branch, observed: tuple[Any, Any, Any]) -> Violation:
    expected = branch.observations[call.id]
    base = {"call": call.id, "tool": call.name,
            "expected": {"outcome": expected.outcome.value, "value": expected.value, "error": expected.error},
            "observed": {"outcome": observed[0].value, "value": observed[1], "error": observed[2]}}
    effects_by_attempt = sorted({t.attempt for t in facts.touches_of(call.id) if t.mutating})
    if len(effects_by_attempt) > 1:
        return Violation("duplicate-effect",
                         f"{call.id} took effect in {len(effects_by_attempt)} attempts "
                         f"({', '.join(map(str, effects_by_attempt))}); model order applies it once",
                         {**base, "attempts": effects_by_attempt})
    misread = _first_misread(facts, call.id, branch)
    if misread is not None:
        label, message, extra = _classify_read(facts, call.id, misread)
        return Violation(label, message, {**base, **extra})
    reordered = _reordered_append(facts, call.id, branch)
    if reordered is not None:
        message, extra = reordered
        label = "duplicate-effect" if extra.pop("label_hint", None) == "duplicate-effect" else "reordered-effect"
        return Violation(label, message, {**base, **extra})
    return Violation("divergent-result", f"{call.id} returned a different result than in model order", base)


def _first_misread(facts: RunFacts, call_id: str, branch: _Branch) -> Touch | None:
    """The first read of the reported attempt that saw something else than in model order."""
    attempt = facts.reported_attempt(call_id)
    actual = [t for t in facts.touches_of(call_id, attempt.attempt if attempt else None) if not t.mutating]
    expected = [(target, digest) for op, target, digest in branch.expected_touches.get(call_id, [])
                if op not in MUTATING_OPS]
    for touch, (target, digest) in zip(actual, expected, strict=False):
        if touch.target != target or touch.digest != digest:
            return touch
    return None


def _reordered_append(facts: RunFacts, call_id: str, branch: _Branch) -> tuple[str, dict[str, Any]] | None:
    """An external effect that landed in another position of its ledger than model order gives it."""
    attempt = facts.reported_attempt(call_id)
    actual = [t for t in facts.touches_of(call_id, attempt.attempt if attempt else None)
              if t.op == "append" and t.target.startswith("ledger:")]
    expected = [(target, digest) for op, target, digest in branch.expected_touches.get(call_id, [])
                if op == "append" and target.startswith("ledger:")]
    for touch, (target, digest) in zip(actual, expected, strict=False):
        if touch.target == target and touch.digest != digest:
            taker = next((t for t in facts.touches_on(target) if t.op == "append" and t.digest == digest), None)
            if taker is not None:
                same = [t for t in facts.touches_of(taker.call, taker.attempt)
                        if t.op == "append" and t.target == target]
                if len(same) > 1:  # the slot went to a second delivery of an earlier call, not to a reorder
                    return (f"{taker.call} landed {len(same)} times in {target} (a duplicate delivery), so {call_id} "
                            f"became {touch.digest} instead of {digest}",
                            {"target": target, "duplicated": taker.call, "deliveries": len(same),
                             "label_hint": "duplicate-effect"})
            message = (f"{call_id} became {touch.digest} of {target} at {touch.t} ms; in model order it is {digest}"
                       + (f", which {taker.call} took at {taker.t} ms" if taker else ""))
            return message, {"target": target, "entry": touch.digest, "expected_entry": digest,
                             "landed_at_ms": touch.t, "overtaken_by": taker.call if taker else None}
    return None


def _classify_read(facts: RunFacts, reader: str, read: Touch) -> tuple[str, str, dict[str, Any]]:
    # Indexed lookups (the last write before the read, the writer's own touches): a run with
    # thousands of reads of one file is explained in time linear in its trace, not quadratic.
    last = facts.last_mutation_before(read.target, read.seq)
    where = {"target": read.target, "read_at_ms": read.t}
    if last is not None:
        writer_touches = [t for t in facts.touches_of(last.call, last.attempt) if t.target == read.target]
        unfinished = any(t.seq > read.seq and t.mutating for t in writer_touches)
        if last.call != reader and (last.op == "truncate" or unfinished):
            completion = next((t for t in writer_touches if t.seq > last.seq and t.op == "write"), None)
            return ("torn-read",
                    f"{reader} read {read.spelled} at {read.t} ms while {last.call} was half way through writing it "
                    f"({last.op} at {last.t} ms" + (f", finished at {completion.t} ms)" if completion else ")"),
                    {**where, "writer": last.call, "truncated_at_ms": last.t,
                     "written_at_ms": completion.t if completion else None})
        if last.call != reader and facts.position[last.call] > facts.position[reader]:
            return ("future-read",
                    f"{reader} read {read.spelled} at {read.t} ms after {last.call}, which comes later in model "
                    f"order, wrote it ({last.t} ms)",
                    {**where, "writer": last.call, "written_at_ms": last.t})
    for touch in facts.mutations_after(read.target, read.seq):
        if (touch.call != reader and facts.position[touch.call] < facts.position[reader]
                and facts.must_take_effect(touch.call) is not False):
            return ("stale-read",
                    f"{reader} read {read.spelled} at {read.t} ms, before {touch.call} (earlier in model order) "
                    f"wrote it at {touch.t} ms",
                    {**where, "writer": touch.call, "written_at_ms": touch.t})
    return ("divergent-result", f"{reader} read {read.spelled} at {read.t} ms and saw other content than in "
            "model order", where)


# -- final world -----------------------------------------------------------------------------


def _explain_world(facts: RunFacts, branch: _Branch, final: WorldState, ghost_calls: set[str]) -> list[Violation]:
    expected = branch.world.state()
    found: list[Violation] = []
    for target, want, got in _differences(expected, final, facts.result.world.canonical):
        touched_by_ghost = any(t.mutating and t.call in ghost_calls for t in facts.touches_on(target))
        if touched_by_ghost:
            continue  # already reported as a ghost effect
        found.append(_classify_target(facts, branch, target, want, got))
    found.extend(_ledger_violations(facts, expected, final, ghost_calls))
    if not found and not ghost_calls:
        found.append(Violation("divergent-world", "the final world differs from the model-order world",
                               {"expected_digest": expected.digest(), "final_digest": final.digest()}))
    return found


def _differences(expected: WorldState, final: WorldState,
                 identity: Callable[[str], str]) -> Iterator[tuple[str, str | None, str | None]]:
    """(target, expected content digest, final content digest) for each file or session value that
    differs; a file with several names (hard links) is reported once, by its identity."""
    want, got = expected.file_map, final.file_map
    seen: set[str] = set()
    for path in sorted(want.keys() | got.keys()):
        a, b = want.get(path), got.get(path)
        target = identity(path)
        if a != b and target not in seen:
            seen.add(target)
            yield target, None if a is None else content_digest(a)[:16], None if b is None else content_digest(b)[:16]
    if expected.cwd != final.cwd:
        yield "session:cwd", expected.cwd, final.cwd
    want_env, got_env = dict(expected.env), dict(final.env)
    for name in sorted(want_env.keys() | got_env.keys()):
        if want_env.get(name) != got_env.get(name):
            yield f"session:env:{name}", want_env.get(name), got_env.get(name)


def _classify_target(facts: RunFacts, branch: _Branch, target: str, want: str | None, got: str | None) -> Violation:
    where = {"target": target, "expected": want, "final": got}
    effective = [c.id for c in facts.result.scenario.calls if facts.must_take_effect(c.id) is not False]
    touches = [t for t in facts.touches_on(target) if t.call in effective]
    writes = {call: [t for t in touches if t.call == call and t.mutating] for call in effective}
    writes = {call: ts for call, ts in writes.items() if ts}
    for call, ts in writes.items():
        attempts = {t.attempt for t in ts}
        if len(attempts) > 1:
            return Violation("duplicate-effect", f"{call} changed {target} in {len(attempts)} attempts",
                             {**where, "call": call, "attempts": sorted(attempts)})
    for lost, lost_writes in writes.items():
        lost_at = lost_writes[-1]
        for other, other_writes in writes.items():
            if other == lost:
                continue
            read_before = next((t for t in touches if t.call == other and not t.mutating and t.seq < lost_at.seq),
                               None)
            if read_before is not None and other_writes[-1].seq > lost_at.seq:
                return Violation(
                    "lost-update",
                    f"{other} read {read_before.spelled} before {lost} wrote it ({lost_at.t} ms) and overwrote it "
                    f"at {other_writes[-1].t} ms: the update of {lost} is lost",
                    {**where, "lost": lost, "overwritten_by": other, "lost_write_at_ms": lost_at.t,
                     "overwrite_at_ms": other_writes[-1].t},
                )
    by_time = sorted(writes, key=lambda call: writes[call][-1].seq)
    by_model = sorted(writes, key=lambda call: facts.position[call])
    if len(writes) > 1 and by_time[-1] != by_model[-1]:
        last, late = by_model[-1], by_time[-1]
        return Violation(
            "lost-update",
            f"{late} wrote {writes[late][-1].spelled} at {writes[late][-1].t} ms, after {last} (later in model "
            f"order) at {writes[last][-1].t} ms: the update of {last} is lost",
            {**where, "lost": last, "overwritten_by": late, "lost_write_at_ms": writes[last][-1].t,
             "overwrite_at_ms": writes[late][-1].t, "write_order": by_time, "model_order": by_model},
        )
    for writer in writes:  # a writer that misread (e.g. a stale cwd) and so wrote the wrong thing
        misread = _first_misread(facts, writer, branch)
        if misread is not None:
            label, message, extra = _classify_read(facts, writer, misread)
            return Violation(label, f"{message}; so {target} differs from the model-order world",
                             {**where, **extra, "call": writer})
    return Violation("divergent-world", f"{target} differs from the model-order world",
                     {**where, "writers": list(writes)})


def _ledger_violations(facts: RunFacts, expected: WorldState, final: WorldState,
                       ghost_calls: set[str]) -> Iterator[Violation]:
    want, got = dict(expected.ledgers), dict(final.ledgers)
    for name in sorted(want.keys() | got.keys()):
        a, b = want.get(name, ()), got.get(name, ())
        if a == b:
            continue
        count_a: dict[str, int] = {}
        count_b: dict[str, int] = {}
        for entry in a:
            count_a[entry.call_id] = count_a.get(entry.call_id, 0) + 1
        for entry in b:
            count_b[entry.call_id] = count_b.get(entry.call_id, 0) + 1
        duplicated = [c for c in count_b if count_b[c] > count_a.get(c, 0) and c not in ghost_calls]
        if duplicated:
            call = duplicated[0]
            entries = "entry" if count_b[call] == 1 else "entries"
            yield Violation("duplicate-effect",
                            f"{call} added {count_b[call]} {entries} to ledger {name} "
                            f"(model order: {count_a.get(call, 0)})",
                            {"ledger": name, "call": call, "count": count_b[call],
                             "entries": [e.to_json() for e in b if e.call_id == call]})
        elif count_a == count_b and [e.call_id for e in a] != [e.call_id for e in b]:
            yield Violation("reordered-effect", f"entries of ledger {name} landed in another order than model order",
                            {"ledger": name, "expected_order": [e.call_id for e in a],
                             "final_order": [e.call_id for e in b]})
        elif count_a == count_b:
            # The same calls in the same order: an entry holds something else (a payload built from
            # an input read too early, say). Not a reorder: say which entry differs.
            mine, theirs = next((x.to_json(), y.to_json()) for x, y in zip(a, b, strict=True) if x != y)
            field = next(k for k in ("payload", "idempotency_key", "entry_id") if mine[k] != theirs[k])
            yield Violation("divergent-world",
                            f"ledger {name}: the entry of {theirs['call_id']} holds {field} {theirs[field]!r}; "
                            f"in model order it holds {mine[field]!r}",
                            {"ledger": name, "call": theirs["call_id"], "field": field, "entry": theirs[field],
                             "expected_entry": mine[field], "expected": [e.to_json() for e in a],
                             "final": [e.to_json() for e in b]})
        elif not any(c in ghost_calls for c in count_b):
            yield Violation("divergent-world", f"ledger {name} differs from the model-order world",
                            {"ledger": name, "expected": [e.to_json() for e in a], "final": [e.to_json() for e in b]})
