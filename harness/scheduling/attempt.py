"""One call attempt on the virtual clock: the `CallHandle` a scheduler yields, and what runs behind it.

Owns `AttemptExecution`, the execution of one attempt (the `CallHandle` a scheduler yields for it is
`harness.scheduling.handle`'s, importable from here too): `args_from` read when it starts, latency drawn from
`latency/<call id>/<attempt>` (or steps ordered by the arbiter), injected failures and the fault
plan's rate limits, duplicate deliveries and torn writes, `file_lock` flocks, a `delegate` call's
subagent, the behaviour stepped through its touch points, and the `start`, `touch` and `end` events
it writes to the trace. It never decides when a call starts (the scheduler does, through
`SchedulerContext.start`) and never judges a result (the oracles do).

Most attempts meet none of that machinery: `_attempt` sends an attempt that cannot meet anything but
its tool's behaviour (no arbiter, no fault that could apply, no `args_from`, flock or subagent) down
`_execute_plain`, the general `_execute` with those branches decided, which writes the same trace
(tests/unit/test_plain_attempt.py runs both and compares).

`AttemptExecution` is the base class of `SchedulerContext`, not an object beside it: an attempt's
process is started for every call of every run, and a base class adds no step between `start` and
its attempt. Its frames' `self` is the context, as the hang diagnosis reads them. It uses only the
state it declares below, which `SchedulerContext.__init__` sets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from heapq import heappush
from types import FunctionType
from typing import Any

import simpy
from simpy.events import NORMAL, PENDING
from simpy.resources.resource import Request

from harness.faults.failures import FailureModel
from harness.faults.latency import Fixed, LatencyModel
from harness.faults.mcp import McpFault
from harness.faults.plan import FaultPlan
from harness.model import CallResult, Outcome, ToolCall
from harness.scheduling.frozen import maker
from harness.scheduling.handle import CallHandle, Progress
from harness.scheduling.traced_io import TracedIO
from harness.scheduling.traced_io import recorded_by_the_overrides as _unused_sink
from harness.scheduling.waits import Stalled
from harness.sim.arbiter import Arbiter
from harness.sim.kernel import CallStep, Kernel
from harness.sim.trace import value_digest
from harness.tools.catalogue import PLAIN_VALUED, prepare
from harness.tools.guard import ToolCodeError
from harness.tools.inputs import resolve
from harness.tools.spec import Detach, ToolError, ToolSpec
from harness.world.world import World, WorldError


class AttemptExecution:
    """Runs the attempts `SchedulerContext.start` starts (the base class of the context)."""

    kernel: Kernel
    env: simpy.Environment
    #: The kernel's trace (its list of events), which attempts append to directly.
    _events: list[dict[str, Any]]
    #: No arbiter and no fault of the plan that an attempt could meet (see `_attempt`).
    _plain: bool
    _world: World
    _catalogue: Mapping[str, ToolSpec]
    _call_latency: Mapping[str, LatencyModel]
    _jitter: float
    _failures: Callable[[ToolCall], FailureModel | None] | None
    _faults: FaultPlan
    _may_duplicate: bool
    _may_tear: bool
    _rate_windows: dict[str, list[int]]
    _arbiter: Arbiter | None
    _args_from: Mapping[str, Mapping[str, str]]
    _produced: dict[str, Any]
    _file_locks: dict[str, simpy.Resource]
    _delegate: Callable[[Any, Any, str], simpy.Event] | None

    def _attempt(self, handle: CallHandle, idempotency_key: str | None) -> Generator[simpy.Event, Any, None]:
        """The generator of a started attempt's process: `_execute_plain` for an attempt that can meet
        nothing but its tool's own behaviour, `_execute` for every other. Both write the same trace."""
        call = handle.call
        if self._plain and call.id not in self._args_from:
            spec = self._catalogue.get(call.name)
            if (spec is not None and not spec.file_lock and not spec.delegates
                    and (spec.server is None or not self._faults.mcp)
                    and (self._failures is None or self._failures(call) is None)):
                return self._execute_plain(handle, idempotency_key)
        return self._execute(handle, idempotency_key)

    def _execute_plain(self, handle: CallHandle, idempotency_key: str | None) -> Generator[simpy.Event, Any, None]:
        """`_execute` for the common attempt, and the same trace, event for event: no arbiter, no injected
        failure, rate limit, duplicate delivery, torn write or MCP fault that could apply, no `args_from`,
        no flock and no subagent (`_attempt` checks, once per attempt). What is left is `_execute` with
        those branches decided and `_steps` inlined (one generator less to resume at every touch point):
        the start event, the behaviour stepped at its latency fractions, and the end."""
        env = self.env
        call, attempt = handle.call, handle.attempt
        if handle._value is not PENDING:  # abandoned in the instant it was started (see `_execute`; `triggered`)
            handle.finished = True
            return
        prepared = prepare(call, self._catalogue)
        events = self._events
        started: dict[str, Any] = {"t": int(env._now), "seq": len(events), "ev": "start", "call": call.id,
                                   "tool": call.name, "attempt": attempt}
        if idempotency_key is not None:
            started["key"] = idempotency_key
        events.append(started)
        if isinstance(prepared, str):
            self._finish(handle, Outcome.ERROR, None, prepared)
            return
        spec, args = prepared
        handle.stops_on_cancel = spec.stops_on_cancel
        model = self._call_latency.get(call.id, spec.latency)
        # (`_latency` for a fixed latency without jitter, nearly every attempt: no call.)
        latency = model.ms if type(model) is Fixed and not self._jitter else self._latency(model, call.id, attempt)
        # A `TracedIO` made without its two `__init__`s: no injected fault, every slot set.
        io: TracedIO = _new(TracedIO)
        io.world, io.call_id, io.idempotency_key, io._sink = self._world, call.id, idempotency_key, _unused_sink
        io.duplicate_delivery = io.torn_write = False
        io._attempt, io._events, io._env = attempt, events, env
        behaviour: Generator[float, None, Any] | None = None
        try:
            behaviour = spec.behaviour(args, io)
            begin = int(env._now)
            try:
                fraction = next(behaviour)
                while True:
                    if type(fraction) is Detach:
                        self._background(handle, fraction.value)
                    # (A fraction within [0, 1], nearly all, is its own clamp: two builtin calls less.)
                    target = begin + round(latency * (fraction if 0.0 <= fraction <= 1.0
                                                      else min(max(fraction, 0.0), 1.0)))
                    now = int(env._now)
                    if target > now:
                        # `CallStep(env, target - now)`, made here: its `__init__`'s attributes and queue entry.
                        step = _new(CallStep)
                        step.env, step.callbacks, step._value, step._delay, step._ok = env, [], None, target - now, True
                        heappush(env._queue, (env._now + step._delay, NORMAL, next(env._eid), step))
                        yield step
                    fraction = next(behaviour)
            except StopIteration as stop:
                value = stop.value
            now = int(env._now)
            if now < begin + latency:  # a behaviour that returns early still takes its whole latency
                step = _new(CallStep)  # (`CallStep(env, begin + latency - now)`, as above)
                step.env, step.callbacks, step._value, step._ok = env, [], None, True
                step._delay = begin + latency - now
                heappush(env._queue, (env._now + step._delay, NORMAL, next(env._eid), step))
                yield step
        except (ToolError, WorldError) as exc:
            self._finish(handle, Outcome.ERROR, None, str(exc), tool_code=isinstance(exc, ToolCodeError))
        except simpy.Interrupt as interrupt:
            self._cancelled(handle, behaviour, interrupt)
        else:
            # `self._finish(handle, Outcome.OK, value, None, plain=...)`, inlined (one per call of every run):
            # the same end event, key for key, and the same settling.
            handle.finished = True
            detached = handle._value is not PENDING
            now = int(env._now)
            ended: dict[str, Any] = {"t": now, "seq": len(events), "ev": "end", "call": call.id, "attempt": attempt,
                                     "outcome": "ok"}
            if detached:
                ended["detached"] = True
            # (A behaviour that is no plain function may not even be hashable: only functions are looked up.)
            ended["vd"] = value_digest(value, type(spec.behaviour) is FunctionType and spec.behaviour in PLAIN_VALUED)
            events.append(ended)
            if not detached:
                self._produced[call.id] = value
                handle._ok = True
                handle._value = _settled(call.id, Outcome.OK, value, None, attempt, handle.started_ms, now, ())
                heappush(env._queue, (env._now, NORMAL, next(env._eid), handle))

    def _execute(self, handle: CallHandle, idempotency_key: str | None) -> Generator[simpy.Event, Any, None]:
        kernel, call, attempt = self.kernel, handle.call, handle.attempt
        if handle.triggered:
            # Abandoned in the instant it was started (a task cancelled before its first step, as
            # asyncio does): it never runs.
            handle.finished = True
            return
        # args_from is read now, when the attempt starts: a consumer started before its producer
        # settled runs with a missing (null) input, as a runtime that does not wait would send it.
        resolved, inputs = resolve(call, self._args_from.get(call.id), self._read_produced)
        prepared = prepare(resolved, self._catalogue)
        # The trace event built here directly, key for key what `kernel.record` builds (as `TracedIO`
        # does): every attempt has one.
        events = self._events
        started: dict[str, Any] = {"t": int(self.env._now), "seq": len(events), "ev": "start", "call": call.id,
                                   "tool": call.name, "attempt": attempt}
        if idempotency_key is not None:
            started["key"] = idempotency_key
        events.append(started)
        for read in inputs:
            kernel.record("input", call=call.id, attempt=attempt, arg=read.arg, producers=list(read.producers),
                          found=read.found, vd=value_digest(read.value) if read.found else None)
        if isinstance(prepared, str):
            self._finish(handle, Outcome.ERROR, None, prepared)
            return
        spec, args = prepared
        handle.stops_on_cancel = spec.stops_on_cancel
        cutoff: McpFault | None = None
        if spec.server is not None and self._faults.mcp:
            # MCP server faults (harness.faults.mcp): the server ignores cancellation, or stalls or dies at a time.
            handle.stops_on_cancel = spec.stops_on_cancel and not self._faults.ignores_cancel(spec.server)
            cutoff = self._faults.mcp_cutoff(spec.server)
            if cutoff is not None and cutoff.every_ms is not None:
                self.env.process(self._notify_progress(handle, cutoff))
        model = self._call_latency.get(call.id, spec.latency)
        latency = self._latency(model, call.id, attempt)
        failure = self._failures(call) if self._failures is not None else None
        behaviour: Generator[float, None, Any] | None = None
        locks: list[Request] = []
        try:
            if cutoff is not None and not cutoff.stalls and cutoff.at_ms is not None and kernel.now >= cutoff.at_ms:
                yield from self._cut(cutoff)  # the server already died: the call fails as it starts
            limited = self._rate_limited(call.name)
            if limited is not None:
                self._finish(handle, Outcome.ERROR, None, limited, fault="rate-limit")
                return
            if failure is not None and self._fails(failure, call.id, attempt):
                # An injected failure: the request dies half way, before the tool touched anything.
                low, high = _support(model, attempt)
                yield (self._arbiter.step(call.id, attempt, final=True, earliest=self.kernel.now + math.ceil(low / 2),
                                          latest=self.kernel.now + high / 2) if self._arbiter
                       else kernel.delay(round(latency / 2)))
                self._finish(handle, Outcome.ERROR, None, failure.error_text(), fault="failure")
                return
            io = TracedIO(self._world, call.id, attempt, events, self.env, idempotency_key,
                          duplicate_delivery=self._may_duplicate and self._hits("duplicate_delivery", call.id, attempt),
                          torn_write=self._may_tear and self._hits("torn_writes", call.id, attempt))
            if io.duplicate_delivery or io.torn_write:
                kernel.record("faults", call=call.id, attempt=attempt,
                              kinds=[k for k, on in (("duplicate_delivery", io.duplicate_delivery),
                                                     ("torn_write", io.torn_write)) if on])
            if spec.file_lock:
                locks = self._lock_requests(spec, args, call.id, attempt)
                for request in locks:
                    yield request
            if spec.delegates:
                value = yield from self._delegated(args, call.id, attempt)
            else:
                behaviour = spec.behaviour(args, io)
                value = yield from self._steps(behaviour, call.id, attempt, latency, model, cutoff, handle)
        except _ServerDied as exc:
            self._finish(handle, Outcome.ERROR, None, str(exc), fault="mcp-server-death")
        except _Refused as exc:
            self._finish(handle, Outcome.ERROR, None, str(exc), fault="refused")
        except (ToolError, WorldError) as exc:
            # A Python tool's own code failing is marked: the tools oracle blames the tool, not the scheduler.
            self._finish(handle, Outcome.ERROR, None, str(exc), tool_code=isinstance(exc, ToolCodeError))
        except simpy.Interrupt as interrupt:
            self._cancelled(handle, behaviour, interrupt)
        else:
            self._finish(handle, Outcome.OK, value, None)
        finally:
            for request in locks:
                if request.triggered:
                    request.resource.release(request)
                else:
                    request.cancel()

    def _latency(self, model: LatencyModel, call_id: str, attempt: int) -> int:
        """The attempt's latency: its model's (a fixed latency draws nothing: its stream is not even made,
        and making one has no other effect), scaled by the exploration's jitter if any."""
        kernel = self.kernel
        latency = (model.ms if type(model) is Fixed
                   else model.sample(kernel.streams.stream("latency", call_id, attempt), attempt))
        if self._jitter:
            # Exploration only: scale by a log-uniform factor from the call's own stream, so
            # completion orders vary even when the scenario's latencies are fixed.
            factor = math.exp(kernel.streams.stream("jitter", call_id, attempt).uniform(-self._jitter, self._jitter))
            latency = round(latency * factor)
        return latency

    def _cancelled(self, handle: CallHandle, behaviour: Generator[float, None, Any] | None,
                   interrupt: simpy.Interrupt) -> None:
        """Cancelled while waiting anywhere in the attempt: what has not happened yet never will."""
        failed: ToolError | WorldError | None = None
        if behaviour is not None:
            try:
                behaviour.close()
            except (ToolError, WorldError) as exc:  # the tool's own clean-up failed (harness.tools.guard)
                failed = exc
        handle.finished = True
        call_id, attempt = handle.call.id, handle.attempt
        if isinstance(failed, ToolCodeError):  # the tools oracle blames the tool, as for a failed call
            self.kernel.record("end", call=call_id, attempt=attempt, outcome="cancelled", reason=str(interrupt.cause),
                               error=str(failed), tool_code=True)
        else:
            self.kernel.record("end", call=call_id, attempt=attempt, outcome="cancelled", reason=str(interrupt.cause))

    def _delegated(self, args: Any, call_id: str, attempt: int) -> Generator[simpy.Event, Any, Any]:
        """A `delegate` call: start the subagent it names and wait for the end of its task."""
        try:
            if self._delegate is None:
                raise ToolError("there is no subagent to delegate to (no [[agents]] entry is delegated = true)")
            # Raises ToolError for a wrong name, or past the delegation depth limit.
            task = self._delegate(args.get("agent"), args.get("task"), call_id)
        except ToolError as exc:  # refused before anything ran: no effect, like a rate limit
            raise _Refused(str(exc)) from None
        self.kernel.record("delegate", call=call_id, attempt=attempt, agent=args.get("agent"))
        outcome = yield task
        return outcome

    def _lock_requests(self, spec: ToolSpec, args: Any, call_id: str, attempt: int) -> list[Request]:
        """Requests for the flocks of a `file_lock` tool: one per file its resource keys name, taken
        in path order (as careful code does, so two such calls cannot deadlock)."""
        keys = spec.declared.resource_keys.compute(args, self._world.cwd, self._world.home, self._world.users)
        files = sorted({key for key in keys if key.startswith("file:")})
        requests: list[Request] = []
        for key in files:
            lock = self._file_locks.get(key)
            if lock is None:
                lock = self._file_locks[key] = simpy.Resource(self.env, 1)
            requests.append(lock.request())
        self.kernel.record("lock", call=call_id, attempt=attempt, files=[key[5:] for key in files])
        return requests

    def _fails(self, failure: FailureModel, call_id: str, attempt: int) -> bool:
        """The injected-failure draw; order-first, a choice the chooser may take over."""
        drawn = failure.fails(self.kernel.streams, call_id, attempt)
        if self._arbiter is None or not failure.uncertain(attempt):
            return drawn
        return self._arbiter.fault("failure", call_id, 0 if failure.permanent else attempt, drawn)

    def _hits(self, kind: str, call_id: str, attempt: int) -> bool:
        """A fault plan's per-attempt draw; order-first, a choice the chooser may take over."""
        drawn = self._faults.hits(kind, self.kernel.streams, call_id, attempt)
        if self._arbiter is None or not self._faults.uncertain(kind):
            return drawn
        return self._arbiter.fault(kind, call_id, attempt, drawn)

    def _rate_limited(self, tool: str) -> str | None:
        """The 429 error if starting a call of `tool` now breaks a rate limit of the fault plan."""
        for limit in self._faults.rate_limits:
            if limit.tool != tool:
                continue
            starts = self._rate_windows.setdefault(tool, [])
            recent = [t for t in starts if t > self.kernel.now - limit.window_ms]
            self._rate_windows[tool] = recent
            if len(recent) >= limit.limit:
                return f"429 Too Many Requests: {tool} allows {limit.limit} calls per {limit.window_ms} ms"
            recent.append(self.kernel.now)
        return None

    def _cut(self, fault: McpFault) -> Generator[simpy.Event, Any, None]:
        """The call's server stalls or dies at `fault.at_ms`: wait until then; a stall never answers (the
        event the call waits on never fires, as the hang diagnosis reads it), a death fails the call."""
        assert fault.at_ms is not None
        now = int(self.env._now)
        if fault.at_ms > now:
            yield self.kernel.delay(fault.at_ms - now, "call")
        if fault.stalls:
            yield Stalled(self.env, fault.server, fault.at_ms, fault.every_ms)
        raise _ServerDied(fault.error_text())

    def _notify_progress(self, handle: CallHandle, fault: McpFault) -> Generator[simpy.Event, Any, None]:
        """`[faults] mcp_progress_only`: a progress notification every `every_ms` from `at_ms` (or the call's
        start, if later) for as long as the client waits on the call: none once it settled or was abandoned."""
        assert fault.at_ms is not None and fault.every_ms is not None
        kernel = self.kernel
        yield kernel.delay(max(fault.at_ms - kernel.now, 0) + fault.every_ms, "progress")
        while not handle.triggered:
            kernel.record("progress", call=handle.call.id, attempt=handle.attempt, server=fault.server,
                          progress=handle.progress_count + 1)
            handle._progressed()
            yield kernel.delay(fault.every_ms, "progress")

    def _steps(self, behaviour: Generator[float, None, Any], call_id: str, attempt: int,
               latency: int, model: LatencyModel, cutoff: McpFault | None = None,
               handle: CallHandle | None = None) -> Generator[simpy.Event, Any, Any]:
        """Drive a behaviour through its touch points: after a latency fraction each, or when the
        arbiter says (order-first; the latency model's range orders the steps against timers).
        Returns the behaviour's value; a behaviour that returns early still takes its whole latency.
        Past its MCP server's death (`cutoff`) no step comes; past its stall, the work goes on but the answer
        never comes (`_cut`)."""
        kernel = self.kernel
        env = self.env
        begin = int(env._now)  # what `self.kernel.now` reads, without two property hops (a few per call)
        # A call that would outlast the run hangs in order-first runs too: only timers end it. So does one
        # whose server stalls or dies: its steps are timed, as that moment is.
        arbiter = self._arbiter if latency < kernel.limits.time_bound_ms and cutoff is None else None
        cut_at = cutoff.at_ms if cutoff is not None and cutoff.at_ms is not None else math.inf
        low, high = _support(model, attempt) if arbiter is not None else (0, math.inf)
        try:
            fraction = next(behaviour)
            while True:
                if type(fraction) is Detach and handle is not None:
                    self._background(handle, fraction.value)
                if arbiter is not None:
                    share = min(max(fraction, 0.0), 1.0)
                    yield arbiter.step(call_id, attempt, earliest=begin + math.floor(share * low),
                                       latest=begin + share * high)
                else:
                    target = begin + round(latency * min(max(fraction, 0.0), 1.0))
                    if target >= cut_at and cutoff is not None and not cutoff.stalls:
                        yield from self._cut(cutoff)
                    now = int(env._now)
                    if target > now:
                        yield kernel.delay(target - now, "call")
                fraction = next(behaviour)
        except StopIteration as stop:
            value = stop.value
        if arbiter is not None and arbiter.timer_pending():
            # The call ends (and its caller hears of it) at the whole latency, after its last
            # touch: with a timer pending, that moment is a step of its own to order against it.
            yield arbiter.step(call_id, attempt, final=True, earliest=begin + low, latest=begin + high)
        if begin + latency >= cut_at:
            assert cutoff is not None
            yield from self._cut(cutoff)
        if arbiter is None and int(env._now) < begin + latency:
            yield kernel.delay(begin + latency - int(env._now), "call")
        return value

    def _finish(self, handle: CallHandle, outcome: Outcome, value: Any, error: str | None,
                fault: str | None = None, tool_code: bool = False, plain: bool = False) -> None:
        handle.finished = True
        detached = handle._value is not PENDING  # `handle.triggered`, without the property's call
        now = int(self.env._now)
        # Built directly, key for key what `kernel.record` would build (see `_execute`).
        events = self._events
        ended: dict[str, Any] = {"t": now, "seq": len(events), "ev": "end", "call": handle.call.id,
                                 "attempt": handle.attempt, "outcome": outcome._value_}
        if error is not None:
            ended["error"] = error
        if detached:
            ended["detached"] = True
        if fault is not None:
            ended["fault"] = fault
        if tool_code:
            ended["tool_code"] = True
        if outcome is Outcome.OK:
            ended["vd"] = value_digest(value, plain)
        events.append(ended)
        if not detached:
            if outcome is Outcome.OK:
                self._produced[handle.call.id] = value
            # `handle.succeed(...)` and the `env.schedule` it calls, inlined (the handle is not triggered).
            handle._ok = True
            handle._value = _settled(handle.call.id, outcome, value, error, handle.attempt, handle.started_ms, now, ())
            env = self.env
            heappush(env._queue, (env._now, NORMAL, next(env._eid), handle))

    def _background(self, handle: CallHandle, value: Any) -> None:
        """The behaviour reported its result early and keeps running (`Detach`): the caller hears `value`
        now; the process goes on, its touches and its end still the call's (the end marked detached)."""
        if handle.triggered:
            return  # already abandoned by the scheduler: nothing to report any more
        self.kernel.record("background", call=handle.call.id, attempt=handle.attempt, vd=value_digest(value))
        self._produced[handle.call.id] = value
        handle.succeed(CallResult(handle.call.id, Outcome.OK, value, None, handle.attempt, handle.started_ms,
                                  self.kernel.now))

    def _read_produced(self, call_id: str) -> tuple[bool, Any]:
        return (True, self._produced[call_id]) if call_id in self._produced else (False, None)


__all__ = ["AttemptExecution", "CallHandle", "Progress"]


class _ServerDied(Exception):
    """The call's MCP server died (`[faults] mcp_server_death`): the call fails with this message."""


class _Refused(Exception):
    """The runtime refused a call before its tool ran (a `delegate` naming no free subagent)."""


_new = object.__new__

#: A `CallResult` made without `__init__`'s checks: the attempt's own are valid by construction.
_settled = maker(CallResult)


def _support(model: LatencyModel, attempt: int) -> tuple[int, float]:
    """The latency model's range for this attempt; unbounded for a model that does not say."""
    support = getattr(model, "support", None)
    return support(attempt) if support is not None else (0, math.inf)

