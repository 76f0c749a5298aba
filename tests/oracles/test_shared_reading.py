"""What the oracles read once and share (issue 27): the scenario's shape remembered per scenario
object, the trace's event kinds and tool-code flag recorded while RunFacts reads it, the passing
verdicts handed out once, and `started_tools` read from the facts' attempts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.explore.findings import started_tools
from harness.model import Batch
from harness.oracles import check
from harness.oracles.facts import RunFacts
from harness.oracles.shape import shape_of
from harness.oracles.verdict import Verdict
from harness.run import RunResult


def started_by_trace(result: RunResult) -> dict[str, int]:
    """`started_tools` as it used to be: the trace's first-attempt `start` events, by tool."""
    counts: dict[str, int] = {}
    for event in result.trace:
        if event.get("ev") == "start" and event.get("attempt", 1) == 1:
            counts[str(event.get("tool"))] = counts.get(str(event.get("tool")), 0) + 1
    return counts


def test_a_scenarios_shape_is_made_once_and_a_changed_scenario_gets_its_own() -> None:
    scenario = find_scenario("config-clobber")
    shape = shape_of(scenario)
    assert shape_of(scenario) is shape
    assert list(shape.position) == [call.id for call in scenario.calls]
    assert shape.tools == {call.id: call.name for call in scenario.calls}
    reversed_batch = Batch.of([(call.id, call.name, call.arguments) for call in reversed(scenario.batches[0].calls)])
    changed = replace(scenario, batches=(reversed_batch, *scenario.batches[1:]))
    assert shape_of(changed) is not shape
    assert list(shape_of(changed).position) == [call.id for call in changed.calls]


def test_a_large_scenarios_shape_is_kept_while_the_scenario_lives_and_not_after() -> None:
    """A batch over the memo's size (its runs judged one after another) gets its shape made once, and
    the shape does not keep the scenario alive: the entry goes with it."""
    import gc
    import weakref

    from harness.oracles import shape as shapes

    calls = [(f"c{i}", "read_file", {"path": "a.txt"}) for i in range(shapes.MAX_CALLS + 1)]
    scenario = replace(find_scenario("config-clobber"), name="large", batches=(Batch.of(calls),))
    shape = shape_of(scenario)
    assert shape_of(scenario) is shape
    assert len(shape.ids) == shapes.MAX_CALLS + 1 and id(scenario) not in shapes._memo
    alive = weakref.ref(scenario)
    del scenario
    gc.collect()
    assert alive() is None and shapes._large is None


@pytest.mark.parametrize("name", ["ticket-retry", "checkpoint-race", "interrupt-midbatch", "config-clobber",
                                  "fanout-100", "sync-tool-on-loop"])
@pytest.mark.parametrize("scheduler", ["serial", "parallel", "resource_keys"])
def test_facts_record_every_event_kind_and_started_tools_match_the_trace(name: str, scheduler: str) -> None:
    for seed in (1, 7):
        result = run(find_scenario(name), get_scheduler(scheduler), seed)
        facts = RunFacts.of(result)
        assert facts.kinds == {event["ev"] for event in result.trace}
        assert facts.tool_code == any(e["ev"] == "end" and e.get("tool_code") for e in result.trace)
        assert started_tools(result) == started_by_trace(result)
        assert list(started_tools(result).items()) == list(started_by_trace(result).items())  # same order


def test_the_scenarios_in_the_library_all_keep_their_started_tools() -> None:
    for name in scenario_names():
        result = run(find_scenario(name), get_scheduler("parallel"), 3)
        assert started_tools(result) == started_by_trace(result), name


def test_a_passing_verdict_is_shared_and_a_failing_one_is_not() -> None:
    assert Verdict.of("protocol", []) is Verdict.of("protocol", [])
    assert Verdict.of("protocol", []) is not Verdict.of("protocol", [], "a note")
    assert Verdict.of("protocol", [], "a note").note == "a note"
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 1)
    failing = [verdict for verdict in check(result) if not verdict.ok]
    assert failing, "parallel clobbers config.yaml: serializability fails"
    assert all(verdict.violations for verdict in failing)
