"""The anomaly labels of model-order serializability: what a divergence from model order is, read
from the trace's touches.

Owns the labels and their witnesses: `ghost_effects` (a call reported failed changed the world),
`explain_result` (an observed result differs from the model-order one: a duplicate effect, a torn,
future or stale read, a reordered or duplicated ledger entry, else `divergent-result`),
`explain_world` (the final world differs: a lost update, a duplicate effect, a misread by a writer,
a ledger's duplicates, order or entries, else `divergent-world`) and `linked` (a divergence another
violation on the same target explains says so). Given the model-order history closest to the run
(`harness.oracles.model_order.Branch`), it never searches for one and never steers a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harness.model import Outcome, ToolCall
from harness.oracles.facts import RunFacts, Touch
from harness.oracles.model_order import Branch
from harness.oracles.verdict import Violation, calls_named
from harness.tools.spec import MUTATING_OPS
from harness.world.state import WorldState, content_digest

#: Violations on a target that make a later read of it see other content than in model order.
_UPSTREAM = ("lost-update", "torn-read", "stale-read", "future-read", "ghost-effect", "duplicate-effect",
             "divergent-world")


def linked(violations: list[Violation], facts: RunFacts) -> list[Violation]:
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


def ghost_effects(facts: RunFacts) -> Iterator[Violation]:
    rollbacks: list[tuple[int, int, frozenset[str] | None]] | None = None  # read from the trace when first needed
    reported_results = facts.reported
    for call in facts.shape.calls:
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


def explain_result(facts: RunFacts, call: ToolCall, branch: Branch, observed: tuple[Any, Any, Any]) -> Violation:
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


def _first_misread(facts: RunFacts, call_id: str, branch: Branch) -> Touch | None:
    """The first read of the reported attempt that saw something else than in model order."""
    attempt = facts.reported_attempt(call_id)
    actual = [t for t in facts.touches_of(call_id, attempt.attempt if attempt else None) if not t.mutating]
    expected = [(target, digest) for op, target, digest in branch.expected_touches.get(call_id, [])
                if op not in MUTATING_OPS]
    for touch, (target, digest) in zip(actual, expected, strict=False):
        if touch.target != target or touch.digest != digest:
            return touch
    return None


def _reordered_append(facts: RunFacts, call_id: str, branch: Branch) -> tuple[str, dict[str, Any]] | None:
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
    if read.op == "cached" and last is not None and last.call != reader:
        # A read cache (hermes' read_file dedup) vouched for content a write since replaced, the file's
        # mtime not having moved since the cache recorded it: the reader works from a stale copy.
        # The read whose copy the cache kept: the last one of that content before the write.
        filled = next((t for t in reversed(list(facts.touches_on(read.target)))
                       if t.seq < last.seq and t.op == "read" and t.digest == read.digest), None)
        return ("stale-read",
                f"{reader}'s read cache answered 'unchanged' for {read.spelled} at {read.t} ms, but {last.call} "
                f"wrote it at {last.t} ms, after the cached copy was read"
                + (f" (by {filled.call} at {filled.t} ms)" if filled is not None else "")
                + " and within the mtime the cache recorded",
                {**where, "writer": last.call, "written_at_ms": last.t, "cached": True,
                 **({"cached_by": filled.call, "cached_at_ms": filled.t} if filled is not None else {})})
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


def explain_world(facts: RunFacts, branch: Branch, final: WorldState, ghost_calls: set[str]) -> list[Violation]:
    expected = branch.world.state()
    found: list[Violation] = []
    for target, want, got in _differences(expected, final, facts.result.world.canonical):
        touched_by_ghost = any(t.mutating and t.call in ghost_calls for t in facts.touches_on(target))
        if touched_by_ghost:
            continue  # already reported as a ghost effect
        found.append(_classify_target(facts, branch, target, want, got))
    found.extend(ledger_violations(facts, expected, final, ghost_calls))
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


def _classify_target(facts: RunFacts, branch: Branch, target: str, want: str | None, got: str | None) -> Violation:
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
            # A writer that read the file again after `lost` wrote it (hermes' V4A apply phase re-reads)
            # built its write on that update: nothing was lost there, whatever else went wrong.
            reread = any(t.call == other and not t.mutating and lost_at.seq < t.seq < other_writes[-1].seq
                         for t in touches)
            if read_before is not None and other_writes[-1].seq > lost_at.seq and not reread:
                return Violation(
                    "lost-update",
                    f"{other} read {read_before.spelled} before {lost} wrote it ({lost_at.t} ms) and overwrote it "
                    f"at {other_writes[-1].t} ms: the update of {lost} is lost",
                    {**where, "lost": lost, "overwritten_by": other, "lost_write_at_ms": lost_at.t,
                     "overwrite_at_ms": other_writes[-1].t},
                )
    by_time = sorted(writes, key=lambda call: writes[call][-1].seq)
    by_model = sorted(writes, key=lambda call: facts.position[call])
    last, late = (by_model[-1], by_time[-1]) if writes else ("", "")
    # As above: a late writer that re-read the file after the other's write did not erase it.
    rebuilt = any(t.call == late and not t.mutating and writes[last][-1].seq < t.seq < writes[late][-1].seq
                  for t in touches) if len(writes) > 1 and last != late else False
    if len(writes) > 1 and last != late and not rebuilt:
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


def ledger_violations(facts: RunFacts, expected: WorldState, final: WorldState,
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
