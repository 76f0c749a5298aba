"""What a run gives back: `RunResult` (trace, results, final world, status), one `BatchRun` per batch
and the `RunStatus` of a run.

Owns these frozen values and what they answer about themselves (fingerprint, final files). Never
runs anything.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from harness.agent.runtime import Outcome as AgentOutcome
from harness.diagnosis.wait import Diagnosis
from harness.model import Batch, CallResult
from harness.scenario.spec import Scenario
from harness.sim.arbiter import Decision
from harness.sim.attempts import AttemptReader
from harness.sim.kernel import StopReason
from harness.sim.trace import TraceEvent, fingerprint
from harness.sim.trace import recorded_sha256 as trace_hash
from harness.world.state import WorldState
from harness.world.world import World

_T = TypeVar("_T")


class cached(Generic[_T]):
    """`functools.cached_property` without its lock (as Python 3.12 made it): the value is computed once
    and kept in the instance's `__dict__` under the property's name, which then answers every later
    read without calling anything. A result is read by one thread at a time; two threads racing the
    first read compute the same value twice. Three of these are read per fingerprinted run, and a few
    of the oracles' facts (`harness.oracles.facts`) per checked run."""

    def __init__(self, function: Callable[[Any], _T]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> cached[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> _T | cached[_T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value


class RunStatus(enum.StrEnum):
    """How the scheduler behaved, before any oracle looks at what it did."""

    COMPLETED = "completed"  # every batch's scheduler returned a list of CallResult
    SCHEDULER_ERROR = "scheduler-error"  # the scheduler raised
    CONTRACT_ERROR = "contract-error"  # it yielded or returned something that breaks the contract
    HANG = "hang"  # it never returned: deadlock, time bound or event budget
    CRASHED = "crashed"  # the fault plan crashed the runtime mid-batch (not the scheduler's fault)


@dataclass(frozen=True)
class BatchRun:
    """One batch as it ran: when it started and ended and what the scheduler reported."""

    index: int
    batch: Batch
    start_ms: int
    end_ms: int
    results: tuple[CallResult, ...]
    status: RunStatus
    stop: StopReason
    error: str | None = None
    #: The agent whose turn this was (`[[agents]]` scenarios only).
    agent: str | None = None
    #: A hung batch: what each unfinished call waited on (harness.run.hang; never traced).
    waits: Diagnosis | None = None


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    scheduler: str
    seed: int
    jitter: float
    batches: tuple[BatchRun, ...]
    trace: tuple[TraceEvent, ...]
    initial: WorldState
    world: World = field(repr=False)
    makespan_ms: int
    status: RunStatus
    error: str | None = None
    #: Order-first runs: the calls picked at each step (replay it with `explore.Tape`).
    tape: tuple[str, ...] | None = None
    decisions: tuple[Decision, ...] = ()
    #: A loop scenario's run: `scenario` holds the batches its model emitted (what oracles read) and
    #: `source` the scenario with its model (what reproducers keep and replays run again).
    source: Scenario | None = None
    #: How the agent's task ended (loop scenarios only).
    agent: AgentOutcome | None = None
    #: How each agent's task ended, by name in the scenario's order (`[[agents]]` scenarios only).
    agents: Mapping[str, AgentOutcome] = field(default_factory=dict)
    #: An outside watchdog stopped the run (real time ran out): a harness driving many runs should stop too.
    wall_clock_exceeded: bool = False
    #: Each call's latest value that ended ok and was not abandoned: what `args_from` read. Oracles
    #: take it for a producer whose result was never reported (a crashed batch reports nothing). Not
    #: in the trace (its `end` event has the value's digest), so not in the fingerprint.
    produced: Mapping[str, Any] = field(default_factory=dict)

    @property
    def replayable(self) -> Scenario:
        """The scenario that makes this run again: the loop scenario, or the plain one."""
        return self.source if self.source is not None else self.scenario

    @property
    def results(self) -> tuple[CallResult, ...]:
        return tuple(result for batch in self.batches for result in batch.results)

    @cached
    def final(self) -> WorldState:
        return self.world.state()

    @cached
    def trace_sha256(self) -> str:
        # A result the runner made knows which of its events hold more than str, int and bool fields
        # (`recorded`); any other (a copy, one built by hand) is looked at event by event.
        return trace_hash(self.trace, self.__dict__.get(_LOOKS))

    @cached
    def fingerprint(self) -> str:
        """SHA-256 over the canonical trace and the final world digest."""
        # `final` is the world's own `state()`: its fields hold the types they declare.
        return fingerprint(self.trace_sha256, self.final.digest(typed=True))

    def final_files(self) -> dict[str, str]:
        """Path -> SHA-256 of the content, for every regular file of the final world."""
        files: dict[str, str] = self.final.to_json()["files"]
        return files



#: Where a result the runner made keeps its recorder's `looks` (see `TraceRecorder`); not a field.
_LOOKS = "_harness_trace_looks"
#: Where a large run keeps the `AttemptReader` that read its trace as it was recorded
#: (`harness.sim.attempts`), for `harness.oracles.facts`; not a field, and absent from other results.
READ_WHILE_RUNNING = "_harness_attempts_read"


def recorded(scenario: Scenario, scheduler: str, seed: int, jitter: float, batches: tuple[BatchRun, ...],
             trace: tuple[TraceEvent, ...], initial: WorldState, world: World, makespan_ms: int, status: RunStatus,
             error: str | None, tape: tuple[str, ...] | None, decisions: tuple[Decision, ...], *,
             wall_clock_exceeded: bool, source: Scenario | None, agent: AgentOutcome | None,
             agents: Mapping[str, AgentOutcome] | None = None, produced: Mapping[str, Any],
             looks: list[TraceEvent], reader: AttemptReader | None = None) -> RunResult:
    """The `RunResult` a runner returns: what `RunResult(...)` makes, field for field, without the
    frozen dataclass's chain of `object.__setattr__` calls (one result per run), and with the trace
    recorder's `looks`, the only events its trace hash must look into, and the reader that read the
    trace while it was recorded, if one did (having read all of it)."""
    result: RunResult = object.__new__(RunResult)
    result.__dict__.update({
        "scenario": scenario, "scheduler": scheduler, "seed": seed, "jitter": jitter, "batches": batches,
        "trace": trace, "initial": initial, "world": world, "makespan_ms": makespan_ms, "status": status,
        "error": error, "tape": tape, "decisions": decisions, "source": source, "agent": agent,
        "agents": {} if agents is None else agents, "wall_clock_exceeded": wall_clock_exceeded,
        "produced": produced, _LOOKS: looks})
    if reader is not None and reader.catch_up(trace):  # what the run recorded after the reader last read
        result.__dict__[READ_WHILE_RUNNING] = reader
    return result
