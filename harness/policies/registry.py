"""The built-in scheduler registry: name -> factory, with a one-line description each.

Owns name lookup and the error for an unknown name (which lists the valid ones), and resolving a
`package.module:attribute` name before any run (`build_scheduler`, `preload`: importing a real
runtime is never charged to a run's wall-clock budget). It never runs a scheduler.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.policies.dag import Dag
from harness.policies.grouped import Grouped
from harness.policies.hermes_gate import HermesGate
from harness.policies.hermes_segments import HermesSegments
from harness.policies.lanes import Lanes
from harness.policies.mcp_hints import McpHints, McpHintsRetry
from harness.policies.optimal import Optimal
from harness.policies.parallel import Parallel
from harness.policies.partition import Partition, PartitionCancel
from harness.policies.resource_keys import ResourceKeys
from harness.policies.rwlock import RwLock
from harness.policies.serial import Serial
from harness.scheduling.context import Scheduler
from harness.sim.realtime import resolve_import_timeout, watched_build


@dataclass(frozen=True, slots=True)
class SchedulerEntry:
    name: str
    description: str
    source: str
    factory: Callable[[], Scheduler]


class UnknownSchedulerError(LookupError):
    def __init__(self, name: str, valid: list[str], problem: str | None = None) -> None:
        super().__init__(f"{problem or f'unknown scheduler {name!r}'}; valid: {', '.join(valid)} "
                         "(or package.module:attribute for your own)")
        self.name, self.valid = name, valid


BUILTIN_SCHEDULERS: dict[str, SchedulerEntry] = {
    entry.name: entry
    for entry in (
        SchedulerEntry("serial", Serial.description, "no parallelism", Serial),
        SchedulerEntry("parallel", "every call at once, results in model order", "LangGraph ToolNode, AutoGen",
                       Parallel),
        SchedulerEntry("parallel_completion_order", "every call at once, results in completion order",
                       "smolagents, goose", lambda: Parallel(order="completion")),
        *(SchedulerEntry(policy.name, policy.description, policy.source, policy)
          for policy in (HermesGate, HermesSegments, ResourceKeys, Grouped, Dag, Partition, PartitionCancel,
                         RwLock, Lanes, Optimal, McpHints, McpHintsRetry)),
    )
}


def scheduler_names() -> list[str]:
    return sorted(BUILTIN_SCHEDULERS)


def get_scheduler(name: str) -> Scheduler:
    """A built-in scheduler by name, or a user's one as `package.module:attribute`.

    The attribute may be a scheduler instance or a class / factory called with no arguments.
    """
    entry = BUILTIN_SCHEDULERS.get(name)
    if entry is not None:
        return entry.factory()
    if ":" in name:
        return _import_scheduler(name)
    raise UnknownSchedulerError(name, scheduler_names())


def build_scheduler(name: str, import_timeout_s: float | None = None) -> Scheduler:
    """`get_scheduler(name)` under the import limit (`import_timeout_s`; None: the default, 600 s; 0:
    none), raising `harness.sim.realtime.ImportTimeout` when importing and building take longer. Every
    command and API resolves a name this way before arming a run's wall-clock watchdog. A built-in
    name is built directly: nothing to import, and a constructor of the harness's own (a sweep builds
    one per cell, and a watchdog around each cost more than the building)."""
    if name in BUILTIN_SCHEDULERS:
        return get_scheduler(name)
    return watched_build(lambda: get_scheduler(name), resolve_import_timeout(import_timeout_s),
                         f"importing and building the scheduler {name}")


def preload(name: str, import_timeout_s: float | None = None) -> None:
    """Import the module a `package.module:attribute` name points into, under the import limit, so
    that building it later (inside a run's budget) imports nothing; nothing for a built-in name. A
    module that cannot be imported raises the `UnknownSchedulerError` `get_scheduler` would."""
    if name in BUILTIN_SCHEDULERS or not _SPEC.fullmatch(name) or name.partition(":")[0] in sys.modules:
        return
    watched_build(lambda: _attribute(name), resolve_import_timeout(import_timeout_s),
                  f"importing the scheduler {name}")


def _required_arguments(function: Callable[..., Any]) -> list[str]:
    """The positional parameters `function` cannot be called without (none if it has no signature)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in positional and p.default is inspect.Parameter.empty]


_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_SPEC = re.compile(f"{_DOTTED}:{_DOTTED}")


def _attribute(spec: str) -> Any:
    """The attribute `spec` names, its module imported."""
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as exc:  # the user's module: whatever its import raises is theirs to see
        # The module itself (or its package) not found: say where it is looked for, as the tools
        # module's error does; a module it imports that is missing is the module's own problem.
        hint = (" (is it installed or on PYTHONPATH?)" if isinstance(exc, ModuleNotFoundError) and exc.name
                and (module_name == exc.name or module_name.startswith(exc.name + ".")) else "")
        raise UnknownSchedulerError(spec, scheduler_names(),
                                    f"cannot load {spec!r} ({type(exc).__name__}: {exc}{hint})") from None
    return target


def _import_scheduler(spec: str) -> Scheduler:
    if not _SPEC.fullmatch(spec):
        raise UnknownSchedulerError(spec, scheduler_names(), f"{spec!r} is not package.module:attribute")
    module_name, _, attribute = spec.partition(":")
    target = _attribute(spec)
    if isinstance(target, type) or (callable(target) and not hasattr(target, "name")):
        needed = _required_arguments(target) if inspect.isroutine(target) else []
        short = attribute.rpartition('.')[2]
        if needed and inspect.iscoroutinefunction(target):  # an asyncio executor (tool_calls, tools)
            raise UnknownSchedulerError(spec, scheduler_names(), (
                f"{spec!r} is a coroutine function of ({', '.join(needed)}), not a scheduler: an asyncio "
                f"executor is wrapped first, `my_policy = from_asyncio({short})` "
                f"(from harness.bridges import from_asyncio), then --scheduler {module_name}:my_policy"))
        if needed:
            raise UnknownSchedulerError(spec, scheduler_names(), (
                f"{spec!r} is a function of ({', '.join(needed)}), not a scheduler or a factory of one: a gate "
                "(tool_calls -> bool) or a planner (tool_calls -> segments) must be wrapped first, e.g. "
                f"`my_policy = from_gate({short})` or from_plan(...), a thread-pool executor with "
                f"from_threads(...) (from harness.bridges import from_gate, from_plan, from_threads), then "
                f"--scheduler {module_name}:my_policy"))
        try:
            target = target()
        except (Exception, SystemExit) as exc:  # sys:exit must not end the harness with exit 0
            raise UnknownSchedulerError(spec, scheduler_names(), f"cannot build a scheduler from {spec!r}: calling "
                                        f"it with no arguments raised {type(exc).__name__}: {exc}") from None
    if not callable(target):
        raise UnknownSchedulerError(spec, scheduler_names(), f"{spec!r} is not a scheduler (it built "
                                    f"{type(target).__name__}, which cannot be called with a batch and a context)")
    name = getattr(target, "name", "")
    if not isinstance(name, str):
        raise UnknownSchedulerError(spec, scheduler_names(), f"{spec!r} built {type(target).__name__} whose `name` "
                                    f"is {type(name).__name__}, not a string (it names the scheduler in traces)")
    return target  # type: ignore[no-any-return]
