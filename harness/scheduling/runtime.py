"""The runtime that applies an `ExecutionPolicy` to each call of a plan.

Owns `BatchRuntime` (per-batch caps, the noticed interrupt, sibling cancellation) and `run_call`
(one call from "may start" to its reported result: the user's approval of a `needs_confirmation`
call when the scenario scripts one, caps, timeout, retries with one idempotency key for every
attempt, seed 004's same-signature limit, interrupt with grace, failure policy), the turn's
checkpoint before a call hermes snapshots before (`checkpoints`) and the rollback of a failed batch
(`rollback_on_failure`, `BatchRuntime.rolled_back`), and a timed-out call of a tool not declared
idempotent handed to the scripted user instead of retried (`escalate_timeouts`). It never decides the
order of calls: plans do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Sequence
from typing import Any

import simpy

from harness.model import CallResult, Outcome, ToolCall
from harness.scheduling.approval_gate import gate
from harness.scheduling.approvals import Approval
from harness.scheduling.checkpoints import Checkpoint, needs_checkpoint
from harness.scheduling.context import SchedulerContext
from harness.scheduling.execution import ExecutionPolicy
from harness.scheduling.handle import CallHandle
from harness.sim.waiters import MANY_WAITERS, many_waiters


class BatchRuntime:
    """Per-batch state shared by the calls of one plan: caps, the noticed interrupt, sibling
    cancellation and the running handles."""

    def __init__(self, ctx: SchedulerContext, policy: ExecutionPolicy, plan_cap: int | None = None) -> None:
        self.ctx = ctx
        self.policy = policy
        caps = [c for c in (plan_cap, policy.max_concurrency, ctx.max_concurrency) if c is not None]
        self.global_slots = ctx.resource(min(caps)) if caps else None
        tool_caps = dict(ctx.tool_caps)
        for tool, cap in policy.tool_caps.items():
            tool_caps[tool] = min(cap, tool_caps.get(tool, cap))
        self.tool_slots = {tool: ctx.resource(cap) for tool, cap in sorted(tool_caps.items())}
        self.cancelled_by: str | None = None
        self.cancel_event = ctx.env.event()
        deadline = policy.batch_deadline_ms
        # A Timeout counts as `triggered` from the moment it is scheduled; only `processed` says it
        # has happened, so the runtime asks `processed` of every timer.
        self.deadline: simpy.Event = ctx.sleep(deadline, "batch-deadline") if deadline is not None else ctx.env.event()
        self.running: dict[str, Any] = {}
        #: The turn's snapshot (hermes takes at most one a turn): the copy in progress, then its Checkpoint.
        self.snapshot: simpy.Event | None = None
        self.noticed = self._notice_interrupt() if policy.honour_interrupt else ctx.env.event()
        if len(ctx.batch.calls) >= MANY_WAITERS:
            # Every running attempt waits on these three: past a few dozen, a list's shifts cost more
            # than an index's upkeep (harness.sim.waiters). Which they use changes nothing else.
            for signal in (self.noticed, self.cancel_event, self.deadline):
                many_waiters(signal)

    def _notice_interrupt(self) -> simpy.Event:
        ctx, poll = self.ctx, self.policy.poll_interval_ms
        if poll == 0:
            return ctx.interrupt
        begin = ctx.now
        noticed = ctx.env.event()

        def watch() -> Generator[simpy.Event, Any, None]:
            yield ctx.interrupt
            # The runtime only looks between slices of `poll` ms since the batch began.
            elapsed = ctx.now - begin
            wait = (-elapsed) % poll
            if wait:
                yield ctx.sleep(wait, "poll")
            ctx.note(f"interrupt noticed (polling every {poll} ms)")
            noticed.succeed()

        ctx.env.process(watch())
        return noticed

    def checkpoint_before(self, call: ToolCall) -> Generator[simpy.Event, Any, None]:
        """hermes' checkpoint manager before a write, patch or destructive command: the turn's first
        such call takes the snapshot and waits for the copy; under `hermes` a later one finds the turn
        checkpointed and goes on at once (the copy may still be running: a torn snapshot), under
        `wait` it waits for the copy to finish."""
        mode = self.policy.checkpoints
        if mode == "none" or not needs_checkpoint(call):
            return
        if self.snapshot is None:
            self.snapshot = self.ctx.snapshot(f"before {call.id}", before=call, file_ms=self.policy.checkpoint_file_ms)
            yield self.snapshot
        elif mode == "wait" and not self.snapshot.processed:
            yield self.snapshot

    def rolled_back(self, results: dict[str, CallResult], batch: Sequence[ToolCall]) -> dict[str, CallResult]:
        """`rollback_on_failure`: when a call of the batch failed and the turn took a snapshot, restore
        it and report every write, patch or destructive command that ended ok as failed, since its
        change is gone (the model must not build on it)."""
        failed = [c.id for c in batch if results[c.id].outcome is not Outcome.OK]
        if not self.policy.rollback_on_failure or not failed or self.snapshot is None or not self.snapshot.processed:
            return results
        checkpoint = self.snapshot.value
        assert isinstance(checkpoint, Checkpoint)
        self.ctx.rollback(checkpoint)
        undone = dict(results)
        for call in batch:
            r = results[call.id]
            if r.outcome is Outcome.OK and needs_checkpoint(call):
                undone[call.id] = CallResult(r.call_id, Outcome.ERROR, None,
                                             f"rolled back to checkpoint {checkpoint.id} after {failed[0]} failed: "
                                             "its change was undone", r.attempts, r.start_ms, r.end_ms, r.notes)
        return undone

    def fail_siblings(self, failed: str) -> None:
        if self.policy.on_failure != "cancel_siblings" or self.cancelled_by is not None:
            return
        self.cancelled_by = failed
        self.ctx.note(f"{failed} failed: cancelling its siblings")
        self.cancel_event.succeed()


def idempotency_key(call: ToolCall) -> str:
    """Seed 003's key: a hash of the tool and its arguments, stable across attempts (and processes)."""
    material = f"{call.id}\x1f{call.name}\x1f{call.arguments}".encode()
    return "idem-" + hashlib.sha256(material).hexdigest()[:16]


