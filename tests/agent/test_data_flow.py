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


def _crashing(ticket_ms: int, page_ms: int, crash_ms: int, failure: float = 0.0) -> dict[str, object]:
    """CHAIN whose runtime crashes at `crash_ms`, before its batch reports anything."""
    return {**CHAIN, "faults": {"crash": {"at_ms": crash_ms}},
            "tools": {"create_ticket": {"latency": {"fixed": ticket_ms}, "failure": {"rate": failure}},
                      "send_message": {"latency": {"fixed": page_ms}}}}


def test_a_producer_never_reported_because_the_runtime_crashed_did_not_return_none() -> None:
    """The ticket ends ok at 100 ms, the page reads its id then, the runtime crashes at 500 ms before the
    batch reports: data-flow called that `missing-input` (the unreported ticket taken as returning none),
    and serializability a `duplicate-effect` (the page replayed with a null text, so without its entry)."""
    result = run(scenario_from_data(_crashing(100, 1000, 500)), get_scheduler("dag"), 1)
    assert result.status.value == "crashed" and result.results == ()
    assert any(e["ev"] == "input" and e["found"] for e in result.trace)
    assert labels(result) == {}


def test_a_consumer_that_read_before_an_unreported_producer_ended_is_still_a_future_read() -> None:
    # all at once: the follow-up ticket starts at 0 and reads no id, the ticket ends ok at 500, the crash
    # at 700 comes before the follow-up ends (900), so nothing is reported
    data = {**_crashing(500, 900, 700), "batches": [{"label": "t", "calls": [
        {"id": "ticket", "name": "create_ticket", "arguments": '{"title": "db down"}'},
        {"id": "follow-up", "name": "create_ticket", "arguments": '{"title": "follow-up"}', "latency": {"fixed": 900},
         "depends_on": ["ticket"], "args_from": {"body": "ticket.value.ticket"}}]}]}
    result = run(scenario_from_data(data), get_scheduler("parallel"), 1)
    assert result.results == ()
    verdict = data_flow.check(result)
    assert verdict.label == "future-read" and verdict.witness["producer_ended_at_ms"] == 500


def test_a_dag_scheduler_with_a_flaky_producer_and_a_crash_passes_an_exploration() -> None:
    """Flaky producer, random latencies, a crash timer explored by PCT: a DAG runtime has nothing to
    answer for; all-parallel's future read is still found."""
    from harness.explore.engine import explore

    data = {**_crashing(0, 0, 700, failure=0.3), "tools": {
        "create_ticket": {"latency": {"uniform": [100, 900]}, "failure": {"rate": 0.3}},
        "send_message": {"latency": {"uniform": [100, 600]}}}}
    scenario = scenario_from_data(data)
    assert explore(scenario, "dag", runs=100, seed=1, shrink=False).found is None
    found = explore(scenario, "parallel", runs=100, seed=1, shrink=False).found
    assert found is not None and found.label == "future-read"
