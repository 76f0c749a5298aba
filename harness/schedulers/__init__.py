"""Schedulers: the contract a policy implements and the built-in policies."""

from typing import TYPE_CHECKING

from harness.lazy import install

# Loaded when first read: asyncio comes with from_asyncio / ToolFailed only (see harness.lazy).
install(__name__, {
    **dict.fromkeys(("from_gate", "from_plan"), "harness.schedulers.adapters"),
    **dict.fromkeys(("ToolFailed", "from_asyncio"), "harness.schedulers.asyncio_adapter"),
    "from_threads": "harness.schedulers.bridge_threads",
    **dict.fromkeys(("CallHandle", "Scheduler", "SchedulerContext", "SchedulerProcess"),
                    "harness.schedulers.context"),
    "ExecutionPolicy": "harness.schedulers.execution",
    "Parallel": "harness.schedulers.parallel",
    **dict.fromkeys(("Plan", "PlanScheduler"), "harness.schedulers.plan"),
    **dict.fromkeys(("BUILTIN_SCHEDULERS", "UnknownSchedulerError", "get_scheduler", "scheduler_names"),
                    "harness.schedulers.registry"),
    "Serial": "harness.schedulers.serial",
})

if TYPE_CHECKING:
    from harness.schedulers.adapters import from_gate, from_plan
    from harness.schedulers.asyncio_adapter import ToolFailed, from_asyncio
    from harness.schedulers.bridge_threads import from_threads
    from harness.schedulers.context import CallHandle, Scheduler, SchedulerContext, SchedulerProcess
    from harness.schedulers.execution import ExecutionPolicy
    from harness.schedulers.parallel import Parallel
    from harness.schedulers.plan import Plan, PlanScheduler
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
    "ExecutionPolicy",
    "Parallel",
    "Plan",
    "PlanScheduler",
    "Scheduler",
    "SchedulerContext",
    "SchedulerProcess",
    "Serial",
    "ToolFailed",
    "UnknownSchedulerError",
    "from_asyncio",
    "from_gate",
    "from_plan",
    "from_threads",
    "get_scheduler",
    "scheduler_names",
]
