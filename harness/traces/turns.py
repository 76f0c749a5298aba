"""Span records -> turns: which tool calls one model call emitted, and what happened to each.

Owns the grouping rules. A tool call's span is grouped with the other tool calls of its parent span.
When the parent is a model call (`chat` with `execute_tool` children), that is the turn. When the
parent is an agent span the model calls share with the tool calls (`invoke_agent` with `chat`, tools,
`chat`, tools ...), each tool call belongs to the last sibling model call that ended before it started.
Spans of one call id in one turn are the attempts of one call (a retry), in the order they started. A
tool span without a call id takes one from the tool calls its model call's record says it emitted
(`SpanRecord.emitted`, when the export has them): in start order, the first not yet taken with the
same tool and arguments, else (a retry) the last taken with them; a call still without an id is its
own call. `error.type` (or an error status) gives the outcome: a type
naming a timeout is `timeout`, one naming a cancellation `cancelled`, any other `error`. Turns come
in the order they started (ties by trace and span id), so the same spans give the same turns whatever
order the files listed them in. It never reads files and never fits anything.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace

from harness.traces.otlp import MODEL_OPERATIONS
from harness.traces.records import Attempt, CallRecord, SpanRecord, Turn


@dataclass(frozen=True)
class Imported:
    """The turns of a set of trace files and how many spans of each kind were read."""

    turns: tuple[Turn, ...]
    tool_spans: int
    model_spans: int
    files: tuple[str, ...]

    @property
    def calls(self) -> int:
        return sum(len(t.calls) for t in self.turns)

    @property
    def retries(self) -> int:
        return sum(len(c.attempts) - 1 for t in self.turns for c in t.calls)


def outcome(error_type: str) -> str:
    """The outcome word of a recorded attempt from its `error.type` ('' when it succeeded)."""
    if not error_type:
        return "ok"
    lowered = error_type.lower()
    if "timeout" in lowered or "timed out" in lowered or "deadline" in lowered:
        return "timeout"
    if "cancel" in lowered:
        return "cancelled"
    return "error"


def reconstruct(records: Iterable[SpanRecord], files: tuple[str, ...] = ()) -> Imported:
    """The turns the records describe (see the module's rules)."""
    tools: dict[tuple[str, str], list[SpanRecord]] = {}
    models: dict[tuple[str, str], SpanRecord] = {}
    siblings: dict[tuple[str, str], list[SpanRecord]] = {}
    tool_spans = model_spans = 0
    for record in records:
        if record.operation in MODEL_OPERATIONS:
            model_spans += 1
            models[(record.trace_id, record.span_id)] = record
            siblings.setdefault((record.trace_id, record.parent_id), []).append(record)
        else:
            tool_spans += 1
            tools.setdefault((record.trace_id, record.parent_id), []).append(record)
    groups: list[tuple[str, str, list[SpanRecord], SpanRecord | None]] = []
    for (trace_id, parent_id), spans in tools.items():
        chats = sorted(siblings.get((trace_id, parent_id), []), key=lambda m: (m.end_ns, m.span_id))
        if (trace_id, parent_id) in models or not chats:
            groups.append((trace_id, parent_id, spans, models.get((trace_id, parent_id))))
            continue
        ends = [m.end_ns for m in chats]
        split: dict[str, tuple[list[SpanRecord], SpanRecord | None]] = {}
        for span in spans:
            index = bisect_right(ends, span.start_ns) - 1
            key = chats[index].span_id if index >= 0 else parent_id
            split.setdefault(key, ([], chats[index] if index >= 0 else None))[0].append(span)
        groups.extend((trace_id, key, part, model) for key, (part, model) in split.items())
    turns = [_turn(trace_id, parent_id, _with_ids(spans, model)) for trace_id, parent_id, spans, model in groups]
    turns.sort(key=lambda t: (t.start_ns, t.trace_id, t.parent_id))
    return Imported(tuple(turns), tool_spans, model_spans, files)


def _with_ids(spans: list[SpanRecord], model: SpanRecord | None) -> list[SpanRecord]:
    """The spans, those without a call id given one of the calls `model` emitted (see the module)."""
    if model is None or not model.emitted or all(s.call_id for s in spans):
        return spans
    taken: set[int] = set()
    last: dict[tuple[str, str | None], str] = {}
    named = []
    for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns, s.span_id)):
        if not span.call_id:
            index = next((i for i, (_, tool, arguments) in enumerate(model.emitted) if i not in taken
                          and tool == span.tool and arguments == span.arguments), None)
            if index is not None:
                taken.add(index)
                last[(span.tool, span.arguments)] = model.emitted[index][0]
            if (span.tool, span.arguments) in last:
                span = replace(span, call_id=last[(span.tool, span.arguments)])
        named.append(span)
    return named


def _turn(trace_id: str, parent_id: str, spans: list[SpanRecord]) -> Turn:
    by_call: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_call.setdefault(span.call_id or span.span_id, []).append(span)
    calls = []
    for call_id, attempts in by_call.items():
        attempts.sort(key=lambda s: (s.start_ns, s.end_ns, s.span_id))
        arguments = next((a.arguments for a in attempts if a.arguments is not None), None)
        calls.append(CallRecord(call_id, attempts[0].tool, tuple(
            Attempt(a.span_id, a.start_ns, a.end_ns, outcome(a.error_type), a.error_type) for a in attempts),
            arguments))
    calls.sort(key=lambda c: (c.start_ns, c.call_id))
    return Turn(trace_id, parent_id, tuple(calls))
