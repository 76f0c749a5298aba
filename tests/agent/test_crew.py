"""Several agents on one world (issue 12, item 5): `[[agents]]`, each agent's loop as its own process
with its own runtime, the turn-level serializability search (checked against brute force on small
crews), cross-agent labels naming both agents, and seed 004's three fixes for two tasks writing one
report file."""

from __future__ import annotations

import itertools
import json
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.oracles import check
from harness.oracles.serializability import check_model_order
from harness.oracles.turn_order import _reordered
from harness.run import RunResult, RunStatus
from harness.run.turns import confine
from harness.scenario import ScenarioError, scenario_from_data
from harness.scenario.dump import scenario_to_data
from harness.tools.catalogue import BUILTIN

CREW = Path(__file__).parent / "crew"
FIXES = ("workdir", "lock", "append")


def serializability(result: RunResult) -> Any:
    return next(v for v in check(result) if v.oracle == "serializability")


# -- the must-show: two agents writing one report file ---------------------------------------------


def test_two_agents_writing_one_report_is_a_cross_agent_lost_update_naming_both() -> None:
    result = run(find_scenario("two-agents-report"), get_scheduler("parallel"), 1)
    assert result.status is RunStatus.COMPLETED
    assert set(result.agents) == {"sales", "ops"}
    assert all(o.status == "final_answer" for o in result.agents.values())
    verdict = serializability(result)
    assert not verdict.ok and verdict.label == "cross-agent-lost-update"
    assert verdict.witness["agents"] == ["sales", "ops"]
    assert {verdict.witness["lost"], verdict.witness["overwritten_by"]} == {"sales/report", "ops/report"}
    assert "no order of whole turns explains the run" in verdict.message
    report = result.world.read_text("/srv/agent/reports/2025-05-19.md")
    assert "## 运维" in report and "## 销售" not in report  # the sales section is the one lost


@pytest.mark.parametrize("fix", FIXES)
@pytest.mark.parametrize("scheduler", ["parallel", "serial", "resource_keys"])
def test_seed_004_fixes_pass(fix: str, scheduler: str) -> None:
    scenario = find_scenario(str(CREW / f"two-agents-report-{fix}.toml"))
    for seed in (1, 2, 3):
        result = run(scenario, get_scheduler(scheduler), seed)
        failed = [v for v in check(result) if not v.ok]
        assert not failed, (fix, scheduler, seed, [v.message for v in failed])
        assert result.agent is not None and result.agent.status == "final_answer"
        reports = {path: text for path, text in result.final.files if path.endswith("2025-05-19.md")}
        text = "".join(reports.values())
        assert "## 销售" in text and "## 运维" in text  # both sections survive, whatever the fix


def test_the_lock_fix_really_serializes_the_two_writes() -> None:
    result = run(find_scenario(str(CREW / "two-agents-report-lock.toml")), get_scheduler("parallel"), 1)
    by_id = {r.call_id: r for r in result.results}
    first, second = sorted((by_id["sales/report"], by_id["ops/report"]), key=lambda r: r.start_ms)
    writes = {e["call"]: e["t"] for e in result.trace if e["ev"] == "touch" and e["op"] == "write"}
    reads = {e["call"]: e["t"] for e in result.trace if e["ev"] == "touch" and e["op"] == "read"
             and e["target"].endswith("2025-05-19.md")}
    assert reads[second.call_id] >= writes[first.call_id]  # it read only once the other had written
    locks = [e for e in result.trace if e["ev"] == "lock"]
    assert [e["files"] for e in locks] == [["/srv/agent/reports/2025-05-19.md"]] * 2


def test_the_workdir_fix_confines_relative_paths_to_each_task() -> None:
    result = run(find_scenario(str(CREW / "two-agents-report-workdir.toml")), get_scheduler("parallel"), 1)
    calls = {c.id: json.loads(c.arguments) for c in result.scenario.calls}
    assert calls["sales/report"]["path"] == "/srv/agent/tasks/sales/reports/2025-05-19.md"
    assert calls["ops/report"]["path"] == "/srv/agent/tasks/ops/reports/2025-05-19.md"
    assert result.world.read_text("/srv/agent/reports/2025-05-19.md") == "# 2025-05-19 日报\n"


