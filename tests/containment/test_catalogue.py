"""Issue 15's adversarial-scheduler catalogue under every entry point: `run`, `explore`, `sweep`,
`compare`, `replay` (the command line, in process, where exit codes are what a user sees) and
`check_scheduler` (Python). Each case is contained — the documented exit code or status, never a
silent pass, a traceback, exit 70 or a harness that never answers — and the next run is unaffected.

Limits are tiny (a 2-call scenario, 1 s of real time per run, 1-2 runs) to keep the module fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import __version__
from harness.cli import main
from harness.oracles import check
from harness.policies import get_scheduler
from harness.reproducers.replay import reproducer_of, to_json
from harness.run import RunStatus, run
from harness.scenario import find_scenario
from harness.sim.realtime import ImportTimeout, watching_user_interrupts
from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.containment.adversaries import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.containment.adversaries"
WALL = "1"
#: Both real-time limits: a run's, and importing and building the scheduler before any run (the
#: constructor that spins is stopped by the second, and said to be an import timeout).
LIMITS = ("--wall-timeout", WALL, "--import-timeout", WALL)
TINY = """name = "tiny"
description = "two searches"
event_budget = 5000

[world]
cwd = "/repo"

[[batches]]
[[batches.calls]]
id = "a"
name = "web_search"
arguments = '{"query": "x"}'

[[batches.calls]]
id = "b"
name = "web_search"
arguments = '{"query": "y"}'
"""

#: Exit code of `harness run` / `explore` per status; a non-str name is refused when the command
#: line builds the scheduler (exit 2, naming the problem) and is a contract-error from Python.
EXIT = {"hang": 3, "scheduler-error": 4, "contract-error": 4, "completed": 0}
CLI_EXIT = {name: 2 if name == "NonStrName" else 4 if name == "MutatesBatch" else EXIT[status]
            for name, (_, status) in CATALOGUE.items()}
SPINS = {"SpinInCall", "SpinInConstructor"}

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the watchdog needs SIGALRM")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("containment") / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture(scope="module")
def baseline(tiny: Path) -> dict[str, str]:
    """Fingerprints of ordinary runs before any adversary ran: every later run must match them."""
    return {name: run(find_scenario(name), get_scheduler("parallel"), 1).fingerprint
            for name in (str(tiny), "scrape-fanout")}


def _unaffected(baseline: dict[str, str]) -> None:
    for name, fingerprint in baseline.items():
        assert run(find_scenario(name), get_scheduler("parallel"), 1).fingerprint == fingerprint
    caps = find_scenario("scrape-fanout")
    assert dict(caps.tool_caps) and "cap-exceeded" in {v.label for v in check(run(caps, get_scheduler("parallel"), 1))}
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # no watchdog left armed
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _out_of_time(name: str) -> str:
    """How the command says the adversary ran out of real time: its constructor is part of the import."""
    return "import timeout: importing and building the scheduler" if name == "SpinInConstructor" else "hang"


def _cli(*args: str) -> tuple[int, str]:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the watchdog is a SIGALRM timer: main thread only")
    result = CliRunner().invoke(main, list(args))
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in output and result.exit_code != 70, output
    assert not isinstance(result.exception, BaseException) or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result.exit_code, output


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_run(name: str, tiny: Path, baseline: dict[str, str]) -> None:
    code, output = _cli("run", str(tiny), "--scheduler", f"{MODULE}:{name}", *LIMITS)
    assert code == CLI_EXIT[name], output
    _unaffected(baseline)


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_explore(name: str, tiny: Path, baseline: dict[str, str]) -> None:
    code, output = _cli("explore", str(tiny), "--scheduler", f"{MODULE}:{name}", "--strategy", "random",
                        "--runs", "2", "--no-save", *LIMITS)
    assert code == CLI_EXIT[name], output
    if name in SPINS:
        assert _out_of_time(name) in output and "real time" in output
    _unaffected(baseline)


@pytest.mark.parametrize("command", ["sweep", "compare"])
@pytest.mark.parametrize("name", list(CATALOGUE))
def test_sweep_and_compare(command: str, name: str, tiny: Path, baseline: dict[str, str]) -> None:
    """A cell that spins stops the command (exit 3, the cell named); any other misbehaviour is a row
    with its violation, as for every scheduler (these commands measure, they do not judge). The sweep
    runs in process here (`--no-isolate`); isolated, a spinning cell is a `hang` row (tests/isolation)."""
    args = ["--scenarios", str(tiny), "--no-isolate"] if command == "sweep" else [str(tiny)]
    code, output = _cli(command, *args, "--schedulers", f"{MODULE}:{name}", "--runs", "1", *LIMITS)
    expected = 3 if name in SPINS else 2 if name == "NonStrName" else 0
    assert code == expected, output
    if name in SPINS:
        assert _out_of_time(name) in output
    _unaffected(baseline)


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_replay(name: str, tiny: Path, tmp_path: Path, baseline: dict[str, str]) -> None:
    """A reproducer naming the adversary: replayed, it gives the same verdict (or a hang, exit 3,
    where it spins: never a divergence, exit 5, for a run the watchdog stopped)."""
    cls, status = CATALOGUE[name]
    scenario = find_scenario(str(tiny))
    if name in SPINS:
        result = run(scenario, get_scheduler("serial"), 1)  # the file's recorded run does not matter
    else:
        with watching_user_interrupts():
            result = run(scenario, cls(), 1)
        assert result.status.value == status
    path = tmp_path / "r.json"
    path.write_text(to_json(reproducer_of(result, f"{MODULE}:{name}", "hang", "liveness", "test"),
                            version=__version__))
    code, output = _cli("replay", str(path), "--trust-module", "tests", *LIMITS)
    assert code == CLI_EXIT[name], output
    _unaffected(baseline)


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_check_scheduler(name: str, tiny: Path, baseline: dict[str, str]) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the watchdog is a SIGALRM timer: main thread only")
    cls, status = CATALOGUE[name]
    if name == "SpinInConstructor":  # no run to show: the hang itself is raised
        with pytest.raises(ImportTimeout, match="importing and building the scheduler"):
            check_scheduler(f"{MODULE}:{name}", scenarios=[tiny], profile="quick", generated=False,
                            wall_timeout_s=1.0, import_timeout_s=1.0)
        _unaffected(baseline)
        return
    scheduler = cls()
    if status == "completed" and name != "MutatesBatch":
        check_scheduler(scheduler, scenarios=[tiny], profile="quick", generated=False, swarm=False,
                        wall_timeout_s=1.0)
    else:
        with pytest.raises(SchedulerCheckFailed) as failed:
            check_scheduler(scheduler, scenarios=[tiny], profile="quick", generated=False, swarm=False,
                            wall_timeout_s=1.0)
        expected = {"hang": "hang", "scheduler-error": "scheduler-error", "contract-error": "contract-error",
                    "completed": "missing-result"}[status]
        assert expected in str(failed.value)
    _unaffected(baseline)


def test_clearing_caps_hides_nothing(baseline: dict[str, str]) -> None:
    """The caps a scheduler is handed are a read-only view: the caps oracle still judges by the
    scenario's caps, and the next run sees them."""
    scenario = find_scenario("scrape-fanout")
    result = run(scenario, CATALOGUE["ClearsToolCaps"][0](), 1)
    assert "cap-exceeded" in {v.label for v in check(result) if not v.ok}
    _unaffected(baseline)


