"""`[faults] mcp_progress_only`: a server that keeps sending `notifications/progress` and never the result. A client
that restarts its timeout at every progress notification (`reset_timeout_on_progress`, the MCP TypeScript SDK's
`resetTimeoutOnProgress`) hangs, and the witness names the server, the call and the progress that kept coming; a
client whose per-call timeout is absolute times out cleanly. The notifications are trace events."""

from __future__ import annotations

import tomllib
from pathlib import Path
from random import Random
from typing import Any

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.explore.swarm import swarm_scenario
from harness.oracles import check
from harness.policies.mcp_hints import McpHints
from harness.run import RunResult
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.scheduling.execution import ExecutionPolicy

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SEEDS = (2, 5, 11)
RESETTING = ExecutionPolicy(timeout_ms=10_000, reset_timeout_on_progress=True)


def _data() -> dict[str, Any]:
    return tomllib.loads((SCENARIOS / "mcp-progress-no-result.toml").read_text())


def _labels(result: RunResult) -> list[str]:
    return sorted({v.label for verdict in check(result) for v in verdict.violations})


def _progress(result: RunResult) -> list[dict[str, Any]]:
    return [e for e in result.trace if e["ev"] == "progress"]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_timeout_restarted_on_progress_hangs_and_the_witness_names_server_call_and_progress(seed: int) -> None:
    result = run(find_scenario("mcp-progress-no-result"), McpHints(RESETTING), seed=seed)
    assert result.status.value == "hang" and _labels(result) == ["hang"]
    [hang] = [v for verdict in check(result) for v in verdict.violations]
    assert hang.witness["pending"] == ["export"]
    [wait] = [w for w in hang.witness["waits"] if w.startswith("export")]
    assert ("its MCP server 'reports' never answered it but kept sending notifications/progress every 5000 ms "
            "(23 so far, the last at 115800 ms) and never the result") in wait
    assert "the runtime restarts its timeout at every progress notification" in wait
    # Every notification came 5 s after the last, from the call's start on, numbered as MCP's `progress` is.
    progress = _progress(result)
    assert [e["t"] for e in progress] == list(range(5800, 120_000, 5000))
    assert [e["progress"] for e in progress] == list(range(1, 24))
    assert {(e["call"], e["attempt"], e["server"]) for e in progress} == {("export", 1, "reports")}


@pytest.mark.parametrize("seed", SEEDS)
def test_an_absolute_per_call_timeout_times_out_cleanly(seed: int) -> None:
    for scheduler in (get_scheduler("mcp_hints_retry"), McpHints(ExecutionPolicy(timeout_ms=10_000))):
        result = run(find_scenario("mcp-progress-no-result"), scheduler, seed=seed)
        assert result.status.value == "completed" and _labels(result) == []
        export = next(r for r in result.results if r.call_id == "export")
        assert export.outcome.value == "timeout" and export.end_ms == 10_800 and export.attempts == 1
        # The server honours the cancel: the export never wrote, and no progress came after the client gave up.
        assert not any(e["ev"] == "touch" and e["op"] == "write" for e in result.trace)
        assert [e["t"] for e in _progress(result)] == [5800, 10_800]


def test_without_a_timeout_the_runtime_hangs_too() -> None:
    result = run(find_scenario("mcp-progress-no-result"), get_scheduler("mcp_hints"), seed=3)
    assert result.status.value == "hang" and _labels(result) == ["hang"]
    [hang] = [v for verdict in check(result) for v in verdict.violations]
    [wait] = [w for w in hang.witness["waits"] if w.startswith("export")]
    assert "kept sending notifications/progress" in wait and "restarts its timeout" not in wait


def test_progress_resets_only_a_call_that_reports_progress_and_a_server_answering_in_time_sends_none() -> None:
    data = _data()
    data["faults"]["mcp_progress_only"]["at_ms"] = 60_000  # after every answer is due
    result = run(scenario_from_data(data), McpHints(RESETTING), seed=1)
    # The export takes 20-30 s: the 10 s timeout, never restarted, ends it.
    assert result.status.value == "completed" and _progress(result) == []
    assert next(r for r in result.results if r.call_id == "export").outcome.value == "timeout"
    result = run(scenario_from_data(data), get_scheduler("mcp_hints"), seed=1)
    assert result.status.value == "completed" and _labels(result) == [] and _progress(result) == []