def test_confine_moves_only_relative_path_arguments() -> None:
    save, read = BUILTIN["save_daily_report"], BUILTIN["read_file"]
    assert json.loads(confine('{"path": "r.md", "content": "x"}', save, "/t/a")) == {"path": "/t/a/r.md",
                                                                                      "content": "x"}
    assert confine('{"path": "/abs/r.md"}', save, "/t/a") == '{"path": "/abs/r.md"}'
    assert json.loads(confine('{"content": "x"}', save, "/t/a"))["path"] == "/t/a/reports/daily.md"
    assert confine('{"path": "r.md"', save, "/t/a") == '{"path": "r.md"'  # malformed: sent as the model wrote it
    assert confine('{"query": "x"}', BUILTIN["web_search"], "/t/a") == '{"query": "x"}'
    assert json.loads(confine('{"path": "~/x"}', read, "/t/a")) == {"path": "~/x"}


def test_cli_run_shows_each_agent_and_fails_with_the_cross_agent_label() -> None:
    out = CliRunner().invoke(main, ["run", "two-agents-report", "--scheduler", "parallel"])
    assert out.exit_code == 1, out.output
    flat = " ".join(out.output.split())  # rich wraps long lines
    for shown in ("sales: taskloop", "ops: taskloop", "[sales]", "[ops]", "cross-agent-lost-update",
                  "sales and ops are separate agents"):
        assert shown in flat, shown
    document = json.loads(CliRunner().invoke(main, ["run", "two-agents-report", "--scheduler", "parallel",
                                                    "--format", "json"]).output)
    assert set(document["agents"]) == {"sales", "ops"}
    assert document["agent"]["status"] == "final_answer" and document["agent"]["tool_calls"] == 6


# -- the turn-level search -------------------------------------------------------------------------


def crew(*agents: tuple[str, list[list[dict[str, Any]]], int], files: dict[str, str] | None = None) -> Any:
    """A crew scenario: each agent (name, turns, think ms) emits its turns one per round."""
    rows = []
    for name, turns, think in agents:
        rules: list[dict[str, Any]] = [
            {"name": f"turn-{i}", "when": {"round": i + 1}, "action": "tool_call", "calls": calls}
            for i, calls in enumerate(turns)]
        rules.append({"name": "done", "when": {"min_round": len(turns) + 1}, "action": "final_answer",
                      "text": "done"})
        rows.append({"name": name, "model": {"task": name, "think": {"fixed": think}, "rules": rules}})
    return scenario_from_data({"name": "crew", "world": {"cwd": "/w", "dirs": ["/w"], "files": files or {}},
                               "agents": rows})


def call(id_: str, tool: str, latency: int, **args: Any) -> dict[str, Any]:
    return {"id": id_, "name": tool, "arguments": json.dumps(args), "latency": {"fixed": latency}}


def test_a_later_order_of_turns_explains_what_the_start_order_does_not() -> None:
    # a starts writing x first, but b's short read lands before a's write: b's turn comes first.
    scenario = crew(("a", [[call("w", "write_file_atomic", 1000, path="/w/x", content="new")]], 0),
                    ("b", [[call("r", "read_file", 100, path="/w/x")]], 100), files={"/w/x": "old"})
    result = run(scenario, get_scheduler("parallel"), 1)
    assert not check_model_order(result).ok  # in start order (a, then b) b would read "new"
    verdict = serializability(result)
    assert verdict.ok, verdict.message
    assert "in the order b/round-1, a/round-1" in verdict.note


def test_a_read_that_sees_two_agents_half_done_is_a_cross_agent_stale_read() -> None:
    # a writes x then (next turn) y; b reads x before a's first write and y after a's second: b's one
    # turn would have to come both before a's first turn and after its second.
    scenario = crew(("a", [[call("wx", "write_file_atomic", 200, path="/w/x", content="x1")],
                           [call("wy", "write_file_atomic", 200, path="/w/y", content="y1")]], 0),
                    ("b", [[call("rx", "read_file", 50, path="/w/x"),
                            call("ry", "read_file", 1000, path="/w/y")]], 0),
                    files={"/w/x": "x0", "/w/y": "y0"})
    result = run(scenario, get_scheduler("parallel"), 1)
    verdict = serializability(result)
    assert not verdict.ok
    assert verdict.label == "cross-agent-stale-read", [v.label for v in verdict.violations]
    assert verdict.witness["agents"] in (["a", "b"], ["b", "a"])


_OPS = st.sampled_from([("write_file", "content"), ("read_file", None), ("save_daily_report", "content")])


