"""No false alarms: the serial reference passes every oracle on any generated batch."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import get_scheduler, run
from harness.model import Batch
from harness.oracles import check
from harness.scenario.spec import Interrupt, Scenario
from harness.strategies import FILE_TOOLS, batches, fault_plans, scenarios
from harness.world import World

FILES = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n", "/repo/src/c.txt": "gamma\n",
         "/repo/tests/test_a.txt": "requires a.txt alpha\n"}
TOOLS = (*FILE_TOOLS, "terminal", "create_ticket", "web_search", "clarify", "no_such_tool")


def scenario_of(batch: Batch, interrupt_at: int | None, cap: int | None) -> Scenario:
    world = World(cwd="/repo")
    world.populate(files=sorted(FILES.items()))
    return Scenario(name="generated", batches=(batch,), world=world.state(), max_concurrency=cap,
                    interrupt=None if interrupt_at is None else Interrupt(interrupt_at, 300))


@given(batches(max_size=6, tools=TOOLS, malformed=True),
       st.none() | st.integers(min_value=0, max_value=2500),
       st.none() | st.integers(min_value=1, max_value=3),
       st.integers(min_value=0, max_value=1000))
def test_serial_passes_every_oracle(batch: Batch, interrupt_at: int | None, cap: int | None, seed: int) -> None:
    result = run(scenario_of(batch, interrupt_at, cap), get_scheduler("serial"), seed)
    failed = [(v.oracle, v.label, v.message) for v in check(result) if not v.ok]
    assert not failed, failed


@given(batches(max_size=5, tools=("read_file", "search_files", "web_search", "run_tests")),
       st.integers(min_value=0, max_value=1000))
def test_parallel_passes_every_oracle_on_read_only_batches(batch: Batch, seed: int) -> None:
    """Reads commute, so all-parallel must pass too: a check that the oracles do not flag mere
    concurrency."""
    result = run(scenario_of(batch, None, None), get_scheduler("parallel"), seed, jitter=1.0)
    failed = [(v.oracle, v.label, v.message) for v in check(result) if not v.ok]
    assert not failed, failed


@given(batches(min_size=2, max_size=5, tools=("read_file", "run_tests", "clarify", "write_file", "web_search")),
       st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=1000))
def test_serial_passes_every_oracle_when_interrupted(batch: Batch, interrupt_at: int, seed: int) -> None:
    """Interrupts landing while calls run: serial skips what has not started and abandons the rest
    after the grace period, so the liveness oracle has nothing to say and no ghost appears."""
    result = run(scenario_of(batch, interrupt_at, None), get_scheduler("serial"), seed)
    failed = [(v.oracle, v.label, v.message) for v in check(result) if not v.ok]
    assert not failed, failed


@given(scenarios(batch_strategy=batches(max_size=4, tools=TOOLS, malformed=True),
                 faults=fault_plans(duplicate_delivery=False), interrupts=True),
       st.integers(min_value=0, max_value=1000))
def test_serial_passes_every_oracle_on_generated_scenarios_with_faults(sc: Scenario, seed: int) -> None:
    """Several batches, torn writes, rate limits, interrupts: the reference still has no violation."""
    failed = [(v.oracle, v.label, v.message) for v in check(run(sc, get_scheduler("serial"), seed)) if not v.ok]
    assert not failed, failed
