"""The interleaving story of a violation: the few steps that matter, in the order they happened.

Owns `story(violation, result, origins)`: the racing touches the witness is about
(`harness.report.races.racing_touches`) and the starts, ends and abandons of the calls involved,
in trace order; a `*` on each step that ran before a call earlier in model order had ended (where
the schedule deviated from model order). A witness may name only some of the calls behind a violation
(a divergent world names the calls that wrote the file, not the one whose torn read made it skip its
edit), so the story of a divergence, and any story none of whose steps ran out of model order, takes
in the other violations of the run on the same file, ledger or session value with their racing
touches; if still no step ran out of order but the run has a race elsewhere, the note names it; only
a story in a run with no race at all gets the note that the bug needs no reordering. For a
misreported outcome, the call's end is marked and a last step says what the model was told. And,
for a user's own scheduler run under `harness.diagnosis.origins.recording`, the user's source line
where each call was started and where it was awaited. `render` lays it out as text lines (the same
lines in `harness run`, `replay`, `explore` and a failing `check_scheduler`); `to_json` is the
`story` field of run JSON. It never judges (the oracles did) and never re-runs anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.diagnosis.origins import Origins
from harness.oracles.facts import spelled
from harness.oracles.verdict import Kind, Violation, calls_named
from harness.report.plural import count
from harness.report.races import racing_touches
from harness.run import RunResult
from harness.sim.trace import TraceEvent

#: At most this many steps; a longer story keeps the racing touches and the steps nearest them.
MAX_STEPS = 14

_LIFECYCLE = ("start", "end", "abandon")

#: Labels that are races between calls whatever their story shows: a read or a write landed where
#: model order would not have put it (a `cross-agent-` prefix counts as the label after it).
_RACES = ("stale-read", "torn-read", "future-read", "lost-update", "reordered-effect")


@dataclass(frozen=True)
class Step:
    t: int
    seq: int
    call: str
    text: str
    deviated: bool
    race: str | None = None  # the touch's role in the race (e.g. "read", "truncate"), None for others
    source: str | None = None  # "started at path:line (function)" / "awaited at ..." (user schedulers)
    #: The label of another violation of the run this racing touch belongs to (None: the story's own).
    of: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "seq": self.seq, "call": self.call, "step": self.text, "deviated": self.deviated,
                "race": self.race, "source": self.source, "of": self.of}


@dataclass(frozen=True)
class Story:
    label: str
    model_order: tuple[str, ...]
    steps: tuple[Step, ...]
    omitted: int = 0
    #: Several agents (`[[agents]]`): the agents whose calls take part. Model order then holds within
    #: each agent only, so a `*` marks a step that ran before an earlier call of the same agent ended.
    agents: tuple[str, ...] = ()
    #: A race elsewhere in the run (its label and calls) when none of these steps ran out of model
    #: order: this violation may follow from it, so the story must not say no reordering is needed.
    follows: tuple[str, tuple[str, ...]] | None = None

    @property
    def reordered(self) -> bool:
        return any(step.deviated for step in self.steps)

    @property
    def note(self) -> str | None:
        if self.label == "tool-error":  # the tool's own code failed: no schedule is to blame or a cure
            return ("the tool's own code failed on this call: fix the tool (or make it raise ToolError for a "
                    "failure it means); the order the calls ran in is not the cause")
        if self.reordered:
            return None
        if len(self.agents) > 1:
            return (f"no reordering within an agent: the race is between agents {' and '.join(self.agents)}, "
                    "whose turns ran at the same time; no agent's own order is at fault, the runtime let their "
                    "tasks share the world unguarded")
        if self.follows is not None:
            label, calls = self.follows
            named = f" ({', '.join(calls)})" if calls else ""
            return (f"no step above ran out of model order, but the {label} of this run{named} did: the "
                    f"{self.label} may follow from that race (see its story), so look there first")
        if len(self.model_order) == 1:
            return (f"no reordering needed: only {self.model_order[0]} takes part, so the bug comes from how "
                    "that call was run, timed out, retried or reported, not from an interleaving")
        return ("no reordering needed: every step above ran in model order, so running the calls one at a time "
                "in model order is no cure; the bug comes from how the calls were run, timed out, retried or "
                "reported")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Story:
        steps = tuple(Step(s["t"], s["seq"], s["call"], s["step"], s["deviated"], s.get("race"), s.get("source"),
                           s.get("of")) for s in data["steps"])
        follows = data.get("follows")
        return cls(data["label"], tuple(data["model_order"]), steps, data.get("omitted", 0),
                   tuple(data.get("agents", ())),
                   (follows["label"], tuple(follows["calls"])) if follows is not None else None)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "model_order": list(self.model_order),
                "steps": [step.to_json() for step in self.steps], "omitted": self.omitted,
                "reordered": self.reordered, "note": self.note, "agents": list(self.agents),
                "follows": {"label": self.follows[0], "calls": list(self.follows[1])} if self.follows else None}


def story(violation: Violation, result: RunResult, origins: Origins | None = None,
          run_violations: Sequence[Violation] | None = None) -> Story | None:
    """The story of `violation` in `result`, or None when the witness names no call of the run.

    `run_violations` are every violation found in the run (the oracles are asked when it is None):
    a story none of whose steps ran out of model order takes in those on the same target, or names a
    race elsewhere in the run, before it says the bug needs no reordering."""
    if violation.kind is Kind.LIVENESS:
        return None  # a hang or a late call is about time, not interleaving (see harness.report.hang)
    told = _tell(violation, result, origins, ())
    # A divergence names what differs, not what made it differ: it is always told with the races on
    # its target. Any other story is complete unless none of its steps ran out of model order.
    divergence = violation.label.startswith("divergent-")
    if told is None or len(told.agents) > 1 or (told.reordered and not divergence):
        return told
    if run_violations is None:
        from harness.oracles import check

        run_violations = [v for verdict in check(result) for v in verdict.violations]
    others = [v for v in run_violations if v.kind is Kind.SAFETY and v != violation]
    # The witness may name only part of the cause: the violations on the same target, with theirs.
    mine = _targets(violation)
    related = [v for v in others if mine & _targets(v)]
    if related:
        widened = _tell(violation, result, origins, related)
        if widened is not None and (widened.reordered or divergence):
            told = widened
    if told.reordered:
        return told
    for other in others:  # a race elsewhere in the run this one may follow from
        own = _tell(other, result, None, ())
        if other.label.removeprefix("cross-agent-") in _RACES or (own is not None and own.reordered):
            position = {call.id: i for i, call in enumerate(result.scenario.calls)}
            calls = own.model_order if own is not None else tuple(calls_named(other.witness, position))
            return replace(told, follows=(other.label, calls))
    return told


def _targets(violation: Violation) -> set[str]:
    """The file, session value or ledger a violation is about (by its witness), if any."""
    w = violation.witness
    found = {w["target"]} if isinstance(w.get("target"), str) else set()
    if isinstance(w.get("ledger"), str):
        found.add(f"ledger:{w['ledger']}")
    return found


def _tell(violation: Violation, result: RunResult, origins: Origins | None,
          related: Sequence[Violation]) -> Story | None:
    """The story of `violation`, with the racing touches and calls of the `related` violations too."""
    touches = racing_touches(violation, result)
    of: dict[int, str] = {}
    position = {call.id: i for i, call in enumerate(result.scenario.calls)}
    involved = {str(t["call"]) for t in touches} | set(calls_named(violation.witness, position))
    for other in related:
        for touch in racing_touches(other, result):
            if all(int(t["seq"]) != int(touch["seq"]) for t in touches):
                touches.append(touch)
                of[int(touch["seq"])] = other.label
        involved |= {str(t["call"]) for t in touches} | set(calls_named(other.witness, position))
    involved &= set(position)
    if not involved:
        return None
    roles = {int(t["seq"]): str(t["role"]) for t in touches}
    told = _told(violation, result)
    if told is not None:
        roles.update(told[0])
    chosen = [e for e in result.trace
              if e.get("call") in involved and (e["ev"] in _LIFECYCLE or int(e["seq"]) in roles)]
    chosen, omitted = _trimmed(chosen, roles)
    ends = _last_ends(result.trace, involved)
    # Several agents: no model order spans two of them, so only an agent's own calls can deviate.
    agent_of = {call.id: run.agent or "" for run in result.batches for call in run.batch} if result.agents else {}
    steps = []
    for event in chosen:
        call = str(event["call"])
        deviated = any(position[other] < position[call] and ends.get(other, 1 << 62) > int(event["seq"])
                       and agent_of.get(other) == agent_of.get(call)
                       for other in involved if other != call)
        steps.append(Step(int(event["t"]), int(event["seq"]), call, _step_text(event), deviated,
                          roles.get(int(event["seq"])), _source(event, origins), of.get(int(event["seq"]))))
    if not steps:
        return None  # the calls it names never started: nothing happened to tell
    if told is not None and told[1] is not None:
        steps.append(told[1])
    order = tuple(sorted(involved, key=position.__getitem__))
    agents = tuple(dict.fromkeys(agent_of[call] for call in order)) if agent_of else ()
    return Story(violation.label, order, tuple(steps), omitted, agents)


def stories(violations: Iterable[Violation], result: RunResult, origins: Origins | None = None,
            limit: int = 2, run_violations: Sequence[Violation] | None = None) -> list[Story]:
    """The stories of the first `limit` violations that have one, one per label; `run_violations` as
    for `story`."""
    found: list[Story] = []
    labels: set[str] = set()
    for violation in violations:
        if len(found) >= limit:
            break
        if violation.label in labels:
            continue
        told = story(violation, result, origins, run_violations)
        if told is not None:
            labels.add(violation.label)
            found.append(told)
    return found


def _told(violation: Violation, result: RunResult) -> tuple[dict[int, str], Step | None] | None:
    """A misreported outcome is told as what the call did (its end, or its abandonment, marked) and
    what the model was told (a last step at the moment the batch answered): (roles by trace position,
    that step). None for other labels."""
    if violation.label != "misreported-outcome":
        return None
    w = violation.witness
    call, attempt, ended = w.get("call"), w.get("attempt"), w.get("ended_at_ms")
    roles = {int(e["seq"]): "what it did" for e in result.trace
             if e["ev"] in ("end", "abandon") and e.get("call") == call and e.get("attempt") == attempt
             and e["t"] == ended and (e["ev"] == "abandon") == bool(w.get("abandoned"))}
    answer = next((e for e in result.trace if e["ev"] == "batch_end" and e.get("index") == w.get("batch")), None)
    if answer is None or not isinstance(call, str):
        return roles, None
    error = w.get("reported_error")
    text = f"reported {w.get('reported')}" + (f": {_clipped(str(error))}" if error else "")
    return roles, Step(int(answer["t"]), int(answer["seq"]), call, text, False, "what the model was told")


def _clipped(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render(told: Story) -> list[str]:
    """The story as text lines: a title, one line per step, the note."""
    lines = [f"story ({told.label}): model order {', '.join(told.model_order)}; "
             "* = ran before a call earlier in model order had ended"]
    if told.agents:
        lines = [f"story ({told.label}): agents {', '.join(told.agents)}, each in its own model order; "
                 "* = ran before an earlier call of the same agent had ended"]
    width = max(len(step.call) for step in told.steps)
    text_width = max(len(step.text) for step in told.steps)
    for step in told.steps:
        aside = f"<- {step.of or told.label}: {step.race}" if step.race else (step.source or "")
        line = f"  {'*' if step.deviated else ' '} {step.t:>7} ms  {step.call:<{width}}  {step.text:<{text_width}}"
        lines.append(f"{line}  {aside}".rstrip())
    if told.omitted:
        lines.append(f"    ... {count(told.omitted, 'more step')} of these calls not shown (see the timeline)")
    if told.note:
        lines.append(f"  {told.note}")
    return lines


def _last_ends(trace: Sequence[TraceEvent], calls: set[str]) -> dict[str, int]:
    """The trace position of each call's last end (its last attempt's): until then, in model order,
    no later call would have taken a step."""
    ends: dict[str, int] = {}
    for event in trace:
        if event["ev"] == "end" and event.get("call") in calls:
            ends[str(event["call"])] = int(event["seq"])
    return ends


def _trimmed(events: list[TraceEvent], races: Mapping[int, str]) -> tuple[list[TraceEvent], int]:
    """At most MAX_STEPS events: the racing touches and those nearest them in trace order."""
    if len(events) <= MAX_STEPS:
        return events, 0
    anchors = [i for i, e in enumerate(events) if int(e["seq"]) in races] or [0]
    ranked = sorted(range(len(events)), key=lambda i: (min(abs(i - a) for a in anchors), i))
    keep = sorted(ranked[:MAX_STEPS])
    return [events[i] for i in keep], len(events) - len(keep)


def _step_text(event: TraceEvent) -> str:
    ev = event["ev"]
    attempt = f" (attempt {event['attempt']})" if event.get("attempt", 1) != 1 else ""
    if ev == "start":
        return f"start{attempt}"
    if ev == "end":
        detached = ", after it was abandoned" if event.get("detached") else ""
        return f"end {event['outcome']}{attempt}{detached}"
    if ev == "abandon":
        return f"abandoned as {event['outcome']}{attempt}: {event.get('reason', '')}"
    return f"{event['op']} {spelled(event['target'], event.get('as'))}"


def _source(event: TraceEvent, origins: Origins | None) -> str | None:
    if origins is None or event["ev"] not in ("start", "end"):
        return None
    call, attempt = str(event["call"]), int(event.get("attempt", 1))
    if event["ev"] == "start":
        where = origins.started_at(call, attempt)
        return f"started at {where}" if where else None
    where = origins.awaited_at(call, attempt)
    return f"awaited at {where}" if where else None


def story_lines(violations: Iterable[Violation], result: RunResult, origins: Origins | None = None,
                limit: int = 2, run_violations: Sequence[Violation] | None = None) -> list[str]:
    """The rendered stories of the first `limit` violations that have one (one per label)."""
    return [line for told in stories(violations, result, origins, limit, run_violations) for line in render(told)]