@st.composite
def small_crews(draw: st.DrawFn) -> Any:
    agents = []
    for name in ("a", "b"):
        turns = []
        for t in range(draw(st.integers(1, 2))):
            calls = []
            for c in range(draw(st.integers(1, 2))):
                tool, content = draw(_OPS)
                args: dict[str, Any] = {"path": draw(st.sampled_from(["/w/x", "/w/y"]))}
                if content:
                    args[content] = f"{name}{t}{c}"
                calls.append(call(f"c{t}{c}", tool, draw(st.sampled_from([10, 100, 300, 700])), **args))
            turns.append(calls)
        agents.append((name, turns, draw(st.sampled_from([0, 50, 250]))))
    return crew(*agents, files={"/w/x": "x", "/w/y": "y"})


@given(small_crews(), st.sampled_from(["parallel", "serial"]))
def test_the_search_agrees_with_brute_force_on_small_crews(scenario: Any, scheduler: str) -> None:
    """Brute force: every merge of the agents' turn sequences, each judged by the model-order check;
    the run is turn-level serializable iff one of them passes."""
    result = run(scenario, get_scheduler(scheduler), 1)
    runs = sorted(result.batches, key=lambda b: b.index)
    lanes = [[b for b in runs if b.agent == name] for name in ("a", "b")]
    brute = False
    for slots in itertools.combinations(range(len(runs)), len(lanes[0])):
        first, second = iter(lanes[0]), iter(lanes[1])
        order = [next(first) if i in slots else next(second) for i in range(len(runs))]
        if check_model_order(_reordered(result, order)).ok:
            brute = True
            break
    assert serializability(result).ok == brute


# -- the file format ---------------------------------------------------------------------------------


def two_agents() -> dict[str, Any]:
    return tomllib.loads((Path(find_scenario("two-agents-report").path or "")).read_text())


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.update(model={"task": "x"}), "model"),
    (lambda d: d.update(batches=[]), "batches"),
    (lambda d: d.update(interrupt={"at_ms": 5}), "interrupt"),
    (lambda d: d["agents"][1].update(name="sales"), "agents[1].name"),
    (lambda d: d["agents"][0].update(name="has space"), "agents[0].name"),
    (lambda d: d["agents"][0].update(scheduler="fastest"), "agents[0].scheduler"),
    (lambda d: d["agents"][0].update(workdir="tasks/sales"), "agents[0].workdir"),
    (lambda d: d["agents"][0].update(start_ms=-1), "agents[0].start_ms"),
    (lambda d: d["agents"][0].update(colour="red"), "agents[0]"),
    (lambda d: d["agents"][1]["model"]["rules"][0].update(when={"rnd": 1}), "agents[1].model.rules[0].when"),
    (lambda d: d.update(agents=[]), "agents"),
])
def test_malformed_agents_name_the_field(change: Any, field: str) -> None:
    data = two_agents()
    change(data)
    with pytest.raises(ScenarioError) as caught:
        scenario_from_data(data, "crew.toml")
    assert f"crew.toml: {field}" in str(caught.value)


def test_an_unknown_scheduler_lists_the_valid_ones() -> None:
    data = two_agents()
    data["agents"][0]["scheduler"] = "fastest"
    with pytest.raises(ScenarioError, match="serial"):
        scenario_from_data(data, "crew.toml")


def test_a_crew_scenario_round_trips_through_data() -> None:
    for scenario in [find_scenario("two-agents-report"),
                     *(find_scenario(str(CREW / f"two-agents-report-{fix}.toml")) for fix in FIXES)]:
        again = scenario_from_data(json.loads(json.dumps(scenario_to_data(scenario))))
        assert [a.name for a in again.agents] == [a.name for a in scenario.agents]
        for seed in (1, 5):
            assert (run(again, get_scheduler("parallel"), seed).fingerprint
                    == run(scenario, get_scheduler("parallel"), seed).fingerprint)


# -- runtimes per agent, and failures that end one agent's task only --------------------------------


def test_each_agent_runs_under_its_own_scheduler() -> None:
    data = two_agents()
    data["agents"][0]["scheduler"] = "serial"
    result = run(scenario_from_data(data), get_scheduler("parallel"), 1)
    sales_queries = sorted((r.start_ms, r.end_ms) for r in result.results if r.call_id.startswith("sales/q-"))
    assert sales_queries[1][0] >= sales_queries[0][1]  # one after the other: serial
    batches = [e for e in result.trace if e["ev"] == "batch"]
    assert {e["agent"]: e.get("scheduler") for e in batches} == {"sales": "serial", "ops": None}


