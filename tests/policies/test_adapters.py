"""from_gate / from_plan: third-party functions over the OpenAI tool_calls shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import find_scenario, run, scenario_names
from harness.bridges.planners.adapters import OpenAIToolCall, from_gate, from_plan, openai_tool_calls
from harness.model import Batch
from harness.oracles import check
from harness.policies.hermes_gate import should_parallelize
from harness.run import RunStatus
from harness.scheduling.frozen import private_batch


def reads_only_gate(tool_calls: list[Any]) -> bool:
    """Written for openai's objects: parallel only if every call is a read with parsable arguments."""
    for tc in tool_calls:
        try:
            json.loads(tc.function.arguments)
        except ValueError:
            return False
        if tc.type != "function" or not tc.function.name.startswith(("read_", "search_", "query_", "web_")):
            return False
    return len(tool_calls) > 1


#: Scenarios where every runtime without a per-call timeout hangs, by design (an MCP server that never answers).
HANGS_WITHOUT_TIMEOUT = {"mcp-stalled-server", "mcp-progress-no-result"}


@pytest.mark.parametrize("scenario", scenario_names())
def test_an_openai_shape_gate_runs_on_every_scenario(scenario: str) -> None:
    sc = find_scenario(scenario)
    result = run(sc, from_gate(reads_only_gate), 1)
    assert result.status is (RunStatus.HANG if scenario in HANGS_WITHOUT_TIMEOUT else RunStatus.COMPLETED)
    assert [r.call_id for r in result.results] == [c.id for c in result.scenario.calls][: len(result.results)]
    contract = [v for v in check(result) if v.oracle in ("contract", "protocol") and not v.ok]
    assert not contract


def test_gate_decides_parallel_or_serial() -> None:
    sc = find_scenario("incident-triage")
    assert run(sc, from_gate(reads_only_gate), 1).makespan_ms == 4000
    assert run(sc, from_gate(lambda calls: False, name="never"), 1).makespan_ms == 9000
    capped = run(sc, from_gate(lambda calls: True, max_workers=1), 1)
    assert capped.makespan_ms == 9000


def test_hermes_gate_itself_is_an_openai_shape_function() -> None:
    sc = find_scenario("compare-three-files")
    seen: list[OpenAIToolCall] = []

    def spy(calls: list[OpenAIToolCall]) -> bool:
        seen.extend(calls)
        return should_parallelize(calls, cwd="/project")

    assert run(sc, from_gate(spy), 1).makespan_ms == 115
    assert [(c.id, c.function.name) for c in seen] == [("read-a", "read_file"), ("read-b", "read_file"),
                                                        ("read-c", "read_file")]


def test_plan_as_segments_or_edges() -> None:
    sc = find_scenario("incident-triage")
    by_ids = from_plan(lambda calls: [[calls[2].id], [calls[0], calls[1]]])
    starts = {r.call_id: r.start_ms for r in run(sc, by_ids, 1).results}
    assert starts == {"call-deploys": 0, "call-logs": 2000, "call-metrics": 2000}
    edges = from_plan(lambda calls: {"call-metrics": ["call-logs"]})
    starts = {r.call_id: r.start_ms for r in run(sc, edges, 1).results}
    assert starts == {"call-logs": 0, "call-metrics": 3000, "call-deploys": 0}


@pytest.mark.parametrize("bad_plan, words", [
    (lambda calls: [[calls[0]]], "must list every call"),
    (lambda calls: {"call-logs": ["call-metrics"], "call-metrics": ["call-logs"]}, "cycle"),
    (lambda calls: "everything at once", "expected a list of segments"),
])
def test_an_invalid_plan_is_a_contract_error(bad_plan: Any, words: str) -> None:
    result = run(find_scenario("incident-triage"), from_plan(bad_plan, name="bad"), 1)
    assert result.status is RunStatus.SCHEDULER_ERROR and words in (result.error or "")


def test_the_openai_calls_of_a_batch_are_its_own_even_when_a_run_copies_it() -> None:
    batch = Batch.of([("a", "read_file", {"path": "a.txt"}), ("b", "read_file", {"path": "b.txt"})])
    first = openai_tool_calls(batch)
    # A run hands its scheduler a private copy: the same calls, made once (the same objects again).
    again = openai_tool_calls(private_batch(batch))
    assert again == first and all(x is y for x, y in zip(again, first, strict=True))
    assert again is not first  # a new list each time: a runtime may change it
    # The same ids with other arguments, or another order: that batch's own calls.
    other = Batch.of([("a", "read_file", {"path": "c.txt"}), ("b", "read_file", {"path": "b.txt"})])
    assert [c.function.arguments for c in openai_tool_calls(other)] == ['{"path": "c.txt"}', '{"path": "b.txt"}']
    swapped = Batch.of([("b", "read_file", {"path": "b.txt"}), ("a", "read_file", {"path": "a.txt"})])
    assert [c.id for c in openai_tool_calls(swapped)] == ["b", "a"]
    assert [c.function.arguments for c in openai_tool_calls(batch)] == ['{"path": "a.txt"}', '{"path": "b.txt"}']
