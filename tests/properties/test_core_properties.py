"""Properties of the core that must hold for any batch."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.model import Batch
from harness.strategies import batches
from harness.tools import apply
from harness.world import World
from tests.helpers import run_named, scenario_for_batch

FILES = {"/repo/a.txt": "alpha beta\n", "/repo/b.txt": "beta gamma\n",
         "/repo/tests/test_a.txt": "requires a.txt alpha\n"}


@given(batches(max_size=5, malformed=True))
def test_serial_run_equals_pure_semantics_in_model_order(batch: Batch) -> None:
    """The serial scheduler is the model-order reference: its results and final world are exactly
    what the tools' pure semantics give when applied one by one."""
    sc = scenario_for_batch(batch, FILES)
    result = run_named(sc, "serial", seed=3)
    world = World.from_state(sc.world)
    for call, reported in zip(batch, result.results, strict=True):
        world, observed = apply(world, call, in_place=True)
        assert (reported.outcome, reported.value, reported.error) == (observed.outcome, observed.value, observed.error)
    assert result.final == world.state()


@given(batches(max_size=5), st.integers(min_value=0, max_value=2**32))
def test_same_inputs_same_fingerprint(batch: Batch, seed: int) -> None:
    sc = scenario_for_batch(batch, FILES)
    assert run_named(sc, "parallel", seed).fingerprint == run_named(sc, "parallel", seed).fingerprint


@given(batches(max_size=6, tools=("read_file", "search_files", "web_search")))
def test_read_only_batches_are_order_insensitive(batch: Batch) -> None:
    """Calls that only read cannot interfere: parallel gives serial's results and world."""
    sc = scenario_for_batch(batch, FILES)
    serial, parallel = run_named(sc, "serial"), run_named(sc, "parallel")
    assert [(r.outcome, r.value) for r in serial.results] == [(r.outcome, r.value) for r in parallel.results]
    assert serial.final == parallel.final
    assert parallel.makespan_ms <= serial.makespan_ms
