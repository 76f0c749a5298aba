"""`from_asyncio`: a runtime's real asyncio executor as a scheduler, run unchanged on virtual time.

Owns the per-run state (`RunState`: the lent loop and the pump, a SimPy process that steps the loop
whenever a call settles or an asyncio timer falls due, for the whole run, so tasks an executor leaves
behind keep running into later turns exactly as on a long-lived loop; between loop iterations the
pump runs the bridge threads work was handed to, one at a time). A run has one such state, whoever
asks: the agents of a crew (`[[agents]]`, each with a session of its own) run their batches as tasks
of the one loop, side by side, as agents sharing a process share its event loop. Also owns the
per-batch scheduler:
start the executor's task, deliver the user interrupt, wait for it, report leftover tasks, turn its
return value into results. Never decides an order (the user's code does) and never advances time
except through the kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import weakref
from collections.abc import Awaitable, Callable, Generator, Mapping, MutableMapping, Sequence
from typing import Any, Literal

import simpy

from harness.bridges import start_order
from harness.bridges.asyncio import loop as loops
from harness.bridges.asyncio.blocking import Blocker
from harness.bridges.asyncio.calls import BridgeToolCall, bridge_calls
from harness.bridges.asyncio.results import to_results
from harness.bridges.asyncio.threads import ThreadHost
from harness.bridges.asyncio.toolbox import Registry, Toolbox, current
from harness.bridges.leftovers import RUN_ON_MS, left_running
from harness.bridges.naming import origin_name
from harness.bridges.threads.patches import Installation
from harness.bridges.threads.turnstile import BridgeThread
from harness.model import Batch, CallResult, Outcome, ToolCall
from harness.scheduling.context import CallHandle, SchedulerContext, SchedulerProcess
from harness.sim.kernel import Kernel, StopReason
from harness.sim.realtime import WallClockExceeded

Tools = Mapping[str, Callable[..., Awaitable[Any]]]
Execute = Callable[..., Awaitable[Sequence[Any]]]
#: How the user interrupt reaches the executor: "cancel" (its task is cancelled, as Ctrl-C cancels
#: `asyncio.run`'s main task), an `asyncio.Event` the runtime watches (set), a callback (called on
#: the loop), or None (never: the executor does not know about interrupts).
InterruptHook = Literal["cancel"] | asyncio.Event | Callable[[], object] | None

#: Where a session finds the run's state (also read by the hang diagnosis, `harness.run.hang`).
_SESSION_KEY = "asyncio-bridge"

#: What the bridge reports for a call the executor never started when the user interrupt cancelled
#: it: the runtime itself reports nothing (its task died with CancelledError), so the text says whose.
SKIPPED_BY_BRIDGE = ("skipped (reported by the harness's asyncio bridge: the user interrupt cancelled the runtime's "
                     "executor before it started this call)")


class ExecutorError(RuntimeError):
    """The bridged executor did something a scheduler must not; the message says what."""


class RunState:
    """One run's side of the bridge: the lent loop and the pump that steps it."""

    def __init__(self, ctx: SchedulerContext, registry: Registry | None) -> None:
        self.kernel: Kernel = ctx.kernel
        self.ctx = ctx
        #: The module-level tool tables pointed at the simulation while the run is open (installed by
        #: the first batch of each scheduler that has one, restored when the run ends).
        self.registries: list[Registry] = []
        self.closed = False
        #: The thread the run's pump steps the loop in (any other thread but a bridge thread is foreign).
        self.thread_ident = threading.get_ident()
        # The clocks (and `time.sleep`) bridged code reads are virtual for the whole run, on the loop
        # too (`harness.bridges.clock`); in place before the lend, so the previous run's drain does not sleep
        # for real. Closed when the run ends, after its own drain (`end`).
        self.patches = Installation(machine=ctx.machine, clocks_only=True)
        self._ending = False
        self.loop = loops.lend(self._now, self.release, self._note)
        self.blocker = Blocker(self)
        self.loop.blocker = self.blocker
        self.loop.owner_of = current.get
        self.loop.offload = self._offload
        # `as_completed` starts coroutines in an order drawn from the seed, not from their addresses.
        start_order.lend(self.loop, ctx.kernel.streams.stream("asyncio/start-order"))
        #: The bridge threads work handed to a thread runs on (made at the run's first hand-off).
        self.threads: ThreadHost | None = None
        #: The toolbox of the batch that began last: what a tool called in a thread serves when
        #: neither the thread's context nor the work it runs names a batch (see `ThreadHost.toolbox_of`).
        self.toolbox: Toolbox | None = None
        self.use(registry)
        self.wake: simpy.Event = ctx.env.event()
        self._timer: tuple[int, simpy.Event] | None = None
        #: Batches whose executor task has not ended (a hung or crashed one never does).
        self.open_batches = 0
        #: Calls a bridge thread started and waits on (a sync tool under `asyncio.to_thread`): a thread
        #: cannot be cancelled, so a runtime that stops awaiting it leaves the call running.
        self.thread_calls: list[CallHandle] = []
        #: The sessions that hold this state (each batch's, every agent's), let go when the run ends.
        self._sessions: list[dict[str, Any]] = []
        # The end-of-run hook holds the state weakly: the sessions hold the hook, and the state holds
        # the last batch's context, which holds its session (see `_let_go`).
        alive = weakref.ref(self)

        def end_of_run() -> None:
            state = alive()
            if state is not None:
                state.end()

        self.end_of_run = end_of_run
        self._pump_steps = self._pump()
        ctx.env.process(self._pump_steps)

    @classmethod
    def of(cls, ctx: SchedulerContext, registry: Registry | None) -> RunState:
        """The run's state: made by its first batch, shared by every batch of the run (every agent's)."""
        held = _runs.get(ctx.env)
        found = held() if held is not None else None
        if found is None or found.closed:
            state = cls(ctx, registry)
            _runs[ctx.env] = weakref.ref(state)
        else:
            state = found
        state.use(registry)
        state.ctx = ctx
        if ctx.session.get(_SESSION_KEY) is not state:
            ctx.session[_SESSION_KEY] = state
            state._sessions.append(ctx.session)
        ctx.at_end_of_run(state.end_of_run)
        return state

    def use(self, registry: Registry | None) -> None:
        if registry is not None and not self.closed and all(r is not registry for r in self.registries):
            registry.install()
            self.registries.append(registry)

    def _now(self) -> int:
        return self.kernel.now

    def _note(self, text: str) -> None:
        self.ctx.note(f"asyncio: {text}")

    def signal(self) -> None:
        if not self.wake.triggered:
            self.wake.succeed()

    def end(self) -> None:
        """The run's batches are over: tasks its executor left pending first run on in virtual time
        (up to `RUN_ON_MS`: an orphaned tool task's calls and their effects land in this run, for the
        oracles to judge), then are cancelled and drained (their trace notes land in this run), and
        the loop waits, empty, for the next run. The run's clock patches come off last."""
        self._ending = True
        _runs.pop(self.kernel.env, None)
        try:
            if self.closed or self.loop._release != self.release:
                return
            try:
                if self.open_batches == 0 and not self.ctx.crashed:  # a hung or dead runtime acts no more
                    self._run_on()
            finally:
                self.loop.reclaim()
        finally:
            self.patches.close()
            self._let_go()

    def _let_go(self) -> None:
        """The run is over: nothing of it refers to this state any more, so that reference counting
        frees the run (its world, trace, tasks and results) as soon as its caller drops it, as after
        a run of a built-in policy. Left to the cycle collector, a run's ~200 objects made young
        collections 20 times as frequent as for `parallel`, each over the live run: ~100 us a run."""
        self.toolbox = None
        self.thread_calls.clear()
        self.threads = None  # closed by now (`release`); its host holds this state
        for session in self._sessions:
            if session.get(_SESSION_KEY) is self:
                del session[_SESSION_KEY]
        self._sessions.clear()
        # The pump waits on an event for good: closing its generator drops its frame (and this state).
        with contextlib.suppress(ValueError):  # it is running: the run ended inside a loop step
            self._pump_steps.close()

    def _running_thread_calls(self) -> list[CallHandle]:
        return [handle for handle in self.thread_calls if not handle.triggered]

    def _run_on(self) -> None:
        """Step the simulation while tasks the runtime left are pending, or calls bridge threads
        started are running, until none is or `RUN_ON_MS` of virtual time have passed (or the run's
        bounds stop the kernel)."""
        kernel, env = self.kernel, self.kernel.env
        if not self.loop.pending_since(0) and not self._running_thread_calls():
            return
        # The pump first sees what settled in this instant (the run stopped as the last call ended).
        self.signal()
        kernel.run_until(kernel.end_of_instant())
        pending, calls = self.loop.pending_since(0), self._running_thread_calls()
        if not pending and not calls:
            return
        horizon = kernel.now + RUN_ON_MS
        left = [f"{len(pending)} task(s)"] if pending else []
        left += [f"the call(s) {', '.join(h.call.id for h in calls)} in threads"] if calls else []
        self._note(f"the run's batches are over with {' and '.join(left)} the runtime left running; they run on "
                   f"for up to {RUN_ON_MS} ms before they are cancelled")
        while (pending or calls) and kernel.now < horizon:
            changed = env.event()

            def ended(_done: object, changed: simpy.Event = changed) -> None:
                if not changed.triggered:
                    changed.succeed()

            for task in pending:
                task.add_done_callback(ended)
            for handle in calls:
                handle.callbacks.append(ended)
            self.signal()
            timer = kernel.delay(horizon - kernel.now, "run-on")
            stop = kernel.run_until(simpy.AnyOf(env, [changed, timer]))
            for task in pending:
                task.remove_done_callback(ended)
            if stop is not StopReason.DONE or timer.processed:
                break
            pending, calls = self.loop.pending_since(0), self._running_thread_calls()
        if pending:
            self._note(f"{len(pending)} task(s) still pending after the run-on are cancelled: "
                       + "; ".join(_describe_task(t, None) for t in pending))

    def _offload(self, func: Callable[..., Any], args: tuple[Any, ...]) -> asyncio.Future[Any]:
        if self.threads is None:
            self.threads = ThreadHost(self.kernel, self.signal, self.ctx._arbiter is not None, self)
        return self.threads.submit(self.loop, func, args, current.get())

    def release(self) -> None:
        """The run is over (the loop is lent to the next one): its threads are released and joined,
        then what is left on the loop is drained without it."""
        self.closed = True
        start_order.reclaim(self.loop)
        self.blocker.close()
        try:
            if self.threads is not None:
                stuck = self.threads.close()
                if stuck:
                    self._note(f"threads {', '.join(stuck)} would not end; left as daemon threads")
        finally:
            for registry in reversed(self.registries):
                registry.restore()
            if not self._ending:  # the next run took the loop back: it has patches of its own in place
                self.patches.close()

    def _pump(self) -> Generator[simpy.Event, Any, None]:
        env, kernel, loop = self.kernel.env, self.kernel, self.loop
        while not self.closed:
            loop.run_ready()
            if self.blocker.frozen is not None:
                return  # a blocking call never returned: the loop is held for good (a hang)
            threads = self.threads
            if threads is not None and not threads.closed:
                # Between loop iterations, the threads work was handed to: one at a time, each until
                # it blocks or ends (its future settles then), and the loop again after each.
                threads.expire()
                runnable = threads.runnable()
                if runnable:
                    thread = runnable[0] if self.ctx._arbiter is None else (yield from self._choose(runnable))
                    if not self.closed:
                        threads.run(thread)
                    continue
            waits = [self.wake]
            due = loop.next_timer_ms()
            purpose = "sleep"
            thread_due = threads.next_deadline() if threads is not None and not threads.closed else None
            if thread_due is not None and (due is None or thread_due < due):
                due, purpose = thread_due, "thread-wait"
            if due is not None:
                due = max(due, kernel.now)
                if self._timer is None or self._timer[0] != due or self._timer[1].processed:
                    self._timer = (due, kernel.delay(due - kernel.now, purpose))
                waits.append(self._timer[1])
            # Nothing ready and no timer: wait for a call to settle, scheduling nothing, so a
            # deadlocked executor leaves the kernel idle and is reported as a hang.
            yield _FirstOf(env, waits)
            if self.wake.triggered:
                self.wake = env.event()

    def _choose(self, runnable: list[BridgeThread]) -> Generator[simpy.Event, Any, BridgeThread]:
        """Order-first runs: ask the arbiter which runnable thread goes next, as `from_threads` does: a
        step that takes no time and comes before any timer fires, ordered against the calls' steps."""
        # The context keeps its arbiter private (schedulers never choose orders); a bridge must offer
        # its thread switches to it.
        arbiter = self.ctx._arbiter
        assert arbiter is not None
        now = self.kernel.now
        asks = [(thread, arbiter.step(thread.entry, 1, earliest=now, latest=now)) for thread in runnable]
        yield simpy.AnyOf(self.kernel.env, [granted for _, granted in asks])
        return next(thread for thread, granted in asks if granted.triggered)


