"""A printed command names the PYTHONPATH its user modules came from, so it works in a fresh shell:
a directory this process searches (from PYTHONPATH, or put on sys.path by pytest) and a fresh
interpreter does not."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from harness.reproducers.replay import search_path_prefix


def _package(root: Path, name: str) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "policy.py").write_text("X = 1\n")


def test_a_module_found_through_pythonpath_is_named_with_its_directory(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    _package(here, "acme_sp")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(elsewhere), str(here), str(here)]))
    monkeypatch.syspath_prepend(str(elsewhere))
    monkeypatch.syspath_prepend(str(here))
    monkeypatch.delitem(sys.modules, "acme_sp", raising=False)
    monkeypatch.delitem(sys.modules, "acme_sp.policy", raising=False)
    # Not imported here (an isolated child imported it): found where this process would find it,
    # without importing it.
    assert search_path_prefix(["acme_sp.policy"]) == f"PYTHONPATH={here} "
    assert "acme_sp" not in sys.modules
    importlib.import_module("acme_sp.policy")
    # Only the directory the module came from, once, absolute; an installed module adds nothing.
    assert search_path_prefix(["acme_sp.policy", "simpy"]) == f"PYTHONPATH={here} "


def test_a_directory_pytest_put_on_the_path_is_named_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No PYTHONPATH at all: the module is importable here only because the test runner put its
    # directory on sys.path (rootdir insertion, `pythonpath = .`); `harness ...` in a shell would not.
    here = tmp_path / "project"
    here.mkdir()
    (here / "acme_sp3.py").write_text("class Policy: ...\n")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.syspath_prepend(str(here))
    monkeypatch.delitem(sys.modules, "acme_sp3", raising=False)
    importlib.import_module("acme_sp3")
    assert search_path_prefix(["acme_sp3"]) == f"PYTHONPATH={here} "


def test_what_a_fresh_interpreter_finds_adds_nothing() -> None:
    # harness itself (installed, or editable through a .pth entry) and an installed library.
    assert search_path_prefix(["harness.scheduling", "simpy", "hypothesis"]) == ""


def test_without_a_fresh_interpreter_to_ask_the_pythonpath_entries_stand_in(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.reproducers import command

    def unavailable(*args: object, **kwargs: object) -> None:
        raise OSError("no interpreter")

    here = tmp_path / "lib"
    here.mkdir()
    _package(here, "acme_sp4")
    monkeypatch.setattr(command, "_FRESH", [])
    monkeypatch.setattr(command.subprocess, "run", unavailable)
    monkeypatch.setenv("PYTHONPATH", str(here))
    monkeypatch.syspath_prepend(str(here))
    monkeypatch.delitem(sys.modules, "acme_sp4", raising=False)
    importlib.import_module("acme_sp4.policy")
    assert search_path_prefix(["acme_sp4.policy"]) == f"PYTHONPATH={here} "
    assert search_path_prefix(["simpy"]) == ""


def test_a_directory_with_spaces_is_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "my tests"
    here.mkdir()
    _package(here, "acme_sp2")
    monkeypatch.setenv("PYTHONPATH", str(here))
    monkeypatch.syspath_prepend(str(here))
    monkeypatch.delitem(sys.modules, "acme_sp2", raising=False)
    monkeypatch.delitem(sys.modules, "acme_sp2.policy", raising=False)
    importlib.import_module("acme_sp2.policy")
    assert search_path_prefix(["acme_sp2.policy"]) == f"PYTHONPATH='{here}' "
