"""`optimal`: the fastest schedule that is still model-order serializable — a lower bound.

Rule: it cheats on purpose. It replays the batch in model order with the tools' real semantics to
learn each call's true footprint (what it reads and writes, the shared cwd and ledgers included),
then lets every call start as soon as all earlier calls that conflict with it (one writes what the
other touches) have settled, and keeps interactive tools alone. With no cap of its own, its makespan
is the length of the longest conflict chain: `makespan(policy) / makespan(optimal)` measures how
much a real policy over-serialises. Not a policy a runtime could ship: it knows behaviour.

Under the scenario's caps it dispatches itself instead of queueing in the runtime: a call is let
through only when a global slot *and* a slot of its tool are free, and a freed slot goes to the
earliest call in model order that fits. The runtime's queues take the global slot first and then
wait for the tool's, so a call waiting for its tool would sit on a global slot another tool could
use; that made `optimal` slower than real policies on capped scenarios (4000 ms where 3000 ms was
possible). With the scenario's global cap alone the dispatch is the runtime's FIFO. It reads no
latencies, so with caps it is a greedy schedule, not a proven lower bound.

Footprints name a file by its identity (every hard link of it as one), so two names of one file each
written atomically (a rename breaks the link: `write_mode = "atomic"`) count as a conflict: there it is
safe but not the lowest schedule (`hardlink-alias-hermes`: 1150 ms, where `resource_keys` takes 609).

A scenario that asks for hermes' checkpoints (`[execution] checkpoints = "hermes"`) gets them the safe
way here (`"wait"`: a write waits for the snapshot in progress): the lower bound is of safe schedules.
"""

from __future__ import annotations

from collections.abc import Generator
from functools import partial
from typing import Any

import simpy

from harness.model import Batch, CallResult, ToolCall
from harness.scheduling.context import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.plan import CallExecutor, Plan, PlanScheduler
from harness.scheduling.runtime import BatchRuntime, run_call


class Optimal(PlanScheduler):
    name = "optimal"
    description = "conflict-aware lower bound from the tools' real footprints (not shippable: it knows behaviour)"
    source = "harness (measuring stick)"

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        footprints = ctx.real_footprints()
        after: dict[str, tuple[str, ...]] = {}
        for i, call in enumerate(batch):
            reads, writes = footprints[call.id]
            producers = ctx.data_producers(call)  # data flow is behaviour too: a consumer waits for its input
            declared = ctx.declared(call)
            alone = declared is not None and (declared.interactive or declared.exclusive)
            deps = []
            for earlier in batch.calls[:i]:
                e_reads, e_writes = footprints[earlier.id]
                e_declared = ctx.declared(earlier)
                e_alone = e_declared is not None and (e_declared.interactive or e_declared.exclusive)
                if alone or e_alone or writes & (e_reads | e_writes) or reads & e_writes or earlier.id in producers:
                    deps.append(earlier.id)
            after[call.id] = tuple(deps)
        return Plan(after, summary="conflict graph from real footprints")

    def execution_for(self, ctx: SchedulerContext) -> ExecutionPolicy:
        policy = super().execution_for(ctx)
        return policy.merged(checkpoints="wait") if policy.checkpoints == "hermes" else policy

    def executor(self, runtime: BatchRuntime, batch: Batch) -> CallExecutor:
        # Each call passes the dispatcher before the runtime, so it never holds one slot while it
        # queues for another.
        dispatcher = _Dispatcher(runtime, batch)
        return partial(_admitted, runtime, dispatcher)


def _admitted(runtime: BatchRuntime, dispatcher: _Dispatcher,
              call: ToolCall) -> Generator[simpy.Event, Any, CallResult]:
    admitted = dispatcher.enter(call)
    if not admitted.triggered:
        # The runtime stops waiting calls on an interrupt, a failed sibling or the deadline; so do we
        # (run_call then reports the call skipped without starting it).
        yield admitted | runtime.noticed | runtime.cancel_event | runtime.deadline
    if not admitted.triggered:
        dispatcher.withdraw(call)
        return (yield from run_call(runtime, call))
    try:
        return (yield from run_call(runtime, call))
    finally:
        dispatcher.leave(call)


class _Dispatcher:
    """Lets a call into the runtime only when every slot it needs is free, so that it never holds
    one slot while queueing for another. Slots are handed out once per instant, after every call
    that becomes ready in that instant has asked, to waiting calls in model order."""

    def __init__(self, runtime: BatchRuntime, batch: Batch) -> None:
        self.env = runtime.ctx.env
        self.kernel = runtime.ctx.kernel
        self.global_cap = runtime.global_slots.capacity if runtime.global_slots is not None else None
        self.tool_caps = {tool: slots.capacity for tool, slots in runtime.tool_slots.items()}
        self.position = {call.id: i for i, call in enumerate(batch)}
        self.running = 0
        self.running_by_tool: dict[str, int] = {}
        self.waiting: list[tuple[ToolCall, simpy.Event]] = []  # kept in model order
        self.pass_pending = False

    def enter(self, call: ToolCall) -> simpy.Event:
        event = self.env.event()
        self.waiting.append((call, event))
        self.waiting.sort(key=lambda entry: self.position[entry[0].id])
        self._schedule_pass()
        return event

    def withdraw(self, call: ToolCall) -> None:
        self.waiting = [entry for entry in self.waiting if entry[0] is not call]

    def leave(self, call: ToolCall) -> None:
        self.running -= 1
        self.running_by_tool[call.name] -= 1
        self._schedule_pass()

    def _schedule_pass(self) -> None:
        if not self.pass_pending:
            self.pass_pending = True
            self.kernel.end_of_instant().callbacks.append(self._pass)

    def _pass(self, _: simpy.Event) -> None:
        self.pass_pending = False
        for entry in list(self.waiting):
            call, event = entry
            if self._fits(call):
                self.waiting.remove(entry)
                self.running += 1
                self.running_by_tool[call.name] = self.running_by_tool.get(call.name, 0) + 1
                event.succeed()

    def _fits(self, call: ToolCall) -> bool:
        if self.global_cap is not None and self.running >= self.global_cap:
            return False
        cap = self.tool_caps.get(call.name)
        return cap is None or self.running_by_tool.get(call.name, 0) < cap
