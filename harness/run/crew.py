"""Several agents at once on one world (`[[agents]]`, seed 004's three or four tasks at once).

Owns the crew's run: each agent's loop drives its model turn by turn as a SimPy process of its own,
with its own runtime (scheduler and session), on one kernel and one world, so one agent's calls run
while another's model thinks or its calls run too. Batches are numbered in the order they start,
across agents. A scheduler that fails, hangs or crashes ends its own agent's task, never the
others'. The result's scenario is every agent's batches in start order (what oracles read, with
`BatchRun.agent` saying whose turn each was), its source the crew scenario (what reproducers keep).

It never judges a run (the turn-level search lives in `harness.oracles.turn_order`) and never prints.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

import simpy

from harness.agent import delegate
from harness.agent.runtime import Outcome, Pause, combined
from harness.agent.spec import AgentEntry
from harness.faults.failures import FailureModel
from harness.faults.latency import LatencyModel
from harness.model import Batch, JSONValue
from harness.run.batch import Shared, crash_event, drain, end_batch, scheduler_of
from harness.run.driver import Driver, describe_error, scheduler_label
from harness.run.hang import Peer
from harness.run.result import BatchRun, RunResult, RunStatus, recorded
from harness.run.turns import LoopTurns, realized
from harness.scenario.spec import Scenario
from harness.scheduling.context import Scheduler, SchedulerContext
from harness.sim.kernel import StopReason
from harness.sim.realtime import WallClockExceeded, aborts, interrupt_swallowed
from harness.tools.spec import ToolError


@dataclass
class _Running:
    index: int
    batch: Batch
    start: int
    ctx: SchedulerContext
    driver: Driver


@dataclass
class _Member:
    """One agent: its loop, its runtime, and the batch it has running (if any)."""

    entry: AgentEntry
    turns: LoopTurns
    scheduler: Scheduler
    label: str
    problem: str | None
    session: dict[str, Any] = field(default_factory=dict)
    running: _Running | None = None
    process: simpy.Process | None = None


#: How deep subagents may nest: an agent's subagent runs at depth 1, its own subagent at 2, and a
#: delegation from there is refused (hermes' `delegate_task`, `MAX_DEPTH = 2`).
MAX_DEPTH = 2


class _Crew:
    def __init__(self, shared: Shared, mark: int) -> None:
        self.shared, self.mark = shared, mark
        self.kernel = shared.kernel
        self.crash = crash_event(self.kernel, shared.scenario.faults.crash_at_ms)
        self.batch_runs: list[BatchRun] = []
        self.contexts: list[SchedulerContext] = []
        self.started = 0
        self.members: dict[str, _Member] = {}
        #: Subagents started by a `delegate` call, in the order they were.
        self.subagents: list[simpy.Process] = []
        #: How deep each started subagent runs: 1 for one an agent that started on its own delegated to.
        self.depths: dict[str, int] = {}

    def delegate(self, name: Any, task: Any, call_id: str) -> simpy.Event:
        """Start the subagent `name` for the `delegate` call `call_id` (its id begins with the caller's
        name): the event of its task, whose value is how the task ended. A name that is no subagent,
        one already started, or a subagent deeper than `MAX_DEPTH` is the tool's error."""
        member = self.members.get(name) if isinstance(name, str) else None
        if member is None or not member.entry.delegated:
            valid = ", ".join(m.entry.name for m in self.members.values() if m.entry.delegated)
            raise ToolError(f"no subagent named {name!r} to delegate to (subagents: {valid})")
        if member.process is not None:
            raise ToolError(f"subagent {name!r} already has a task (each [[agents]] entry runs one)")
        caller = call_id.partition("/")[0]
        depth = self.depths.get(caller, 0) + 1
        if depth > MAX_DEPTH:
            raise ToolError(f"delegation too deep: {caller!r} runs at depth {depth - 1}, and a subagent it starts "
                            f"would run at depth {depth}; at most {MAX_DEPTH} (hermes' delegate_task MAX_DEPTH)")
        self.depths[member.entry.name] = depth
        if isinstance(task, str) and task and member.turns.task is not None:
            member.turns.task.spec = replace(member.turns.task.spec, task=task)
        member.process = self.kernel.env.process(self.subagent(member))
        self.subagents.append(member.process)
        return member.process

    def subagent(self, member: _Member) -> Generator[simpy.Event, Any, JSONValue]:
        yield from self.agent(member)
        outcome = member.turns.outcome or Outcome("stopped")
        return {"agent": member.entry.name, "status": outcome.status, "answer": outcome.answer,
                "rounds": outcome.rounds, "tool_calls": outcome.tool_calls}

    def agent(self, member: _Member) -> Generator[simpy.Event, Any, None]:
        """One agent's task: think, run a turn through its scheduler, read the results, again."""
        kernel, turns, entry = self.kernel, member.turns, member.entry
        if entry.start_ms:
            yield kernel.delay(entry.start_ms, "agent-start")
        request = turns.advance(None)
        while request is not None:
            if isinstance(request, Pause):
                yield kernel.delay(request.ms, request.purpose)
                request = turns.advance(None)
                continue
            if self.crash.processed:
                turns.stop("the runtime crashed")
                return
            batch, index, start = request, self.started, kernel.now
            self.started += 1
            ctx = self.shared.context(turns.current, batch, member.label, member.session, None)
            self.contexts.append(ctx)
            driver = Driver(member.scheduler, ctx.batch, ctx, self.mark, member.problem)
            kernel.record_ids("batch", index=index, label=batch.label, calls=list(batch.ids), agent=entry.name,
                          scheduler=member.label if entry.scheduler is not None else None)
            process = kernel.env.process(driver.drive())
            member.running = _Running(index, batch, start, ctx, driver)
            yield kernel.env.any_of([process, self.crash])
            if self.crash.processed and not process.triggered:
                driver.crash(process)
            member.running = None
            self.batch_runs.append(end_batch(kernel, index, batch, start, ctx, driver,
                                             driver.stop or StopReason.DONE, entry.name))
            if driver.stop is not None:
                turns.stop(f"the batch ended at the kernel's limit ({driver.stop.value})")
                return
            if driver.status is not RunStatus.COMPLETED:
                turns.stop(f"the batch ended with {driver.status.value}")
                return
            request = turns.advance(driver.results)