class _FirstOf(simpy.Event):
    """`simpy.AnyOf` for the pump's waits (the wake, a timer), scheduled exactly where AnyOf would be
    (when the first of them is processed) and processed as one step, so event order, step counts and
    fingerprints are the same; without the condition's value, which the pump never reads, nor its
    checks, which cost a tenth of a bridged run's SimPy time (the pump waits ~10 times a run)."""

    def __init__(self, env: simpy.Environment, events: list[simpy.Event]) -> None:
        super().__init__(env)
        self._events = events
        assert self.callbacks is not None
        self.callbacks.append(self._let_go)
        for event in events:
            if event.callbacks is None:
                self._check(event)
            else:
                event.callbacks.append(self._check)

    def _check(self, event: simpy.Event) -> None:
        if self.triggered:
            return
        if not event.ok:  # never, for a wake or a timer: as AnyOf would
            event.defused = True
            error = event.value
            self.fail(error if isinstance(error, Exception) else RuntimeError(error))
        else:
            self.succeed()

    def _let_go(self, _: simpy.Event) -> None:
        # As AnyOf once processed: the events still pending (the timer, kept for the next wait) drop
        # this check, so they do not hold it.
        for event in self._events:
            if event.callbacks and self._check in event.callbacks:
                event.callbacks.remove(self._check)