def run_call(rt: BatchRuntime, call: ToolCall) -> Generator[simpy.Event, Any, CallResult]:
    """Run one call to its reported result under the runtime's execution policy."""
    ctx = rt.ctx
    stopped = _stopped(rt, call)
    if stopped is not None:
        return stopped
    unavailable = ctx.session.setdefault("unavailable_tools", {})
    if call.name in unavailable:
        return _refused(ctx, call, unavailable[call.name])
    if ctx.needs_approval(call):
        # Asked before taking a slot: a person deciding must not hold a worker the others could use.
        denied = yield from gate(ctx, call, rt.policy.approval_timeout_ms,
                                 stop=rt.noticed | rt.cancel_event | rt.deadline)
        if denied is not None:
            return denied
    slots = [s for s in (rt.global_slots, rt.tool_slots.get(call.name)) if s is not None]
    requests = [slot.request() for slot in slots]
    try:
        for request in requests:
            yield request | rt.noticed | rt.cancel_event | rt.deadline
        # Again after waiting: a slot freed in the very instant of an interrupt must not start a call.
        stopped = _stopped(rt, call)
        if stopped is not None:
            return stopped
        yield from rt.checkpoint_before(call)
        return (yield from _attempts(rt, call))
    finally:
        for slot, request in zip(slots, requests, strict=True):
            if request.triggered:
                slot.release(request)
            else:
                request.cancel()


def _stopped(rt: BatchRuntime, call: ToolCall) -> CallResult | None:
    """The skipped result of a call that must not start now (interrupt, deadline, failed sibling)."""
    if rt.noticed.triggered:
        return rt.ctx.skip(call)
    if rt.deadline.processed:
        return rt.ctx.skip(call, f"skipped: batch deadline of {rt.policy.batch_deadline_ms} ms passed")
    if rt.cancelled_by is not None:
        return rt.ctx.skip(call, f"Cancelled: parallel tool call {rt.cancelled_by} errored")
    return None


