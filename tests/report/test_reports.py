"""Reports: files exist, the data behind every plot is right, every link resolves."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.oracles import check


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout


def links_resolve(page: Path) -> list[str]:
    targets = re.findall(r'(?:href|src)="([^"]+)"', page.read_text())
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the page links to nothing"
    return [t for t in local if not (page.parent / t).is_file()]


@pytest.fixture(scope="module")
def jitter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jitter")
    code, _ = invoke("compare", "incident-jitter", "--schedulers", "serial,parallel,resource_keys", "--runs", "200",
                     "--out", str(out))
    assert code == 0
    return out


def test_incident_jitter_serial_vs_parallel(jitter: Path) -> None:
    summary = json.loads((jitter / "summary.json").read_text())["schedulers"]
    assert 8500 <= summary["serial"]["p50_ms"] <= 9800
    for policy in ("parallel", "resource_keys"):
        assert 4000 <= summary[policy]["p50_ms"] <= 4500
        assert summary[policy]["speedup_vs_serial"] >= 1.9
        assert summary[policy]["ratio_to_optimal"] == 1.0
        assert {"p50_ms", "p95_ms", "p99_ms", "speedup_vs_serial", "ratio_to_optimal", "violations"} <= set(
            summary[policy])
    assert summary["serial"]["p50_ms"] <= summary["serial"]["p95_ms"] <= summary["serial"]["p99_ms"]


def test_results_csv_and_plot_data_agree(jitter: Path) -> None:
    with (jitter / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    schedulers = {"serial", "parallel", "resource_keys", "optimal"}
    assert len(rows) == 200 * len(schedulers) and {r["scheduler"] for r in rows} == schedulers
    data = json.loads((jitter / "plot_data.json").read_text())
    for scheduler in ("serial", "parallel", "resource_keys"):
        expected = sorted(int(r["makespan_ms"]) for r in rows if r["scheduler"] == scheduler)
        assert data["ecdf"]["incident-jitter"][scheduler] == expected
    serial = {r["seed"]: int(r["makespan_ms"]) for r in rows if r["scheduler"] == "serial"}
    parallel = {r["seed"]: int(r["makespan_ms"]) for r in rows if r["scheduler"] == "parallel"}
    paired = sum(serial[s] / parallel[s] for s in serial) / len(serial)
    assert data["speedup"]["incident-jitter"]["parallel"] == pytest.approx(paired, abs=1e-4)
    assert "heatmap" not in data  # one scenario: no heatmap


def test_comparison_files_and_links(jitter: Path) -> None:
    for name in ("summary.json", "results.csv", "plot_data.json", "speedup.png", "index.html",
                 "ecdf-00-incident-jitter.png"):
        assert (jitter / name).stat().st_size > 0, name
    assert links_resolve(jitter / "index.html") == []


def test_several_scenarios_heatmap_agrees_with_the_oracles(tmp_path: Path) -> None:
    scenarios, schedulers = ["config-clobber", "edit-then-test", "home-assistant"], ["serial", "parallel", "grouped"]
    code, _ = invoke("compare", "--scenarios", ",".join(scenarios), "--schedulers", ",".join(schedulers),
                     "--runs", "8", "--out", str(tmp_path))
    assert code == 0 and (tmp_path / "heatmap.png").is_file()
    heat = json.loads((tmp_path / "plot_data.json").read_text())["heatmap"]
    assert heat["scenarios"] == scenarios and heat["schedulers"] == schedulers
    for y, scenario in enumerate(scenarios):
        for x, scheduler in enumerate(schedulers):
            runs = [run(find_scenario(scenario), get_scheduler(scheduler), seed) for seed in range(1, 9)]
            expected = sum(any(not v.ok for v in check(r)) for r in runs)
            assert heat["runs_with_violation"][y][x] == expected, (scenario, scheduler)
            assert heat["violation_rate"][y][x] == pytest.approx(expected / 8)
    assert links_resolve(tmp_path / "index.html") == []


def test_compare_json_and_usage_errors() -> None:
    code, out = invoke("compare", "incident-triage", "--schedulers", "parallel", "--runs", "3", "--format", "json")
    assert code == 0 and json.loads(out)["schedulers"]["parallel"]["speedup_vs_serial"] == 2.25
    assert invoke("compare", "--schedulers", "parallel")[0] == 2
    assert invoke("compare", "nope", "--runs", "1")[0] == 2


def test_one_run_in_depth(tmp_path: Path) -> None:
    code, _ = invoke("run", "config-clobber", "--scheduler", "parallel", "--seed", "3", "--out", str(tmp_path))
    assert code == 1
    for name in ("run.json", "trace.jsonl", "gantt.png", "gantt.json", "trace.perfetto.json", "world_diff.txt",
                 "index.html"):
        assert (tmp_path / name).stat().st_size > 0, name
    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
    gantt = json.loads((tmp_path / "gantt.json").read_text())
    assert gantt["lanes"] == ["raise-timeout", "raise-retries"]
    assert [(b["call"], b["start"], b["end"]) for b in gantt["bars"]] == [
        (r.call_id, r.start_ms, r.end_ms) for r in sorted(result.results, key=lambda r: r.end_ms)]
    assert gantt["violating"] == ["raise-retries", "raise-timeout"]
    assert {(t["call"], t["op"]) for t in gantt["touches"]} >= {("raise-timeout", "read"), ("raise-retries", "write")}
    perfetto = json.loads((tmp_path / "trace.perfetto.json").read_text())
    complete = [e for e in perfetto["traceEvents"] if e["ph"] == "X"]
    assert sorted((e["ts"], e["dur"]) for e in complete) == sorted(
        (r.start_ms * 1000, (r.end_ms - r.start_ms) * 1000) for r in result.results)
    names = {e["args"]["name"] for e in perfetto["traceEvents"] if e["name"] == "thread_name"}
    assert names == {"raise-timeout (patch)", "raise-retries (patch)"}
    diff = (tmp_path / "world_diff.txt").read_text()
    assert "~ file /repo/config.yaml changed" in diff and "timeout: 60" in diff
    assert links_resolve(tmp_path / "index.html") == []


def test_gantt_marks_faults_interrupts_and_detached_work(tmp_path: Path) -> None:
    from harness.report.gantt import gantt_data
    from tests.oracles.schedulers import TimesOut

    ticket = run(find_scenario("duplicate-ticket"), TimesOut(300), 1)
    data = gantt_data(ticket, check(ticket))
    assert [b["detached"] for b in data["bars"]] == [False, True]
    assert {"kind": "detached", "start": 300, "end": 900, "call": "open-ticket"} in data["shaded"]
    interrupted = run(find_scenario("interrupt-midbatch"), get_scheduler("parallel"), 1)
    data = gantt_data(interrupted, check(interrupted))
    assert {"kind": "interrupt", "t": 1500} in data["lines"]
    assert {"kind": "grace", "start": 1500, "end": 2500} in data["shaded"]
    assert data["violating"] == ["metrics", "tests"]