#: The state of each open run (by its SimPy environment), held weakly: the run's sessions hold it while
#: the run lasts. A strong value would keep its key alive (the state holds the run's kernel, hence
#: its environment), so every run's world, trace and tasks would stay in memory for good: besides the
#: leak, the full collections over that ever larger heap were a third of a bridged run's time.
_runs: weakref.WeakKeyDictionary[simpy.Environment, weakref.ref[RunState]] = weakref.WeakKeyDictionary()


class FromAsyncio:
    """The scheduler `from_asyncio` makes (see its docstring)."""

    def __init__(self, execute: Execute, name: str, description: str, *, interrupt: InterruptHook = "cancel",
                 registry: MutableMapping[str, Any] | None = None, allow_unstarted_errors: bool = False,
                 grace_ms: int | None = None) -> None:
        self.execute, self.name, self.description = execute, name, description
        if grace_ms is not None and (isinstance(grace_ms, bool) or not isinstance(grace_ms, int) or grace_ms < 0):
            raise ValueError(f"grace_ms must be a non-negative integer of milliseconds, got {grace_ms!r}")
        #: The interrupt grace the runtime promises (None: none declared): what swarm's interrupts
        #: allow it (see `harness.explore.swarm.declared_grace_ms`).
        self.grace_ms = grace_ms
        self.interrupt = interrupt
        self.registry = Registry(registry) if registry is not None else None
        self.allow_unstarted_errors = allow_unstarted_errors
        self._wants_tools = _wants_tools(execute)
        function = getattr(execute, "__func__", execute)
        namespace = getattr(function, "__globals__", None)
        #: The executor module's globals: names it imported from patched modules (`from time import
        #: sleep`, `from asyncio import as_completed`) point at the bridge's while a run is open.
        self._namespace: dict[str, Any] | None = namespace if isinstance(namespace, dict) else None

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        state = RunState.of(ctx, self.registry)
        loop = state.loop
        toolbox = Toolbox(batch, ctx, state)
        state.toolbox = toolbox
        first_task = len(loop.tasks)
        if isinstance(self.interrupt, asyncio.Event):
            self.interrupt.clear()  # a new turn: the flag the runtime watches starts down
        context = contextvars.copy_context()
        context.run(current.set, toolbox)
        if self._namespace is not None:
            state.patches.swap(self._namespace)
        task = loop.create_task(self._main(bridge_calls(batch), toolbox), context=context)
        done = ctx.env.event()
        # A task that ends because its loop froze (`LoopFrozen`) never reports back: the run is a hang.
        task.add_done_callback(lambda _: done.succeed() if not done.triggered and state.blocker.frozen is None
                               else None)
        deliver: Callable[[simpy.Event], None] | None = None
        if ctx.interrupt.callbacks is None:  # interrupted before this batch began
            self._deliver(task, state)
        else:
            deliver = lambda _: self._deliver(task, state)  # noqa: E731
            ctx.interrupt.callbacks.append(deliver)
        state.signal()
        state.open_batches += 1
        yield done
        state.open_batches -= 1
        if deliver is not None and ctx.interrupt.callbacks is not None:
            # An interrupt after the batch ended finds its task done and does nothing; dropped now, so
            # the context's interrupt does not hold the task (and through it the run) in a cycle.
            ctx.interrupt.callbacks.remove(deliver)
        leftovers = loop.pending_since(first_task, toolbox)
        if leftovers:
            ended = "was cancelled" if task.cancelled() else "returned" if task.exception() is None else "raised"
            ctx.note(f"asyncio: execute {ended} with {len(leftovers)} task(s) still pending: "
                     + "; ".join(_describe_task(t, toolbox) for t in leftovers)
                     + f" ({left_running('cancelled')})")
        else:  # nothing is left that could still await a tool coroutine the executor made
            dropped = toolbox.drop_unawaited()
            if dropped:
                ctx.note(f"asyncio: execute made the tool call{'s' if len(dropped) > 1 else ''} "
                         f"{', '.join(c.id for c in dropped)} and never awaited "
                         f"{'them' if len(dropped) > 1 else 'it'}: never ran")
        return self._results(task, batch, ctx, toolbox)

    async def _main(self, calls: list[BridgeToolCall], tools: Toolbox) -> Sequence[Any]:
        produced = self.execute(calls, tools) if self._wants_tools else self.execute(calls)
        return await produced

    def _deliver(self, task: asyncio.Task[Any], state: RunState) -> None:
        """The user interrupted the turn (an event callback, outside the loop's steps)."""
        if task.done() or self.interrupt is None:
            return
        if self.interrupt == "cancel":
            task.cancel("user interrupt")
        elif isinstance(self.interrupt, asyncio.Event):
            self.interrupt.set()
        elif callable(self.interrupt):
            state.loop.call_soon(self.interrupt)
        state.signal()

    def _results(self, task: asyncio.Task[Any], batch: Batch, ctx: SchedulerContext,
                 toolbox: Toolbox) -> list[CallResult]:
        if task.cancelled():
            if not ctx.interrupted or self.interrupt != "cancel":
                raise ExecutorError("the executor's task was cancelled (CancelledError escaped execute)")
            return _interrupted(batch, ctx, toolbox)
        error = task.exception()
        if error is not None:
            if isinstance(error, WallClockExceeded):
                raise error  # the watchdog stopped a spin inside the executor: a hang, not its error
            raise ExecutorError(f"execute raised {type(error).__name__}: {error}") from error
        items = task.result()
        if not isinstance(items, Sequence) or isinstance(items, str | bytes | Mapping):
            raise ExecutorError(f"execute returned {type(items).__name__}, not a list with one item per call")
        results = to_results(batch, toolbox, items)
        _check_unawaited_values(toolbox, results)
        results = _approval_waits(batch, ctx, toolbox, results)
        if not self.allow_unstarted_errors:
            registry = self.registry
            known = ((lambda call: call.name in registry.names) if registry is not None
                     else (lambda call: ctx.declared(call) is not None))
            _check_unstarted(batch, ctx, toolbox, results, known)
        return results