def _attempts(rt: BatchRuntime, call: ToolCall) -> Generator[simpy.Event, Any, CallResult]:
    ctx, policy = rt.ctx, rt.policy
    declared = ctx.declared(call)
    retryable = declared is not None and (declared.idempotent or policy.retry_non_idempotent)
    key = idempotency_key(call) if policy.idempotency_keys and declared is not None else None
    first_start = ctx.now
    attempt = 0
    # Set once an attempt was abandoned while its tool keeps running: its effect may land.
    uncertain = False
    escalated: str | None = None  # the user's answer when a timeout was handed to them and not retried
    while True:
        attempt += 1
        handle = ctx.start(call, attempt=attempt, idempotency_key=key)
        rt.running[call.id] = handle
        waits: list[simpy.Event] = [handle, rt.noticed, rt.cancel_event, rt.deadline]
        started, total = ctx.now, policy.max_total_timeout_ms
        timer = None
        if policy.timeout_ms is not None:
            timer = ctx.sleep(policy.timeout_ms if total is None else min(policy.timeout_ms, total), "timeout")
            waits.append(timer)
        if timer is not None and policy.reset_timeout_on_progress:
            timer = yield from _wait_resetting(rt, handle, waits, timer, started)
        else:
            yield ctx.any_of(waits)
        if not handle.triggered:
            if timer is not None and timer.processed:
                ctx.cancel(handle, outcome=Outcome.TIMEOUT, reason=(
                    f"timed out after {policy.timeout_ms} ms" if total is None or ctx.now - started < total
                    else f"timed out at its total limit of {total} ms"))
            elif rt.cancel_event.triggered:
                ctx.cancel(handle, reason=f"Cancelled: parallel tool call {rt.cancelled_by} errored")
            elif rt.deadline.processed:
                ctx.cancel(handle, outcome=Outcome.UNKNOWN,
                           reason=f"batch deadline of {policy.batch_deadline_ms} ms: effect unknown")
            else:  # interrupted: the grace period, then abandon; it may have had an effect already
                yield handle | ctx.sleep(ctx.grace_ms, "grace")
                if not handle.triggered:
                    ctx.cancel(handle, outcome=Outcome.UNKNOWN,
                               reason=f"interrupted: still running after the {ctx.grace_ms} ms grace period; "
                                      "effect unknown")
        result: CallResult = handle.result
        del rt.running[call.id]
        abandoned = result.outcome in (Outcome.TIMEOUT, Outcome.CANCELLED, Outcome.UNKNOWN)
        uncertain = uncertain or (abandoned and declared is not None and not declared.honours_cancel)
        failed = result.outcome in (Outcome.ERROR, Outcome.TIMEOUT)
        if failed and _over_signature_limit(ctx, policy, call, result):
            break
        if (result.outcome is Outcome.TIMEOUT and policy.escalate_timeouts
                and not (declared is not None and declared.idempotent)):
            # Its effect may have landed: a person decides whether it runs again, not the retry count.
            answer = yield from _escalate(rt, call)
            if answer != "approve" or rt.noticed.triggered or rt.cancelled_by is not None or rt.deadline.processed:
                escalated = answer
                break
            ctx.note(f"retrying {call.id} after timeout: the user approved (attempt {attempt + 1})", call)
            continue
        if (not failed or not retryable or attempt > policy.retries or rt.noticed.triggered
                or rt.cancelled_by is not None or rt.deadline.processed):
            break
        ctx.note(f"retrying {call.id} after {result.outcome.value} (attempt {attempt + 1})", call)
        backoff = ctx.sleep(policy.backoff_ms * 2 ** (attempt - 1), "backoff")
        yield backoff | rt.noticed | rt.cancel_event | rt.deadline
        if not backoff.processed:
            break
    if result.outcome in (Outcome.ERROR, Outcome.TIMEOUT):
        rt.fail_siblings(call.id)
    notes = result.notes + ((f"{attempt} attempts",) if attempt > 1 else ())
    outcome, error = result.outcome, result.error
    if outcome in (Outcome.TIMEOUT, Outcome.ERROR, Outcome.CANCELLED) and uncertain and policy.honest_outcomes:
        # An attempt was abandoned, not stopped: say so, or the model will act as if nothing happened.
        outcome = Outcome.UNKNOWN
        error = f"{error}; effect unknown: an abandoned attempt of {call.name} may have landed"
    if escalated is not None:
        error = f"{error}; not retried: " + ESCALATED[escalated]
    return CallResult(call.id, outcome, result.value, error, attempt, first_start, result.end_ms, notes)