def test_a_hung_agent_ends_its_own_task_and_the_other_finishes() -> None:
    class Stuck:
        name = "stuck"

        def __call__(self, batch: Any, ctx: Any) -> Any:
            yield ctx.env.event()  # waits for nothing that will ever happen

    data = two_agents()
    data["agents"][0]["scheduler"] = "serial"  # sales keeps a working runtime
    result = run(scenario_from_data(data), Stuck(), 1)
    assert result.status is RunStatus.HANG
    assert result.agents["sales"].status == "final_answer"
    assert result.agents["ops"].status == "stopped"
    hung = [b for b in result.batches if b.status is RunStatus.HANG]
    assert [b.agent for b in hung] == ["ops"]
    assert any(v.label == "hang" for v in check(result) if not v.ok)


def test_a_crash_stops_every_agent() -> None:
    data = two_agents()
    data["faults"] = {"crash": {"at_ms": 1000}}
    result = run(scenario_from_data(data), get_scheduler("parallel"), 1)
    assert result.status is RunStatus.CRASHED
    assert {o.status for o in result.agents.values()} == {"stopped"}


def test_agents_start_when_they_are_told() -> None:
    data = two_agents()
    data["agents"][1]["start_ms"] = 10_000  # ops starts after sales is done: no race
    result = run(scenario_from_data(data), get_scheduler("parallel"), 1)
    assert min(r.start_ms for r in result.results if r.call_id.startswith("ops/")) >= 10_000
    assert serializability(result).ok


def test_loop_option_applies_to_every_agent() -> None:
    out = CliRunner().invoke(main, ["run", "two-agents-report", "--scheduler", "parallel", "--loop", "run_agent"])
    assert "sales: run_agent" in out.output and "ops: run_agent" in out.output
    assert "--loop run_agent" in out.output


def test_same_seed_same_fingerprint_and_agents_draw_their_own_streams() -> None:
    data = two_agents()
    for agent in data["agents"]:
        agent["model"]["think"] = {"uniform": [100, 900]}
    scenario = scenario_from_data(data)
    first = run(scenario, get_scheduler("parallel"), 3)
    assert run(scenario, get_scheduler("parallel"), 3).fingerprint == first.fingerprint
    thinks = {(e["agent"], e["round"]): e["t"] for e in first.trace
              if e["ev"] == "agent" and e["event"] == "PLANNER_DECISION"}
    assert thinks[("sales", 1)] != thinks[("ops", 1)]
    renamed = replace(scenario, agents=(scenario.agents[1], scenario.agents[0]))
    again = {(e["agent"], e["round"]): e["t"] for e in run(renamed, get_scheduler("parallel"), 3).trace
             if e["ev"] == "agent" and e["event"] == "PLANNER_DECISION"}
    assert again == thinks  # an agent's think times are its own, wherever it is listed


# -- exploring and shrinking a crew ------------------------------------------------------------------


def test_explore_finds_the_race_shrinks_it_keeping_the_agents_concurrent_and_the_reproducer_replays(
        tmp_path: Path) -> None:
    from harness.explore.engine import explore
    from harness.reproducers.replay import load, reproducer_of, save

    data = two_agents()
    # Calls the race does not need: a search beside ops' log query, and a third agent reading a file.
    data["agents"][1]["model"]["rules"][0]["calls"].append(
        {"id": "extra", "name": "web_search", "arguments": '{"query": "order-service"}', "latency": {"fixed": 200}})
    data["agents"].append({"name": "reader", "model": {"task": "read", "rules": [
        {"name": "read", "when": {"round": 1}, "action": "tool_call",
         "calls": [{"id": "r", "name": "read_file", "arguments": '{"path": "/srv/agent/reports/2025-05-19.md"}'}]},
        {"name": "done", "when": {"ok": "r"}, "action": "final_answer", "text": "read"}]}})
    scenario = scenario_from_data(data)
    exploration = explore(scenario, get_scheduler("parallel"), strategy="random", runs=20, seed=1)
    assert exploration.found is not None and exploration.found.label == "cross-agent-lost-update"
    assert len(exploration.found.result.scenario.calls) == 8
    shrunk = exploration.shrunk
    assert shrunk is not None and shrunk.label == "cross-agent-lost-update"
    kept = [c.id for c in shrunk.result.scenario.calls]
    assert len(kept) == 6 and not any("extra" in c or c.startswith("reader/") for c in kept), kept
    assert len(shrunk.result.agents) == 3  # still three concurrent agents, the reader's turn dropped
    path = save(reproducer_of(shrunk.result, "parallel", shrunk.label, shrunk.oracle, shrunk.found_by), tmp_path,
                version="test")
    again = load(path).run()
    assert again.fingerprint == shrunk.result.fingerprint