def _check_unawaited_values(toolbox: Toolbox, results: list[CallResult]) -> None:
    """A result whose value is a tool's coroutine: the runtime called an async tool like a plain
    function (a sync tool function run on the event loop) and reported what it got back."""
    made = {id(coroutine): call for call, coroutine in toolbox.made}
    for result in results:
        call = made.get(id(result.value)) if inspect.iscoroutine(result.value) else None
        if call is not None:
            raise ExecutorError(
                f"the executor reported an un-awaited coroutine of the tool {call.name} as the result of "
                f"{result.call_id}: it called the async tool like a plain function (a sync tool function run on "
                f"the event loop?). If the real tool is a plain function (blocking I/O), declare it "
                f"`[tools.{call.name}] sync = true` in the scenario: called on the loop it then holds the loop for "
                "the call and returns its value (docs/asyncio.md, \"Clocks and blocking on the loop\"); else await it")


def _interrupted(batch: Batch, ctx: SchedulerContext, toolbox: Toolbox) -> list[CallResult]:
    """The results the bridge reports for a runtime whose executor Ctrl-C cancelled (the runtime
    itself reports nothing: its task ended with CancelledError): each call started as it ended
    (abandoned ones `unknown`), the others skipped, in the bridge's words.

    A call whose tool task the runtime left running (it cancelled the executor's task but not the
    tool tasks it made: pydantic-ai's Ctrl-C bug) is not abandoned for it: it is reported `unknown`
    and runs on, so the oracles see it outlive the turn (`orphaned-call`), and what it does later.
    So is a call a bridge thread is running (a sync tool under `asyncio.to_thread`): cancelling the
    executor cancels the future the runtime awaited, never the thread. A call nothing awaits any more
    (a dead runtime) is abandoned as before."""
    ctx.note("asyncio: the user interrupt cancelled the executor's task; the bridge reports each call as it stands")
    results = []
    left: list[str] = []
    for call in batch:
        handles = toolbox.handles.get(call.id, [])
        if not handles:
            results.append(ctx.skip(call, SKIPPED_BY_BRIDGE))
            continue
        last = handles[-1]
        if not last.triggered:
            waiter = toolbox.waiting.get(last)
            in_thread = last in toolbox.waiting and waiter is None  # a thread cannot be cancelled
            if in_thread or (waiter is not None and not waiter.done()):
                left.append(call.id)
                what = ("the runtime stopped awaiting it, but the thread running it cannot be cancelled" if in_thread
                        else "the runtime left its tool task running")
                results.append(CallResult(call.id, Outcome.UNKNOWN, None, f"interrupted: {what}; effect unknown",
                                          len(handles), handles[0].started_ms, ctx.now))
                continue
            ctx.cancel(last, outcome=Outcome.UNKNOWN, reason="interrupted; effect unknown")
        result = last.result
        results.append(CallResult(call.id, result.outcome, result.value, result.error, len(handles),
                                  handles[0].started_ms, result.end_ms))
    if left:
        ctx.note(f"asyncio: the runtime left the tool task{'s' if len(left) > 1 else ''} of {', '.join(left)} "
                 "running after the interrupt cancelled its executor: reported unknown, "
                 f"{'they run' if len(left) > 1 else 'it runs'} on")
    return results