def test_a_stall_that_starts_mid_call_sends_progress_from_then_on() -> None:
    data = _data()
    data["faults"]["mcp_progress_only"] = {"server": "reports", "at_ms": 3000, "every_ms": 4000}
    result = run(scenario_from_data(data), McpHints(RESETTING), seed=1)
    assert [e["t"] for e in _progress(result)][:3] == [7000, 11_000, 15_000]
    [hang] = [v for verdict in check(result) for v in verdict.violations]
    assert any("stopped answering at 3000 ms but kept sending notifications/progress every 4000 ms" in w
               for w in hang.witness["waits"])


def test_the_cli_flag_and_the_execution_table_restart_the_timeout() -> None:
    runner = CliRunner()
    hung = runner.invoke(main, ["run", "mcp-progress-no-result", "--scheduler", "mcp_hints", "--timeout-ms", "10000",
                                "--reset-timeout-on-progress", "--seed", "4"])
    assert hung.exit_code == 3, hung.output
    assert "--timeout-ms 10000 --reset-timeout-on-progress" in hung.output  # the reproduce line keeps it
    clean = runner.invoke(main, ["run", "mcp-progress-no-result", "--scheduler", "mcp_hints", "--timeout-ms", "10000",
                                 "--seed", "4"])
    assert clean.exit_code == 0, clean.output
    data = _data()
    data["execution"] = {"timeout_ms": 10_000, "reset_timeout_on_progress": True}
    scenario = scenario_from_data(data)
    assert scenario.execution.reset_timeout_on_progress
    assert run(scenario, get_scheduler("mcp_hints"), seed=4).status.value == "hang"
    assert scenario_to_data(scenario)["execution"]["reset_timeout_on_progress"] is True


def test_the_fault_survives_a_reproducer() -> None:
    scenario = find_scenario("mcp-progress-no-result")
    data = scenario_to_data(scenario)
    assert data["faults"]["mcp_progress_only"] == {"server": "reports", "at_ms": 0, "every_ms": 5000}
    again = scenario_from_data(data)
    assert again.faults == scenario.faults
    assert run(scenario, McpHints(RESETTING), seed=3).fingerprint == run(again, McpHints(RESETTING), seed=3).fingerprint


@pytest.mark.parametrize(("fault", "message"), [
    ({"server": "reports", "at_ms": 0}, "mcp_progress_only expects { server = NAME, at_ms = T, every_ms = E }"),
    ({"server": "reports", "at_ms": 0, "every_ms": 0}, "with E > 0 (milliseconds between two progress"),
    ({"server": "report", "at_ms": 0, "every_ms": 5}, "did you mean 'reports'?"),
])
def test_a_malformed_progress_fault_is_a_clear_error(fault: dict[str, Any], message: str) -> None:
    data = _data()
    data["faults"] = {"mcp_progress_only": fault}
    with pytest.raises(ScenarioError) as raised:
        scenario_from_data(data)
    assert message in str(raised.value)


def test_swarm_turns_some_stalls_into_progress_and_draws_every_other_fault_as_before() -> None:
    from dataclasses import replace

    from harness.explore.swarm import KINDS, MCP_SERVER

    data = tomllib.loads((SCENARIOS / "mcp-stalled-server.toml").read_text())
    del data["faults"]
    served = scenario_from_data(data)
    kinds = []
    for seed in range(40):
        changed, enabled = swarm_scenario(served, Random(seed))
        faults = changed.faults.mcp
        kinds += [f.kind for f in faults]
        for fault in faults:
            if fault.kind == "mcp_progress_only":
                assert fault.every_ms in (1000, 2000, 3000, 4000, 5000) and fault.at_ms is not None
        assert scenario_from_data(scenario_to_data(changed)).faults == changed.faults
        # The server faults are drawn last: without them the run is what swarm without the kind makes.
        without = swarm_scenario(served, Random(seed), tuple(k for k in KINDS if k != MCP_SERVER))
        assert (replace(changed, faults=replace(changed.faults, mcp=())), tuple(k for k in enabled if k != MCP_SERVER)
                ) == without
    assert {"mcp_stall", "mcp_progress_only", "mcp_server_death"} <= set(kinds)


