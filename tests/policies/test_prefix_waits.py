"""Prefix waits (`Plan.prefix` / `after_prefix`): a plan that says "wait for the first n calls of
this list" runs exactly as the same plan with every wait listed as an edge (same fingerprint), is
validated like one (cycles through the prefix, a call waiting for itself), and a call waiting on
one is described in a hang like an `all of`."""

from __future__ import annotations

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.model import Batch
from harness.policies.resource_keys import ResourceKeys
from harness.scheduling.context import SchedulerContext
from harness.scheduling.plan import Plan, PlanError


class EveryEdgeListed(ResourceKeys):
    """resource_keys as it was planned before prefix waits: each read lists every earlier write."""

    def plan(self, batch: Batch, ctx: SchedulerContext) -> Plan:
        plan = super().plan(batch, ctx)
        after = {call_id: plan.waits_for(call_id) for call_id in plan.after}
        return Plan(after, chained=plan.chained, summary=plan.summary)


@pytest.mark.parametrize("name", scenario_names())
def test_prefix_waits_run_exactly_as_listed_edges(name: str) -> None:
    sc = find_scenario(name)
    listed = EveryEdgeListed()
    for seed in (1, 7):
        gated = run(sc, get_scheduler("resource_keys"), seed, jitter=0.5)
        edges = run(sc, listed, seed, jitter=0.5)
        assert (gated.fingerprint, gated.status) == (edges.fingerprint, edges.status)


def batch(n: int) -> Batch:
    return Batch.of([(f"c{i}", "read_file", '{"path": "/a"}') for i in range(n)])


def test_prefix_waits_are_validated() -> None:
    none = {f"c{i}": () for i in range(4)}
    Plan(none, prefix=("c0", "c2"), after_prefix={"c1": 1, "c3": 2}).validate(batch(4))
    with pytest.raises(PlanError, match="itself among them"):
        Plan(none, prefix=("c0", "c2"), after_prefix={"c2": 2}).validate(batch(4))
    with pytest.raises(PlanError, match="cycle among \\['c0', 'c1'\\]"):
        Plan({**none, "c0": ("c1",)}, prefix=("c0",), after_prefix={"c1": 1}).validate(batch(4))
    with pytest.raises(PlanError, match="first 3 calls"):
        Plan(none, prefix=("c0",), after_prefix={"c1": 3}).validate(batch(4))
    with pytest.raises(PlanError, match="unknown \\['zz'\\]"):
        Plan(none, prefix=("zz",)).validate(batch(4))
    assert Plan(none, prefix=("c0", "c2"), after_prefix={"c3": 2}).waits_for("c3") == ("c0", "c2")


def test_a_read_waiting_on_the_writes_before_it_is_described_in_a_hang() -> None:
    from dataclasses import replace

    from harness.sim.kernel import Limits
    from tests.helpers import scenario

    sc = scenario([("w", "write_file", {"path": "a", "content": "1"}),
                   ("w2", "write_file", {"path": "b", "content": "2"}),
                   ("r", "read_file", {"path": "a"})], files={"/repo/a": "0"})
    result = run(replace(sc, limits=Limits(time_bound_ms=100)), get_scheduler("resource_keys"), 1)
    assert result.batches[0].waits is not None
    waits = {wait.who: wait.on for wait in result.batches[0].waits.waits}
    assert waits["r"] == ("waits for all of: settled['w']: w to settle (w still running); "
                          "settled['w2']: w2 to settle (w2 still running)")
