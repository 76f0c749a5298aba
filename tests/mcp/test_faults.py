"""MCP server faults (`[faults]` mcp_stall, mcp_server_death, mcp_ignores_cancel) on tools with a `server`: a
client without a per-call timeout hangs on a stalled server (the witness names the server and the call), one
with timeouts that reports a plain timeout leaves a ghost effect when the server ignores cancellation, and a
careful one (timeouts, no retry of a non-idempotent call, an honest `unknown`) passes."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.oracles import check
from harness.policies.mcp_hints import McpHints
from harness.run import RunResult
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.scheduling.execution import ExecutionPolicy
from tests.oracles.schedulers import TimesOut

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SEEDS = (1, 2, 7)


def _data() -> dict[str, Any]:
    return tomllib.loads((SCENARIOS / "mcp-stalled-server.toml").read_text())


def _labels(result: RunResult) -> list[str]:
    return sorted({v.label for verdict in check(result) for v in verdict.violations})


def _ledger(result: RunResult) -> list[dict[str, Any]]:
    return [e for e in result.trace if e["ev"] == "touch" and e["target"].startswith("ledger:")]


@pytest.mark.parametrize("seed", SEEDS)
def test_no_per_call_timeout_hangs_and_the_witness_names_the_server_and_the_call(seed: int) -> None:
    result = run(find_scenario("mcp-stalled-server"), get_scheduler("mcp_hints"), seed=seed)
    assert result.status == "hang"
    assert _labels(result) == ["hang"]
    [hang] = [v for verdict in check(result) for v in verdict.violations]
    assert hang.witness["pending"] == ["open-ticket"]
    [wait] = [w for w in hang.witness["waits"] if w.startswith("open-ticket")]
    assert "MCP server 'tickets' stalled at 1500 ms and never answers" in wait
    # The work went on: the server opened the ticket, it never said so.
    assert len(_ledger(result)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_a_timeout_that_reports_nothing_happened_leaves_a_ghost_effect(seed: int) -> None:
    result = run(find_scenario("mcp-stalled-server"), TimesOut(10_000), seed=seed)
    assert result.status == "completed"
    assert _labels(result) == ["ghost-effect"]
    [ghost] = [v for verdict in check(result) for v in verdict.violations]
    assert ghost.witness["call"] == "open-ticket" and ghost.witness["reported"] == "timeout"
    assert ghost.witness["effects"][0]["t"] > 10_000  # it landed after the client gave up on it


@pytest.mark.parametrize("seed", SEEDS)
def test_timeouts_without_retrying_a_non_idempotent_call_and_an_honest_outcome_pass(seed: int) -> None:
    result = run(find_scenario("mcp-stalled-server"), get_scheduler("mcp_hints_retry"), seed=seed)
    assert result.status == "completed" and _labels(result) == []
    ticket = next(r for r in result.results if r.call_id == "open-ticket")
    assert ticket.outcome.value == "unknown" and ticket.attempts == 1


def test_retrying_the_non_idempotent_call_opens_it_twice() -> None:
    # MCP carries no idempotency key: the retry is the same request again, and the server did both.
    execution = ExecutionPolicy(timeout_ms=10_000, retries=1, backoff_ms=0, retry_non_idempotent=True,
                                idempotency_keys=False)
    result = run(find_scenario("mcp-stalled-server"), McpHints(execution), seed=1)
    assert len(_ledger(result)) == 2
    assert _labels(result) == ["duplicate-effect"]


def test_a_server_that_honours_cancel_stops_the_work_and_the_timeout_is_true() -> None:
    data = _data()
    del data["faults"]["mcp_ignores_cancel"]
    scenario = scenario_from_data(data)
    for seed in SEEDS:
        result = run(scenario, TimesOut(10_000), seed=seed)
        assert _labels(result) == [] and _ledger(result) == []


def test_a_stall_later_than_the_answer_changes_nothing() -> None:
    data = _data()
    data["faults"]["mcp_stall"]["at_ms"] = 60_000
    result = run(scenario_from_data(data), get_scheduler("mcp_hints"), seed=1)
    assert result.status == "completed" and _labels(result) == []


def test_a_dead_server_fails_its_pending_call_at_once_and_later_calls_as_they_start() -> None:
    data = _data()
    data["faults"] = {"mcp_server_death": {"server": "tickets", "at_ms": 5000}}
    result = run(scenario_from_data(data), get_scheduler("serial"), seed=1)
    ticket = next(r for r in result.results if r.call_id == "open-ticket")
    assert ticket.outcome.value == "error" and ticket.end_ms == 5000
    assert ticket.error == ("MCP server 'tickets' died at 5000 ms: connection closed "
                            "(every pending call of the server failed)")
    assert _ledger(result) == [] and _labels(result) == []
    end = next(e for e in result.trace if e["ev"] == "end" and e["call"] == "open-ticket")
    assert end["fault"] == "mcp-server-death"
    # Dead before the call starts: it fails as it starts; the other server's tool is untouched.
    data["faults"]["mcp_server_death"]["at_ms"] = 100
    result = run(scenario_from_data(data), get_scheduler("serial"), seed=1)
    by_id = {r.call_id: r for r in result.results}
    assert by_id["search"].outcome.value == "ok"
    assert by_id["open-ticket"].outcome.value == "error" and by_id["open-ticket"].end_ms == 800


def test_the_faults_and_servers_survive_a_reproducer() -> None:
    scenario = find_scenario("mcp-stalled-server")
    data = scenario_to_data(scenario)
    assert data["faults"]["mcp_stall"] == {"server": "tickets", "at_ms": 1500}
    assert data["faults"]["mcp_ignores_cancel"] == {"server": "tickets"}
    assert data["tools"]["create_ticket"]["server"] == "tickets"
    again = scenario_from_data(data)
    assert again.faults == scenario.faults
    a = run(scenario, get_scheduler("mcp_hints_retry"), seed=3)
    b = run(again, get_scheduler("mcp_hints_retry"), seed=3)
    assert a.fingerprint == b.fingerprint


@pytest.mark.parametrize(("faults", "message"), [
    ({"mcp_stall": {"server": "ticket", "at_ms": 5}}, "did you mean 'tickets'? servers: 'kb', 'tickets'"),
    ({"mcp_stall": {"server": "tickets"}}, "mcp_stall expects { server = NAME, at_ms = T }"),
    ({"mcp_server_death": {"server": "kb", "at_ms": -1}}, "with T >= 0"),
    ({"mcp_ignores_cancel": {"server": "kb", "at_ms": 1}}, "mcp_ignores_cancel.at_ms"),
    ({"mcp_stal": {"server": "kb", "at_ms": 1}}, "mcp_stall"),
])
def test_a_malformed_mcp_fault_is_a_clear_error(faults: dict[str, Any], message: str) -> None:
    data = _data()
    data["faults"] = faults
    with pytest.raises(ScenarioError) as raised:
        scenario_from_data(data)
    assert message in str(raised.value)


def test_swarm_adds_a_server_fault_only_where_tools_name_a_server_and_draws_nothing_elsewhere() -> None:
    from random import Random

    from harness.explore.swarm import KINDS, MCP_SERVER, swarm_scenario

    without = tuple(k for k in KINDS if k != MCP_SERVER)
    plain = find_scenario("mcp-lying-read-only")  # MCP hints, but no tool names a server
    for seed in range(20):
        a, b = Random(seed), Random(seed)
        changed, enabled = swarm_scenario(plain, a)
        assert MCP_SERVER not in enabled and not changed.faults.mcp
        assert (changed, enabled) == swarm_scenario(plain, b, without) and a.random() == b.random()
    data = _data()
    del data["faults"]
    served = scenario_from_data(data)
    added = []
    for seed in range(20):
        changed, enabled = swarm_scenario(served, Random(seed))
        assert (MCP_SERVER in enabled) == bool(changed.faults.mcp)
        added += [(f.kind, f.server) for f in changed.faults.mcp]
        assert scenario_from_data(scenario_to_data(changed)).faults == changed.faults  # a swarm run replays
    kinds = {kind for kind, _ in added}
    assert kinds == {"mcp_stall", "mcp_server_death", "mcp_ignores_cancel", "mcp_progress_only"}
    assert {server for _, server in added} == {"kb", "tickets"}
