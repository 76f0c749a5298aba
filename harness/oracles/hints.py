"""Hints: a call's observed effects agree with the MCP hints its tool gave, where a scheduler relied on them.

Owns the label `hint-violated`. A tool's hints (`harness.tools.hints`) are a claim; its behaviour is what
the trace shows. A call contradicts a hint that was given (an absent hint claims nothing) when:

- `readOnlyHint = true` and it changed something (a write, truncate, remove, mkdir, a ledger entry, the
  shell's cwd or env) while another call of its turn ran beside it: a scheduler that trusts the hint
  runs read-only tools together;
- `idempotentHint = true` and a repeat of it (a second attempt, after a timeout or a failure) changed
  the world again: a file left with other content than it had, a new ledger entry; a scheduler that
  trusts the hint retries such tools;
- `openWorldHint = false` and it made an effect outside the machine (a ledger entry) that a scheduler
  ran beside other calls or repeated, trusting it to be local;
- `destructiveHint = false` ("only additive updates", for a tool not hinted read-only) and it destroyed a
  file's existing state (removed it, truncated it, or wrote content that does not keep the old content as
  its start) while a call that touched the same file ran beside it: a scheduler that trusts the hint runs
  additive tools beside others. Files only, and a write only where the trace's digests name both contents
  (the initial and final worlds' files): an overwrite of content no world shows is not judged.

A serial scheduler that never retries relies on no hint and is never blamed for a tool's lie. It only
reads the trace, the scenario's tools and the run's initial and final worlds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness.oracles.shape import shape_of
from harness.oracles.verdict import Verdict, Violation, passing
from harness.run import RunResult
from harness.tools.hints import McpHints
from harness.tools.spec import MUTATING_OPS
from harness.world.state import content_digest

NAME = "hints"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)
_UNHINTED = passing(NAME, "no tool of the scenario gives MCP hints")
LABELS = ("hint-violated",)
_CHANGES = MUTATING_OPS | {"append"}


def check(result: RunResult) -> Verdict:
    hinted = shape_of(result.scenario).hinted  # the catalogue's hinted tools, found once per scenario
    if not hinted:
        return _UNHINTED
    tools: dict[str, str] = {}
    spans: dict[tuple[str, int], list[float]] = {}
    batch_of: dict[str, int] = {}
    batch = -1
    for event in result.trace:
        ev = event.get("ev")
        if ev == "batch":
            batch += 1
        elif ev == "start":
            tools[event["call"]] = event["tool"]
            spans[(event["call"], event["attempt"])] = [event["t"], math.inf]
            batch_of.setdefault(event["call"], batch)
        elif ev == "end" and (event.get("call"), event.get("attempt")) in spans:
            spans[(event["call"], event["attempt"])][1] = event["t"]
    violations: list[Violation] = []
    seen: set[tuple[str, str]] = set()
    last: dict[str, Any] = {}  # target -> the digest the trace last showed it with ("gone" once removed)
    world = _Contents(result) if any(h.destructive is False for h in hinted.values()) else None
    for event in result.trace:
        if event.get("ev") != "touch":
            continue
        call, op, target = event["call"], event["op"], str(event["target"]).split("\x00")[0]
        hints = hinted.get(tools.get(call, ""))
        before = last.get(target)
        last[target] = "gone" if op == "remove" else event.get("digest", before)
        if hints is None or op not in _CHANGES:
            continue
        found = _contradictions(hints, call, event, op, target, before, spans, batch_of)
        if world is not None and hints.destructive is False and hints.read_only is not True:
            destroyed = world.destroyed(op, target, before, event.get("digest"))
            beside = [other for other in _beside(call, event["attempt"], spans, batch_of)
                      if world.touched(other, target)] if destroyed else []
            if beside:
                found.append(("destructiveHint", {"beside": beside, "destroyed": destroyed}))
        for hint, why in found:
            if (call, hint) in seen:
                continue
            seen.add((call, hint))
            violations.append(_violation(call, tools[call], hints, hint, why, event, target))
    return Verdict.of(NAME, violations) if violations else _PASSED


def _contradictions(hints: McpHints, call: str, event: Mapping[str, Any], op: str, target: str, before: Any,
                    spans: Mapping[tuple[str, int], list[float]],
                    batch_of: Mapping[str, int]) -> list[tuple[str, dict[str, Any]]]:
    attempt = event["attempt"]
    found: list[tuple[str, dict[str, Any]]] = []
    beside = _beside(call, attempt, spans, batch_of)
    external = target.startswith("ledger:") and op == "append"
    if hints.read_only is True and beside:
        found.append(("readOnlyHint", {"beside": beside}))
    changed = external or (before != "gone" if op == "remove" else before != event.get("digest"))
    if hints.idempotent is True and attempt > 1 and changed:
        found.append(("idempotentHint", {"repeat": attempt}))
    if hints.open_world is False and external and (beside or attempt > 1):
        found.append(("openWorldHint", {"beside": beside} if beside else {"repeat": attempt}))
    return found


def _beside(call: str, attempt: int, spans: Mapping[tuple[str, int], list[float]],
            batch_of: Mapping[str, int]) -> list[str]:
    """The calls of `call`'s batch whose attempts overlapped this attempt, in start order."""
    start, end = spans[(call, attempt)]
    return list(dict.fromkeys(other for (other, _), (s, e) in spans.items()
                              if other != call and batch_of.get(other) == batch_of.get(call) and s < end and start < e))


