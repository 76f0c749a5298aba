"""The scheduler contract: what a scheduler is given and what it must give back.

Owns `Scheduler` (the protocol a policy implements), `SchedulerContext` (the only door from a
scheduler to the simulation: time, starting and abandoning calls, limits, approvals and checkpoints,
declared knowledge) and the read-only views and private copies it hands out. A started call is a
`CallHandle`; how its attempt runs on the virtual clock is `harness.scheduling.attempt`'s (the
context's base class). A scheduler sees only declared metadata; behaviour, latencies and the world
stay behind this contract. It never decides an order itself.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import simpy
from simpy.events import PENDING

from harness.diagnosis import origins
from harness.faults.failures import FailureModel
from harness.faults.latency import LatencyModel
from harness.faults.plan import FaultPlan
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.scheduling.approvals import Approval, ApprovalScript, ask
from harness.scheduling.attempt import AttemptExecution, CallHandle
from harness.scheduling.checkpoints import Checkpoint, copying, restore, tree_digest
from harness.scheduling.command_guard import dangerous_patterns
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.frozen import EXECUTION_FIELDS, clone, private_batch
from harness.scheduling.handle import AttemptProcess
from harness.sim.arbiter import Arbiter
from harness.sim.conditions import FlatAllOf, FlatAnyOf
from harness.sim.kernel import Kernel, new_process
from harness.sim.machine import Machine
from harness.sim.trace import value_digest
from harness.tools.inputs import Source
from harness.tools.spec import MUTATING_OPS, Declared, ToolSpec
from harness.world.world import World

# `CallHandle` is harness.scheduling.handle's, `value_digest` the trace's (harness.sim.trace);
# both importable from here too, as every policy and bridge imports the contract from this module.
__all__ = ["END_OF_RUN", "CallHandle", "Scheduler", "SchedulerContext", "SchedulerFactory", "SchedulerProcess",
           "value_digest"]

#: The session key of the callbacks a run calls once its batches are over (see `at_end_of_run`).
END_OF_RUN = "harness:end-of-run"
#: The session key of the run's checkpoint count (checkpoint ids are run-wide).
_CHECKPOINTS = "harness:checkpoints"
#: The session key of the dangerous-command patterns the user approved for the session (hermes' cache).
_SESSION_APPROVED = "harness:session-approved"

#: What a scheduler's process returns: one result per call, in the order it reports them.
SchedulerProcess = Generator[simpy.Event, Any, Sequence[CallResult]]


@runtime_checkable
class Scheduler(Protocol):
    """A scheduling policy under test.

    Calling it with a batch and a context returns a SimPy process generator (yield events from the
    context, return the results). `name` identifies it in traces, reports and reproduce commands.
    """

    name: str

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess: ...


class SchedulerContext(AttemptExecution):
    """Everything a scheduler may use for one batch.

    Time: `now`, `sleep(ms)`, `all_of`, `any_of`, `resource(capacity)`. Calls: `start`, `cancel`,
    `with_timeout`, `settle` (honours the interrupt), `skip`. Limits: `max_concurrency`, `tool_caps`,
    `interrupt` (an event), `grace_ms`, `machine` (the declared CPUs). Approvals and checkpoints:
    `needs_approval(call)`, `approval(call)`, `checkpoint(label)` (at once) or `snapshot(label)` (taking
    time), `rollback(checkpoint)`. Knowledge: `declared(call)`,
    `resource_keys(call)`, and
    where paths lead:

    - `cwd`: the shell session's working directory at the start of the batch (a `terminal` `cd`
      in an earlier turn moves it; tools resolve relative paths against it);
    - `process_cwd`: the runtime process's own working directory, which no `cd` moves (what
      `os.getcwd()` returns to a planner, e.g. inside `from_gate` / `from_plan`);
    - `home`: the world's home directory (`~`), at the start of the batch;
    - `realpath(path)`: `path` with the world's symlinks resolved as they are at the moment of the
      call, like `os.path.realpath` (no case folding, hard links untouched).

    Nothing here reveals latencies or real behaviour.
    """

    # Defaults of attributes `__init__` sets only when they differ (see there).
    _delegate: Callable[[Any, Any, str], simpy.Event] | None = None
    _approvals: ApprovalScript | None = None
    _may_duplicate = _may_tear = _interruptible = False
    _arbiter: Arbiter | None = None
    _execution: ExecutionPolicy | None = None
    _failures: Callable[[ToolCall], FailureModel | None] | None = None
    _jitter = 0.0
    max_concurrency: int | None = None
    grace_ms = 0
    #: Set when the runtime crashes (fault plan): from then on nothing the scheduler asks for happens.
    crashed = False

    def __init__(self, kernel: Kernel, world: World, catalogue: Mapping[str, ToolSpec], batch: Batch,
                 scheduler_name: str, call_latency: Mapping[str, LatencyModel] | None = None, *,
                 max_concurrency: int | None = None, tool_caps: Mapping[str, int] | None = None,
                 interrupt: simpy.Event | None = None, grace_ms: int = 0, jitter: float = 0.0,
                 failures: Callable[[ToolCall], FailureModel | None] | None = None,
                 execution: ExecutionPolicy | None = None, session: dict[str, Any] | None = None,
                 depends_on: Mapping[str, tuple[str, ...]] | None = None, process_cwd: str | None = None,
                 arbiter: Arbiter | None = None, faults: FaultPlan | None = None,
                 rate_windows: dict[str, list[int]] | None = None,
                 args_from: Mapping[str, Mapping[str, str]] | None = None,
                 approvals: ApprovalScript | None = None,
                 produced: dict[str, Any] | None = None,
                 file_locks: dict[str, simpy.Resource] | None = None,
                 delegate: Callable[[Any, Any, str], simpy.Event] | None = None,
                 machine: Machine | None = None) -> None:
        self.kernel = kernel
        self._events = kernel.trace.events
        #: The machine the runtime runs on (the scenario's `[machine]`): what bridged code reads as
        #: `os.cpu_count()` and its relatives, never the host's.
        self.machine = machine if machine is not None else Machine()
        #: Starts a subagent of the crew for a `delegate` call (None outside a crew with subagents):
        #: takes the call's `agent` and `task` arguments, returns the event of the subagent's task.
        if delegate is not None:  # (this and the attributes below set only when not their class default:
            self._delegate = delegate  # a context of up to 30 attributes keeps CPython's inline values)
        #: The scenario's scripted user; None: auto-approve mode (every tool pre-approved, nothing asked).
        if approvals is not None:
            self._approvals = approvals
        self._requests: dict[str, int] = {}
        #: Run-wide flock table (file -> lock) for tools declared `file_lock`: every runtime of the
        #: run (every agent's) shares it, as processes share the kernel's locks.
        self._file_locks = file_locks if file_locks is not None else {}
        #: Data flow: arguments a call takes from earlier results, and each call's latest value settled
        #: ok (run-wide), which an attempt reads when it starts.
        self._args_from = args_from or {}
        self._produced = produced if produced is not None else {}
        self._faults = faults or FaultPlan()
        # Whether an attempt can meet these faults at all (a rate of 0 never draws): most runs cannot.
        if self._faults.duplicate_delivery > 0:
            self._may_duplicate = True
        if self._faults.torn_writes > 0:
            self._may_tear = True
        self._rate_windows = rate_windows if rate_windows is not None else {}
        #: Order-first exploration: calls step when the arbiter says, not after a latency.
        if arbiter is not None:
            self._arbiter = arbiter
        # Whether an attempt may take the plain path (harness.scheduling.attempt, `_attempt`): no arbiter,
        # and no rate limit, duplicate delivery or torn write in the fault plan (most runs).
        self._plain = (arbiter is None and not self._faults.rate_limits and not self._may_duplicate
                       and not self._may_tear)
        #: The directory the runtime process was started in (never moved by the shell's `cd`).
        self.process_cwd = process_cwd if process_cwd is not None else world.cwd
        # The scenario's execution policy; the scheduler's own copy of it is made when first read
        # (`execution`): most batches' schedulers never read it.
        self._given_execution = execution
        #: Runtime state that outlives one batch (e.g. tools marked unavailable), per run.
        self.session: dict[str, Any] = session if session is not None else {}
        self._depends_on = depends_on or {}
        if failures is not None:
            self._failures = failures
        if jitter:
            self._jitter = jitter
        self._call_latency = call_latency or {}
        #: Concurrency limits the scenario declares; the caps oracle holds schedulers to them.
        if max_concurrency is not None:
            self.max_concurrency = max_concurrency
        self.tool_caps: Mapping[str, int] = MappingProxyType(dict(tool_caps)) if tool_caps else _NO_CAPS
        #: Triggered when the user interrupts the turn (never, if the scenario has no interrupt).
        self.interrupt: simpy.Event = interrupt if interrupt is not None else kernel.env.event()
        #: Whether a user interrupt can come at all (the scenario scripts one).
        if interrupt is not None:
            self._interruptible = True
        #: How long running calls may go on after an interrupt before they must be abandoned.
        if grace_ms:
            self.grace_ms = grace_ms
        self.env = kernel.env
        self._world = world
        self._catalogue = catalogue
        #: The scheduler's own copy of the batch (it is also the one the run hands the scheduler):
        #: `object.__setattr__` on it, or on its calls, cannot reach the scenario the oracles judge or
        #: a cached scenario the next run uses.
        self.batch = private_batch(batch)
        # `start` checks a call belongs to the batch; by identity first (the scheduler's own copies), so
        # starting N calls is not N equality scans of the batch.
        self._batch_calls = set(map(id, self.batch.calls))
        self.scheduler_name = scheduler_name
        #: The shell's cwd and the world's home at the start of the batch (snapshots: a `cd`
        #: during the batch does not move them).
        self.cwd = world.cwd
        self.home = world.home
        #: The world's users (name -> home), as `~name` expands for tools and planners.
        self.users: Mapping[str, str] = dict(world.users)
        self.handles: list[CallHandle] = []

    @property
    def execution(self) -> ExecutionPolicy:
        """The execution policy the scenario asks for (plan-based schedulers apply it): the scheduler's
        own copy, as the batch is."""
        made = self._execution
        if made is None:
            given = self._given_execution
            made = self._execution = clone(given, EXECUTION_FIELDS) if given is not None else ExecutionPolicy()
        return made

    @execution.setter
    def execution(self, policy: ExecutionPolicy) -> None:
        self._execution = policy

    # -- time -------------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.kernel.now

    @property
    def interrupted(self) -> bool:
        return self.interrupt._value is not PENDING  # `interrupt.triggered` (asked before every serial start)

    def sleep(self, ms: int, purpose: str = "sleep") -> simpy.Timeout:
        """A timer `ms` of virtual time from now. `purpose` (timeout, backoff, grace, poll...) is how
        exploration reports which timers it ordered against the calls."""
        return self.kernel.delay(ms, purpose)

    def all_of(self, events: Iterable[simpy.Event]) -> simpy.Event:
        return FlatAllOf(self.env, list(events))  # `simpy.AllOf`, with fewer calls (harness.sim.conditions)

    def any_of(self, events: Iterable[simpy.Event]) -> simpy.Event:
        return FlatAnyOf(self.env, list(events))

    def resource(self, capacity: int) -> simpy.Resource:
        """A FIFO semaphore on the virtual clock (requests are served in request order)."""
        return simpy.Resource(self.env, capacity=capacity)

    def at_end_of_run(self, callback: Callable[[], None]) -> None:
        """Call `callback` once, when the run's batches are over and abandoned calls have settled,
        before the run ends: a bridge cancels and drains what its runtime left running then, as
        `asyncio.run` does when its main coroutine returns."""
        hooks = self.session.setdefault(END_OF_RUN, [])
        if callback not in hooks:
            hooks.append(callback)

    def note(self, text: str, call: ToolCall | None = None) -> None:
        """Write a scheduler decision into the trace (shown in timelines)."""
        if not self.crashed:
            self.kernel.record("note", call=call.id if call else None, text=text)

    # -- knowledge --------------------------------------------------------------------------

    def declared(self, call: ToolCall) -> Declared | None:
        """The declared metadata of the call's tool, or None for a tool the runtime does not know."""
        spec = self._catalogue.get(call.name)
        return spec.declared if spec else None

    def depends_on(self, call: ToolCall) -> tuple[str, ...]:
        """Ids of calls this one declares it needs the output of (seed 003's DAG)."""
        return self._depends_on.get(call.id, ())

    def data_producers(self, call: ToolCall) -> tuple[str, ...]:
        """Oracle knowledge (for `optimal`): the calls whose results this one's `args_from` reads. A
        runtime sees the model's own `depends_on` (above), not this."""
        producers: list[str] = []
        for text in self._args_from.get(call.id, {}).values():
            try:
                producers.extend(Source.parse(text).producers)
            except ValueError:
                continue
        return tuple(dict.fromkeys(producers))

    def realpath(self, path: str) -> str:
        """`os.path.realpath` as a planner on this machine would get it: the world's symlinks as
        they are now (at planning time, the start of the batch), other components as spelled."""
        return self._world.realpath(path)

    def real_footprints(self) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """Oracle knowledge, for the `optimal` lower bound only: each call's real (reads, writes)
        when the batch runs alone in model order from the current world. A real runtime cannot
        know this; a policy under test must not use it."""
        from harness.tools.semantics import apply

        world = self._world.clone()
        footprints: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        for call in self.batch:
            touched: list[tuple[str, str]] = []

            def sink(op: str, target: str, digest: str | None, into: list[tuple[str, str]] = touched) -> None:
                into.append((op, target.partition("\x00")[0]))

            apply(world, call, self._catalogue, in_place=True, sink=sink)
            footprints[call.id] = (frozenset(t for op, t in touched if op not in MUTATING_OPS),
                                   frozenset(t for op, t in touched if op in MUTATING_OPS))
        return footprints

    def resource_keys(self, call: ToolCall) -> tuple[str, ...]:
        declared = self.declared(call)
        if declared is None:
            return ()
        return declared.resource_keys.compute(call.parsed_arguments(), self.cwd, self.home, self.users)

    # -- approvals and checkpoints ------------------------------------------------------------

    def needs_approval(self, call: ToolCall) -> bool:
        """Whether `call` must wait for the user's approval before it starts: its tool is declared
        `needs_confirmation` and the scenario scripts a user (`[approvals]`); with `guard = "hermes"` a
        terminal command needs it exactly when it matches a dangerous-command pattern. Without a
        script every tool is pre-approved. `start` does not enforce it: the `approvals` oracle judges."""
        if self._approvals is None:
            return False
        if self._approvals.guard == "hermes" and call.name == "terminal":
            return bool(dangerous_patterns(call))  # hermes' command guard decides for the terminal
        declared = self.declared(call)
        return declared is not None and declared.needs_confirmation

    @property
    def scripted_user(self) -> bool:
        """Whether the scenario scripts a user to ask (`[approvals]`); without one every tool is
        pre-approved and nobody answers a question."""
        return self._approvals is not None

    def approval(self, call: ToolCall) -> simpy.Event:
        """Ask the user to approve `call`: an event that succeeds with an `Approval` (approve, session
        or deny) when the scripted user answers, after their latency, or never for a user who does not
        answer (wait with a timeout). Each request is traced, and so is the answer. Under hermes'
        guard, a command whose patterns the user all approved for the session is approved at once,
        unasked (traced as an `approval` with `cached`)."""
        request = self._requests.get(call.id, 0) + 1
        self._requests[call.id] = request
        if self.crashed:
            return self.env.event()  # a dead runtime asks nothing
        guarded = self._approvals is not None and self._approvals.guard == "hermes"
        patterns = dangerous_patterns(call) if guarded else ()
        cache: list[str] = self.session.setdefault(_SESSION_APPROVED, [])
        if patterns and all(key in cache for key in patterns):
            # hermes' session cache: every pattern of this command was approved for the session.
            self.kernel.record("approval", call=call.id, answer="session", request=request, patterns=list(patterns),
                               cached=True)
            return self.env.event().succeed(Approval(call.id, "session", request, self.now, self.now))
        answered = ask(self.kernel, self._approvals, call, request, patterns)

        def remember(event: simpy.Event) -> None:
            if isinstance(event.value, Approval) and event.value.answer == "session":
                cache.extend(key for key in patterns if key not in cache)

        answered.callbacks.append(remember)
        return answered

    def checkpoint(self, label: str = "") -> Checkpoint:
        """Snapshot the world's file tree now (what a git snapshot holds; ledgers and the shell session
        are not in it). Traced with its digest."""
        number = int(self.session.get(_CHECKPOINTS, 0)) + 1
        self.session[_CHECKPOINTS] = number
        state = self._world.state()
        if self.crashed:
            return Checkpoint(number, label, self.now, state)
        snapshot = Checkpoint(number, label, self.now, state, seq=len(self.kernel.trace))
        self.kernel.record("checkpoint", checkpoint=number, label=label or None, digest=tree_digest(state))
        return snapshot

    def snapshot(self, label: str = "", *, before: ToolCall | None = None, file_ms: int = 20) -> simpy.Event:
        """Snapshot the file tree as a real copy does, over virtual time: one file every `file_ms`
        (`harness.scheduling.checkpoints.copying`). An event whose value is the `Checkpoint` when the
        copy is done; `before` names the call it is taken for (the serial reference places it there)."""
        number = int(self.session.get(_CHECKPOINTS, 0)) + 1
        self.session[_CHECKPOINTS] = number
        if self.crashed:
            return self.env.event()  # a dead runtime copies nothing
        return self.env.process(copying(self.kernel, self._world, number, label, before.id if before else None,
                                        file_ms))

    def rollback(self, checkpoint: Checkpoint, paths: Sequence[str] | None = None) -> None:
        """Restore the file tree (or only the absolute `paths`) as `checkpoint` holds it, now. Calls
        still running are not stopped: what they write afterwards lands on the restored tree."""
        if self.crashed:
            return
        scope = None if paths is None else sorted(set(paths))
        restore(self._world, checkpoint, scope)
        self.kernel.record("rollback", checkpoint=checkpoint.id, checkpoint_seq=checkpoint.seq,
                           label=checkpoint.label or None, paths=scope,
                           digest=tree_digest(checkpoint.state, scope),
                           restored=tree_digest(self._world.state(), scope))

    # -- calls ------------------------------------------------------------------------------

    def start(self, call: ToolCall, *, attempt: int = 1, idempotency_key: str | None = None) -> CallHandle:
        """Start one attempt of `call` now; the returned handle settles with its result."""
        if id(call) not in self._batch_calls and call not in self.batch.calls:
            raise ValueError(f"call {call.id!r} is not part of this batch")
        env = self.env
        # `CallHandle(env, call, attempt, now)`, without the `__init__` call: the same attributes.
        handle = _new(CallHandle)
        handle.env, handle.callbacks, handle._value = env, [], PENDING
        handle.call, handle.attempt, handle.started_ms = call, attempt, int(env._now)
        handle.process, handle.stops_on_cancel, handle.finished = None, True, False
        if self.crashed:
            return handle  # a dead runtime starts nothing: the handle never settles
        self.handles.append(handle)
        handle.process = new_process(env, self._attempt(handle, idempotency_key), AttemptProcess)
        if origins.active is not None:  # the story's source lines: only while a report asks for them
            origins.note_start(handle)
        return handle

    def cancel(self, handle: CallHandle, *, outcome: Outcome = Outcome.CANCELLED, reason: str = "cancelled") -> bool:
        """Abandon a running call, settling its handle with `outcome` now.

        A tool that stops on cancel is interrupted (its remaining effects never land); one that
        does not keeps running detached and its effects land later. Returns False if the call had
        already settled.
        """
        if handle.triggered:
            return False
        call = handle.call
        if handle.process is None:
            # Started by a crashed runtime: it never ran. Its dead code may go on, so the handle
            # settles, but nothing is traced: there is no attempt to abandon.
            handle.succeed(CallResult(call.id, outcome, None, reason, handle.attempt, handle.started_ms, self.now))
            return True
        detached = not handle.stops_on_cancel and not handle.finished
        self.kernel.record("abandon", call=call.id, attempt=handle.attempt, outcome=outcome.value,
                           reason=reason, detached=detached or None)
        handle.succeed(CallResult(call.id, outcome, None, reason, handle.attempt, handle.started_ms, self.now))
        if not detached and handle.process is not None and handle.process.is_alive:
            handle.process.interrupt(reason)
        return True

    def skip(self, call: ToolCall, reason: str = "skipped due to user interrupt") -> CallResult:
        """A `cancelled` result for a call that was never started (hermes' interrupt behaviour)."""
        if not self.crashed:
            self.kernel.record("skip", call=call.id, reason=reason)
        return CallResult(call.id, Outcome.CANCELLED, None, reason, 0, self.now, self.now)

    def settle(self, handle: CallHandle) -> simpy.Event:
        """An event that settles with the call's result, honouring the user interrupt: once it
        fires, the call gets `grace_ms` more and is then abandoned as cancelled. When no interrupt can
        come (the scenario scripts none), that is the handle itself."""
        if not self._interruptible:
            return handle
        return self.env.process(self._settle(handle))

    def _settle(self, handle: CallHandle) -> Generator[simpy.Event, Any, CallResult]:
        yield simpy.AnyOf(self.env, [handle, self.interrupt])
        if not handle.triggered:
            yield simpy.AnyOf(self.env, [handle, self.sleep(self.grace_ms, "grace")])
            if not handle.triggered:
                # It may already have changed the world: the honest report is "effect unknown".
                self.cancel(handle, outcome=Outcome.UNKNOWN,
                            reason=f"interrupted: still running after the {self.grace_ms} ms grace period; "
                                   "effect unknown")
        return handle.result

    def with_timeout(self, handle: CallHandle, ms: int) -> simpy.Event:
        """An event that settles with the call's result, or after `ms` with a timeout result
        (`asyncio.wait_for` semantics: the call is abandoned, see `cancel`)."""
        return self.env.process(self._timeout(handle, ms))

    def _timeout(self, handle: CallHandle, ms: int) -> Generator[simpy.Event, Any, CallResult]:
        timer = self.sleep(ms, "timeout")
        yield simpy.AnyOf(self.env, [handle, timer])
        if not handle.triggered:
            self.cancel(handle, outcome=Outcome.TIMEOUT, reason=f"timed out after {ms} ms")
        return handle.result


_new = object.__new__

#: What a scheduler reads and might be tempted to change is a read-only view or its own copy.
_NO_CAPS: Mapping[str, int] = MappingProxyType({})


SchedulerFactory = Callable[..., Scheduler]
