"""One run of `from_asyncio`: the lent loop and the pump that steps it on the kernel's clock.

Owns `RunState`, the per-run side of the bridge: the loop lent to the run, and the pump, a SimPy
process that steps the loop whenever a call settles or an asyncio timer falls due, for the whole run,
so tasks an executor leaves behind keep running into later turns exactly as on a long-lived loop;
between loop iterations the pump runs the bridge threads work was handed to, one at a time (the
run's arbiter picks in order-first runs). A run has one such state, whoever asks: the agents of a
crew (`[[agents]]`, each with a session of its own) run their batches as tasks of the one loop, side
by side, as agents sharing a process share its event loop. At the end of the run, tasks and thread
calls the runtime left run on for up to `RUN_ON_MS`, then the loop is reclaimed and the run let go.
Also owns `describe_task`, the deterministic text naming a task left pending. It never runs a batch
(`bridge` does), never decides an order (the user's code does) and never advances time except
through the kernel.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL, PENDING, URGENT

from harness.bridges import start_order
from harness.bridges.asyncio import loop as loops
from harness.bridges.asyncio.blocking import Blocker
from harness.bridges.asyncio.threads import ThreadHost
from harness.bridges.asyncio.toolbox import Registry, Toolbox, current
from harness.bridges.leftovers import RUN_ON_MS
from harness.bridges.threads.patches import Installation
from harness.bridges.threads.turnstile import BridgeThread
from harness.scheduling.context import CallHandle, SchedulerContext
from harness.sim.kernel import Kernel, StopReason

#: Where a session finds the run's state (also read by the hang diagnosis, `harness.run.hang`).
_SESSION_KEY = "asyncio-bridge"


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
        # `as_completed` starts coroutines in an order drawn from the seed, not from their addresses (the
        # stream is made when first drawn from: most runs never are).
        start_order.lend(self.loop, functools.partial(ctx.kernel.streams.stream, "asyncio/start-order"))
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
        #: The events the pump waits on now (see `_pump`), whether its wake-up step is scheduled, and
        #: whether it still runs (it ends when the loop is held for good, or the run is over).
        self._waits: list[simpy.Event] = []
        self._woken_queued: _Step | None = None
        self._wake_callbacks: list[Callable[[Any], None]] | None = None
        self._pump_alive = True
        self._check: Callable[[object], None] = self._on_wait_event
        self._woken_step = self._woken
        self._start_pump()

    @classmethod
    def of(cls, ctx: SchedulerContext, registry: Registry | None) -> RunState:
        """The run's state: made by its first batch, shared by every batch of the run (every agent's)."""
        held: weakref.ref[RunState] | None = getattr(ctx.env, _RUN_ATTRIBUTE, None)
        found = held() if held is not None else None
        if found is None or found.closed:
            state = cls(ctx, registry)
            setattr(ctx.env, _RUN_ATTRIBUTE, weakref.ref(state))
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
        wake = self.wake
        if wake._value is PENDING:  # `not wake.triggered`, without the property (once per settled call)
            # `wake.succeed()`, inline, and `env.schedule(wake)` (SimPy's own push) without its Python call.
            wake._ok, wake._value = True, None
            env = wake.env
            heappush(env._queue, (env._now, NORMAL, next(env._eid), wake))

    def end(self) -> None:
        """The run's batches are over: tasks its executor left pending first run on in virtual time
        (up to `RUN_ON_MS`: an orphaned tool task's calls and their effects land in this run, for the
        oracles to judge), then are cancelled and drained (their trace notes land in this run), and
        the loop waits, empty, for the next run. The run's clock patches come off last."""
        self._ending = True
        # Never through the environment's `__dict__`: reading it turns the instance's attribute storage into
        # a plain dictionary, which makes every one of SimPy's attribute reads of it slower.
        setattr(self.kernel.env, _RUN_ATTRIBUTE, None)
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
        # The pump waits on an event for good: its wait lets go of this state.
        self._unhook_pump()

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
                       + "; ".join(describe_task(t, None) for t in pending))

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

    # -- the pump ------------------------------------------------------------------------------------
    #
    # Stepped from SimPy callbacks rather than as a SimPy process, at exactly the steps a process would
    # take (its start, each wait's first event, its end), so event order, step counts and fingerprints
    # are those of the process it replaces; without a generator, a condition event per wait and the
    # process's resumption, which were a fifth of what the bridge added to a run (it waits ~10 times).

    def _start_pump(self) -> None:
        """As `env.process(pump)` would: the first step runs at once, an urgent event of this instant."""
        _schedule(self.kernel.env, [self._first_step], URGENT)

    def _first_step(self, _: object) -> None:
        self._pump()

    def _pump(self) -> None:
        """Step the loop, then the threads work was handed to, until nothing is ready; then wait for a
        call to settle or a timer to fall due. A failure ends the pump as a failed process
        ends (raised from the kernel's next step of it)."""
        try:
            if self._waits:
                # Woken from a wait: the events still pending (the timer, kept for the next wait) drop the
                # check, so that they do not hold it (and the order-first arbiter sees a timer nobody waits
                # on as no choice); a wake event that fired is replaced. Here rather than in a step of its
                # own: one Python call fewer per wake-up.
                check = self._check
                for event in self._waits:
                    callbacks = event.callbacks
                    if callbacks and check in callbacks:
                        callbacks.remove(check)
                self._waits = []
                if self.wake._value is not PENDING:  # `triggered`, without the property (once per wake-up)
                    # `env.event()`, without its two Python calls.
                    wake = self.wake = _new(simpy.Event)
                    wake.env, wake.callbacks = self.kernel.env, []
            kernel, loop = self.kernel, self.loop
            while not self.closed:
                loop.run_ready()
                if self.blocker.frozen is not None:
                    self._pump_ended(None)
                    return  # a blocking call never returned: the loop is held for good (a hang)
                threads = self.threads
                if threads is not None and not threads.closed:
                    # Between loop iterations, the threads work was handed to: one at a time, each until
                    # it blocks or ends (its future settles then), and the loop again after each.
                    threads.expire()
                    runnable = threads.runnable()
                    if runnable:
                        if self.ctx._arbiter is not None:
                            self._choose(runnable, threads)
                            return
                        if not self.closed:
                            threads.run(runnable[0])
                        continue
                waits = [self.wake]
                due = loop.next_timer_ms() if loop._scheduled else None  # type: ignore[attr-defined]
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
                # deadlocked executor leaves the kernel idle and is reported as a hang. Go on (`_woken`)
                # one step after the first of `waits` is processed (at once, if one was), as a process
                # waiting on `simpy.AnyOf(waits)` would (inline: once per settled call).
                self._waits = waits
                check = self._check
                # The wake event's callback list, which SimPy walks when the event is processed: the
                # check can see whether it is the last callback to run (see `_on_wait_event`).
                self._wake_callbacks = None
                for event in waits:
                    callbacks = event.callbacks
                    if callbacks is None:
                        check(event)
                    else:
                        callbacks.append(check)
                        if event is self.wake:
                            self._wake_callbacks = callbacks
                return
            self._pump_ended(None)
        except BaseException as exc:  # as a failed process: raised from the kernel's next step of it
            self._pump_ended(exc)

    def _on_wait_event(self, event: object) -> None:
        if self._woken_queued is not None:
            return
        kernel = self.kernel
        env = kernel.env
        queue = env._queue
        if (event is self.wake and self._wake_callbacks is not None and self._wake_callbacks[-1] is self._check
                and (not queue or queue[0][0] > env._now or (queue[0][0] == env._now and queue[0][1] > NORMAL))
                and kernel.steps + 1 < kernel.limits.event_budget):
            # The wake-up step would be the very next one the kernel takes: nothing is scheduled before
            # it (every event of this instant, NORMAL or URGENT, was processed, and one scheduled later
            # would come after it), and no other callback of the wake event is left to run after this
            # one. Taken here, inside this step, and counted as the kernel would: the same steps in
            # the same order and the same step count, without a scheduled step's cost (once per
            # settled call). Only the insertion counter skips a number, which orders nothing.
            kernel.steps += 1
            self._pump()
            return
        self._woken_queued = _schedule(env, [self._woken_step])

    def _woken(self, _: object) -> None:
        """The pump's step after a wait (`_pump` begins by leaving the wait)."""
        self._woken_queued = None
        self._pump()

    def _pump_ended(self, error: BaseException | None) -> None:
        """As a process ends: one more event, which raises `error` (if any) when the kernel steps it."""
        self._pump_alive = False
        if error is None:
            _schedule(self.kernel.env, [])
        else:
            failed = simpy.Event(self.kernel.env)
            failed._ok, failed._value = False, error
            self.kernel.env.schedule(failed)

    def _unhook_pump(self) -> None:
        """The run is over: the pump's pending wait no longer refers to this state (see `_let_go`). A
        wait that still fires takes the steps a closed process would, and changes nothing."""
        env = self.kernel.env
        inert = _ClosedPump(env)
        for event in self._waits:
            callbacks = event.callbacks
            if callbacks and self._check in callbacks:
                callbacks[callbacks.index(self._check)] = inert.check
        self._waits = []
        if self._woken_queued is not None:
            self._woken_queued.callbacks = [inert.end]
            self._woken_queued = None
        self._pump_alive = False
        # The bound methods kept on this state would hold it in a cycle of its own.
        self._check = self._woken_step = _ignore

    def _choose(self, runnable: list[BridgeThread], threads: ThreadHost) -> None:
        """Order-first runs: ask the arbiter which runnable thread goes next, as `from_threads` does: a
        step that takes no time and comes before any timer fires, ordered against the calls' steps.
        The thread chosen runs, and the pump goes on, when the arbiter grants its step."""
        # The context keeps its arbiter private (schedulers never choose orders); a bridge must offer
        # its thread switches to it.
        arbiter = self.ctx._arbiter
        assert arbiter is not None
        now = self.kernel.now
        asks = [(thread, arbiter.step(thread.entry, 1, earliest=now, latest=now)) for thread in runnable]
        any_granted = simpy.AnyOf(self.kernel.env, [granted for _, granted in asks])

        def granted(_: object) -> None:
            if not self._pump_alive:
                return
            try:
                thread = next(thread for thread, granted in asks if granted.triggered)
                if not self.closed:
                    threads.run(thread)
            except BaseException as exc:
                self._pump_ended(exc)
                return
            self._pump()

        assert any_granted.callbacks is not None
        any_granted.callbacks.append(granted)


