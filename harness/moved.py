"""Import paths that moved (issue 25's layout): each old module name still imports, as the module it
became, and each name that left a module still imports from it, each with a `DeprecationWarning` that
names the new path.

Owns the tables of old -> new module names and moved names, the import hook that serves the first
and the module `__getattr__` (`forward`) that serves the second. It never copies a module or a name:
an old path gives the very object of the new one, so `isinstance` checks, monkeypatching and pickling
by `__module__` behave as with the new path. The hook answers only the
names in the table and costs nothing until one of them is imported.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import warnings
from collections.abc import Callable, Sequence
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

def _names(new: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, new)


#: Names that left a module which still exists (issue 25's splits): module -> name -> its new module.
MOVED_NAMES: dict[str, dict[str, str]] = {
    # The old home of the contract, the policies and the bridges: its public names.
    "harness.schedulers": {
        **_names("harness.scheduling", "CallHandle", "ExecutionPolicy", "Plan", "PlanScheduler", "Scheduler",
                 "SchedulerContext", "SchedulerProcess"),
        **_names("harness.policies", "BUILTIN_SCHEDULERS", "Parallel", "Serial", "UnknownSchedulerError",
                 "get_scheduler", "scheduler_names"),
        **_names("harness.bridges", "ToolFailed", "from_asyncio", "from_gate", "from_plan", "from_threads"),
    },
    "harness.run": {**_names("harness.run.driver", "Driver"),
                    **_names("harness.run.batch", "Shared", "crash_event", "drain", "end_batch", "scheduler_of")},
    "harness.report.explain": _names("harness.report.races", "race_label", "racing_touches"),
    "harness.report.likelihood": {**_names("harness.report.witness_needs", "RACES"),
                                  **_names("harness.report.likelihood_values", "UNLIKELY_BELOW")},
    "harness.scenario.load": {**_names("harness.scenario.reader", "MAX_DEPTH"),
                              **_names("harness.scenario.tools_load", "NEW_TOOL_DECLARED")},
    "harness.scheduling.approvals": _names("harness.scheduling.approval_gate", "asked_by_the_tool", "gate",
                                           "refused"),
    "harness.bridges.asyncio.bridge": _names("harness.bridges.asyncio.settling", "SKIPPED_BY_BRIDGE"),
    "harness.bridges.threads.primitives": {
        **_names("harness.bridges.threads.virtual_time", "EPOCH_S", "monotonic_ns", "perf_counter",
                 "perf_counter_ns", "sleep", "time", "time_ns"),
        **_names("harness.bridges.threads.queues", "Future", "SimpleQueue"),
        **_names("harness.bridges.threads.thread", "Thread", "Timer", "current_thread"),
        **_names("harness.bridges.threads.host", "HOST", "active_count", "cpu_count", "declare",
                 "enumerate_threads", "machine", "process_cpu_count", "sched_getaffinity", "undeclare"),
    },
    "harness.world.world": {**_names("harness.world.resolution", "DEFER", "MAX_SYMLINK_HOPS"),
                            **_names("harness.world.paths", "NAME_MAX", "PATH_MAX", "absolute_path", "expand_user"),
                            **_names("harness.world.errors", "null_byte_error")},
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


def forward(module: str) -> Callable[[str], Any]:
    """The module-level `__getattr__` of `module`: a name in `MOVED_NAMES` loads from the module it moved
    to, with a warning; any other missing name is the usual AttributeError."""
    names = MOVED_NAMES[module]

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_moved(f"{module}.{name}", f"{new}.{name}")
        value = getattr(importlib.import_module(new), name)
        # One warning a name: `from package import name` reads it twice (the fromlist check, then the import).
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__


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

    def get_code(self, fullname: str) -> types.CodeType | None:
        # `python -m harness.replay`: runpy runs the code of the module the name moved to.
        import importlib.util  # only for `python -m` of an old name: `import harness` never pays for it

        new = MOVED[fullname]
        warn_moved(fullname, new)
        spec = importlib.util.find_spec(new)
        loader = spec.loader if spec is not None else None
        get_code = getattr(loader, "get_code", None)
        return get_code(new) if get_code is not None else None


def install() -> None:
    """Serve the old names (idempotent)."""
    if _Alias not in sys.meta_path:
        sys.meta_path.insert(0, _Alias)