# -- a parent delegating to subagents ------------------------------------------------------------------


def test_subagents_delegated_in_one_turn_run_at_once_and_collide() -> None:
    result = run(find_scenario("subagents-notes"), get_scheduler("parallel"), 1)
    verdict = serializability(result)
    assert not verdict.ok and verdict.label == "cross-agent-lost-update"
    assert sorted(verdict.witness["agents"]) == ["deploys", "logs"]
    tasks = {r.call_id: r for r in result.results if r.call_id.endswith("-task")}
    assert tasks["lead/logs-task"].value["agent"] == "logs"  # type: ignore[index]
    assert tasks["lead/deploys-task"].value["status"] == "final_answer"  # type: ignore[index]
    # The delegate call lasts the subagent's whole task; the subagent got the parent's task text.
    logs_end = max(r.end_ms for r in result.results if r.call_id.startswith("logs/"))
    assert tasks["lead/logs-task"].end_ms >= logs_end
    started = {e["agent"]: e["task"] for e in result.trace if e["ev"] == "agent" and e["event"] == "AGENT_STARTED"}
    assert started["logs"].startswith("查 order-service 最近的错误日志")


@pytest.mark.parametrize("scheduler", ["serial", "partition"])
def test_subagents_run_one_after_the_other_pass(scheduler: str) -> None:
    result = run(find_scenario("subagents-notes"), get_scheduler(scheduler), 1)
    failed = [v for v in check(result) if not v.ok]
    assert not failed, [v.message for v in failed]
    notes = result.world.read_text("/srv/incident/notes.md")
    assert "## 日志" in notes and "## 部署" in notes
    assert result.agent is not None and result.agent.status == "final_answer" and result.agent.tool_calls == 7


def delegating(*calls: dict[str, Any], subagents: tuple[str, ...] = ("helper",)) -> Any:
    rows: list[dict[str, Any]] = [{"name": "lead", "model": {"task": "lead", "rules": [
        {"name": "go", "when": {"round": 1}, "action": "tool_call", "calls": list(calls)},
        {"name": "done", "when": {"min_round": 2}, "action": "final_answer", "text": "done"}]}}]
    for name in subagents:
        rows.append({"name": name, "delegated": True, "model": {"task": name, "rules": [
            {"name": "look", "when": {"round": 1}, "action": "tool_call",
             "calls": [{"id": "look", "name": "read_file", "arguments": '{"path": "/w/x"}'}]},
            {"name": "done", "when": {"ok": "look"}, "action": "final_answer", "text": f"{name} done"}]}})
    return scenario_from_data({"name": "delegating", "world": {"cwd": "/w", "dirs": ["/w"], "files": {"/w/x": "x"}},
                               "agents": rows})


def test_delegating_to_a_wrong_or_busy_subagent_is_the_tool_error() -> None:
    result = run(delegating({"id": "a", "name": "delegate", "arguments": '{"agent": "nobody"}'},
                            {"id": "b", "name": "delegate", "arguments": '{"agent": "helper"}'},
                            {"id": "c", "name": "delegate", "arguments": '{"agent": "helper"}'}),
                 get_scheduler("serial"), 1)
    by_id = {r.call_id: r for r in result.results}
    assert by_id["lead/a"].error == "no subagent named 'nobody' to delegate to (subagents: helper)"
    assert by_id["lead/b"].ok and by_id["lead/b"].value["answer"] == "helper done"  # type: ignore[index]
    assert "already has a task" in (by_id["lead/c"].error or "")
    assert all(v.ok for v in check(result)), [v.message for v in check(result) if not v.ok]


