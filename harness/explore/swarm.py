"""Swarm testing (as in TigerBeetle's VOPR and Groce et al.): each run switches a random subset of
fault kinds on, so faults that mask each other also get runs of their own.

Owns the fault kinds swarm mode can switch and how each changes a scenario: `failures` (every tool
fails transiently 15% of the time), `interrupt` (the user interrupts somewhere in the first 3 s,
with the grace the runtime declares, else 500 ms: see `declared_grace_ms`), `slow-start` (first
attempts take 5x longer), `timeout-boundary` (latencies just below, at and above the scenario's
timeout), `duplicate-delivery` (30% of external requests arrive twice), `torn-writes` (half of the
writes land in two halves), `crash` (the runtime dies in the first 5 s) and, only for a scenario whose
tools name an MCP `server`, `mcp-server` (one of those servers stalls or dies in the first 5 s, half of the
stalls sending progress notifications every 1-5 s meanwhile, and ignores cancellation half the time:
harness.faults.mcp; drawn after every other kind, so a scenario without servers draws exactly what it drew
before this kind existed). The changed scenario is
an ordinary scenario, so a reproducer of a swarm run needs no swarm logic to replay. Draws come from `swarm/<run>`.
"""

from __future__ import annotations

from dataclasses import replace
from random import Random
from typing import Any

from harness.faults.failures import FailureModel
from harness.faults.latency import PerAttempt, boundary
from harness.faults.mcp import McpFault
from harness.scenario.spec import Interrupt, Scenario

KINDS = ("failures", "interrupt", "slow-start", "timeout-boundary", "duplicate-delivery", "torn-writes", "crash",
         "mcp-server")
#: Drawn last, and only when the scenario has MCP servers (see the module's docstring).
MCP_SERVER = "mcp-server"

#: The kinds a scheduling policy must survive. Duplicate delivery is left out: only idempotency keys
#: sent by the tools' transport defend against a network that delivers twice, not the policy.
POLICY_KINDS = tuple(kind for kind in KINDS if kind != "duplicate-delivery")

#: The grace of an interrupt swarm adds when neither the scenario nor the runtime says otherwise.
DEFAULT_GRACE_MS = 500


def declared_grace_ms(scheduler: Any) -> int | None:
    """The interrupt grace a runtime promises, as its scheduler declares it: an int attribute
    `grace_ms` (`from_asyncio(..., grace_ms=5000)`, `from_threads(..., grace_ms=5000)`, or set on any
    scheduler object). None when it declares none. A design that notices the interrupt only every 5 s
    (hermes' `wait(timeout=5)`) is judged against the grace it promises, not against 500 ms.

    Precedence, for a swarm run: a scenario that scripts its own interrupt keeps it, grace and all
    (swarm adds none: the scenario is the test's statement); otherwise the interrupt swarm adds gets
    the runtime's declared grace, else `DEFAULT_GRACE_MS`."""
    try:
        grace = getattr(scheduler, "grace_ms", None)
    except Exception:
        return None
    if grace is None:
        return None
    if isinstance(grace, bool) or not isinstance(grace, int) or grace < 0:
        raise ValueError(f"the scheduler's grace_ms must be a non-negative integer of milliseconds (the interrupt "
                         f"grace the runtime promises), got {grace!r}")
    return grace


def swarm_scenario(scenario: Scenario, rng: Random, kinds: tuple[str, ...] = KINDS, *,
                   grace_ms: int | None = None) -> tuple[Scenario, tuple[str, ...]]:
    """The scenario with a random subset of `kinds` switched on (each with probability 1/2). An
    interrupt it adds gets `grace_ms` (the runtime's declared grace), else `DEFAULT_GRACE_MS`."""
    enabled = tuple(kind for kind in KINDS if kind != MCP_SERVER and rng.random() < 0.5 and kind in kinds)
    changed = scenario
    names = sorted({call.name for call in scenario.calls if call.name in scenario.catalogue})
    if "failures" in enabled:
        changed = replace(changed, tool_failures={**{n: FailureModel(rate=0.15) for n in names},
                                                   **changed.tool_failures})
    if "interrupt" in enabled and changed.interrupt is None:
        changed = replace(changed, interrupt=Interrupt(rng.randint(0, 3000),
                                                       DEFAULT_GRACE_MS if grace_ms is None else grace_ms))
    catalogue = changed.catalogue
    if "slow-start" in enabled:
        for name in names:
            sample = catalogue[name].latency.sample(rng)
            catalogue = catalogue.overridden(name, latency=PerAttempt((sample * 5, sample)))
        # First attempts take five times longer: so may the whole batch, without being a hang.
        changed = replace(changed, limits=replace(changed.limits, time_bound_ms=changed.limits.time_bound_ms * 5))
    timeout = changed.execution.timeout_ms
    if "timeout-boundary" in enabled and timeout is not None:
        for name in names:
            catalogue = catalogue.overridden(name, latency=boundary(timeout))
    if "crash" in enabled and changed.faults.crash_at_ms is None:
        changed = replace(changed, faults=replace(changed.faults, crash_at_ms=rng.randint(0, 5000)))
    if "duplicate-delivery" in enabled or "torn-writes" in enabled:
        changed = replace(changed, faults=replace(
            changed.faults,
            duplicate_delivery=0.3 if "duplicate-delivery" in enabled else changed.faults.duplicate_delivery,
            torn_writes=0.5 if "torn-writes" in enabled else changed.faults.torn_writes))
    servers = sorted({spec.server for spec in (catalogue[n] for n in names) if spec.server is not None})
    if servers and MCP_SERVER in kinds and rng.random() < 0.5:
        server = rng.choice(servers)
        added = [McpFault(rng.choice(("mcp_stall", "mcp_server_death")), server, rng.randint(0, 5000))]
        if rng.random() < 0.5:
            added.append(McpFault("mcp_ignores_cancel", server))
        if added[0].kind == "mcp_stall" and rng.random() < 0.5:
            # Drawn after the draws above, so a run keeps the server, time and cancellation it drew before
            # progress notifications existed: half of the stalls report progress every 1-5 s meanwhile.
            # (Last, in the order a scenario file's faults load in, so a reproducer's plan compares equal.)
            added = [*added[1:], McpFault("mcp_progress_only", server, added[0].at_ms, rng.randint(1, 5) * 1000)]
        changed = replace(changed, faults=replace(changed.faults, mcp=(*changed.faults.mcp, *added)))
        enabled += (MCP_SERVER,)
    return replace(changed, catalogue=catalogue), enabled