def test_check_scheduler_finds_the_hang_through_swarm_where_the_scenario_names_servers() -> None:
    from harness.testing import SchedulerCheckFailed, check_scheduler

    data = tomllib.loads((SCENARIOS / "mcp-stalled-server.toml").read_text())
    del data["faults"]  # no fault of its own: the check's swarm runs add them
    served = scenario_from_data(data)
    with pytest.raises(SchedulerCheckFailed) as failed:
        check_scheduler(McpHints(RESETTING), scenarios=[served], generated=False, profile="ci")
    assert "liveness violated" in str(failed.value) and "kept sending notifications/progress" in str(failed.value)
    check_scheduler(McpHints(ExecutionPolicy(timeout_ms=10_000)), scenarios=[served], generated=False, profile="ci")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_total_limit_ends_the_wait_that_progress_keeps_restarting(seed: int) -> None:
    """`max_total_timeout_ms` (the TypeScript SDK's `maxTotalTimeout`): progress still restarts the 10 s
    timeout, but the call is abandoned 15 s after it started, as a timeout saying why, before the export
    (20-30 s of work) wrote anything, and the run ends."""
    capped = ExecutionPolicy(timeout_ms=10_000, reset_timeout_on_progress=True, max_total_timeout_ms=15_000)
    result = run(find_scenario("mcp-progress-no-result"), McpHints(capped), seed=seed)
    assert result.status.value == "completed" and _labels(result) == []
    export = next(r for r in result.results if r.call_id == "export")
    assert export.outcome.value == "timeout" and export.end_ms == 15_800
    assert export.error == "timed out at its total limit of 15000 ms"
    assert [e["t"] for e in _progress(result)] == [5800, 10_800, 15_800]  # a 10 s timeout alone would be past
    assert not any(e["ev"] == "touch" and e["op"] == "write" for e in result.trace)
    # A total limit past the export's work: the report was written, the result never came, the model is
    # told the call timed out: the oracles call that a ghost effect, as for any timeout whose effect landed.
    late = ExecutionPolicy(timeout_ms=10_000, reset_timeout_on_progress=True, max_total_timeout_ms=30_000)
    assert _labels(run(find_scenario("mcp-progress-no-result"), McpHints(late), seed=seed)) == ["ghost-effect"]
    # A total limit longer than the timeout never fires without progress: the plain timeout does.
    plain = run(find_scenario("mcp-progress-no-result"),
                McpHints(ExecutionPolicy(timeout_ms=10_000, max_total_timeout_ms=30_000)), seed=seed)
    assert next(r for r in plain.results if r.call_id == "export").error == "timed out after 10000 ms"


def test_a_total_limit_is_checked_and_reaches_the_command_line() -> None:
    with pytest.raises(ValueError, match="max_total_timeout_ms needs timeout_ms"):
        ExecutionPolicy(max_total_timeout_ms=5)
    with pytest.raises(ValueError, match="max_total_timeout_ms must be positive"):
        ExecutionPolicy(timeout_ms=5, max_total_timeout_ms=0)
    args = ["run", "mcp-progress-no-result", "--scheduler", "mcp_hints", "--seed", "2", "--timeout-ms", "10000",
            "--reset-timeout-on-progress", "--max-total-timeout-ms", "15000", "--format", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "--max-total-timeout-ms 15000" in result.output
    alone = CliRunner().invoke(main, ["run", "mcp-progress-no-result", "--max-total-timeout-ms", "15000"])
    assert alone.exit_code == 2 and "max_total_timeout_ms needs timeout_ms" in alone.stderr