def run_crew(scenario: Scenario, scheduler: Scheduler, seed: int, name: str, name_problem: str | None,
             shared: Shared, mark: int) -> RunResult:
    """Run every agent of `scenario` at once (called by `harness.run.run`, which set up `shared`)."""
    from harness.policies.registry import get_scheduler

    kernel = shared.kernel
    crew = _Crew(shared, mark)
    positions = shared.arbiter.positions if shared.arbiter is not None else None
    members: list[_Member] = []
    for entry in scenario.agents:
        runtime, label, problem = scheduler, name, name_problem
        if entry.scheduler is not None:
            runtime = get_scheduler(entry.scheduler)
            label, problem = scheduler_label(runtime)
        members.append(_Member(entry, LoopTurns(scenario, kernel, positions, entry=entry), runtime, label, problem))
    crew.members = {member.entry.name: member for member in members}
    if any(member.entry.delegated for member in members):
        shared.delegate = crew.delegate
    for member in members:
        if not member.entry.delegated:
            member.process = kernel.env.process(crew.agent(member))
    processes = [member.process for member in members if member.process is not None]
    wall_clock = False
    failure: tuple[RunStatus, str] | None = None
    try:
        stop = kernel.run_until(kernel.env.all_of(processes))
        alive = [process for process in crew.subagents if process.is_alive]
        if stop is StopReason.DONE and alive:  # subagents a parent stopped waiting for run on
            stop = kernel.run_until(kernel.env.all_of(alive))
    except WallClockExceeded as exc:
        stop, wall_clock, failure = StopReason.DONE, True, (RunStatus.HANG, str(exc))
    except BaseException as exc:  # an event of a scheduler's own failed with nobody waiting
        if aborts(exc, mark):
            raise
        stop, failure = StopReason.DONE, (RunStatus.SCHEDULER_ERROR, describe_error(exc))
    if interrupt_swallowed(mark):  # a Ctrl-C the scheduler's code caught and swallowed
        raise KeyboardInterrupt
    # Every turn still running, so that a lock cycle across agents is found whichever batch is diagnosed.
    hung = [Peer(m.running.ctx, m.running.driver.process, scheduler_of(m.running.index, m.entry.name))
            for m in members if m.running is not None and m.running.driver.process is not None]
    for member in members:
        running = member.running
        if running is not None:  # its scheduler never returned: a hang, or the failure above
            if failure is not None:
                running.driver.status, running.driver.error = failure
            peers = [peer for peer in hung if peer.ctx is not running.ctx]
            crew.batch_runs.append(end_batch(kernel, running.index, running.batch, running.start, running.ctx,
                                             running.driver, stop, member.entry.name, peers))
            member.turns.stop(f"the batch ended with {running.driver.status.value}")
        elif member.process is None:
            member.turns.outcome = Outcome("not-delegated", detail="no agent delegated a task to it")
        elif member.turns.outcome is None:
            member.turns.stop(f"virtual time ran out while the agent waited: {stop.value}")
    runs = tuple(sorted(crew.batch_runs, key=lambda b: b.index))
    status, error = RunStatus.COMPLETED, None
    failed = next((b for b in runs if b.status is not RunStatus.COMPLETED), None)
    if failed is not None:
        status, error = failed.status, failed.error
    elif crew.crash.processed:
        status, error = RunStatus.CRASHED, "the runtime crashed between turns"
    makespan = kernel.now  # a task ends with its last decision, think time included
    status, error, wall_clock = drain(kernel, crew.contexts, [m.session for m in members], status, error,
                                      wall_clock, mark)
    kernel.record("quiesce", makespan=makespan)
    arbiter = shared.arbiter
    outcomes = {m.entry.name: m.turns.outcome or Outcome("stopped") for m in members}
    return recorded(_realized(scenario, members, runs), name, seed, shared.jitter, runs,
                    tuple(kernel.trace.events), scenario.world, shared.world, makespan, status, error,
                    arbiter.tape if arbiter else None, tuple(arbiter.decisions) if arbiter else (),
                    wall_clock_exceeded=wall_clock, source=scenario, agent=combined(outcomes), agents=outcomes,
                    produced=dict(shared.produced), looks=kernel.trace.looks)


def _realized(scenario: Scenario, members: list[_Member], runs: tuple[BatchRun, ...]) -> Scenario:
    """Every agent's batches in the order they started, with what each agent's script gave its calls."""
    results: dict[str, JSONValue] = {}
    latency: dict[str, LatencyModel] = {}
    failures: dict[str, FailureModel] = {}
    depends: dict[str, tuple[str, ...]] = {}
    args_from: dict[str, dict[str, str]] = {}
    for member in members:
        turns = member.turns
        results.update(turns.results)
        latency.update(turns.latency)
        failures.update(turns.failures)
        depends.update(turns.depends)
        args_from.update(turns.args_from)
    # What a subagent's task came to cannot be replayed from the tools: it is the delegate call's
    # recorded result, so the model-order replay returns what the parent really read.
    tools = {call.id: call.name for run in runs for call in run.batch}
    results.update({r.call_id: r.value for run in runs for r in run.results
                    if r.ok and tools.get(r.call_id) == delegate.NAME})
    loops = sorted({m.entry.spec.loop for m in members})
    return realized(scenario, "/".join(loops), [run.batch for run in runs], results, latency, failures, depends,
                    args_from)
