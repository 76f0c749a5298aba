"""The built-in scheduler registry: name -> factory, with a one-line description each.

Owns name lookup and the error for an unknown name (which lists the valid ones). It never runs a
scheduler.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from harness.schedulers.context import Scheduler
from harness.schedulers.dag import Dag
from harness.schedulers.grouped import Grouped
from harness.schedulers.hermes_gate import HermesGate
from harness.schedulers.hermes_segments import HermesSegments
from harness.schedulers.lanes import Lanes
from harness.schedulers.optimal import Optimal
from harness.schedulers.parallel import Parallel
from harness.schedulers.partition import Partition, PartitionCancel
from harness.schedulers.resource_keys import ResourceKeys
from harness.schedulers.rwlock import RwLock
from harness.schedulers.serial import Serial


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
                         RwLock, Lanes, Optimal)),
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


def _import_scheduler(spec: str) -> Scheduler:
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
        target = getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownSchedulerError(spec, scheduler_names(), f"cannot load {spec!r} ({exc})") from None
    if isinstance(target, type) or (callable(target) and not hasattr(target, "name")):
        target = target()
    if not callable(target):
        raise UnknownSchedulerError(spec, scheduler_names(), f"{spec!r} is not a scheduler")
    return target  # type: ignore[no-any-return]
