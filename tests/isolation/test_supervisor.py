"""The supervisor and its wire, from Python: an isolated run is the in-process run (same fingerprint,
same verdicts) on every built-in scenario; the parent unpickles nothing of the child's but harness
values; issue 15's catalogue keeps its exit codes under `run --isolate`; a child that dies or hangs
mid-batch is replaced for the next run.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.isolation import Supervisor
from harness.isolation.wire import WireError, load_from_child
from harness.oracles import check
from harness.policies import get_scheduler
from harness.run import RunStatus, run
from harness.scenario import find_scenario
from tests.containment.adversaries import CATALOGUE
from tests.containment.test_catalogue import CLI_EXIT, TINY

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="isolation needs POSIX process groups")


def _labels(verdicts: list) -> list[tuple[str, list[str]]]:  # type: ignore[type-arg]
    return [(v.oracle, [x.label for x in v.violations]) for v in verdicts]


@pytest.mark.parametrize("scheduler", ["serial", "parallel", "hermes_segments"])
def test_isolated_runs_are_the_in_process_runs(scheduler: str) -> None:
    """Every built-in scenario (plain, loop and crew), seed 7: the same fingerprint and verdicts."""
    scenarios = [find_scenario(name) for name in BUILTIN]
    with Supervisor(scheduler, wall_timeout_s=60) as child:
        got = list(child.runs((scenario, 7, 0.0) for scenario in scenarios))
    for scenario, isolated in zip(scenarios, got, strict=True):
        local = run(scenario, get_scheduler(scheduler), 7)
        assert isolated.result.fingerprint == local.fingerprint, scenario.name
        assert _labels(check(isolated.result)) == _labels(check(local)), scenario.name


def test_the_parent_unpickles_only_harness_values() -> None:
    assert load_from_child(pickle.dumps({"a": (1, 2.5, None, frozenset({3}))})) == {"a": (1, 2.5, None, frozenset({3}))}
    for hostile in (pickle.dumps(os.system), pickle.dumps(Path("/x")), b"\x80\x05garbage"):
        with pytest.raises(WireError):
            load_from_child(hostile)


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch /tmp/never",))


def test_a_reduce_naming_a_function_is_refused() -> None:
    with pytest.raises(WireError, match="not a harness value class"):
        load_from_child(pickle.dumps(_Evil()))


def test_a_dead_child_is_replaced_for_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    scenario = find_scenario(str(path))
    with Supervisor("tests.isolation.adversaries:OsExit", wall_timeout_s=5) as child:
        first, second = child.runs([(scenario, 1, 0.0), (scenario, 2, 0.0)])
    assert first.ended_by_parent and first.result.status is RunStatus.SCHEDULER_ERROR
    assert second.ended_by_parent and "exited with status 0" in (second.result.error or "")


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_issue_15_catalogue_under_run_isolate(name: str, tmp_path: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("main thread only")
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    result = CliRunner().invoke(main, ["run", str(path), "--scheduler", f"tests.containment.adversaries:{name}",
                                       "--isolate", "--wall-timeout", "1", "--import-timeout", "1"])
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code == CLI_EXIT[name], output
    assert "Traceback" not in output
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


@pytest.mark.parametrize("scheduler", ["serial", "parallel"])
def test_reorder_runs_in_the_child_give_the_in_process_verdict(scheduler: str) -> None:
    import json

    verdicts = []
    for mode in ("--no-isolate", "--isolate"):
        result = CliRunner().invoke(main, ["run", "config-clobber", "--scheduler", scheduler, "--seed", "3",
                                           "--reorder", "6", "--format", "json", mode])
        document = json.loads(result.stdout)
        verdicts.append((result.exit_code, [(v["oracle"], v["ok"], v["message"]) for v in document["verdicts"]]))
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][1][-1][0] == "reorder-invariance"


def test_an_isolated_sweep_has_the_in_process_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.sweep import grid, sweep

    isolated: list[int] = []
    run_in_child = Supervisor.run

    def counted(self: Supervisor, scenario, seed, jitter=0.0):  # type: ignore[no-untyped-def]
        isolated.append(seed)
        return run_in_child(self, scenario, seed, jitter)

    monkeypatch.setattr(Supervisor, "run", counted)
    cells = grid(["config-clobber", "incident-triage"], ["serial", "parallel"], range(1, 4))
    rows = sweep(cells, isolate=True)
    assert len(isolated) == len(cells)  # every cell went through a child
    assert rows == sweep(cells)


def test_each_hang_of_one_supervisor_is_a_hang_not_the_next_runs_scheduler_error() -> None:
    """`run` takes one run from `runs`; the child that hung must be gone before it is handed back, or
    the next run is sent to a child that ended its session (a false scheduler-error, found in review)."""
    scenario = find_scenario("config-clobber")
    with Supervisor("tests.isolation.adversaries:SpinsUntilTheAlarm", wall_timeout_s=1) as child:
        statuses = [child.run(scenario, seed).result.status for seed in (1, 2, 3)]
    assert statuses == [RunStatus.HANG] * 3


def test_an_isolated_sweep_row_does_not_depend_on_the_cells_before_it() -> None:
    from harness.sweep import grid, sweep

    rows = sweep(grid(["config-clobber"], ["tests.isolation.adversaries:SpinsUntilTheAlarm", "serial"], [1, 2]),
                 isolate=True, wall_timeout_s=1)
    assert [(row["scheduler"].rsplit(":")[-1], row["seed"], row["status"]) for row in rows] == [
        ("serial", 1, "completed"), ("serial", 2, "completed"),
        ("SpinsUntilTheAlarm", 1, "hang"), ("SpinsUntilTheAlarm", 2, "hang")]
