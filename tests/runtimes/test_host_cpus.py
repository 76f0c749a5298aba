"""The smolagents recipe on hosts of different sizes: its `ToolCallingAgent` sizes its pool with
`ThreadPoolExecutor()` defaults (min(32, cpus + 4) workers), which read the simulated machine
(`[machine] cpus`, default 8), never the host: the same fingerprint with 2 and 16 faked host CPUs."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("smolagents")

from harness import find_scenario, run
from harness.recipes.smolagents import scheduler
from harness.sim.machine import Machine
from tests.helpers import fake_host


@pytest.mark.parametrize("name", ["fanout-100", "interrupt-search-fanout"])
def test_the_smolagents_recipe_gives_the_same_fingerprint_with_2_and_16_host_cpus(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    results = []
    for cpus in (2, 16):
        fake_host(monkeypatch, cpus)
        results.append(run(find_scenario(name), scheduler, seed=1))
    assert results[0].fingerprint == results[1].fingerprint
    assert results[0].makespan_ms == results[1].makespan_ms


def test_the_declared_machine_sizes_the_agents_pool() -> None:
    """fanout-100's 100 calls on 6 workers (2 cpus) take 21,150 ms, on 20 (16 cpus) 6,944 ms."""
    sc = find_scenario("fanout-100")
    makespans = {cpus: run(replace(sc, machine=Machine(cpus)), scheduler, seed=1).makespan_ms for cpus in (2, 16)}
    assert makespans == {2: 21150, 16: 6944}
