"""`Scenario`: a named workload as a value — initial world, batches, tool overrides, limits.

Owns the in-memory shape of a scenario. It never reads files (see `load`) and never runs anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.faults.failures import FailureModel
from harness.faults.latency import LatencyModel
from harness.faults.plan import FaultPlan
from harness.model import Batch, JSONValue, ToolCall
from harness.scheduling.approvals import ApprovalScript
from harness.scheduling.execution import ExecutionPolicy
from harness.sim.kernel import Limits
from harness.sim.machine import Machine
from harness.tools.catalogue import BUILTIN, Catalogue
from harness.world.state import WorldState

if TYPE_CHECKING:
    from harness.agent.spec import AgentEntry, AgentSpec


#: How the `source` of a realized loop scenario begins.
REALIZED = "realized from "


@dataclass(frozen=True, slots=True)
class Interrupt:
    """The user interrupts the turn at `at_ms` (virtual time since the run began); running calls
    then have `grace_ms` to finish before they must be abandoned."""

    at_ms: int
    grace_ms: int = 3000


@dataclass(frozen=True, slots=True)
class Recorded:
    """What a call returned in production (an imported transcript's tool result): an expectation the
    serial reference is checked against (`harness.transcripts.fidelity`), never the call's value.
    `error` is the text of a result the transcript marks failed; otherwise `value` is what it returned."""

    value: JSONValue = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True, slots=True)
class Embedded:
    """The files `[world] from_dir` copied from the real disk when the scenario loaded: the directory
    (resolved), where in the world it went, and the files' paths relative to it. A reproducer lists
    them, so its reader knows which of their files it carries."""

    root: str
    into: str
    files: tuple[str, ...]


#: The reference orders serializability may judge a run against: the model's order, or design note
#: 002's rule that in a batch with a write every read comes after the batch's writes.
REFERENCE_ORDERS = ("model", "writes-first")


@dataclass(frozen=True)
class Scenario:
    name: str
    batches: tuple[Batch, ...]
    world: WorldState = field(default_factory=WorldState)
    catalogue: Catalogue = field(default_factory=lambda: BUILTIN)
    limits: Limits = field(default_factory=Limits)
    call_latency: Mapping[str, LatencyModel] = field(default_factory=dict)
    tool_failures: Mapping[str, FailureModel] = field(default_factory=dict)
    call_failures: Mapping[str, FailureModel] = field(default_factory=dict)
    #: Declared data dependencies (call id -> ids it needs), as seed 003's DAG states them.
    depends_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""
    source: str = ""
    path: str | None = None
    max_concurrency: int | None = None
    tool_caps: Mapping[str, int] = field(default_factory=dict)
    interrupt: Interrupt | None = None
    execution: ExecutionPolicy = field(default_factory=ExecutionPolicy)
    faults: FaultPlan = field(default_factory=FaultPlan)
    #: Python modules whose tools the catalogue was built on (after the built-ins), by name.
    tools_modules: tuple[str, ...] = ()
    #: Arguments taken from earlier results (call id -> argument -> reference), resolved when an attempt
    #: starts (see `harness.tools.inputs`).
    args_from: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: The scripted user who answers approval requests (`[approvals]`); None: every tool is pre-approved.
    approvals: ApprovalScript | None = None
    #: A scripted model and its loop policy: the batches are decided during the run (see `harness.agent`).
    #: The run then reports the batches the model emitted as a plain scenario, this one as its source.
    agent: AgentSpec | None = None
    #: Several agents at once on the world (`[[agents]]`), each with its own model, loop and runtime.
    agents: tuple[AgentEntry, ...] = ()
    #: What calls returned in production (call id -> `Recorded`, from `recorded = ...` on a call):
    #: expectations of the serial reference, which the run never uses as values (`result` is that).
    recorded: Mapping[str, Recorded] = field(default_factory=dict)
    #: The machine bridged code sees (`[machine]`): `os.cpu_count()` and its relatives answer from it,
    #: never from the host, so a run is the same on every host (see `harness.sim.machine`).
    machine: Machine = field(default_factory=Machine)
    #: False: the file said `check_arguments = false`, so its calls' arguments were not checked against
    #: their tools' parameters when it loaded (see `harness.scenario.arguments`).
    check_arguments: bool = True
    #: The real files `[world] from_dir` copied in (None: the world is all the file's own data).
    embedded: Embedded | None = None
    #: The order serializability judges against (`reference = "writes-first"`; one of
    #: `REFERENCE_ORDERS`); None: the one the scheduler declares, else model order
    #: (`harness.oracles.reference`).
    reference: str | None = None

    def __post_init__(self) -> None:
        if not self.batches and self.agent is None and not self.agents and not self.realized:
            raise ValueError(f"scenario {self.name!r} has no batches")
        seen: set[str] = set()
        for batch in self.batches:
            for call in batch:
                if call.id in seen:
                    raise ValueError(f"scenario {self.name!r}: call id {call.id!r} is used twice")
                seen.add(call.id)

    @property
    def realized(self) -> bool:
        """Whether this is the record of a loop run (the batches a model emitted; possibly none)."""
        return self.source.startswith(REALIZED)

    @property
    def looped(self) -> bool:
        """Whether models decide the batches as the run goes (one agent or several)."""
        return self.agent is not None or bool(self.agents)

    @property
    def agent_specs(self) -> tuple[AgentSpec, ...]:
        """The model and loop of every agent: the single `[model]`, or each of `[[agents]]`."""
        return ((self.agent,) if self.agent is not None else ()) + tuple(entry.spec for entry in self.agents)

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(call for batch in self.batches for call in batch)