def test_mutating_the_batch_changes_no_scenario(tiny: Path, baseline: dict[str, str]) -> None:
    scenario = find_scenario("config-clobber")
    before = scenario.batches
    result = run(scenario, CATALOGUE["MutatesBatch"][0](), 1)
    assert result.scenario.batches == before and "missing-result" in {v.label for v in check(result)}
    again = find_scenario("config-clobber")
    assert again.batches == before and len(again.batches[0].calls) > 1
    _unaffected(baseline)


def test_system_exit_in_a_real_process(tiny: Path) -> None:
    """The process itself: sys.exit(0) from the scheduler is exit 4 naming SystemExit, not a silent 0."""
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(tiny), "--scheduler",
                           f"{MODULE}:RaisesSystemExit"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4 and "SystemExit" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("isolate", ["--no-isolate", "--isolate"])
def test_spinning_call_in_sweep_workers(tiny: Path, isolate: str, tmp_path: Path) -> None:
    """Two worker processes, each with its own watchdog: in process the spinning cell is a hang that
    stops the sweep (exit 3); isolated (the default for a scheduler of the user's) it is a `hang` row
    and every other cell still runs (exit 0: a sweep measures)."""
    done = subprocess.run([sys.executable, "-m", "harness", "sweep", "--scenarios", f"{tiny},{tiny}",
                           "--schedulers", f"serial,{MODULE}:SpinInCall", "--runs", "2", "--processes", "2",
                           "--wall-timeout", "1", isolate, "--out", str(tmp_path / "rows.jsonl")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr
    if isolate == "--no-isolate":
        assert done.returncode == 3 and "hang" in done.stderr, done.stdout + done.stderr
        return
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    statuses = sorted({(row["scheduler"].rpartition(":")[2], row["status"]) for row in rows})
    assert len(rows) == 4 and statuses == [("SpinInCall", "hang"), ("serial", "completed")], rows


def test_a_real_ctrl_c_still_stops_the_harness(tiny: Path, tmp_path: Path) -> None:
    """SIGINT while the scheduler spins: the harness stops (exit 130), it is not the scheduler's error.
    The signal is sent once the scheduler spins (it creates a file then), never after a fixed sleep: on
    a loaded machine the child may still be importing, where a Ctrl-C is an ordinary traceback."""
    spinning = tmp_path / "spinning"
    process = subprocess.Popen([sys.executable, "-m", "harness", "run", str(tiny), "--scheduler",
                                f"{MODULE}:SpinInCallWhenReady", "--wall-timeout", "60"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1", "HARNESS_TEST_SPINNING": str(spinning)})
    try:
        deadline = time.monotonic() + 120
        while not spinning.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert spinning.exists(), f"the scheduler never started spinning (exit {process.poll()})"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:  # a failed assertion above: the child must not outlive the test
            process.kill()
            process.communicate()
    assert process.returncode == 130 and "interrupted" in err, out + err
    assert "scheduler-error" not in out


def test_run_status_of_each_adversary_from_python(tiny: Path) -> None:
    """`run()` itself: every non-spinning adversary gets its status (spins need a watchdog: above)."""
    scenario = find_scenario(str(tiny))
    with watching_user_interrupts():
        for name, (cls, status) in CATALOGUE.items():
            if name in SPINS:
                continue
            result = run(scenario, cls(), 1)
            assert result.status.value == status, (name, result.error)
            if status != "completed":
                assert result.error and result.status is not RunStatus.COMPLETED