class _Step:
    """What SimPy's schedule holds for one of the pump's steps: callbacks and an ok value, no more."""

    __slots__ = ("_ok", "_value", "callbacks")

    def __init__(self, callbacks: list[Callable[[Any], None]]) -> None:
        self.callbacks: list[Callable[[Any], None]] | None = callbacks
        self._ok, self._value = True, None


def _schedule(env: simpy.Environment, callbacks: list[Callable[[Any], None]], priority: int = NORMAL) -> _Step:
    step = _Step(callbacks)
    env.schedule(step, priority)  # type: ignore[arg-type]
    return step


_new = object.__new__


def _ignore(_: object) -> None:
    pass


class _ClosedPump:
    """A pump's wait after its run let it go: the steps a closed SimPy process takes when its wait
    fires (the condition's step, then the process's end), holding nothing of the run's state."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env, self.fired = env, False

    def check(self, _: object) -> None:
        if not self.fired:
            self.fired = True
            _schedule(self.env, [self.end])

    def end(self, _: object) -> None:
        _schedule(self.env, [])


#: The attribute of an open run's SimPy environment that holds the run's state, weakly: the run's
#: sessions hold it while the run lasts. A strong reference would keep the state (hence the run's world,
#: trace and tasks) alive as long as the environment; besides the leak, the full collections over that
#: ever larger heap were a third of a bridged run's time. An attribute of the environment rather than a
#: weak mapping keyed by it: two weak references fewer a run.
_RUN_ATTRIBUTE = "_harness_asyncio_run"


def describe_task(task: asyncio.Task[Any], toolbox: Toolbox | None) -> str:
    """A task left pending, named by its coroutine and the calls it awaits (of `toolbox`, else of the
    toolbox that owns the task)."""
    # Deterministic text only: task names carry a process-wide counter, so the coroutine's name.
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", type(coro).__name__)
    owner = toolbox if toolbox is not None else getattr(task, "owner", None)
    waiting = owner.waiting.items() if isinstance(owner, Toolbox) else ()
    awaiting = [h.call.id for h, waiter in waiting if waiter is task]
    return name + (f" awaiting {', '.join(awaiting)}" if awaiting else "")