def _approval_waits(batch: Batch, ctx: SchedulerContext, toolbox: Toolbox,
                    results: list[CallResult]) -> list[CallResult]:
    """Calls the executor gave up on while their tool waited for the user's approval: a tool still
    asking in a thread the executor stopped waiting for stops asking now. Their results stay as the
    executor reported them (see `asking`)."""
    for result in results:
        asking = toolbox.asking.get(result.call_id)
        if (asking is not None and not toolbox.handles.get(result.call_id) and asking.waiting
                and result.outcome is not Outcome.OK):
            asking.give_up()
    return results


def _check_unstarted(batch: Batch, ctx: SchedulerContext, toolbox: Toolbox, results: list[CallResult],
                     known: Callable[[ToolCall], bool]) -> None:
    """An error reported for a well-formed call of a known tool that never started, while nothing
    had gone wrong in the batch, is an exception inside the executor (its glue, an asyncio primitive)
    swallowed into a result: make it a scheduler error rather than a run where every oracle holds."""
    if ctx.interrupted:
        return
    if any(h.triggered and h.result.outcome is not Outcome.OK for hs in toolbox.handles.values() for h in hs):
        return
    calls = {call.id: call for call in batch}
    for result in results:
        call = calls.get(result.call_id)
        asking = toolbox.asking.get(result.call_id)
        if (call is None or result.outcome is Outcome.OK or toolbox.handles.get(call.id)
                or not known(call) or call.parsed_arguments() is None or call.id in toolbox.refused
                or (asking is not None and asking.gave_up_ms is not None)):
            continue
        raise ExecutorError(
            f"the executor reported {call.id} as {result.outcome.value} ({result.error}) without ever starting it, "
            "though its tool is known and its arguments are well-formed: an exception inside the executor before "
            "the call started (glue code, an asyncio primitive), swallowed into a result. Pass "
            "allow_unstarted_errors=True to from_asyncio if your runtime refuses calls on purpose")