_SAYS = {"readOnlyHint": "readOnlyHint=true", "idempotentHint": "idempotentHint=true",
         "openWorldHint": "openWorldHint=false", "destructiveHint": "destructiveHint=false (only additive updates)"}
_DID = {"readOnlyHint": "ran it beside {beside} (read-only tools run together)",
        "idempotentHint": "retried it (attempt {repeat}), and the repeat changed the world again",
        "openWorldHint": "treated the effect as local: {scheduled}",
        "destructiveHint": "ran it beside {beside}, which touched that file (additive tools run beside others)"}


class _Contents:
    """What the trace's 16-character digests of a run's files stand for, where a world shows the content (the
    initial world's files and the final one's), and which attempts touched which target."""

    def __init__(self, result: RunResult) -> None:
        initial = result.initial.file_map
        self.initial = {path: content_digest(text)[:16] for path, text in initial.items()}
        self.dirs = set(result.initial.dirs)
        self.text = {content_digest(text)[:16]: text for text in (*initial.values(), *result.final.file_map.values())}
        self.by_call: dict[str, set[str]] = {}
        for event in result.trace:
            if event.get("ev") == "touch":
                self.by_call.setdefault(event["call"], set()).add(str(event["target"]).split("\x00")[0])

    def touched(self, call: str, target: str) -> bool:
        return target in self.by_call.get(call, ())

    def destroyed(self, op: str, target: str, before: Any, after: Any) -> str | None:
        """How this touch destroyed the file's existing state (`removed it`, ...), or None: it did not, or the
        contents needed to tell are not known."""
        if not target.startswith("/"):
            return None
        prior = before if before is not None else self.initial.get(target, "dir" if target in self.dirs else None)
        if prior in (None, "gone"):
            return None  # nothing was there: creating is additive
        if op == "remove":
            return "removed it"
        old, new = self.text.get(prior), self.text.get(after) if isinstance(after, str) else None
        if op == "truncate":
            return "truncated it" if prior != _EMPTY else None
        if op == "write" and prior not in (_EMPTY, after) and old is not None and new is not None \
                and not new.startswith(old):
            return "overwrote its content"
        return None


_EMPTY = content_digest("")[:16]


def _violation(call: str, tool: str, hints: McpHints, hint: str, why: dict[str, Any], event: Mapping[str, Any],
               target: str) -> Violation:
    beside = why.get("beside", [])
    scheduled = f"ran it beside {', '.join(beside)}" if beside else f"repeated it (attempt {why.get('repeat')})"
    did = _DID[hint].format(beside=", ".join(beside), repeat=why.get("repeat"), scheduled=scheduled)
    effect = f"{event['op']} {target}" + (f" ({why['destroyed']})" if "destroyed" in why else "")
    message = (f"{call} ({tool}) claims {_SAYS[hint]} but did {effect} at {event['t']} ms; a scheduler that trusts "
               f"the hint {did}")
    witness: dict[str, Any] = {"call": call, "tool": tool, "hint": hint, "hints": hints.to_data(), "target": target,
                               "effect": {"op": event["op"], "target": target, "at_ms": event["t"],
                                          "attempt": event["attempt"]}}
    if beside:
        witness["beside"] = beside
    if "repeat" in why:
        witness["repeat"] = why["repeat"]
    if "destroyed" in why:
        witness["destroyed"] = why["destroyed"]
    return Violation("hint-violated", message, witness)
