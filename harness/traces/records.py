"""The neutral shape every trace format parses into, and the error a malformed trace raises.

Owns `TraceError` (one line: `FILE: span SPAN_ID: FIELD: expected X, got Y`), the span record the
readers yield (`SpanRecord`: only what turn reconstruction needs, never the whole span) and the values
reconstruction builds from them (`Attempt`, `CallRecord`, `Turn`). Times are integer nanoseconds since
the Unix epoch, as OTLP carries them. It never reads a file and never knows a format's field names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

#: The outcome words of harness.model.Outcome that a recorded attempt can have.
OUTCOMES = ("ok", "error", "timeout", "cancelled")


class TraceError(ValueError):
    """A trace file is malformed. `str()` is one line naming the file, the span (when one is at fault)
    and the field: `spans.jsonl: line 3: span 5f2c9a1b0e3d4c7a: endTimeUnixNano: expected ..., got ...`."""

    def __init__(self, file: str, where: str, field: str, expected: str, got: Any = None, *,
                 has_got: bool = True) -> None:
        detail = f"expected {expected}" + (f", got {_show(got)}" if has_got else "")
        parts = [file, *(p for p in (where, field) if p), detail]
        super().__init__(": ".join(parts))
        self.file, self.where, self.field, self.expected = file, where, field, expected


def _show(value: Any) -> str:
    if value is None:
        return "nothing (the key is missing)"
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(map(repr, list(value)[:6])) if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    text = repr(value).replace("\n", "\\n")
    return text if len(text) <= 60 else text[:57] + "..."


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_nanos(value: Any, file: str, where: str, field: str) -> int:
    """An ISO 8601 time (`2026-01-05T10:00:00.123456+00:00`; `Z` too; without an offset: UTC, as LangSmith
    writes it) as integer nanoseconds since the Unix epoch, exactly (no float on the way)."""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return (moment - _EPOCH) // timedelta(microseconds=1) * 1000
    raise TraceError(file, where, field, "an ISO 8601 time such as 2026-01-05T10:00:00.123456+00:00", value)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """What a reader keeps of one span: a tool call (`operation == "execute_tool"`) or a model call
    (`chat`, `text_completion`, `generate_content`), which delimits turns. `arguments` is the raw
    `gen_ai.tool.call.arguments` text when the trace recorded it (it may hold secrets: it leaves the
    importer only with `--keep-arguments`)."""

    trace_id: str
    span_id: str
    parent_id: str
    operation: str
    start_ns: int
    end_ns: int
    tool: str = ""
    call_id: str = ""
    error_type: str = ""
    arguments: str | None = None
    file: str = ""  # where it was read, for messages
    #: For a model call: the tool calls it emitted as (call id, tool, arguments), when the export records
    #: them (openai-agents' generation output); the tool spans without an id take theirs (`harness.traces.turns`).
    emitted: tuple[tuple[str, str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try of a call as it happened: its span, when it ran, and how it ended."""

    span_id: str
    start_ns: int
    end_ns: int
    outcome: str
    error_type: str = ""

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call of a turn: its id, its tool, its attempts in the order they started (a retry
    reuses the call id), and its raw arguments if recorded."""

    call_id: str
    tool: str
    attempts: tuple[Attempt, ...]
    arguments: str | None = None

    @property
    def start_ns(self) -> int:
        return self.attempts[0].start_ns

    @property
    def end_ns(self) -> int:
        return max(a.end_ns for a in self.attempts)

    @property
    def outcome(self) -> str:
        """The last attempt's outcome: what the runtime finally reported."""
        return self.attempts[-1].outcome


@dataclass(frozen=True, slots=True)
class Turn:
    """A model call and the tool calls it emitted, in the order they started (which is the model order
    a runtime that starts calls as emitted keeps; the trace holds no other). `parent_id` is the span
    that groups them: the model call's span, or the agent span the calls share with it."""

    trace_id: str
    parent_id: str
    calls: tuple[CallRecord, ...]

    @property
    def start_ns(self) -> int:
        return min(c.start_ns for c in self.calls)

    @property
    def end_ns(self) -> int:
        return max(c.end_ns for c in self.calls)

    @property
    def makespan_ms(self) -> float:
        """From the first call's start to the last call's end: what the runtime took for the batch."""
        return (self.end_ns - self.start_ns) / 1e6

    def overlaps(self) -> tuple[tuple[str, str], ...]:
        """The pairs of calls (by id, in call order) that ran at the same time at some instant: the
        concurrency the runtime really used (touching ends, one ending as the other starts, is not an overlap)."""
        spans = [(a.start_ns, a.end_ns, c.call_id) for c in self.calls for a in c.attempts]
        pairs: dict[tuple[str, str], None] = {}
        order = {c.call_id: i for i, c in enumerate(self.calls)}
        for i, (s1, e1, a) in enumerate(spans):
            for s2, e2, b in spans[i + 1:]:
                if a != b and s1 < e2 and s2 < e1:
                    pairs[(a, b) if order[a] < order[b] else (b, a)] = None
        return tuple(sorted(pairs, key=lambda p: (order[p[0]], order[p[1]])))

    def peak_concurrency(self) -> int:
        """The most attempts running at one instant (an end at t comes before a start at t)."""
        events = sorted([(a.start_ns, 1) for c in self.calls for a in c.attempts]
                        + [(a.end_ns, -1) for c in self.calls for a in c.attempts])
        running = peak = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
        return peak