def _describe_task(task: asyncio.Task[Any], toolbox: Toolbox | None) -> str:
    # Deterministic text only: task names carry a process-wide counter, so the coroutine's name.
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", type(coro).__name__)
    owner = toolbox if toolbox is not None else getattr(task, "owner", None)
    waiting = owner.waiting.items() if isinstance(owner, Toolbox) else ()
    awaiting = [h.call.id for h, waiter in waiting if waiter is task]
    return name + (f" awaiting {', '.join(awaiting)}" if awaiting else "")


def _wants_tools(execute: Execute) -> bool:
    """Whether `execute` takes the tools as its second argument (seed 003's executor takes only the
    calls and looks tools up in its own registry)."""
    try:
        parameters = list(inspect.signature(execute).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def from_asyncio(execute: Execute, *, name: str | None = None, description: str = "",
                 interrupt: InterruptHook = "cancel", registry: MutableMapping[str, Any] | None = None,
                 allow_unstarted_errors: bool = False, grace_ms: int | None = None) -> FromAsyncio:
    """A scheduler from a runtime's `async def execute(tool_calls, tools)` (or `execute(tool_calls)`
    with `registry=` its module-level tool table), run unchanged on virtual time.

    `interrupt` says how the user interrupt reaches it (default: its task is cancelled). With
    `allow_unstarted_errors`, error results for calls the executor never started are accepted as
    deliberate refusals instead of failing the run. `grace_ms` declares the interrupt grace the
    runtime promises (its running calls end within it): swarm's interrupts allow it that instead of
    500 ms (a scenario's own interrupt keeps its grace). The scheduler is named `name`, else
    `execute`'s module and qualified name (`acme.runtime.execute`: see `harness.bridges.naming`).
    """
    return FromAsyncio(execute, name or origin_name(execute, "asyncio"),
                       description or "an asyncio executor on the virtual clock", interrupt=interrupt,
                       registry=registry, allow_unstarted_errors=allow_unstarted_errors, grace_ms=grace_ms)
