"""A printed command names the PYTHONPATH its user modules came from, so it works in a fresh shell."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from harness.replay import search_path_prefix


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
    monkeypatch.syspath_prepend(str(here))
    monkeypatch.delitem(sys.modules, "acme_sp", raising=False)
    monkeypatch.delitem(sys.modules, "acme_sp.policy", raising=False)
    assert search_path_prefix(["acme_sp.policy"]) == ""  # not imported yet: nothing known
    importlib.import_module("acme_sp.policy")
    # Only the directory the module came from, once, absolute; an installed module adds nothing.
    assert search_path_prefix(["acme_sp.policy", "simpy"]) == f"PYTHONPATH={here} "
    monkeypatch.delenv("PYTHONPATH")
    assert search_path_prefix(["acme_sp.policy"]) == ""  # on the path some other way: nothing to add


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
