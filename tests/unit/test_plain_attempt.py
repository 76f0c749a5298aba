"""The plain attempt path (`AttemptExecution._execute_plain`) writes what the general one (`_execute`)
writes, and only attempts that cannot meet anything but their tool take it (issue 27).

Each run here is made twice: as the harness makes it, and with every attempt forced onto the general
path; traces, results, final worlds and fingerprints must be equal. A spy on `_attempt` says which path
each attempt took, so the comparisons are known to cover the plain path, and the cases that must not
take it are seen to take the general one.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.faults.failures import FailureModel
from harness.faults.plan import FaultPlan, RateLimit
from harness.model import Batch
from harness.run import RunResult
from harness.scenario.spec import Scenario
from harness.scheduling.attempt import AttemptExecution, CallHandle
from harness.sim.arbiter import Tape
from harness.strategies import fault_plans, scenarios
from harness.world import World

Taken = list[tuple[str, str, str]]  # (call id, tool, the generator's name) per started attempt


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[Taken]:
    """Which path each attempt takes while the fixture is active."""
    paths: Taken = []
    real = AttemptExecution._attempt

    def spying(self: AttemptExecution, handle: CallHandle, key: str | None) -> Generator[Any, Any, None]:
        generator = real(self, handle, key)
        paths.append((handle.call.id, handle.call.name, generator.__name__))
        return generator

    monkeypatch.setattr(AttemptExecution, "_attempt", spying)
    yield paths


def _general_only(self: AttemptExecution, handle: CallHandle, key: str | None) -> Generator[Any, Any, None]:
    return self._execute(handle, key)


def both_ways(make: Callable[[], RunResult], monkeypatch: pytest.MonkeyPatch) -> tuple[RunResult, RunResult]:
    """`make()` as the harness runs it, then with every attempt on the general path."""
    as_is = make()
    with monkeypatch.context() as patched:
        patched.setattr(AttemptExecution, "_attempt", _general_only)
        general = make()
    return as_is, general


def assert_same(a: RunResult, b: RunResult) -> None:
    assert a.trace == b.trace
    assert [batch.results for batch in a.batches] == [batch.results for batch in b.batches]
    assert a.world.state() == b.world.state()
    assert (a.fingerprint, a.status, a.makespan_ms) == (b.fingerprint, b.status, b.makespan_ms)


@pytest.mark.parametrize("scheduler", ["serial", "parallel", "resource_keys"])
def test_every_builtin_scenario_runs_the_same_on_both_paths(scheduler: str, taken: Taken,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    policy = get_scheduler(scheduler)
    for name in scenario_names():
        scenario = find_scenario(name)
        a, b = both_ways(lambda: run(scenario, policy, 3), monkeypatch)  # noqa: B023 (called at once)
        assert_same(a, b)
    plain = sum(1 for _, _, path in taken if path == "_execute_plain")
    assert plain > len(taken) // 2  # most attempts of the built-ins are plain: the comparison covers it


def test_jittered_runs_are_the_same_on_both_paths(taken: Taken, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = find_scenario("incident-triage")
    for seed in (1, 2, 3):
        a, b = both_ways(lambda: run(scenario, "parallel", seed, jitter=1.5), monkeypatch)  # noqa: B023
        assert_same(a, b)
    assert {path for _, _, path in taken} == {"_execute_plain"}


@given(scenarios(faults=fault_plans(), interrupts=True), st.sampled_from(["serial", "parallel", "dag"]),
       st.integers(0, 2**16))
def test_generated_scenarios_run_the_same_on_both_paths(scenario: Scenario, scheduler: str, seed: int) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        a, b = both_ways(lambda: run(scenario, scheduler, seed), monkeypatch)
    assert_same(a, b)


def _scenario(**changes: Any) -> Scenario:
    world = World(cwd="/repo")
    world.populate(files=[("/repo/a.txt", "alpha\n")])
    calls = [("r", "read_file", {"path": "a.txt"}), ("w", "write_file", {"path": "b.txt", "content": "x"})]
    return replace(Scenario(name="paths", batches=(Batch.of(calls),), world=world.state()), **changes)


def test_a_plain_scenario_takes_the_plain_path(taken: Taken) -> None:
    run(_scenario(), "parallel", 1)
    assert taken == [("r", "read_file", "_execute_plain"), ("w", "write_file", "_execute_plain")]


@pytest.mark.parametrize("changes", [
    {"faults": FaultPlan(duplicate_delivery=0.5)},
    {"faults": FaultPlan(torn_writes=0.5)},
    {"faults": FaultPlan(rate_limits=(RateLimit("web_search", 1, 1000),))},
], ids=["duplicate-delivery", "torn-writes", "rate-limit"])
def test_a_fault_an_attempt_could_meet_takes_the_general_path(changes: dict[str, Any], taken: Taken,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = both_ways(lambda: run(_scenario(**changes), "parallel", 1), monkeypatch)
    assert_same(a, b)
    assert taken == [("r", "read_file", "_execute"), ("w", "write_file", "_execute")]


def test_an_injected_failure_sends_its_call_alone_to_the_general_path(taken: Taken) -> None:
    run(_scenario(call_failures={"w": FailureModel(rate=1.0)}), "parallel", 1)
    assert taken == [("r", "read_file", "_execute_plain"), ("w", "write_file", "_execute")]


def test_a_flock_tool_takes_the_general_path(taken: Taken, monkeypatch: pytest.MonkeyPatch) -> None:
    locking = _scenario().catalogue.overridden("write_file", file_lock=True)
    a, b = both_ways(lambda: run(_scenario(catalogue=locking), "parallel", 1), monkeypatch)
    assert_same(a, b)
    assert taken == [("r", "read_file", "_execute_plain"), ("w", "write_file", "_execute")]  # (the spied run)


def test_an_order_first_run_takes_the_general_path(taken: Taken) -> None:
    run(_scenario(), "parallel", 1, chooser=Tape([]))
    assert {path for _, _, path in taken} == {"_execute"}


@pytest.mark.parametrize("name, general", [
    ("incident-ticket-notify", "args_from"),  # a consumer's arguments read its producer's result
    ("subagents-notes", "delegate"),  # a delegate call runs a subagent
    ("mcp-stalled-server", "mcp"),  # the tools of a server with an MCP fault
])
def test_calls_with_more_than_their_tool_take_the_general_path(name: str, general: str, taken: Taken) -> None:
    scenario = run(find_scenario(name), "parallel", 1).scenario  # a loop's: the batches its model sent
    special = [(call, path) for call, tool, path in taken if _needs_general(scenario, call, tool, general)]
    assert special, f"{name} has no call of the kind ({general}) any more: pick another scenario"
    assert {path for _, path in special} == {"_execute"}


def _needs_general(scenario: Scenario, call_id: str, tool: str, why: str) -> bool:
    spec = scenario.catalogue.get(tool)
    if why == "args_from":
        return call_id in scenario.args_from
    if why == "delegate":
        return spec is not None and spec.delegates
    return spec is not None and spec.server is not None and bool(scenario.faults.mcp)
