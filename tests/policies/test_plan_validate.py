"""`Plan.validate`: every call listed once, dependencies on other calls of the batch, no cycle, in
time linear in calls and edges (a 20,000-call chain validates at once)."""

from __future__ import annotations

import pytest

from harness.model import Batch
from harness.scheduling.plan import Plan, PlanError


def batch(n: int) -> Batch:
    return Batch.of([(f"c{i}", "read_file", '{"path": "/a"}') for i in range(n)])


def test_a_cycle_names_the_calls_on_it_and_behind_it() -> None:
    plan = Plan({"c0": (), "c1": ("c2",), "c2": ("c1",), "c3": ("c2", "c0")})
    with pytest.raises(PlanError, match=r"cycle among \['c1', 'c2', 'c3'\]"):
        plan.validate(batch(4))


def test_a_self_loop_or_an_unknown_dependency_is_refused() -> None:
    with pytest.raises(PlanError, match="c0 waits for \\['c0'\\]"):
        Plan({"c0": ("c0",), "c1": ()}).validate(batch(2))
    with pytest.raises(PlanError, match="c1 waits for \\['zz'\\]"):
        Plan({"c0": (), "c1": ("zz",)}).validate(batch(2))
    with pytest.raises(PlanError, match="missing \\['c1'\\]"):
        Plan({"c0": ()}).validate(batch(2))


def test_duplicated_dependencies_and_long_chains_validate() -> None:
    Plan({"c0": (), "c1": ("c0", "c0"), "c2": ("c1", "c0")}).validate(batch(3))
    n = 20_000
    chain = batch(n)
    Plan.serial(chain).validate(chain)
    fan_in = {f"c{i}": tuple(f"c{j}" for j in range(max(0, i - 3), i)) for i in range(n)}
    Plan(fan_in).validate(chain)
