"""Facts derived from a run's trace, shared by the oracles: model positions, attempts with their
real intervals, touches per target, and which calls were supposed to take effect.

Owns what the oracles ask of a trace, read once per run and shared. The attempts and the events around
them are read by `harness.sim.attempts` (a large run's while it runs); the touches and the indexes are
read here, when first asked. It never judges: oracles do.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import islice
from operator import itemgetter
from typing import NamedTuple

from harness.model import CallResult, Outcome, ToolCall
from harness.oracles.shape import ScenarioShape, shape_of
from harness.run import RunResult
from harness.run.result import READ_WHILE_RUNNING
from harness.run.result import cached as cached_property  # functools' without its lock
from harness.sim.attempts import Attempt as Attempt  # its home; oracles and reports import it from here
from harness.sim.attempts import AttemptReader
from harness.sim.trace import TraceEvent
from harness.tools.spec import MUTATING_OPS as MUTATING


def spelled(target: str, alias: str | None) -> str:
    """A touch's target as the call named it, then the file it reached when that is another of its
    names (a symlink, a hard link, a case): the trace keys touches by the file, a reader knows the call."""
    return f"{alias} (the file {target})" if alias else target


class Touch(NamedTuple):
    """One touch point of an attempt, as the trace shows it. A named tuple, not a frozen dataclass:
    a run has dozens and building one is 3x cheaper (it is as immutable)."""

    t: int
    seq: int
    call: str
    attempt: int
    op: str
    target: str
    digest: str | None
    #: The name the call used when it is another name of `target` (a symlink, a hard link, a case).
    alias: str | None = None

    @property
    def spelled(self) -> str:
        return spelled(self.target, self.alias)

    @property
    def mutating(self) -> bool:
        return self.op in MUTATING


#: The key under which a result keeps its facts (see `RunFacts.of`).
_MEMO = "_harness_run_facts"


class RunFacts:
    """What the oracles read of one run's trace (see the module's docstring). Made by `RunFacts.of`,
    which keeps it on the run it was read from; `RunFacts(result)` makes one that is nobody's but
    its caller's (though its attempts are the run's own reader's, if a large run read them as it ran:
    facts are only read, never changed)."""

    def __init__(self, result: RunResult) -> None:
        self._held: RunResult | None = result
        self._ref: weakref.ref[RunResult] | None = None
        self._read(result)

    @property
    def result(self) -> RunResult:
        """The run these facts were read from."""
        held = self._held
        if held is not None:
            return held
        assert self._ref is not None
        found = self._ref()
        if found is None:  # only facts kept past their run get here: `of` ties them to it
            raise ReferenceError("these RunFacts were kept by the run they were read from, which is gone")
        return found

    @classmethod
    def of(cls, result: RunResult) -> RunFacts:
        """The facts of `result`, read from its trace once and shared by every oracle that asks
        (four do; reading a trace is ~50 us). They are kept on the result itself, as its cached
        properties are, so they live and die with it and can never be another run's. Oracles only
        read them.

        The facts refer back to the result weakly: a strong reference would make a cycle (result ->
        facts -> result), and a run in a cycle is freed only by the garbage collector, not when its
        last user drops it, so every checked run's trace, world and facts would wait for a collection
        (and survive into older generations, which collections then visit again): measured, ~40K
        instructions of each checked run of bench_run's batch (~8% of judging it)."""
        memo = result.__dict__
        facts = memo.get(_MEMO)
        # Its own run's, read without the `result` property (the memo only ever holds facts made here).
        if type(facts) is cls and facts._ref is not None and facts._ref() is result:
            return facts
        facts = cls(result)
        facts._held, facts._ref = None, weakref.ref(result)
        memo[_MEMO] = facts
        return facts

    def reordered(self, result: RunResult) -> RunFacts:
        """The facts of `result`, the run these facts were read from with its scenario's batches in
        another order (`harness.oracles.reference`), kept on it as `of` keeps them: the same trace and
        results, so the same attempts and everything else read from them, and the other scenario's
        shape. Not read from the trace again (a 100,000-call run's is 550,000 events); what depends on
        the scenario's order (`calls`; `position` and `batch_of` are the shape's) is worked out anew."""
        mine = self.result
        assert result.trace is mine.trace and result.batches is mine.batches
        facts: RunFacts = object.__new__(RunFacts)
        facts.__dict__.update(self.__dict__)
        facts.__dict__.pop("calls", None)
        facts.shape = shape_of(result.scenario)
        facts._held, facts._ref = None, weakref.ref(result)
        result.__dict__[_MEMO] = facts
        return facts

    def _read(self, result: RunResult) -> None:
        #: What every run of the scenario shares (its calls, positions, batches), made once per scenario.
        self.shape: ScenarioShape = shape_of(result.scenario)
        reader = result.__dict__.get(READ_WHILE_RUNNING)
        if type(reader) is not AttemptReader or not reader.read(result.trace):
            # Read now, the whole trace (a large run's own reader read it as it was recorded: see
            # `harness.sim.attempts`; a result made otherwise, or holding another trace, is read here).
            tools = self.shape.tools
            reader = AttemptReader(lambda call: tools.get(call, ""), self.shape.batch_of if result.agents else None)
            reader.feed(result.trace)
        #: Every attempt, in the order the trace first mentions it.
        self.attempts: list[Attempt] = reader.attempts
        self.interrupts: list[tuple[int, int, int, int]] = reader.interrupts  # (t, seq, batch, grace)
        #: Batch index -> seq of its `batch_end` event (when the scheduler's answer was taken).
        self.batch_end_seq: dict[int, int] = reader.batch_end_seq
        self.skipped: set[str] = reader.skipped
        #: Every `skip` event, in trace order: (t, seq, call, reason).
        self.skips: list[tuple[int, int, str, str]] = reader.skips
        #: When the runtime crashed (the fault plan's crash), if it did.
        self.crash_t: int | None = reader.crash_t
        #: Every kind of event (`ev`) the trace holds: an oracle whose events are absent has nothing to
        #: read, and asks this instead of walking the trace again.
        self.kinds: frozenset[str] = reader.kinds
        #: Whether an attempt ended in an error of a user's tool's own code (an `end` marked `tool_code`).
        self.tool_code: bool = reader.tool_code
        #: Whether any attempt's start carries an idempotency key (none does: every attempt's `key` is None).
        self.keyed: bool = reader.keyed
        index = reader.attempts_by_call()
        if index is not None:
            # No call has two attempts (nor two handles of one): `latest` is the index, in trace order.
            self.__dict__["_attempts_by_call"] = index

    @cached_property
    def _touch_events(self) -> list[TraceEvent]:
        """The trace's touch events, in trace order (read again from the trace when first asked: a
        run whose calls all took effect as reported is judged without them)."""
        return [e for e in self.result.trace if e["ev"] == "touch"]

    @cached_property
    def touches(self) -> list[Touch]:
        """Every touch, in trace order. Built when first asked: a run whose calls all took effect as
        reported is judged without them, and a 100,000-call run has some 300,000 (each an object the
        garbage collector would traverse again and again while the oracles run)."""
        return [Touch(e["t"], e["seq"], e["call"], e["attempt"], e["op"], e["target"], e.get("digest"), e.get("as"))
                for e in self._touch_events]

    @cached_property
    def calls(self) -> dict[str, ToolCall]:
        return {call.id: call for call in self.shape.calls}

    @property
    def position(self) -> dict[str, int]:
        """Global model order: batch by batch, call by call."""
        return self.shape.position

    @property
    def batch_of(self) -> dict[str, int]:
        return self.shape.batch_of

    @cached_property
    def reported(self) -> dict[str, CallResult]:
        """The first result reported for each call id."""
        found: dict[str, CallResult] = {}
        for batch in self.result.batches:  # what `result.results` lists, without making that tuple
            for r in batch.results:
                found.setdefault(r.call_id, r)
        return found

    @cached_property
    def every_call_ok(self) -> bool:
        """Whether every call of the scenario has a reported result and the first one is `ok` (then
        each must have taken effect, and none was reported failed)."""
        reported = self.reported
        ok = Outcome.OK
        for call_id in self.shape.ids:
            r = reported.get(call_id)
            if r is None or r.outcome is not ok:
                return False
        return True

    # Indexes, so that oracles asking per call or per target stay linear in the trace's length
    # (a hung 1,000-call run is judged call by call). Built once the trace has been read.

    @cached_property
    def _attempts_by_call(self) -> dict[str, Attempt | list[Attempt]]:
        # Most calls have one attempt: it is kept as is, not in a list of its own (a 100,000-call run
        # would otherwise leave 100,000 lists for the garbage collector to traverse while it is judged).
        index: dict[str, Attempt | list[Attempt]] = {}
        for a in self.attempts:
            found = index.get(a.call)
            if found is None:
                index[a.call] = a
            elif isinstance(found, list):
                found.append(a)
            else:
                index[a.call] = [found, a]
        return index

    @property
    def attempts_by_call(self) -> dict[str, Attempt | list[Attempt]]:
        """Call id -> its attempt, or the list of them (in trace order) when it has more than one.
        For an oracle asking of every call in turn; read only."""
        return self._attempts_by_call

    def _attempts(self, call_id: str) -> list[Attempt]:
        found = self._attempts_by_call.get(call_id)
        return [] if found is None else [found] if isinstance(found, Attempt) else found

    @cached_property
    def _touch_spans(self) -> tuple[list[TraceEvent], dict[str, tuple[int, int]]]:
        """The touch events grouped by call (trace order within a call: the sort is stable) and each
        call's span in that list. `touches_of` builds a call's touches from its span when asked, so
        a hung run, whose every call is looked at, keeps no Touch object per touch alive (a
        100,000-call run has some 300,000 of them for CPython's collector to traverse)."""
        events = sorted(self._touch_events, key=itemgetter("call"))
        spans: dict[str, tuple[int, int]] = {}
        start = 0
        for i in range(1, len(events) + 1):
            if i == len(events) or events[i]["call"] != events[start]["call"]:
                spans[events[start]["call"]] = (start, i)
                start = i
        return events, spans

    @cached_property
    def _touches_by_target(self) -> dict[str, list[Touch]]:
        index: dict[str, list[Touch]] = {}
        for t in self.touches:
            index.setdefault(t.target, []).append(t)
        return index

    @cached_property
    def _mutations_by_target(self) -> dict[str, tuple[list[int], list[Touch]]]:
        """Target -> the seqs and the mutating touches on it, in trace order (for bisection)."""
        index: dict[str, tuple[list[int], list[Touch]]] = {}
        for t in self.touches:
            if t.op in MUTATING:
                seqs, touches = index.setdefault(t.target, ([], []))
                seqs.append(t.seq)
                touches.append(t)
        return index

    def last_mutation_before(self, target: str, seq: int) -> Touch | None:
        """The last mutating touch on `target` earlier in the trace than `seq`."""
        seqs, touches = self._mutations_by_target.get(target, ((), ()))
        i = bisect_left(seqs, seq)
        return touches[i - 1] if i else None

    def mutations_after(self, target: str, seq: int) -> Iterator[Touch]:
        """The mutating touches on `target` later in the trace than `seq`, in trace order."""
        seqs, touches = self._mutations_by_target.get(target, ((), ()))
        return islice(touches, bisect_right(seqs, seq), None)

    def attempts_of(self, call_id: str) -> list[Attempt]:
        return list(self._attempts(call_id))

    def opened_attempts(self, call_id: str) -> list[Attempt]:
        """The call's attempts whose start the trace records (what a result can come from)."""
        found = self._attempts_by_call.get(call_id)
        if found is None:
            return []
        if isinstance(found, Attempt):
            return [found] if found.opened else []
        return [a for a in found if a.opened]

    def touches_of(self, call_id: str, attempt: int | None = None) -> list[Touch]:
        events, spans = self._touch_spans
        start, end = spans.get(call_id, (0, 0))
        return [Touch(e["t"], e["seq"], e["call"], e["attempt"], e["op"], e["target"], e.get("digest"), e.get("as"))
                for e in events[start:end] if attempt is None or e["attempt"] == attempt]

    def touches_on(self, target: str) -> Iterator[Touch]:
        return iter(self._touches_by_target.get(target, ()))

    def started(self, call_id: str) -> bool:
        """Whether any attempt of the call really started (abandoned-before-start ones did not)."""
        return any(a.opened for a in self._attempts(call_id))

    def reported_attempt(self, call_id: str) -> Attempt | None:
        """The attempt whose end produced the reported result (the last one that ended with the
        reported outcome), if any."""
        r = self.reported.get(call_id)
        if r is None:
            return None
        for a in reversed(self.attempts_of(call_id)):
            if a.outcome == r.outcome.value and a.abandoned_t is None:
                return a
        return None

    def must_take_effect(self, call_id: str) -> bool | None:
        """True: the report says the call ran (ok, or an error the tool itself returned); False: the
        report says it did not (timeout, cancelled, skipped, an error the runtime made up); None:
        either is acceptable (outcome unknown, or no result although it started)."""
        r = self.reported.get(call_id)
        if r is None:
            return None if self.started(call_id) else False
        if r.outcome is Outcome.OK:
            return True
        if r.outcome is Outcome.UNKNOWN:
            return None
        if r.outcome is Outcome.ERROR:
            ran = self.reported_attempt(call_id)
            # An error the tool returned is part of its semantics; an injected one had no effect.
            return ran is not None and ran.error == r.error and ran.fault is None
        return False
