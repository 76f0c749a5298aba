"""Schedulers: the contract a policy implements and the built-in policies."""

from harness.schedulers.context import CallHandle, Scheduler, SchedulerContext, SchedulerProcess
from harness.schedulers.parallel import Parallel
from harness.schedulers.registry import (
    BUILTIN_SCHEDULERS,
    UnknownSchedulerError,
    get_scheduler,
    scheduler_names,
)
from harness.schedulers.serial import Serial

__all__ = [
    "BUILTIN_SCHEDULERS",
    "CallHandle",
    "Parallel",
    "Scheduler",
    "SchedulerContext",
    "SchedulerProcess",
    "Serial",
    "UnknownSchedulerError",
    "get_scheduler",
    "scheduler_names",
]
