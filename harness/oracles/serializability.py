"""Model-order serializability: did the run behave as if the calls that took effect had run alone,
one after another, in model order?

Owns the replay and the anomaly labels. It replays, on the initial world and with the tools' pure
semantics, every call the report says took effect (ok, or an error the tool returned), skips those
the report says did not (timeout, cancelled, skipped), and tries both for `unknown`. Each observed
result must equal its replayed observation and the final world must equal a replayed world.
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

from collections.abc import Callable, Iterator
from typing import Any

from harness.model import ToolCall
from harness.oracles.facts import RunFacts, Touch
from harness.oracles.verdict import Verdict, Violation
from harness.run import RunResult
from harness.tools.semantics import Observation, apply, partial_states
from harness.tools.spec import MUTATING_OPS
from harness.world.state import WorldState, content_digest
from harness.world.world import World

NAME = "serializability"
#: Each `unknown` outcome doubles the worlds to consider; past this many, unknowns count as landed.
MAX_BRANCHES = 64


class _Branch:
    """One possible model-order history: a world plus the touches each replayed call made."""

    __slots__ = ("expected_touches", "observations", "world")

    def __init__(self, world: World) -> None:
        self.world = world
        self.expected_touches: dict[str, list[tuple[str, str, str | None]]] = {}
        self.observations: dict[str, Observation] = {}

    def fork(self) -> _Branch:
        twin = _Branch(self.world.clone())
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


def check(result: RunResult) -> Verdict:
    facts = RunFacts(result)
    violations: list[Violation] = []
    ghosts = _ghost_effects(facts)
    violations.extend(ghosts)
    ghost_calls = {v.witness["call"] for v in ghosts}

    branches = [_Branch(World.from_state(result.initial))]
    for call in result.scenario.calls:
        effect = facts.must_take_effect(call.id)
        if effect is False:
            continue
        attempts = facts.attempts_of(call.id)
        key = attempts[0].key if attempts else None
        if effect is None:
            forked = []
            torn = any("torn_write" in a.injected for a in attempts)
            for branch in branches:
                for state in partial_states(branch.world, call, result.scenario.catalogue, idempotency_key=key,
                                            torn_write=torn)[:-1]:
                    stopped = branch.fork()
                    stopped.world = World.from_state(state)
                    forked.append(stopped)
                forked.append(branch)
            if len(forked) <= MAX_BRANCHES:
                for branch in branches:
                    branch.apply(call, result, key)  # the branch that ran to the end
                branches = forked
                continue
        for branch in branches:
            branch.apply(call, result, key)
        if effect is True:
            reported = facts.reported[call.id]
            observed = (reported.outcome, reported.value, reported.error)
            matching = [b for b in branches if _same(b.observations[call.id], observed)]
            if matching:
                branches = matching
            else:
                violations.append(_explain_result(facts, call, branches[0], observed))

    final = result.final
    if not any(branch.world.state() == final for branch in branches):
        violations.extend(_explain_world(facts, branches[0], final, ghost_calls))
    return Verdict.of(NAME, violations)


def _same(observation: Observation, observed: tuple[Any, Any, Any]) -> bool:
    return (observation.outcome, observation.value, observation.error) == observed


def _ghost_effects(facts: RunFacts) -> Iterator[Violation]:
    for call in facts.result.scenario.calls:
        if facts.must_take_effect(call.id) is not False:
            continue
        landed = [t for t in facts.touches_of(call.id) if t.mutating]
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
    before = [t for t in facts.touches_on(read.target) if t.mutating and t.seq < read.seq]
    where = {"target": read.target, "read_at_ms": read.t}
    if before:
        last = before[-1]
        unfinished = any(t.call == last.call and t.attempt == last.attempt and t.seq > read.seq and t.mutating
                         for t in facts.touches_on(read.target))
        if last.call != reader and (last.op == "truncate" or unfinished):
            completion = next((t for t in facts.touches_on(read.target)
                               if t.call == last.call and t.attempt == last.attempt and t.seq > last.seq
                               and t.op == "write"), None)
            return ("torn-read",
                    f"{reader} read {read.target} at {read.t} ms while {last.call} was half way through writing it "
                    f"({last.op} at {last.t} ms" + (f", finished at {completion.t} ms)" if completion else ")"),
                    {**where, "writer": last.call, "truncated_at_ms": last.t,
                     "written_at_ms": completion.t if completion else None})
        if last.call != reader and facts.position[last.call] > facts.position[reader]:
            return ("future-read",
                    f"{reader} read {read.target} at {read.t} ms after {last.call}, which comes later in model "
                    f"order, wrote it ({last.t} ms)",
                    {**where, "writer": last.call, "written_at_ms": last.t})
    for touch in facts.touches_on(read.target):
        if (touch.mutating and touch.seq > read.seq and touch.call != reader
                and facts.position[touch.call] < facts.position[reader]
                and facts.must_take_effect(touch.call) is not False):
            return ("stale-read",
                    f"{reader} read {read.target} at {read.t} ms, before {touch.call} (earlier in model order) "
                    f"wrote it at {touch.t} ms",
                    {**where, "writer": touch.call, "written_at_ms": touch.t})
    return ("divergent-result", f"{reader} read {read.target} at {read.t} ms and saw other content than in "
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
            read_before = any(t.call == other and not t.mutating and t.seq < lost_at.seq for t in touches)
            if read_before and other_writes[-1].seq > lost_at.seq:
                return Violation(
                    "lost-update",
                    f"{other} read {target} before {lost} wrote it ({lost_at.t} ms) and overwrote it at "
                    f"{other_writes[-1].t} ms: the update of {lost} is lost",
                    {**where, "lost": lost, "overwritten_by": other, "lost_write_at_ms": lost_at.t,
                     "overwrite_at_ms": other_writes[-1].t},
                )
    by_time = sorted(writes, key=lambda call: writes[call][-1].seq)
    by_model = sorted(writes, key=lambda call: facts.position[call])
    if len(writes) > 1 and by_time[-1] != by_model[-1]:
        last, late = by_model[-1], by_time[-1]
        return Violation(
            "lost-update",
            f"{late} wrote {target} at {writes[late][-1].t} ms, after {last} (later in model order) at "
            f"{writes[last][-1].t} ms: the update of {last} is lost",
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
            yield Violation("duplicate-effect",
                            f"{call} added {count_b[call]} entries to ledger {name} "
                            f"(model order: {count_a.get(call, 0)})",
                            {"ledger": name, "call": call, "count": count_b[call],
                             "entries": [e.to_json() for e in b if e.call_id == call]})
        elif count_a == count_b:
            yield Violation("reordered-effect", f"entries of ledger {name} landed in another order than model order",
                            {"ledger": name, "expected_order": [e.call_id for e in a],
                             "final_order": [e.call_id for e in b]})
        elif not any(c in ghost_calls for c in count_b):
            yield Violation("divergent-world", f"ledger {name} differs from the model-order world",
                            {"ledger": name, "expected": [e.to_json() for e in a], "final": [e.to_json() for e in b]})
