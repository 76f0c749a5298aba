"""The built-in scheduler registry: name -> factory, with a one-line description each.

Owns name lookup and the error for an unknown name (which lists the valid ones). It never runs a
scheduler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.schedulers.context import Scheduler
from harness.schedulers.parallel import Parallel
from harness.schedulers.serial import Serial


@dataclass(frozen=True, slots=True)
class SchedulerEntry:
    name: str
    description: str
    source: str
    factory: Callable[[], Scheduler]


class UnknownSchedulerError(LookupError):
    def __init__(self, name: str, valid: list[str]) -> None:
        super().__init__(f"unknown scheduler {name!r}; valid: {', '.join(valid)}")
        self.name, self.valid = name, valid


BUILTIN_SCHEDULERS: dict[str, SchedulerEntry] = {
    entry.name: entry
    for entry in (
        SchedulerEntry("serial", Serial.description, "no parallelism", Serial),
        SchedulerEntry("parallel", "every call at once, results in model order", "LangGraph ToolNode, AutoGen",
                       Parallel),
        SchedulerEntry("parallel_completion_order", "every call at once, results in completion order",
                       "smolagents, goose", lambda: Parallel(order="completion")),
    )
}


def scheduler_names() -> list[str]:
    return sorted(BUILTIN_SCHEDULERS)


def get_scheduler(name: str) -> Scheduler:
    entry = BUILTIN_SCHEDULERS.get(name)
    if entry is None:
        raise UnknownSchedulerError(name, scheduler_names())
    return entry.factory()