def _wait_resetting(rt: BatchRuntime, handle: CallHandle, waits: list[simpy.Event],
                    timer: simpy.Timeout, started: int) -> Generator[simpy.Event, Any, simpy.Timeout]:
    """Wait as `_attempts` does, but restart the timeout at each progress notification of the call (the MCP
    TypeScript SDK's `resetTimeoutOnProgress`): never past `max_total_timeout_ms` after `started` when the
    policy has one (`maxTotalTimeout`); without it a server that reports progress and never answers is
    waited on forever. Returns the timer in force."""
    ctx, timeout_ms, total = rt.ctx, rt.policy.timeout_ms, rt.policy.max_total_timeout_ms
    assert timeout_ms is not None
    while True:
        progress = handle.progress()
        yield ctx.any_of([*waits, progress])
        if (handle.triggered or timer.processed or rt.noticed.triggered or rt.cancel_event.triggered
                or rt.deadline.processed or not progress.triggered):
            return timer
        if progress.value == 1:  # said once: the trace has every progress event
            ctx.note(f"progress from {handle.call.id}: its {timeout_ms} ms timeout restarts at every progress "
                     "notification", handle.call)
        left = timeout_ms if total is None else min(timeout_ms, started + total - ctx.now)
        waits[-1] = timer = ctx.sleep(left, "timeout")


#: What the model reads of a timed-out call the user was asked about and that did not run again.
ESCALATED = {"deny": "the user, asked whether to run it again, said no",
             "none": "the user, asked whether to run it again, did not answer in time",
             "nobody": "a person must decide whether to run it again, and no user is there to ask"}


def _escalate(rt: BatchRuntime, call: ToolCall) -> Generator[simpy.Event, Any, str]:
    """Ask the scripted user whether a timed-out call runs again: `approve`, `deny`, `none` (no answer
    within `approval_timeout_ms`, or the batch stopped meanwhile) or `nobody` (no user scripted)."""
    ctx = rt.ctx
    if not ctx.scripted_user:
        return "nobody"
    ctx.note(f"{call.id} timed out and its effect may have landed: asking the user whether to run it again", call)
    answered = ctx.approval(call)
    timer = ctx.sleep(rt.policy.approval_timeout_ms, "approval-timeout")
    yield ctx.any_of([answered, timer, rt.noticed, rt.cancel_event, rt.deadline])
    if not answered.triggered:
        return "none"
    approval = answered.value
    return "approve" if isinstance(approval, Approval) and approval.approved else "deny"


def _over_signature_limit(ctx: SchedulerContext, policy: ExecutionPolicy, call: ToolCall, result: CallResult) -> bool:
    """Seed 004: count identical failures per (tool, arguments); past the limit the tool is marked
    unavailable for the rest of the run and no more retries happen."""
    if policy.same_signature_limit is None:
        return False
    counts: dict[tuple[str, str, str], int] = ctx.session.setdefault("failure_signatures", {})
    signature = (call.name, call.arguments, result.error or result.outcome.value)
    counts[signature] = counts.get(signature, 0) + 1
    if counts[signature] > policy.same_signature_limit:
        ctx.session.setdefault("unavailable_tools", {})[call.name] = counts[signature]
        ctx.note(f"{call.name} failed {counts[signature]} times with the same arguments: marked unavailable", call)
        return True
    return False


def _refused(ctx: SchedulerContext, call: ToolCall, failures: int) -> CallResult:
    reason = f"tool {call.name} is unavailable after {failures} identical failures; try another approach"
    ctx.kernel.record("skip", call=call.id, reason=reason)
    return CallResult(call.id, Outcome.ERROR, None, reason, 0, ctx.now, ctx.now)
