"""Importing and building a `module:attr` scheduler happens before any run's wall-clock budget, under
a limit of its own (`--import-timeout`, `import_timeout_s`): a runtime whose import takes longer than
`--wall-timeout` (openai-agents took minutes on a loaded CI machine) is run, not declared hung.

The modules sleep at import: real time, outside any run (no simulation is open while they import).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.explore.engine import explore
from harness.scenario import find_scenario
from harness.sim.realtime import ImportTimeout
from harness.testing import check_scheduler

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the watchdog needs SIGALRM")

ROOT = Path(__file__).resolve().parents[2]

#: Longer than the wall timeout the tests give each run (1 s), short enough to keep them quick.
SLOW = """\
import time

time.sleep({seconds})  # real time: no run is open while a module imports

from harness.policies import get_scheduler

scheduler = get_scheduler("parallel")
"""


def _slow_module(directory: Path, name: str, seconds: float = 2.0) -> str:
    (directory / f"{name}.py").write_text(SLOW.format(seconds=seconds))
    return f"{name}:scheduler"


def _harness(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=directory, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_slow_import_is_not_the_run_s_hang(tmp_path: Path) -> None:
    spec = _slow_module(tmp_path, "slow_runtime")
    done = _harness(tmp_path, "run", "incident-triage", "--scheduler", spec, "--wall-timeout", "1", "--seed", "7")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED" in done.stdout and done.stderr == ""


def test_an_import_slower_than_its_own_limit_is_reported_as_one(tmp_path: Path) -> None:
    spec = _slow_module(tmp_path, "slower_runtime")
    done = _harness(tmp_path, "run", "incident-triage", "--scheduler", spec, "--wall-timeout", "60",
                    "--import-timeout", "0.5")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.startswith("harness: import timeout: importing and building the scheduler "
                                  "slower_runtime:scheduler took more than 0.5 s of real time"), done.stderr
    assert "--import-timeout" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_an_import_that_raises_names_the_module(tmp_path: Path) -> None:
    (tmp_path / "broken_runtime.py").write_text("raise RuntimeError('no API key')\n")
    done = _harness(tmp_path, "run", "incident-triage", "--scheduler", "broken_runtime:scheduler")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot load 'broken_runtime:scheduler' (RuntimeError: no API key)" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_scheduler_does_not_charge_the_import_to_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = _slow_module(tmp_path, "slow_for_check", seconds=1.5)
    report = check_scheduler(spec, scenarios=["incident-triage"], profile="quick", generated=False, swarm=False,
                             wall_timeout_s=0.5)
    assert report.scheduler == spec and report.scenarios[0].runs > 0
    with pytest.raises(ImportTimeout, match="importing and building the scheduler slower_for_check"):
        check_scheduler(_slow_module(tmp_path, "slower_for_check", seconds=1.5), scenarios=["incident-triage"],
                        profile="quick", generated=False, swarm=False, import_timeout_s=0.3)


def test_worker_processes_import_before_their_first_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker imports the module afresh (a forkserver's children do not inherit it): under the
    import limit, not the first run's."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    spec = _slow_module(tmp_path, "slow_in_workers", seconds=1.5)
    exploration = explore(find_scenario("incident-triage"), spec, "random", runs=4, seed=5, processes=2,
                          wall_timeout_s=0.5, shrink=False)
    assert exploration.runs == 4 and exploration.found is None

