"""Plans: what a policy decides, separated from how calls are run.

Owns `Plan` (for each call, the calls it must wait for; an optional concurrency cap; the order
results are reported in) and `PlanScheduler`, the base of every plan-based policy: it asks the
policy for a plan, validates it, and runs it through the runtime so that every execution policy
(caps, timeouts, retries, interrupts, failure policy) composes with every plan. A call waits for its
predecessors to *settle*, whether they failed or not (seed 002: "前一个结束（无论成败）才轮到下一个").
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import simpy

from harness.model import Batch, CallResult, ToolCall
from harness.scheduling.context import SchedulerContext, SchedulerProcess
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.gates import Gate, Gates
from harness.scheduling.runtime import BatchRuntime, run_call

#: Runs one call, once its plan lets it, to its reported result.
CallExecutor = Callable[[ToolCall], Generator[simpy.Event, Any, CallResult]]


class PlanError(ValueError):
    """A policy produced an invalid plan (unknown ids or a cycle)."""


@dataclass(frozen=True)
class Plan:
    #: call id -> ids of the calls it starts after (once they have settled, in any outcome).
    after: Mapping[str, tuple[str, ...]]
    #: The policy's own cap on calls running at once (e.g. hermes' 8 worker threads).
    cap: int | None = None
    #: Results in model order, or in `order` (a policy that reports as it executes).
    report: Literal["model", "plan"] = "model"
    order: tuple[str, ...] = ()
    #: call id -> predecessors whose failure is noted on its result ("previous write failed").
    chained: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: One line about the plan for the timeline, e.g. "3 segments: [a b] [c] [d e]".
    summary: str = ""
    #: Prefix waits, for a plan where many calls wait for one growing list (resource_keys: a read
    #: waits for every earlier write): call id -> n means it also waits for the first n calls of
    #: `prefix`. The same as listing `prefix[:n]` in its `after`, in constant space per call.
    prefix: tuple[str, ...] = ()
    after_prefix: Mapping[str, int] = field(default_factory=dict)

    def waits_for(self, call_id: str) -> tuple[str, ...]:
        """Every call `call_id` starts after: its `after`, then its prefix waits."""
        return tuple(dict.fromkeys((*self.after[call_id], *self.prefix[:self.after_prefix.get(call_id, 0)])))

    @classmethod
    def parallel(cls, batch: Batch, *, cap: int | None = None, summary: str = "all parallel") -> Plan:
        return cls({c.id: () for c in batch}, cap=cap, summary=summary)

    @classmethod
    def serial(cls, batch: Batch, *, summary: str = "serial") -> Plan:
        ids = batch.ids
        return cls({c: ((ids[i - 1],) if i else ()) for i, c in enumerate(ids)}, summary=summary)

    @classmethod
    def segments(cls, batch: Batch, segments: Sequence[Sequence[ToolCall | str]], *, cap: int | None = None) -> Plan:
        """Ordered segments: every call of a segment starts once the whole previous segment has
        settled; calls within a segment run together."""
        after: dict[str, tuple[str, ...]] = {}
        previous: tuple[str, ...] = ()
        shown = []
        for segment in segments:
            ids = tuple(c if isinstance(c, str) else c.id for c in segment)
            for call_id in ids:
                after[call_id] = previous
            previous = ids
            shown.append("[" + " ".join(ids) + "]")
        return cls(after, cap=cap, summary=f"{len(shown)} segments: {' '.join(shown)}")

    def validate(self, batch: Batch) -> None:
        ids = set(batch.ids)
        if set(self.after) != ids:
            missing, extra = sorted(ids - set(self.after)), sorted(set(self.after) - ids)
            raise PlanError(f"plan must list every call exactly once (missing {missing}, unknown {extra})")
        for call_id, deps in self.after.items():
            unknown = [d for d in deps if d not in ids or d == call_id]
            if unknown:
                raise PlanError(f"{call_id} waits for {unknown}, which are not other calls of the batch")
        if self.report == "plan" and sorted(self.order) != sorted(ids):
            raise PlanError("a plan reporting in its own order must list every call once in `order`")
        self._validate_prefix(ids)
        # Kahn's algorithm, linear in calls and edges: any call left waiting sits on (or behind) a cycle.
        # Prefix waits go through one node per prefix length ("the first k have settled"), so they
        # stay linear too: node k waits for node k-1 and prefix[k-1]; a call with n waits for node n.
        waiting: dict[str | int, int] = {call_id: len(set(deps)) + (1 if self.after_prefix.get(call_id) else 0)
                                         for call_id, deps in self.after.items()}
        successors: dict[str | int, list[str | int]] = {}
        for call_id, deps in self.after.items():
            for dep in set(deps):
                successors.setdefault(dep, []).append(call_id)
            if self.after_prefix.get(call_id):
                successors.setdefault(self.after_prefix[call_id], []).append(call_id)
        for k, call_id in enumerate(self.prefix, start=1):
            waiting[k] = 2 if k > 1 else 1
            successors.setdefault(call_id, []).append(k)
            if k > 1:
                successors.setdefault(k - 1, []).append(k)
        ready = [node for node, count in waiting.items() if not count]
        while ready:
            for successor in successors.get(ready.pop(), ()):
                waiting[successor] -= 1
                if not waiting[successor]:
                    ready.append(successor)
        remaining = sorted(node for node, count in waiting.items() if count and isinstance(node, str))
        if remaining:
            raise PlanError(f"plan has a dependency cycle among {remaining}")

    def _validate_prefix(self, ids: set[str]) -> None:
        if not self.prefix and not self.after_prefix:
            return
        unknown = [c for c in self.prefix if c not in ids]
        if unknown or len(set(self.prefix)) != len(self.prefix):
            raise PlanError(f"plan prefix must list calls of the batch at most once (unknown {sorted(unknown)})")
        position = {call_id: k for k, call_id in enumerate(self.prefix)}
        for call_id, n in self.after_prefix.items():
            if call_id not in ids:
                raise PlanError(f"plan prefix waits name {call_id!r}, which is not a call of the batch")
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(self.prefix):
                raise PlanError(f"{call_id} waits for the first {n!r} calls of a prefix of {len(self.prefix)}")
            if position.get(call_id, n) < n:
                raise PlanError(f"{call_id} waits for the first {n} calls of the prefix, itself among them")


class PlanScheduler:
    """Base class of plan-based policies: subclasses implement `plan(batch, ctx)`."""

    name: str = "plan"
    description: str = ""
    source: str = ""

    def __init__(self, execution: ExecutionPolicy | None = None) -> None:
        #: None: use the execution policy of the scenario (ctx.execution).
        self.execution = execution

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        raise NotImplementedError

    def execution_for(self, ctx: SchedulerContext) -> ExecutionPolicy:
        """The execution policy to apply: the scheduler's own, else the scenario's."""
        return self.execution or ctx.execution

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> SchedulerProcess:
        plan = self.plan(batch, ctx)
        plan.validate(batch)
        if plan.summary:
            ctx.note(f"{self.name}: {plan.summary}")
        runtime = BatchRuntime(ctx, self.execution_for(ctx), plan.cap)
        execute = self.executor(runtime, batch)
        settled = {call.id: ctx.env.event() for call in batch}
        if plan.prefix or plan.after_prefix:
            # Prefix waits: one gate event per waiting call instead of an `AllOf` over every edge
            # (the same steps in the same order, see harness.scheduling.gates).
            gates = Gates(ctx.env, batch.ids, plan.after, plan.prefix, plan.after_prefix, settled).gates
            runs = {call.id: ctx.env.process(self._run_gated(runtime, execute, call, gates[i], settled))
                    for i, call in enumerate(batch)}
        else:
            runs = {call.id: ctx.env.process(self._run(runtime, execute, call, plan.after[call.id], settled))
                    for call in batch}  # created in model order: equal-time ties resolve in model order
        yield ctx.all_of(runs.values())
        results: dict[str, CallResult] = {call_id: _result(run) for call_id, run in runs.items()}
        for call_id, chain in plan.chained.items():
            failed = [d for d in chain if not results[d].ok]
            if failed:
                r = results[call_id]
                results[call_id] = CallResult(r.call_id, r.outcome, r.value, r.error, r.attempts, r.start_ms,
                                              r.end_ms, (*r.notes, f"previous write failed: {', '.join(failed)}"))
        results = runtime.rolled_back(results, batch.calls)
        order: Iterable[str] = plan.order if plan.report == "plan" else batch.ids
        return [results[call_id] for call_id in order]

    def executor(self, runtime: BatchRuntime, batch: Batch) -> CallExecutor:
        """How a call runs once its plan lets it: under the runtime's execution policy. A subclass may
        put its own admission in front (e.g. `optimal`'s slot dispatcher)."""
        return partial(run_call, runtime)

    @staticmethod
    def _run(runtime: BatchRuntime, execute: CallExecutor, call: ToolCall, after: tuple[str, ...],
             settled: dict[str, simpy.Event]) -> Generator[simpy.Event, Any, CallResult]:
        if after:
            yield runtime.ctx.all_of(settled[d] for d in after)
        result = yield from execute(call)
        settled[call.id].succeed(result)
        return result

    @staticmethod
    def _run_gated(runtime: BatchRuntime, execute: CallExecutor, call: ToolCall, gate: Gate | None,
                   settled: dict[str, simpy.Event]) -> Generator[simpy.Event, Any, CallResult]:
        if gate is not None:
            yield gate
        result = yield from execute(call)
        settled[call.id].succeed(result)
        return result


def _result(process: simpy.Process) -> CallResult:
    value = process.value
    assert isinstance(value, CallResult)
    return value
