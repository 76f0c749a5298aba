"""A plan or gate function with a parameter `execution_cwd` is given the terminal's live working
directory, as hermes' dispatcher passes it to its planner: no hand-written PlanScheduler reading
`ctx.cwd` is needed (issue 28 item 1)."""

from __future__ import annotations

import json
import os.path
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.planners.adapters import OpenAIToolCall, from_gate, from_plan
from harness.oracles import check


def _paths(tool_calls: list[OpenAIToolCall], cwd: str) -> list[str]:
    return [os.path.normpath(os.path.join(cwd, json.loads(tc.function.arguments).get("path", "")))
            for tc in tool_calls]


def hermes_like_plan(tool_calls: list[OpenAIToolCall], execution_cwd: str | None = None) -> list[Any]:
    """hermes' shape: paths joined to the cwd its dispatcher passes (the process cwd without one)."""
    paths = _paths(tool_calls, execution_cwd or os.getcwd())
    if len(set(paths)) < len(paths):
        return [("sequential", tool_calls)]
    return [("parallel", tool_calls)]


def _labels(scheduler: Any, seed: int) -> list[str]:
    return [v.label for verdict in check(run(find_scenario("cd-then-edit"), scheduler, seed))
            for v in verdict.violations]


@pytest.mark.parametrize("seed", [1, 7, 2026])
def test_a_planner_taking_execution_cwd_sees_the_shells_cd_and_serialises_the_two_edits(seed: int) -> None:
    assert _labels(from_plan(hermes_like_plan), seed) == []


def test_without_execution_cwd_the_same_planner_resolves_against_the_process_cwd_and_loses_an_update() -> None:
    def process_cwd_plan(tool_calls: list[OpenAIToolCall]) -> list[Any]:
        return hermes_like_plan(tool_calls)

    assert any("lost-update" in _labels(from_plan(process_cwd_plan), seed) for seed in (1, 7, 2026))


def test_a_gate_gets_it_too_and_another_keyword_can_be_named() -> None:
    seen: list[str] = []

    def gate(tool_calls: list[OpenAIToolCall], *, where: str) -> bool:
        seen.append(where)
        paths = _paths(tool_calls, where)
        return len(set(paths)) == len(paths)

    assert _labels(from_gate(gate, cwd_keyword="where"), 1) == []
    assert seen == ["/repo", "/repo/src"]  # the turn before the cd, the turn after it


def test_a_keyword_the_function_does_not_take_is_refused_when_the_scheduler_is_built() -> None:
    with pytest.raises(ValueError, match="takes no argument 'cwd'"):
        from_plan(lambda tool_calls: [], cwd_keyword="cwd")
