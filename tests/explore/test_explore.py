"""Exploration: PCT, exhaustive search, random and Hypothesis find what they should, and shrink it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.explore import Tape
from harness.explore.engine import explore
from harness.reproducers.replay import load, replay


def test_pct_finds_the_lost_update_and_the_shrunk_reproducer_replays(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "parallel", "--strategy", "pct",
                                       "--runs", "100", "--save-dir", str(tmp_path), "--format", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert doc["found"] and doc["label"] == "lost-update" and doc["runs_to_failure"] <= 100
    assert doc["shrunk_calls"] <= 3
    assert {"found", "label", "runs", "runs_to_failure", "shrunk_calls", "reproducer", "bound"} <= set(doc)
    outcome = replay(load(Path(doc["reproducer"])))
    assert outcome.identical and outcome.result.fingerprint == doc["fingerprint"]
    assert "lost-update" in {v.label for v in __import__("harness.oracles").oracles.check(outcome.result) if not v.ok}


def test_pct_beats_random_on_a_rare_order_and_meets_its_bound() -> None:
    sc = find_scenario("rare-torn-read")
    trials = range(1, 61)
    pct_hits = sum(bool(explore(sc, "parallel", "pct", runs=1, seed=s, shrink=False).found) for s in trials)
    random_hits = sum(bool(explore(sc, "parallel", "random", runs=1, seed=s, shrink=False).found) for s in trials)
    bound = explore(sc, "parallel", "pct", runs=1, seed=1, shrink=False).bound
    assert bound is not None
    assert pct_hits / len(trials) >= bound["per_run"]
    assert pct_hits >= random_hits + 10  # measurably more often
    assert random_hits == 0


def test_exhaustive_proves_safe_policies_and_finds_parallel() -> None:
    sc = find_scenario("config-clobber")
    for safe in ("serial", "resource_keys"):
        exploration = explore(sc, safe, "exhaustive", runs=200)
        assert exploration.found is None and exploration.exhausted is True and exploration.classes
    found = explore(sc, "parallel", "exhaustive", runs=200).found
    assert found is not None and found.label == "lost-update"


def test_exhaustive_prunes_orders_of_independent_steps() -> None:
    """Two test runs over disjoint trees take two steps each: 4!/(2!2!) = 6 interleavings, but the
    first steps commute, so fewer classes cover them all. Completions stay ordered both ways."""
    from tests.helpers import scenario

    sc = scenario([("t1", "run_tests", {"path": "/a"}), ("t2", "run_tests", {"path": "/b"})],
                  files={"/a/test_x": "requires test_x requires", "/b/test_y": "requires test_y requires"})
    exploration = explore(sc, "parallel", "exhaustive", runs=500)
    assert exploration.exhausted and exploration.found is None
    assert exploration.classes is not None and 2 <= exploration.classes < 6
    one_step = explore(find_scenario("compare-three-files"), "parallel", "exhaustive", runs=500)
    assert one_step.exhausted and one_step.classes == 6  # completion orders are observable
    torn = explore(find_scenario("rare-torn-read"), "parallel", "exhaustive", runs=50)
    assert torn.found is not None and torn.found.label == "torn-read"


def test_exhaustive_reports_a_reached_bound() -> None:
    exploration = explore(find_scenario("code-review"), "parallel", "exhaustive", runs=1)
    assert exploration.exhausted is False


def test_hypothesis_shrinks_to_the_calls_that_matter() -> None:
    exploration = explore(find_scenario("code-review"), "parallel", "hypothesis", runs=200, seed=2)
    assert exploration.found is not None and exploration.shrunk is not None
    assert exploration.shrunk.label == "lost-update"
    assert [c.id for c in exploration.shrunk.result.scenario.calls] == ["patch-auth", "rewrite-auth"]


def test_shrinking_drops_irrelevant_calls() -> None:
    exploration = explore(find_scenario("shared-shell-cwd"), "lanes", "random", runs=20)
    assert exploration.shrunk is not None
    assert len(exploration.shrunk.result.scenario.calls) < len(find_scenario("shared-shell-cwd").calls)


def test_keep_going_collects_each_label_once() -> None:
    exploration = explore(find_scenario("edit-then-test"), "grouped", "random", runs=20, keep_going=True,
                          shrink=False)
    labels = [f.label for f in exploration.findings]
    assert len(labels) == len(set(labels)) and exploration.runs == 20


def test_swarm_varies_faults_and_its_finds_replay(tmp_path: Path) -> None:
    exploration = explore(find_scenario("incident-triage"), "parallel", "random", runs=30, swarm=True)
    assert exploration.found is not None and exploration.found.swarm  # some fault kind was on
    from harness.reproducers.replay import reproducer_of, save

    shrunk = exploration.shrunk
    assert shrunk is not None
    path = save(reproducer_of(shrunk.result, "parallel", shrunk.label, shrunk.oracle, "random"), tmp_path,
                version="test")
    assert replay(load(path)).identical


def test_order_tape_reproduces_a_run() -> None:
    sc = find_scenario("edit-then-test")
    first = run(sc, get_scheduler("parallel"), 5, chooser=Tape(("run-tests",)))
    again = run(sc, get_scheduler("parallel"), 5, chooser=Tape(first.tape or ()))
    assert first.fingerprint == again.fingerprint and first.tape == again.tape


def test_the_text_witness_is_json_as_in_the_json_document() -> None:
    """`witness:` in explore's text output was a Python dict repr (single quotes), which no JSON tool reads."""
    args = ["explore", "config-clobber", "--scheduler", "parallel", "--runs", "20", "--no-save", "--seed", "4"]
    text = CliRunner().invoke(main, args)
    document = CliRunner().invoke(main, [*args, "--format", "json"])
    assert text.exit_code == document.exit_code == 1
    line = next(line for line in text.output.splitlines() if line.startswith("witness: "))
    witness = json.loads(line.removeprefix("witness: "))
    assert witness == json.loads(document.output)["witness"] and witness["target"] == "/repo/config.yaml"


def test_counts_of_one_are_singular() -> None:
    """`after 1 runs`, `in 1 classes`: a count of one read as a bug in the tool."""
    found = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "parallel", "--strategy", "pct",
                                      "--runs", "1", "--no-save"])
    assert found.exit_code == 1
    assert found.output.splitlines()[0].endswith(": 1 run")
    assert "the one run misses it with probability" in found.output
    assert "latencies: 1 run order-first" in found.output
    assert "FOUND lost-update after 1 run by pct" in found.output
    proven = CliRunner().invoke(main, ["explore", "edit-then-test", "--scheduler", "serial", "--strategy",
                                       "exhaustive", "--runs", "1", "--no-save"])
    assert proven.exit_code == 0 and "no violation in 1 class: the bounded space is exhausted" in proven.output
    for output in (found.output, proven.output):
        assert not any(f" 1 {noun}" in output for noun in ("runs", "calls", "classes", "steps", "threads"))


def test_plural_count() -> None:
    from harness.report.plural import count

    assert [count(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert count(1, "class") == "1 class" and count(3, "class") == "3 classes"
    assert count(1, "entry", "entries") == "1 entry" and count(2, "entry", "entries") == "2 entries"
