"""Issue 25's layout moved modules: every old import path still works, as the very module it became,
with a DeprecationWarning that names the new path and points at the user's own import line."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from harness.moved import MOVED, MOVED_NAMES


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_is_the_new_module_with_a_warning(old: str) -> None:
    code = (f"import importlib, warnings\nwarnings.simplefilter('error')\n"
            f"try:\n    import {old}\nexcept DeprecationWarning as w:\n    print('WARNED', w)\n"
            f"warnings.simplefilter('ignore')\nimport {old} as old\n"
            f"assert old is importlib.import_module({MOVED[old]!r}), old\nprint('SAME')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # The first warning is the outermost moved package's (`harness.schedulers.bridge_threads` before
    # its `.patches`): it is imported first.
    first = next(p for p in (".".join(old.split(".")[:n]) for n in range(2, old.count(".") + 2)) if p in MOVED)
    assert done.stderr == ""
    assert f"WARNED {first} moved to {MOVED[first]}" in done.stdout and "SAME" in done.stdout


def test_every_new_module_exists() -> None:
    for new in sorted(set(MOVED.values())):
        importlib.import_module(new)


def test_old_public_names_warn_at_the_users_line_and_are_the_same_objects() -> None:
    code = ("import warnings\nwarnings.simplefilter('always')\n"
            "from harness.schedulers import Scheduler, from_asyncio, get_scheduler\n"
            "import harness.scheduling, harness.bridges, harness.policies\n"
            "assert Scheduler is harness.scheduling.Scheduler and from_asyncio is harness.bridges.from_asyncio\n"
            "assert get_scheduler is harness.policies.get_scheduler\n"
            "from harness.scheduling.approvals import gate\n"
            "from harness.scheduling.approval_gate import gate as new_gate\n"
            "assert gate is new_gate\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    assert done.returncode == 0, done.stderr
    assert [line.split(": DeprecationWarning: ")[0] for line in lines] == ["<string>:3"] * 3 + ["<string>:7"]
    assert "harness.schedulers.from_asyncio moved to harness.bridges.from_asyncio" in done.stderr


def test_the_new_layout_itself_never_warns() -> None:
    code = ("import warnings\nwarnings.simplefilter('error')\n"
            "import harness\nfrom harness import run, find_scenario, get_scheduler\n"
            "import harness.cli, harness.testing, harness.bridges.asyncio, harness.bridges.threads\n"
            "run(find_scenario('config-clobber'), get_scheduler('parallel'), 3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")


def test_every_name_split_out_of_a_module_still_imports_from_it_with_a_warning() -> None:
    for module, names in sorted(MOVED_NAMES.items()):
        for name, new in sorted(names.items()):
            with pytest.warns(DeprecationWarning, match=f"{module}.{name} moved to {new}.{name}"):
                old = getattr(importlib.import_module(module), name)
            assert old is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        importlib.import_module("harness.world.world").no_such_name  # noqa: B018


def test_python_dash_m_of_an_old_path_runs_the_new_module() -> None:
    done = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-m", "harness.agent.crew"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "harness.agent.crew moved to harness.run.crew" in done.stderr and "Traceback" not in done.stderr


def test_the_docs_list_every_moved_path_and_name() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "moved.md").read_text()
    for old, new in MOVED.items():
        assert f"| `{old}` | `{new}` |" in page, old
    for module, names in MOVED_NAMES.items():
        for name, new in names.items():
            assert f"| `{module}` | `{name}` | `{new}` |" in page, (module, name)


def test_a_moved_name_imported_from_a_package_warns_once() -> None:
    # `from package import name` reads the name twice (the fromlist check, then the import itself).
    code = ("import warnings\nwarnings.simplefilter('always')\n"
            "from harness.run import Driver\nfrom harness.run import Driver\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("DeprecationWarning") == 1 and "<string>:3" in done.stderr