def _chain(length: int) -> Any:
    """A lead delegating to `s1`, which delegates to `s2`, and so on to `s<length>`; each answers when its
    delegation ended, ok or refused."""
    names = ["lead", *(f"s{i}" for i in range(1, length + 1))]
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        rules: list[dict[str, Any]] = [{"name": "done", "when": {"min_round": 2}, "action": "final_answer",
                                        "text": f"{name} done"}]
        if i + 1 < len(names):
            rules.insert(0, {"name": "go", "when": {"round": 1}, "action": "tool_call", "calls": [
                {"id": "down", "name": "delegate", "arguments": json.dumps({"agent": names[i + 1]})}]})
        else:
            rules.insert(0, {"name": "go", "when": {"round": 1}, "action": "final_answer", "text": f"{name} done"})
        rows.append({"name": name, **({"delegated": True} if i else {}), "model": {"task": name, "rules": rules}})
    return scenario_from_data({"name": "chain", "world": {}, "agents": rows})


def test_delegation_nests_two_deep_and_a_third_level_is_refused_as_hermes_does() -> None:
    two = run(_chain(2), get_scheduler("serial"), 1)
    by_id = {r.call_id: r for r in two.results}
    assert by_id["lead/down"].ok and by_id["s1/down"].ok and two.agents["s2"].status == "final_answer"
    three = run(_chain(3), get_scheduler("serial"), 1)
    by_id = {r.call_id: r for r in three.results}
    assert by_id["lead/down"].ok and by_id["s1/down"].ok
    assert "delegation too deep: 's2' runs at depth 2" in (by_id["s2/down"].error or "")
    assert three.agents["s3"].status == "not-delegated"
    assert all(v.ok for v in check(three)), [v.message for v in check(three) if not v.ok]


def test_a_subagent_nobody_delegates_to_never_starts_and_does_not_fail_the_task() -> None:
    result = run(delegating({"id": "b", "name": "delegate", "arguments": '{"agent": "helper"}'},
                            subagents=("helper", "spare")), get_scheduler("parallel"), 1)
    assert result.agents["spare"].status == "not-delegated"
    assert not any(r.call_id.startswith("spare/") for r in result.results)
    assert result.agent is not None and result.agent.status == "final_answer"


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d["agents"][1].update(start_ms=5), "agents[1].start_ms"),
    (lambda d: d["agents"][1].update(delegated="yes"), "agents[1].delegated"),
    (lambda d: d["agents"][0].update(delegated=True), "agents"),
    (lambda d: d.update(tools={"delegate": {"does": []}}), "tools.delegate"),
])
def test_malformed_delegation_names_the_field(change: Any, field: str) -> None:
    data = tomllib.loads((Path(find_scenario("subagents-notes").path or "")).read_text())
    change(data)
    if field == "agents":
        for row in data["agents"]:
            row["delegated"] = True
    with pytest.raises(ScenarioError) as caught:
        scenario_from_data(data, "crew.toml")
    assert f"crew.toml: {field}" in str(caught.value)


def test_a_delegating_crew_round_trips_and_replays() -> None:
    scenario = find_scenario("subagents-notes")
    again = scenario_from_data(json.loads(json.dumps(scenario_to_data(scenario))))
    assert [a.delegated for a in again.agents] == [False, True, True]
    assert (run(again, get_scheduler("parallel"), 2).fingerprint
            == run(scenario, get_scheduler("parallel"), 2).fingerprint)


def test_exclusivity_and_the_runtime_cap_are_per_agent_but_a_tool_cap_is_everyones() -> None:
    from harness.oracles import ORACLES

    def agent(name: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "model": {"task": name, "rules": [
            {"name": "go", "when": {"round": 1}, "action": "tool_call",
             "calls": [{"id": "c", "name": tool, "arguments": json.dumps(args), "latency": {"fixed": 500}}]},
            {"name": "done", "when": {"min_round": 2}, "action": "final_answer", "text": "done"}]}}

    data = {"name": "caps", "world": {"cwd": "/w", "dirs": ["/w"]}, "max_concurrency": 1,
            "agents": [agent("asker", "clarify", {"question": "which env?"}),
                       agent("a", "web_search", {"query": "x"}), agent("b", "web_search", {"query": "y"})]}
    result = run(scenario_from_data(data), get_scheduler("parallel"), 1)
    assert ORACLES["exclusivity"](result).ok  # the question overlaps other agents' searches only
    assert ORACLES["caps"](result).ok  # one call at a time in each agent's runtime
    data["tools"] = {"web_search": {"max_concurrency": 1}}
    capped = ORACLES["caps"](run(scenario_from_data(data), get_scheduler("parallel"), 1))
    assert capped.label == "cap-exceeded" and capped.witness["limit"] == "tools.web_search.max_concurrency"
