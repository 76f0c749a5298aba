"""The command that replays a reproducer, as printed: it works from any directory, in a fresh shell.

Owns which modules a reproducer names (a `module:attr` scheduler's, the scenario's tool modules;
installed catalogues are not listed), the `PYTHONPATH=` prefix those modules need when this process
found them somewhere a fresh `harness` process would not look, and the `harness replay FILE
--trust-module ...` line itself. It never imports a module it names and never replays.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from harness.reproducers.code_identity import package_roots


def replay_command(path: Path | str | None, modules: tuple[str, ...] | list[str], *,
                   trust: tuple[str, ...] | list[str] | None = None, scheduler: str | None = None,
                   expect: str | None = None) -> str:
    """`harness replay FILE` with `--trust-module` for each of `trust` (default: `modules`, those the
    replay imports), `--scheduler` and `--expect`, prefixed with the `PYTHONPATH=` that `modules`
    need. FILE is absolute and every argument is shell-quoted, so the line works as printed from any
    directory."""
    file = shlex.quote(os.path.abspath(path)) if path is not None else "FILE"
    flags = "".join(f" --trust-module {shlex.quote(module)}" for module in (modules if trust is None else trust))
    if scheduler is not None:
        flags += f" --scheduler {shlex.quote(scheduler)}"
    if expect is not None:
        flags += f" --expect {shlex.quote(expect)}"
    return f"{search_path_prefix(modules)}harness replay {file}{flags}"


def modules_named(scheduler: str, tools_modules: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    from harness.policies import BUILTIN_SCHEDULERS
    from harness.tools.modules import entry_point_names

    named = [] if scheduler in BUILTIN_SCHEDULERS or ":" not in scheduler else [scheduler.partition(":")[0]]
    installed = set(entry_point_names()) if tools_modules else set()
    named += [m for m in tools_modules if m not in installed]
    return tuple(dict.fromkeys(named))


def search_path_prefix(modules: tuple[str, ...] | list[str]) -> str:
    """`PYTHONPATH=DIRS ` when some of `modules` were imported from a directory that a fresh `harness`
    process would not search (one this process got from PYTHONPATH, or that pytest put on `sys.path`
    for a package beside the user's tests), else "": a printed command then works, as printed, in a
    fresh shell. The directories are absolute, in `sys.path` order. A module not imported here (an
    isolated child imported it) is looked up without importing it; installed ones add nothing."""
    # The directory each top-level package or module was imported from: what PYTHONPATH must hold.
    roots = []
    for module in modules:
        loaded = sys.modules.get(module.partition(".")[0])
        if loaded is None:  # imported elsewhere (an isolated child): where this process would find it
            roots += package_roots(module.partition(".")[0])
            continue
        package = next(iter(getattr(loaded, "__path__", ())), None)
        location = package if isinstance(package, str) else getattr(loaded, "__file__", None)
        if isinstance(location, str):
            roots.append(os.path.dirname(os.path.abspath(location)))
    if not roots:
        return ""
    # Only a directory on this process's search path counts (one an import hook serves, as some
    # editable installs do, is found by a fresh process too).
    entries = list(dict.fromkeys(os.path.abspath(e) for e in sys.path if e))
    fresh = _fresh_search_path()
    needed = [entry for entry in entries if entry in roots and entry not in fresh]
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(needed))} " if needed else ""


_FRESH: list[frozenset[str]] = []


def _fresh_search_path() -> frozenset[str]:
    """The directories a fresh interpreter of this installation searches without PYTHONPATH (site
    packages, editable installs' .pth entries, the standard library): asked of one, once a process,
    and only when a printed command names a module of the user's. If it cannot be asked, the
    directories this process did not get from PYTHONPATH stand in."""
    if not _FRESH:
        try:
            done = subprocess.run([sys.executable, "-E", "-c", "import sys, json; print(json.dumps(sys.path[1:]))"],
                                  capture_output=True, text=True, timeout=30, check=True, cwd=os.sep)
            found = frozenset(os.path.abspath(e) for e in json.loads(done.stdout) if e)
        except (OSError, subprocess.SubprocessError, ValueError):
            told = {os.path.abspath(e) for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e}
            found = frozenset(os.path.abspath(e) for e in sys.path if e and os.path.abspath(e) not in told)
        _FRESH.append(found)
    return _FRESH[0]

