"""Approvals: no call that needs the user's confirmation runs without it.

Owns the label `unapproved-effect`. It applies when the scenario scripts a user (`[approvals]`); without
one every tool is pre-approved and there is nothing to judge. For every attempt of a call whose tool
is declared `needs_confirmation`, the user's latest answer to a request for that call strictly before
the attempt's start (trace order: time, then sequence) must be `approve`. Otherwise the attempt
started without asking, while the request was unanswered (the runtime did not wait, or took silence
for consent), or after the user denied it (e.g. a retry of a denied call): its effect could land
unapproved. The witness names the call, its tool, the attempt, the times of start, request and answer,
and the effects the attempt had (none if it was stopped in time; the start alone is the violation,
because the runtime handed the call to the tool).

Under hermes' command guard (`[approvals] guard = "hermes"`) a terminal call needs the user's approval
exactly when its command matches a dangerous-command pattern, and `session` counts as approve. An
approval the runtime took from its session cache (`cached`) counts only when the user had earlier
answered `session` for every pattern this command matches; a command all of whose patterns the user
approved for the session needs no answer of its own (asking again is allowed, not required). A cache
keyed by something coarser (a tool name, say) lets an unapproved command through. It reads the trace;
it never steers a run.
"""

from __future__ import annotations

from typing import Any

from harness.oracles.verdict import Verdict, Violation, passing
from harness.run import RunResult
from harness.scheduling.command_guard import dangerous_patterns
from harness.tools.spec import MUTATING_OPS

NAME = "approvals"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)


def check(result: RunResult) -> Verdict:
    scenario = result.scenario
    if scenario.approvals is None:
        return _PASSED
    catalogue = scenario.catalogue
    guard = scenario.approvals.guard == "hermes"
    calls = {call.id: call for call in scenario.calls} if guard else {}
    approved_for_session: set[str] = set()  # patterns the user really answered `session` for
    requested: dict[str, int] = {}  # call -> time of its first request
    answers: dict[str, tuple[str, int]] = {}  # call -> (latest answer so far, its time)
    later: dict[str, list[tuple[int, str]]] = {}  # every answer, for the witness
    starts: list[tuple[dict[str, Any], str | None, int | None]] = []
    for e in result.trace:
        ev = e["ev"]
        if ev == "approval_requested":
            requested.setdefault(e["call"], e["t"])
        elif ev == "approval":
            answer = e["answer"]
            if e.get("cached") and not set(e.get("patterns") or ()) <= approved_for_session:
                answer = "cached without a session approval"
            elif answer == "session" and not e.get("cached"):
                approved_for_session.update(e.get("patterns") or ())
            answers[e["call"]] = (answer, e["t"])
            later.setdefault(e["call"], []).append((e["t"], answer))
        elif ev == "start":
            call = calls.get(e["call"])
            if guard and call is not None and call.name == "terminal":
                patterns = dangerous_patterns(call)
                if not patterns or set(patterns) <= approved_for_session:
                    continue  # no pattern, or every one approved for the session: nothing to ask
            else:
                spec = catalogue.get(e["tool"])
                if spec is None or not spec.declared.needs_confirmation:
                    continue
            answer, at = answers.get(e["call"], (None, None))
            if answer not in ("approve", "session"):
                starts.append((e, answer, at))
    violations = []
    for e, answer, at in starts:
        call, attempt = e["call"], e["attempt"]
        effects = [{"t": t["t"], "op": t["op"], "target": t["target"]} for t in result.trace
                   if t["ev"] == "touch" and t["call"] == call and t["attempt"] == attempt and t["op"] in MUTATING_OPS]
        first_request = requested.get(call)
        witness: dict[str, Any] = {"call": call, "tool": e["tool"], "attempt": attempt, "started_at_ms": e["t"],
                                   "requested_at_ms": first_request if first_request is not None
                                   and first_request <= e["t"] else None,
                                   "answer": answer, "answered_at_ms": at, "effects": effects}
        if answer == "deny":
            why = f"after the user denied it at {at} ms"
        elif answer == "cached without a session approval":
            why = (f"on an approval taken from the session cache at {at} ms for patterns the user never "
                   "approved for the session")
        elif witness["requested_at_ms"] is None:
            why = "without asking the user"
        else:
            why = f"while its approval request (at {witness['requested_at_ms']} ms) was unanswered"
            after = [(t, a) for t, a in later.get(call, []) if t >= e["t"]]
            if after:
                witness["answer_after_start"] = {"answer": after[0][1], "t": after[0][0]}
                why += f"; the user answered {after[0][1]} at {after[0][0]} ms"
        landed = (f"; its effect landed at {effects[0]['t']} ms ({effects[0]['op']} {effects[0]['target']})"
                  if effects else "")
        violations.append(Violation("unapproved-effect",
                                    f"{call} ({e['tool']}, needs confirmation) started at {e['t']} ms {why}{landed}",
                                    witness))
    return Verdict.of(NAME, violations) if violations else _PASSED
