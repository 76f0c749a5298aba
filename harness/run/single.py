"""`run(scenario, scheduler, seed)`: one deterministic simulation, start to finish.

Owns the run loop: build the world, give each batch of the scenario to the scheduler as a SimPy
process, contain whatever the scheduler does (raise, yield garbage, never return), let calls the
scheduler abandoned run out, and package trace, results and the final world as a `RunResult`. A
scenario with `[[agents]]` is handed to the crew runner. A run is a pure function of (scenario,
scheduler, seed, harness version). It never judges the results (oracles do) and never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import simpy

from harness.run.batch import Shared, _UserInterrupt, crash_event, drain, end_batch
from harness.run.crew import run_crew
from harness.run.driver import Driver, describe_error, scheduler_label
from harness.run.elsewhere import RunsElsewhere
from harness.run.result import BatchRun, RunResult, RunStatus, recorded
from harness.run.turns import LoopTurns, StaticTurns, Turns
from harness.scenario.spec import Scenario
from harness.scheduling.context import Scheduler, SchedulerContext
from harness.sim.arbiter import Arbiter, Chooser
from harness.sim.attempts import AttemptReader
from harness.sim.collector import LARGE_CALLS, held_full_collections
from harness.sim.conditions import FlatAnyOf
from harness.sim.kernel import Kernel, StopReason, new_process
from harness.sim.realtime import (
    WallClockExceeded,
    aborts,
    interrupt_swallowed,
    per_run_limit,
    sigint_mark,
    standing_watchdog,
    wall_clock_watchdog,
)
from harness.world.clock import virtual_file_times
from harness.world.world import World

#: Jitter multiplies latencies by up to e^jitter: beyond this, virtual times overflow any bound.
MAX_JITTER = 10.0


def run(scenario: Scenario, scheduler: Scheduler | str, seed: int, *, jitter: float = 0.0,
        chooser: Chooser | None = None) -> RunResult:
    """Run every batch of `scenario` under `scheduler` with random streams from `seed`.

    `scheduler` is a scheduler (called with a batch and a context: a built-in policy's instance,
    `from_asyncio(execute)`) or a name, resolved with `get_scheduler` as the CLI, `explore` and
    `check_scheduler` resolve it: a built-in policy (`"serial"`, `"hermes_segments"`) or
    `"package.module:attribute"`, imported and built under the import limit (600 s, never charged to
    the run's wall-clock limit: see `harness.policies.registry.build_scheduler`). An unknown name
    raises `UnknownSchedulerError` (a `LookupError` listing the valid names) before anything runs.

    `jitter` > 0 multiplies every latency by a factor drawn log-uniformly from
    [e^-jitter, e^jitter] (stream `jitter/<call>/<attempt>`): an exploration knob that varies
    completion orders; latency statistics of jittered runs are not the scenario's.

    With a `chooser`, the run is order-first (see `harness.sim.arbiter`): calls advance one
    touch point at a time in the order the chooser picks, and `RunResult.tape` records the picks.
    """
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= MAX_JITTER:
        raise ValueError(f"jitter must be a number between 0 and {MAX_JITTER} (a log-scale factor), got {jitter!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if isinstance(scheduler, RunsElsewhere):  # e.g. an isolated child's stand-in: the run is its own
        return scheduler.run_elsewhere(scenario, seed, jitter, chooser)
    limit = per_run_limit()
    if isinstance(scheduler, str):  # a name, as every other entry point takes it
        from harness.policies.registry import build_scheduler

        scheduler = build_scheduler(scheduler)
    held = held_full_collections(sum([len(batch.calls) for batch in scenario.batches]))
    if not limit:
        with held:
            return _run(scenario, scheduler, seed, jitter, chooser)
    policy = scheduler

    def what() -> str:
        return f"the run of {scenario.name!r} under {scheduler_label(policy)[0]}, seed {seed},"

    standing = standing_watchdog(limit)  # an exploration's one watchdog for all its runs (no system call)
    if standing is not None:
        standing.begin_run(what)
        try:
            with held:
                result = _run(scenario, scheduler, seed, jitter, chooser)
        finally:
            standing.end_run()
    else:
        with wall_clock_watchdog(limit, what()), held:
            result = _run(scenario, scheduler, seed, jitter, chooser)
    if result.wall_clock_exceeded:
        raise WallClockExceeded(result.error or "real time ran out", result)
    return result


def _run(scenario: Scenario, scheduler: Scheduler, seed: int, jitter: float, chooser: Chooser | None) -> RunResult:
    kernel = Kernel(seed, scenario.limits)
    # Files the run writes are stamped with its virtual time, not the host's (harness.world.clock).
    # (`kernel.env.now`, read from C: no Python frame per stamp.)
    with virtual_file_times(partial(getattr, kernel.env, "_now")):
        return _run_on(kernel, scenario, scheduler, seed, jitter, chooser)


def _run_on(kernel: Kernel, scenario: Scenario, scheduler: Scheduler, seed: int, jitter: float,
            chooser: Chooser | None) -> RunResult:
    mark = sigint_mark()
    world = World.from_state(scenario.world)
    name, name_problem = scheduler_label(scheduler)
    # The runner's own events are added to the trace directly (what `kernel.record` / `record_ids` do).
    trace = kernel.trace
    trace.add(int(kernel.env._now), "run", {
        "scenario": scenario.name, "scheduler": name, "seed": seed, "jitter": jitter or None,
        # Which chooser made the tape is not part of the run: any chooser that makes the same
        # choices makes the same run, and a reproducer replays it with a plain Tape.
        "explorer": "order-first" if chooser is not None else None,
        # The order the scheduler means to keep, for serializability (harness.oracles.reference).
        "reference": _declared_reference(scheduler)})
    arbiter = Arbiter(kernel, chooser, {c.id: i for i, c in enumerate(scenario.calls)}) if chooser else None
    shared = Shared(kernel, world, scenario, jitter, arbiter)
    if scenario.agents:  # several agents at once, each turn by turn
        return run_crew(scenario, scheduler, seed, name, name_problem, shared, mark)
    if scenario.agent is None and sum([len(batch.calls) for batch in scenario.batches]) >= LARGE_CALLS:
        # A large run's attempts are read as its trace is recorded, while it is in the processor's
        # cache, not after it from main memory (see `harness.sim.attempts`). A small run's trace is
        # still in the cache when it is judged: it is read then, and only if it is.
        kernel.reader = AttemptReader(_tool_of(scenario))
    # A loop scenario's batches come from its model, turn by turn; a plain one's are fixed.
    turns: Turns = (LoopTurns(scenario, kernel, arbiter.positions if arbiter else None)
                    if scenario.agent is not None else StaticTurns(scenario))
    batch_runs: list[BatchRun] = []
    contexts: list[SchedulerContext] = []
    user_interrupt = _UserInterrupt(kernel, scenario.interrupt)
    crash = crash_event(kernel, scenario.faults.crash_at_ms)
    session: dict[str, Any] = {}
    status, error = RunStatus.COMPLETED, None
    wall_clock = False
    batch = turns.next_batch(None)
    index = -1
    while batch is not None:
        index += 1
        current = turns.current
        interrupt = user_interrupt.arm(index)
        ctx = shared.context(current, batch, name, session, interrupt)
        contexts.append(ctx)
        driver = Driver(scheduler, ctx.batch, ctx, mark, name_problem)  # the scheduler's own copy
        start = int(kernel.env._now)
        trace.add(start, "batch", {"index": index, "label": batch.label, "calls": [call.id for call in batch.calls]},
                  True)
        user_interrupt.deliver_if_due()
        process = new_process(kernel.env, driver.drive(), simpy.Process)  # `kernel.env.process(...)`
        try:
            stop = kernel.run_until(FlatAnyOf(kernel.env, [process, crash]))  # `env.any_of`, fewer calls
            if crash.callbacks is None and not process.triggered:  # (`crash.processed`)
                driver.crash(process)
        except WallClockExceeded as exc:
            stop, driver.status, driver.error = StopReason.DONE, RunStatus.HANG, str(exc)
            wall_clock = True
        except BaseException as exc:  # an event of the scheduler's own failed with nobody waiting
            if aborts(exc, mark):
                raise
            stop, driver.status, driver.error = StopReason.DONE, RunStatus.SCHEDULER_ERROR, describe_error(exc)
        if driver.stop is not None:  # the driver saw the budget spent on resumes SimPy never counts
            stop = driver.stop
        if interrupt_swallowed(mark):  # a Ctrl-C the scheduler's code caught and swallowed
            raise KeyboardInterrupt
        batch_runs.append(end_batch(kernel, index, batch, start, ctx, driver, stop))
        if driver.status is not RunStatus.COMPLETED:
            status, error = driver.status, driver.error
            turns.stop(f"the batch ended with {driver.status.value}")
            break
        if crash.callbacks is None:
            status, error = RunStatus.CRASHED, "the runtime crashed between turns"
            turns.stop("the runtime crashed")
            break
        user_interrupt.disarm()
        if user_interrupt.fired:
            turns.stop("the user interrupted the turn")
            break  # the user interrupted this turn: the model never sends the next one
        batch = turns.next_batch(driver.results)
    makespan = batch_runs[-1].end_ms if batch_runs else 0
    if scenario.agent is not None:
        makespan = max(makespan, kernel.now)  # a task ends with its last decision, think time included
    status, error, wall_clock = drain(kernel, contexts, [session], status, error, wall_clock, mark)
    trace.add(int(kernel.env._now), "quiesce", {"makespan": makespan})
    return recorded(turns.realized(), name, seed, jitter, tuple(batch_runs), tuple(kernel.trace.events),
                    scenario.world, world, makespan, status, error, arbiter.tape if arbiter else None,
                    tuple(arbiter.decisions) if arbiter else (), wall_clock_exceeded=wall_clock,
                    source=scenario if scenario.agent is not None else None, agent=turns.outcome,
                    produced=dict(shared.produced), looks=kernel.trace.looks, reader=kernel.reader)


def _tool_of(scenario: Scenario) -> Callable[[str], str]:
    """The scenario's tool for a call id ("" for none), for the reader's attempts whose start it has
    not read: a table made when first asked (for nearly every run, never)."""
    tools: dict[str, str] = {}

    def tool_of(call: str) -> str:
        if not tools:
            tools.update({c.id: c.name for c in scenario.calls})
        return tools.get(call, "")

    return tool_of


def _declared_reference(scheduler: object) -> str | None:
    """The scheduler's `reference_order` when it declares one other than model order (as written: the
    oracle says so when no reference has that name)."""
    declared = getattr(scheduler, "reference_order", None)
    return None if declared is None or declared == "model" else str(declared)

