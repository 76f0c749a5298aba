"""The layer contract in pyproject.toml (`[tool.importlinter]`) holds, and it is a real check: the same
tree with one deliberately upward import breaks it, naming the import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    # `-c` puts the working directory first on sys.path: the `harness` checked is the one in `where`.
    return subprocess.run([sys.executable, "-c", LINT], cwd=where, capture_output=True, text=True, timeout=120)


def test_no_module_imports_a_layer_above_its_own() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    streams = tmp_path / "harness" / "sim" / "streams.py"
    streams.write_text(streams.read_text() + "\nfrom harness.report import plots  # the clock reaching for a report\n")
    done = _lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "harness.sim.streams -> harness.report.plots" in done.stdout
    assert "0 kept, 1 broken" in done.stdout
