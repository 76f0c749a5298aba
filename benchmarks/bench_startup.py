"""Start-up time: `import harness`, the public API, and `harness --help`, in fresh interpreters.

Prints one JSON object and writes it to benchmarks/results/bench_startup.json. Bytecode is compiled
first and the children run without PYTHONDONTWRITEBYTECODE (a user's installed package has its .pyc
files); each figure is the median of `--runs` fresh processes:

- `import_harness_ms`: `import harness`, timed inside the child (interpreter start-up excluded);
- `import_api_ms`: `from harness import run, find_scenario, get_scheduler` the same way (what a
  script needs before its first run: SimPy, pyfakefs and the tool catalogue);
- `check_import_ms`: wall time of `python -c "from harness.testing import check_scheduler"` (what a
  test module checking a policy imports), and `check_import_over_bare_python`, its ratio to `python -c
  pass` measured beside it (issue 27's target: at most 5);
- `help_ms`: wall time of `harness --help` (the console script, else `python -m harness`), start-up
  of the interpreter included, and `bare_python_ms`, the wall time of `python -c pass` beside it
  (site-packages' .pth files run there too: what no package can save);
- `*_ratio`: target / measured (>= 1 meets issue 13's targets: import <= 80 ms, --help <= 150 ms).

Usage: python benchmarks/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _figures import emit

ROOT = Path(__file__).resolve().parents[1]
IMPORT_TARGET_MS, HELP_TARGET_MS = 80.0, 150.0
CHECK_IMPORT_TARGET_RATIO = 5.0  # `from harness.testing import check_scheduler` / `python -c pass`

_TIMED = "import time; t = time.perf_counter()\n{statement}\nprint((time.perf_counter() - t) * 1000)"


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def timed_import(statement: str, runs: int) -> float:
    """Median milliseconds of `statement` measured inside `runs` fresh interpreters."""
    values = [float(subprocess.run([sys.executable, "-c", _TIMED.format(statement=statement)], env=child_env(),
                                   cwd=ROOT, capture_output=True, text=True, check=True).stdout)
              for _ in range(runs)]
    return statistics.median(values)


def wall(command: list[str], runs: int) -> float:
    """Median wall-clock milliseconds of running `command` to its end, `runs` times."""
    values = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=child_env(), cwd=ROOT, capture_output=True, check=True)
        values.append((time.perf_counter() - start) * 1000)
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="fresh processes per figure (the median is reported)")
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "harness"), quiet=1)
    script = shutil.which("harness")
    help_command = [script, "--help"] if script else [sys.executable, "-m", "harness", "--help"]
    bare = wall([sys.executable, "-c", "pass"], args.runs)
    import_ms = timed_import("import harness", args.runs)
    api_ms = timed_import("from harness import run, find_scenario, get_scheduler", args.runs)
    help_ms = wall(help_command, args.runs)
    check_ms = wall([sys.executable, "-c", "from harness.testing import check_scheduler"], args.runs)
    figures = {
        "benchmark": "start-up in fresh interpreters (median; bytecode compiled)",
        "python": platform.python_version(),
        "runs": args.runs,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "import_harness_ms": round(import_ms, 1),
        "import_harness_target_ms": IMPORT_TARGET_MS,
        "import_harness_ratio": round(IMPORT_TARGET_MS / import_ms, 2),
        "import_api_ms": round(api_ms, 1),
        "import_api_ratio": round(IMPORT_TARGET_MS / api_ms, 2),
        "help_ms": round(help_ms, 1),
        "help_target_ms": HELP_TARGET_MS,
        "help_ratio": round(HELP_TARGET_MS / help_ms, 2),
        "check_import_ms": round(check_ms, 1),
        "check_import_over_bare_python": round(check_ms / bare, 2),
        "check_import_target_ratio": CHECK_IMPORT_TARGET_RATIO,
        "bare_python_ms": round(bare, 1),
        "help_over_bare_python_ms": round(help_ms - bare, 1),
        "help_command": " ".join(Path(help_command[0]).name if i == 0 else part for i, part in enumerate(help_command)),
    }
    emit("bench_startup", figures)


if __name__ == "__main__":
    main()
