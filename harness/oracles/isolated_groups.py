"""Calls of unknown effect decided on their own: the groups of such calls that share targets only
among themselves, and where each group stopped.

A call of unknown effect may have stopped at any of its touch points, so each one multiplies the
model-order histories a search must follow. A group whose targets no call outside it touches cannot
change what another call sees, nor be changed by it: the search (`harness.oracles.history_search`)
replays it last, on its own, stopped where its targets get their final content. Owns finding those
groups (`isolated_groups`, from the touches of a full replay and of the trace), checking that a
history kept them isolated (`conflicts`) and choosing and replaying their stops (`settle_alone`,
`choose_stops`, `replay_to`). It never labels a divergence and never steers a run.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.oracles.facts import RunFacts
from harness.oracles.model_order import Branch, Step
from harness.run import RunResult
from harness.tools.catalogue import prepare
from harness.tools.semantics import apply
from harness.tools.spec import MUTATING_OPS, ToolError, ToolIO
from harness.world.state import WorldState
from harness.world.world import World, WorldError


@dataclass(frozen=True, slots=True)
class Group:
    """Calls of unknown effect that share targets only among themselves, in model order."""

    steps: tuple[Step, ...]
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


def isolated_groups(facts: RunFacts, steps: list[Step]) -> list[Group]:
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
    by_root: dict[str, list[Step]] = {}
    for step in unknown:
        by_root.setdefault(root(step.call.id), []).append(step)
    groups = []
    for members in by_root.values():
        ids = {step.call.id for step in members}
        group_t = set().union(*(touched.get(c, set()) for c in ids))
        group_w = set().union(*(written.get(c, set()) for c in ids))
        if (all(touchers.get(k, set()) <= ids for k in group_w)
                and all(writers.get(k, set()) <= ids for k in group_t)):
            groups.append(Group(tuple(members), frozenset(group_t), frozenset(group_w),
                                 tuple(sorted(set().union(*(names.get(c, set()) for c in ids))))))
    return groups


class _Recorder(list[tuple[str, str]]):
    """A touch sink that keeps (op, raw target) pairs."""

    def __call__(self, op: str, target: str, digest: str | None) -> None:
        self.append((op, target))


def conflicts(branch: Branch, groups: list[Group]) -> bool:
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
Stop = int | None


def choose_stops(base: WorldState, group: Group, result: RunResult, limit: int) -> tuple[Stop, ...] | None:
    """Where each call of the group stopped, in a history that gives the group's targets their final
    content (every call run to its end if none does: the final world then differs whichever way it
    went); None if the group has more than `limit` histories (the search's `MAX_BRANCHES`)."""
    wanted = _view(result.final, group.names)
    frontier: dict[str, tuple[WorldState, tuple[Stop, ...]]] = {base.digest(): (base, ())}
    for step in group.steps:
        reached: dict[str, tuple[WorldState, tuple[Stop, ...]]] = {}
        for state, stops in frontier.values():
            for stop, after in _stops(state, step, result):
                reached.setdefault(after.digest(), (after, (*stops, stop)))
            if len(reached) > limit:
                return None
        frontier = reached
    for state, stops in frontier.values():
        if _view(state, group.names) == wanted:
            return stops
    return tuple(None for _ in group.steps)


def _stops(state: WorldState, step: Step, result: RunResult) -> list[tuple[Stop, WorldState]]:
    """Every world the call can leave behind from `state`: stopped after 0, 1, ... steps, or at its end."""
    world = World.from_state(state)
    found: list[tuple[Stop, WorldState]] = [(0, state)]
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


def settle_alone(branch: Branch, group: Group, result: RunResult) -> Stop:
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
        elif world.is_link(name):
            view.append(("link", world.read_link(name)))
        elif world.is_dir(name):
            view.append(("dir",))
        elif world.exists(name):
            view.append(world.read_text(name))
        else:
            view.append(None)
    return tuple(view)


def replay_to(branch: Branch, step: Step, stop: Stop, result: RunResult) -> None:
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
