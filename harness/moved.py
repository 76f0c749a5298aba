"""Import paths that moved (issue 25's layout): each old module name still imports, as the module it
became, with a `DeprecationWarning` that names the new path.

Owns the table of old -> new module names and the import hook that serves it. It never copies or
re-exports names: an old path gives the very module object of the new one, so `isinstance` checks,
monkeypatching and pickling by `__module__` behave as with the new path. The hook answers only the
names in the table and costs nothing until one of them is imported.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from typing import Any

_POLICIES = ("serial", "parallel", "partition", "rwlock", "lanes", "grouped", "dag", "resource_keys", "hermes_gate",
             "hermes_paths", "hermes_segments", "optimal", "registry")
_CONTRACT = ("context", "plan", "gates", "execution", "runtime", "approvals", "checkpoints")
_ASYNCIO = ("asking", "blocking", "bridge", "calls", "loop", "results", "threads", "toolbox")
_THREADS = ("adapter", "patches", "primitives", "reaper", "results", "turnstile")

#: Old module name -> the module it is now (the release after issue 25 drops the old names).
MOVED: dict[str, str] = {
    "harness.realtime": "harness.sim.realtime",
    "harness.replay": "harness.reproducers.replay",
    "harness.code_identity": "harness.reproducers.code_identity",
    "harness.example_db": "harness.testing.example_db",
    "harness.workers": "harness.distribute.workers",
    "harness.cluster": "harness.distribute.cluster",
    "harness.agent.crew": "harness.run.crew",
    "harness.agent.runner": "harness.run.turns",
    "harness.agent.options": "harness.cli.loop",
    "harness.transcripts.command": "harness.cli.transcripts",
    **{f"harness.schedulers.{name}": f"harness.scheduling.{name}" for name in _CONTRACT},
    **{f"harness.schedulers.{name}": f"harness.policies.{name}" for name in _POLICIES},
    "harness.schedulers.asyncio_adapter": "harness.bridges.asyncio",
    "harness.schedulers.bridge_asyncio": "harness.bridges.asyncio",
    **{f"harness.schedulers.bridge_asyncio.{name}": f"harness.bridges.asyncio.{name}" for name in _ASYNCIO},
    "harness.schedulers.bridge_threads": "harness.bridges.threads",
    **{f"harness.schedulers.bridge_threads.{name}": f"harness.bridges.threads.{name}" for name in _THREADS},
    "harness.schedulers.adapters": "harness.bridges.planners.adapters",
    "harness.schedulers.world_view": "harness.bridges.planners.world_view",
    "harness.schedulers.naming": "harness.bridges.naming",
    "harness.schedulers.bridged_clock": "harness.bridges.clock",
    "harness.schedulers.start_order": "harness.bridges.start_order",
    "harness.schedulers.leftovers": "harness.bridges.leftovers",
    "harness.schedulers.waits": "harness.run.hang",
    "harness.schedulers.origins": "harness.diagnosis.origins",
}

_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_moved(old: str, new: str) -> None:
    """Warn, at the user's line that imported `old`, that it is now `new`."""
    warnings.warn(f"{old} moved to {new}; the old name will be removed in a later release",
                  DeprecationWarning, stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    # The first frame outside the import machinery and the harness: the user's `import` statement.
    # `warnings` itself never counts the import machinery's frames, so neither does this.
    frame, level = sys._getframe(2), 2
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            frame = frame.f_back  # type: ignore[assignment]
        elif name.startswith(_HARNESS_DIR):
            frame, level = frame.f_back, level + 1  # type: ignore[assignment]
        else:
            break
    return level


class _Alias:
    """Finder and loader in one: an old name loads as the module it moved to."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> ModuleSpec | None:
        if fullname not in MOVED:
            return None
        package = any(key.startswith(fullname + ".") for key in MOVED)
        return ModuleSpec(fullname, cls(), is_package=package)  # type: ignore[arg-type]

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)  # a placeholder: exec_module puts the real module in its place

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED[module.__name__]
        warn_moved(module.__name__, new)
        # The import system returns whatever sys.modules holds under the old name once this returns.
        sys.modules[module.__name__] = importlib.import_module(new)


def install() -> None:
    """Serve the old names (idempotent)."""
    if _Alias not in sys.meta_path:
        sys.meta_path.insert(0, _Alias)
