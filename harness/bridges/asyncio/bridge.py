"""`from_asyncio`: a runtime's real asyncio executor as a scheduler, run unchanged on virtual time.

Owns the per-batch scheduler (`FromAsyncio`): find the run's state (`run_state.RunState`: the lent
loop and its pump, shared by every batch and agent of the run), start the executor's task on the loop
with the batch's toolbox, deliver the user interrupt, wait for the task, report leftover tasks and
tool calls never awaited, and turn its return value into results (read by `results`, settled by
`settling`). Never decides an order (the user's code does) and never advances time except through
the kernel.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any, Literal

import simpy

from harness import moved
from harness.bridges.asyncio.calls import BridgeToolCall, bridge_calls
from harness.bridges.asyncio.results import to_results
from harness.bridges.asyncio.run_state import RunState, describe_task
from harness.bridges.asyncio.settling import (
    ExecutorError,
    approval_waits,
    check_unawaited_values,
    check_unstarted,
    interrupted_results,
)
from harness.bridges.asyncio.toolbox import Registry, Toolbox, current
from harness.bridges.leftovers import left_running
from harness.bridges.naming import origin_name
from harness.model import Batch, CallResult
from harness.scheduling.context import SchedulerContext, SchedulerProcess
from harness.sim.realtime import WallClockExceeded

Tools = Mapping[str, Callable[..., Awaitable[Any]]]
Execute = Callable[..., Awaitable[Sequence[Any]]]
#: How the user interrupt reaches the executor: "cancel" (its task is cancelled, as Ctrl-C cancels
#: `asyncio.run`'s main task), an `asyncio.Event` the runtime watches (set), a callback (called on
#: the loop), or None (never: the executor does not know about interrupts).
InterruptHook = Literal["cancel"] | asyncio.Event | Callable[[], object] | None


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
        if ctx.interrupt.triggered:  # interrupted before this batch began, or as it began: before its first step
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
                     + "; ".join(describe_task(t, toolbox) for t in leftovers)
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
            return interrupted_results(batch, ctx, toolbox)
        error = task.exception()
        if error is not None:
            if isinstance(error, WallClockExceeded):
                raise error  # the watchdog stopped a spin inside the executor: a hang, not its error
            raise ExecutorError(f"execute raised {type(error).__name__}: {error}") from error
        items = task.result()
        # A list, the common return, without the ABC checks' Python calls.
        if type(items) is not list and (not isinstance(items, Sequence) or isinstance(items, str | bytes | Mapping)):
            raise ExecutorError(f"execute returned {type(items).__name__}, not a list with one item per call")
        results = to_results(batch, toolbox, items)
        check_unawaited_values(toolbox, results)
        results = approval_waits(batch, ctx, toolbox, results)
        if not self.allow_unstarted_errors:
            registry = self.registry
            known = ((lambda call: call.name in registry.names) if registry is not None
                     else (lambda call: ctx.declared(call) is not None))
            check_unstarted(batch, ctx, toolbox, results, known)
        return results


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


# Names split out of this module still import from it, with a warning (see harness.moved).
__getattr__ = moved.forward(__name__)
