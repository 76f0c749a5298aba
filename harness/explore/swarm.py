"""Swarm testing (as in TigerBeetle's VOPR and Groce et al.): each run switches a random subset of
fault kinds on, so faults that mask each other also get runs of their own.

Owns the fault kinds swarm mode can switch and how each changes a scenario: `failures` (every tool
fails transiently 15% of the time), `interrupt` (the user interrupts somewhere in the first 3 s,
grace 500 ms), `slow-start` (first attempts take 5x longer), `timeout-boundary` (latencies just
below, at and above the scenario's timeout), `duplicate-delivery` (30% of external requests arrive
twice), `torn-writes` (half of the writes land in two halves) and `crash` (the runtime dies in the
first 5 s). The changed scenario is an ordinary scenario, so a
reproducer of a swarm run needs no swarm logic to replay. Draws come from `swarm/<run>`.
"""

from __future__ import annotations

from dataclasses import replace
from random import Random

from harness.faults.failures import FailureModel
from harness.faults.latency import PerAttempt, boundary
from harness.scenario.spec import Interrupt, Scenario

KINDS = ("failures", "interrupt", "slow-start", "timeout-boundary", "duplicate-delivery", "torn-writes", "crash")

#: The kinds a scheduling policy must survive. Duplicate delivery is left out: only idempotency keys
#: sent by the tools' transport defend against a network that delivers twice, not the policy.
POLICY_KINDS = tuple(kind for kind in KINDS if kind != "duplicate-delivery")


def swarm_scenario(scenario: Scenario, rng: Random,
                   kinds: tuple[str, ...] = KINDS) -> tuple[Scenario, tuple[str, ...]]:
    """The scenario with a random subset of `kinds` switched on (each with probability 1/2)."""
    enabled = tuple(kind for kind in KINDS if rng.random() < 0.5 and kind in kinds)
    changed = scenario
    names = sorted({call.name for call in scenario.calls if call.name in scenario.catalogue})
    if "failures" in enabled:
        changed = replace(changed, tool_failures={**{n: FailureModel(rate=0.15) for n in names},
                                                   **changed.tool_failures})
    if "interrupt" in enabled and changed.interrupt is None:
        changed = replace(changed, interrupt=Interrupt(rng.randint(0, 3000), 500))
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
    return replace(changed, catalogue=catalogue), enabled
