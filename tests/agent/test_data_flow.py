"""Data flow between calls (args_from) and the data-flow oracle (issue 12, item 3)."""

from __future__ import annotations

from dataclasses import replace

from harness import find_scenario, get_scheduler, run
from harness.oracles import check, data_flow
from harness.scenario import scenario_from_data

CHAIN = {
    "name": "chain", "world": {}, "tools": {},
    "batches": [{"label": "t", "calls": [
        {"id": "ticket", "name": "create_ticket", "arguments": '{"title": "db down"}'},
        {"id": "page", "name": "send_message", "arguments": '{"channel": "#oncall"}', "depends_on": ["ticket"],
         "args_from": {"text": "ticket {ticket.value.ticket} opened"}},
    ]}],
}


def labels(result: object) -> dict[str, str | None]:
    return {v.oracle: v.label for v in check(result) if not v.ok}  # type: ignore[arg-type]


def test_incident_ticket_notify_parallel_is_a_future_read_naming_ticket_and_notify() -> None:
    scenario = find_scenario("incident-ticket-notify")
    bad = run(scenario, get_scheduler("parallel"), 1)
    verdict = data_flow.check(bad)
    assert verdict.label == "future-read"
    assert (verdict.witness["consumer"], verdict.witness["producer"]) == ("notify", "open-ticket")
    assert bad.world.state().ledger("pages")[0].payload["ticket"] is None  # paged before the ticket existed
    for good in ("dag", "serial"):
        result = run(scenario, get_scheduler(good), 1)
        assert labels(result) == {}, good
        assert result.world.state().ledger("pages")[0].payload["ticket"] == "tickets-1"


def test_a_static_scenario_reads_args_from_when_the_attempt_starts() -> None:
    scenario = scenario_from_data(CHAIN)
    serial = run(scenario, get_scheduler("serial"), 1)
    assert labels(serial) == {}
    assert serial.world.state().ledger("messages")[0].payload["text"] == "ticket tickets-1 opened"
    parallel = run(scenario, get_scheduler("parallel"), 1)
    assert labels(parallel)["data-flow"] == "future-read"
    assert any(e["ev"] == "input" and e["found"] is False for e in parallel.trace)
    assert labels(run(scenario, get_scheduler("dag"), 1)) == {}


def test_a_consumer_that_read_something_else_is_missing_input() -> None:
    result = run(scenario_from_data(CHAIN), get_scheduler("serial"), 1)
    # As a runtime that dropped the value on the way would leave it: the read found nothing.
    trace = tuple({**e, "found": False, "vd": None} if e["ev"] == "input" else e for e in result.trace)
    verdict = data_flow.check(replace(result, trace=trace))
    assert verdict.label == "missing-input" and verdict.witness["producer"] == "ticket"


def test_a_failed_producer_leaves_the_input_null_in_the_run_and_the_reference_alike() -> None:
    data = {**CHAIN, "tools": {"create_ticket": {"failure": {"rate": 1.0, "permanent": True}}}}
    result = run(scenario_from_data(data), get_scheduler("serial"), 1)
    assert labels(result) == {}  # send_message fails on its null text, as the serial reference does


def test_args_from_must_name_an_earlier_call() -> None:
    import pytest

    from harness.scenario import ScenarioError

    data = {**CHAIN, "batches": [{"calls": [
        {"id": "page", "name": "send_message", "args_from": {"text": "ticket.value.ticket"}}]}]}
    with pytest.raises(ScenarioError, match=r"batches\[0\].calls\[0\].args_from.text: expected a reference to a "
                                            r"call earlier"):
        scenario_from_data(data, "f.toml")
