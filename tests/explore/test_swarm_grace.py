"""Swarm's interrupt grace is the runtime's promise (issue 24, item 6): a design that notices the
interrupt only at a 5 s poll (hermes, seed 000's executor) is judged against the grace it declares
(`from_threads(..., grace_ms=...)`, `from_asyncio(..., grace_ms=...)`, or a `grace_ms` attribute),
not against a fixed 500 ms that would hide the bug under test behind `grace-exceeded`. A scenario's
own interrupt keeps its grace."""

from __future__ import annotations

from dataclasses import replace
from random import Random
from typing import Any

import pytest

from harness import find_scenario
from harness.bridges import from_asyncio
from harness.bridges.threads import from_threads
from harness.explore.engine import explore
from harness.explore.swarm import DEFAULT_GRACE_MS, declared_grace_ms, swarm_scenario
from harness.scenario.spec import Interrupt
from tests.policies.seed000_executor import execute as hermes


def _swarm(grace_ms: int | None) -> Any:
    return explore(find_scenario("incident-triage"), from_threads(hermes, grace_ms=grace_ms), "random", runs=24,
                   seed=3, swarm=True, swarm_kinds=("interrupt",), keep_going=True, shrink=False)


def test_a_five_second_poller_passes_the_swarm_with_the_grace_it_declares() -> None:
    exploration = _swarm(5000)
    assert exploration.scope["swarm_seen"] == ["interrupt"]  # runs with an interrupt were made, and passed
    assert exploration.found is None


def test_the_same_poller_fails_the_swarm_with_a_500_ms_grace() -> None:
    for declared in (500, None):  # declared so, or the default
        exploration = _swarm(declared)
        assert exploration.found is not None and exploration.found.label == "grace-exceeded"


def test_precedence_the_scenario_s_own_interrupt_then_the_runtime_s_grace_then_500_ms() -> None:
    plain = find_scenario("incident-triage")
    interrupted = replace(plain, interrupt=Interrupt(1500, 1000))
    graces = set()
    for seed in range(20):
        changed, kinds = swarm_scenario(plain, Random(seed), ("interrupt",), grace_ms=5000)
        if "interrupt" in kinds:
            assert changed.interrupt is not None
            graces.add(changed.interrupt.grace_ms)
        default, _ = swarm_scenario(plain, Random(seed), ("interrupt",))
        if default.interrupt is not None:
            assert default.interrupt.grace_ms == DEFAULT_GRACE_MS
        own, _ = swarm_scenario(interrupted, Random(seed), ("interrupt",), grace_ms=5000)
        assert own.interrupt == Interrupt(1500, 1000)
    assert graces == {5000}


def test_the_declaration_is_read_from_the_bridges_and_any_scheduler() -> None:
    async def execute(tool_calls: list[Any], tools: Any) -> list[Any]:
        return []

    assert declared_grace_ms(from_asyncio(execute, grace_ms=3000)) == 3000
    assert declared_grace_ms(from_asyncio(execute)) is None
    assert declared_grace_ms(from_threads(hermes, grace_ms=8000)) == 8000

    class Mine:
        grace_ms = 250

    assert declared_grace_ms(Mine()) == 250 and declared_grace_ms(object()) is None
    with pytest.raises(ValueError, match="grace_ms must be a non-negative integer"):
        from_asyncio(execute, grace_ms=-1)
    with pytest.raises(ValueError, match="grace_ms must be a non-negative integer"):
        from_threads(hermes, grace_ms=2.5)  # type: ignore[arg-type]
    Mine.grace_ms = "5s"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="the scheduler's grace_ms must be a non-negative integer"):
        declared_grace_ms(Mine())
