"""What a hung batch waits on, read by the runner at the hang: every unfinished call and the thing it
waits for, read from the live simulation at the moment the run gives up.

Owns `diagnose(ctx, driver)`, called by the run at the hang point, before anything is cleaned up. It
walks the SimPy processes reachable from the scheduler's process (each one's generator frames and the
event it waits on: a call's handle, a `ctx.resource` lock or slot and the processes holding it, an
`all_of`/`any_of`, another process, a plain event such as a `depends_on` predecessor's "done"), names
what it finds by the variable that holds it in the user's code (`locks['file:/repo/a']`,
`done['fetch']`), ties processes to calls by the `ToolCall` they hold, and finds lock cycles, across
the batches of several agents too (each hung batch's scheduler and calls are its `peers`). For the
asyncio bridge it reads the lent loop's pending tasks (the asyncio primitive each awaits and its
coroutine stack); for the thread bridge, each parked thread's stack and the primitive it waits on.
It only reads: no event is created or triggered, nothing is traced, so a diagnosis never changes a
run's trace or fingerprint. Whatever it cannot read it leaves out; it never raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import simpy
from simpy.events import Condition, Timeout
from simpy.resources.base import BaseResource
from simpy.resources.resource import Request

from harness.diagnosis.frames import (
    call_of,
    frame_chain,
    global_name,
    members,
    name_in,
    stack_lines,
    user_at,
)
from harness.diagnosis.origins import is_user
from harness.diagnosis.threads import thread_waits
from harness.diagnosis.wait import Diagnosis, Wait
from harness.model import ToolCall
from harness.scheduling.attempt import Progress
from harness.scheduling.context import CallHandle, SchedulerContext
from harness.scheduling.waits import Stalled

#: Bounds that keep a diagnosis of a pathological scheduler short.
_MAX_PROCESSES = 200
_MAX_LISTED = 4






@dataclass(frozen=True)
class Peer:
    """Another batch hung in the same run (another agent's turn): a lock its scheduler or calls hold
    can close a cycle with this batch's."""

    ctx: SchedulerContext
    driver: simpy.Process
    label: str  # how its scheduler is named, e.g. "the scheduler of batch 1 (right)"


def diagnose(ctx: SchedulerContext, driver: simpy.Process, label: str = "the scheduler",
             peers: Iterable[Peer] = ()) -> Diagnosis | None:
    """What each unfinished call of the hung batch `ctx` waits on (None if nothing could be read).
    `label` names its scheduler in a cycle; `peers` are the run's other hung batches, whose scheduler
    and calls then hold locks by their own names and may be part of the cycle."""
    try:
        return _Inspector(ctx, driver, label, tuple(peers)).diagnose()
    except Exception:  # a diagnosis is a courtesy: a frame or object it cannot read must not break a run
        return None


# -- frames -----------------------------------------------------------------------------------














# -- the inspector ----------------------------------------------------------------------------


@dataclass
class _Proc:
    process: simpy.Process
    frames: list[FrameType]
    call: str | None
    holds: list[BaseResource[Any, Any]] = field(default_factory=list)


class _Inspector:
    def __init__(self, ctx: SchedulerContext, driver: simpy.Process, label: str = "the scheduler",
                 peers: tuple[Peer, ...] = ()) -> None:
        self.ctx = ctx
        self.driver = driver
        self.calls = {call.id: call for call in ctx.batch}
        #: Calls a process may work for: this batch's, and the peers' (named, never listed as waits).
        self.known = {**{call.id: call for peer in peers for call in peer.ctx.batch}, **self.calls}
        #: id(scheduler process) -> its name, this batch's and the peers'.
        self.schedulers = {id(peer.driver): peer.label for peer in peers} | {id(driver): label}
        self.procs: dict[int, _Proc] = {}
        self.order: list[_Proc] = []
        #: Every frame seen, for naming things (the scheduler's own frames first).
        self.frames: list[FrameType] = []
        #: id(scheduled event) -> when it falls due, read from SimPy's queue when first asked.
        self._due_at: dict[int, int] | None = None

    # discovery

    def _visit(self, process: simpy.Process, is_driver: bool = False) -> None:
        if id(process) in self.procs or len(self.procs) >= _MAX_PROCESSES or not process.is_alive:
            return
        frames = frame_chain(getattr(process, "_generator", None))
        # A scheduler's own frames hold calls too (its loop variable): it works for none of them.
        entry = _Proc(process, frames, None if is_driver or id(process) in self.schedulers
                      else call_of(frames, self.known))
        self.procs[id(process)] = entry
        self.order.append(entry)
        self.frames.extend(frames)
        for event in self._events_under(getattr(process, "_target", None)):
            if isinstance(event, simpy.Process):
                self._visit(event)
            elif isinstance(event, Request):
                for holder in event.resource.users:
                    proc = getattr(holder, "proc", None)
                    if isinstance(proc, simpy.Process):
                        self._visit(proc)
        # Processes the user's frames hold (a plan's per-call runners, workers in a list).
        for frame in frames:
            for value in list(frame.f_locals.values()):
                for item in members(value):
                    if isinstance(item, simpy.Process):
                        self._visit(item)

    def _events_under(self, event: object, depth: int = 0) -> Iterator[simpy.Event]:
        if not isinstance(event, simpy.Event) or depth > 4:
            return
        yield event
        if isinstance(event, Condition):
            for inner in getattr(event, "_events", ()):
                if not inner.processed:
                    yield from self._events_under(inner, depth + 1)

    def _holdings(self) -> None:
        for entry in self.order:
            for frame in entry.frames:
                for value in list(frame.f_locals.values()):
                    for item in members(value):
                        if (isinstance(item, Request) and item.triggered and item in item.resource.users
                                and item.resource not in entry.holds):
                            entry.holds.append(item.resource)

    # words

    def _name(self, obj: object) -> tuple[str | None, object]:
        found = name_in(obj, self.frames)
        return (found[0], found[1]) if found is not None else (None, None)

    def _holder(self, request: Request) -> str:
        proc = getattr(request, "proc", None)
        entry = self.procs.get(id(proc))
        if entry is None:
            return "a process outside the scheduler"
        return self._who(entry)

    def _who(self, entry: _Proc) -> str:
        """A process by what it works for: a call, a batch's scheduler, else where it waits."""
        if entry.call is not None:
            return entry.call
        scheduler = self.schedulers.get(id(entry.process))
        return scheduler if scheduler is not None else f"a process at {user_at(entry.frames) or 'harness'}"

    def _resource(self, resource: BaseResource[Any, Any], for_call: str | None) -> str:
        name, key = self._name(resource)
        capacity = getattr(resource, "capacity", None)
        what = "a lock" if capacity == 1 else f"a resource of capacity {capacity}"
        text = f"{name} ({what})" if name else what
        if isinstance(key, str) and for_call is not None and key in self.ctx.resource_keys(self.calls[for_call]):
            text += f", the lock of its resource key {key}"
        holders = [self._holder(r) for r in getattr(resource, "users", [])]
        if holders:
            text += f", held by {', '.join(holders)}"
        queued = len(getattr(resource, "queue", []))
        if queued > 1:
            text += f" ({queued} waiting for it)"
        return text

    def _call_state(self, call_id: str) -> str:
        handles = [h for h in self.ctx.handles if h.call.id == call_id]
        if not handles:
            return "never started"
        return "still running" if not handles[-1].triggered else "settled"

    def describe(self, event: object, for_call: str | None, depth: int = 0) -> str:
        if isinstance(event, CallHandle):
            state = "still running" if not event.triggered else "settled"
            return f"the result of {event.call.id} (attempt {event.attempt}, {state})"
        if isinstance(event, Request):
            return "a turn at " + self._resource(event.resource, for_call)
        if isinstance(event, Progress):
            return f"a progress notification of {event.handle.call.id} ({self._progress(event.handle)})"
        if isinstance(event, Condition):
            pending = [e for e in getattr(event, "_events", ()) if not e.processed]
            kind = "all of" if getattr(event, "_evaluate", None) is Condition.all_events else "any of"
            if depth >= 2:
                return f"{kind} {len(pending)} event" + ("" if len(pending) == 1 else "s")
            shown = [self.describe(e, for_call, depth + 1) for e in pending[:_MAX_LISTED]]
            more = f" and {len(pending) - _MAX_LISTED} more" if len(pending) > _MAX_LISTED else ""
            return f"{kind}: " + "; ".join(shown) + more
        if isinstance(event, simpy.Process):
            entry = self.procs.get(id(event))
            if entry is not None and entry.call is not None:
                return f"the process of {entry.call}"
            at = user_at(entry.frames) if entry is not None else None
            return f"a process waiting at {at}" if at else "a process of the scheduler's"
        if isinstance(event, Timeout):
            return "a timer"
        if isinstance(event, simpy.Event):
            name, key = self._name(event)
            if isinstance(key, str) and key in self.calls:
                relation = ""
                if for_call is not None and key in self.ctx.depends_on(self.calls[for_call]):
                    relation = "its depends_on predecessor "
                return f"{name}: {relation}{key} to settle ({key} {self._call_state(key)})"
            if name:
                return f"{name}, an event nothing will trigger"
            return "an event nothing will trigger"
        return f"{type(event).__name__}"

    # the diagnosis

    def diagnose(self) -> Diagnosis:
        self._visit(self.driver, is_driver=True)
        self._holdings()
        waits: list[Wait] = []
        by_call: dict[str, list[_Proc]] = {}
        for entry in self.order:
            if entry.call is not None:
                by_call.setdefault(entry.call, []).append(entry)
        pending = {h.call.id: h for h in self.ctx.handles if not h.triggered}
        settled = {h.call.id for h in self.ctx.handles if h.triggered}
        for call_id in self.calls:
            handle = pending.get(call_id)
            if handle is not None:
                target = getattr(handle.process, "_target", None)
                if isinstance(target, Request):
                    on = "started, then waits for " + self.describe(target, call_id)
                elif isinstance(target, Stalled) and target.every_ms is not None:  # [faults] mcp_progress_only
                    since = (f"stopped answering at {target.at_ms} ms" if target.at_ms > handle.started_ms
                             else "never answered it")
                    on = (f"started at {handle.started_ms} ms; its MCP server {target.server!r} {since} but kept "
                          f"sending notifications/progress every {target.every_ms} ms ({self._progress(handle)}) "
                          "and never the result")
                elif isinstance(target, Stalled):  # [faults] mcp_stall: the answer never comes
                    on = (f"started at {handle.started_ms} ms; its MCP server {target.server!r} stalled at "
                          f"{target.at_ms} ms and never answers")
                else:
                    on = f"started at {handle.started_ms} ms and still running when the run stopped"
                    due = self._due(target)
                    if due is not None:
                        bound = self.ctx.kernel.limits.time_bound_ms
                        on += f"; its next step was due at {due} ms" + (
                            f", past the {bound} ms time bound" if due > bound else "")
                waiter = next((e for e in by_call.get(call_id, ()) if e.process is not handle.process), None)
                if waiter is not None and _awaits_progress(getattr(waiter.process, "_target", None)):
                    on += "; the runtime restarts its timeout at every progress notification (resetTimeoutOnProgress)"
                at = user_at(waiter.frames) if waiter is not None else None
                waits.append(Wait(call_id, "running", on, at, stack_lines(waiter.frames) if waiter else ()))
                continue
            if call_id in settled:
                continue
            entries = by_call.get(call_id)
            if entries:
                entry = entries[-1]
                on = "waits for " + self.describe(getattr(entry.process, "_target", None), call_id)
                waits.append(Wait(call_id, "not started", on, user_at(entry.frames), stack_lines(entry.frames)))
            else:
                waits.append(Wait(call_id, "not started", "no process of the scheduler's is waiting to start it"))
        bridged, runtime = self._bridges()
        if bridged:
            # The bridge's threads and tasks say better what the calls wait on than "nothing starts it".
            named = {wait.who for wait in bridged}
            waits = [w for w in waits if not (w.who in named and w.state == "not started")]
        driver = self.procs.get(id(self.driver))
        if driver is not None:
            target = getattr(self.driver, "_target", None)
            on = (f"waits for its {runtime}, whose {'tasks' if runtime == 'asyncio executor' else 'threads'} "
                  "wait as listed" if runtime else "waits for " + self.describe(target, None))
            waits.append(Wait("scheduler", "waiting", on, user_at(driver.frames), stack_lines(driver.frames)))
        waits.extend(bridged)
        return Diagnosis(tuple(waits), self._cycle())

    def _progress(self, handle: CallHandle) -> str:
        """How many progress notifications the call's attempt had, and when the last came (from the trace)."""
        times = [e["t"] for e in self.ctx.kernel.trace.events
                 if e["ev"] == "progress" and e["call"] == handle.call.id and e["attempt"] == handle.attempt]
        if not times:
            return "none so far"
        return f"{len(times)} so far, the last at {times[-1]} ms"

    def _due(self, event: object) -> int | None:
        """When a scheduled event (a call's latency timer) falls due, read from SimPy's queue."""
        if not isinstance(event, Timeout):
            return None
        if self._due_at is None:
            # Indexed once (by identity, read-only): a hang with thousands of running calls would
            # otherwise scan the whole queue per call.
            self._due_at = {id(queued): int(when) for when, _, _, queued in getattr(self.ctx.env, "_queue", ())}
        return self._due_at.get(id(event))

    def _cycle(self) -> tuple[str, ...]:
        """A cycle of calls and schedulers (this batch's or a peer's) each holding a lock the next one
        waits for. A call's processes are one node (its worker holds what its attempt waits behind);
        another process is a node of its own, named by where it waits."""
        node: dict[int, str] = {}  # id(process) -> its node
        names: dict[str, str] = {}
        for position, entry in enumerate(self.order):
            who = self._who(entry)
            key = who if entry.call is not None or id(entry.process) in self.schedulers else f"#{position}"
            node[id(entry.process)], names[key] = key, who
        waits_for: dict[str, tuple[str, str]] = {}  # node -> (holder node, lock name)
        for entry in self.order:
            target = getattr(entry.process, "_target", None)
            if not isinstance(target, Request):
                continue
            waiter = node[id(entry.process)]
            for holder in target.resource.users:
                held_by = node.get(id(getattr(holder, "proc", None)))
                if held_by is not None and held_by != waiter:
                    waits_for[waiter] = (held_by, self._name(target.resource)[0] or "a lock")
        for start in waits_for:
            path = [start]
            while path[-1] in waits_for and len(path) <= len(waits_for):
                following = waits_for[path[-1]][0]
                if following == start:
                    return tuple(f"{names[n]} waits for {waits_for[n][1]}, held by {names[waits_for[n][0]]}"
                                 for n in path)
                if following in path:
                    break
                path.append(following)
        return ()

    # bridges

    def _bridges(self) -> tuple[list[Wait], str | None]:
        """The waits of a bridged runtime's tasks or threads, and which runtime it is (None: none)."""
        state = self.ctx.session.get("asyncio-bridge")
        loop = getattr(state, "loop", None)
        if loop is not None and not getattr(state, "closed", True):
            waits = _asyncio_waits(loop, state, self.calls) + _loop_blocked(state)
            if waits:
                return waits, "asyncio executor"
        for entry in self.order:
            for frame in entry.frames:
                owner = frame.f_locals.get("self")
                turnstile = getattr(owner, "turnstile", None)
                if turnstile is not None:
                    # The thread bridge releases its threads the moment it sees the run stop, and
                    # reads what they waited on just before (its `stopped_waits`).
                    waits = list(getattr(owner, "stopped_waits", None) or thread_waits(turnstile, self.calls))
                    return waits, "threaded executor" if waits else None
        return [], None




# -- asyncio ----------------------------------------------------------------------------------

_ASYNCIO_PRIMITIVES = {"Event.wait": "asyncio.Event.wait()", "Lock.acquire": "asyncio.Lock.acquire()",
                       "Condition.wait": "asyncio.Condition.wait()", "Semaphore.acquire": "asyncio.Semaphore.acquire()",
                       "BoundedSemaphore.acquire": "asyncio.BoundedSemaphore.acquire()",
                       "Queue.get": "asyncio.Queue.get()", "Queue.put": "asyncio.Queue.put()",
                       "Barrier.wait": "asyncio.Barrier.wait()"}


def _asyncio_waits(loop: Any, state: Any, calls: Mapping[str, ToolCall]) -> list[Wait]:
    import asyncio

    toolbox = getattr(state, "toolbox", None)
    waiting = getattr(toolbox, "waiting", {}) or {}
    task_call = {id(task): handle.call.id for handle, task in list(waiting.items()) if task is not None}
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    described: list[tuple[str, Wait]] = []
    for task in tasks:
        frames = frame_chain(task.get_coro())
        if not frames:
            continue
        user = [f for f in frames if is_user(f.f_code.co_filename)]
        innermost = frames[-1]
        qualname = innermost.f_code.co_qualname
        primitive = _ASYNCIO_PRIMITIVES.get(qualname)
        if primitive is not None:
            obj = innermost.f_locals.get("self")
            found = name_in(obj, user) or global_name(obj, user)
            on = f"awaits {primitive}" + (f" on {found[0]}" if found else "")
            if qualname == "Event.wait":
                on += " (an Event nobody sets)"
            elif qualname == "Lock.acquire" and obj is not None and obj.locked():
                on += " (the lock is held)"
        elif id(task) in task_call:
            on = f"awaits the result of {task_call[id(task)]} (still running)"
        else:
            awaited = getattr(task, "_fut_waiter", None)
            children = getattr(awaited, "_children", None)
            if children is not None:
                pending = sum(1 for child in children if not child.done())
                on = f"awaits asyncio.gather() of {len(children)} awaitables, {pending} still pending"
            else:
                on = f"awaits {type(awaited).__name__}" if awaited is not None else f"is suspended in {qualname}"
        bridge_main = not is_user(frames[0].f_code.co_filename)
        who = call_of(list(reversed(frames)), calls) or ("executor" if bridge_main else "task")
        key = user_at(frames) or qualname
        described.append((key, Wait(who, "task", on, user_at(frames), stack_lines(frames))))
    return [wait for _, wait in sorted(described, key=lambda item: (item[1].who, item[0], item[1].on))]


def _loop_blocked(state: Any) -> list[Wait]:
    """What held the loop for good, and the threads outside the bridge the run's code reached (a sync
    tool on anyio's worker thread): each named, with the fix."""
    from harness.bridges.asyncio.blocking import UNBRIDGED_FIX, real_threads

    blocker = getattr(state, "blocker", None)
    if blocker is None:
        return []
    waits = []
    if blocker.frozen is not None:
        waits.append(Wait("event loop", "held", f"held by {blocker.frozen}, which never returned: nothing else on "
                          "the loop can run"))
    # Which tool a real thread called, and whether it did before the run stopped, depends on real
    # timing: the witness names the thread and how the run's code reached it, no more.
    started = {u.thread for u in blocker.unbridged if u.started}
    named = sorted({u.thread for u in blocker.unbridged} | set(real_threads()))
    for name in named:
        how = "a real thread started from the event loop" if name in started else (
            "a real thread (started from a bridged event loop) that called a harness tool")
        waits.append(Wait(f"thread {name!r}", "unbridged",
                          f"{how}: it runs outside the bridge and the virtual clock, and the loop never hears "
                          f"back from it; {UNBRIDGED_FIX}"))
    return waits




# -- threads ----------------------------------------------------------------------------------


def _awaits_progress(event: object) -> bool:
    """Whether a wait includes a call's next progress notification (a timeout restarted on progress)."""
    return isinstance(event, Progress) or (isinstance(event, Condition)
                                           and any(isinstance(e, Progress) for e in getattr(event, "_events", ())))
