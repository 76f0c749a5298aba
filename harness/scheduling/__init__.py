"""The scheduling contract: what a policy is given (`SchedulerContext`, `CallHandle`) and must give
back (`Scheduler`), plans and their gates (`Plan`, `PlanScheduler`), and how a runtime runs each call
once a plan lets it start (`ExecutionPolicy`, approvals, checkpoints).

Owns the contract only. The built-in policies that implement it live in `harness.policies`; real
runtimes come in through `harness.bridges`; what a hung batch waits on is read by `harness.diagnosis`.
"""

from typing import TYPE_CHECKING

from harness.lazy import install

install(__name__, {
    "CallHandle": "harness.scheduling.handle",
    **dict.fromkeys(("Scheduler", "SchedulerContext", "SchedulerProcess"), "harness.scheduling.context"),
    "ExecutionPolicy": "harness.scheduling.execution",
    **dict.fromkeys(("Plan", "PlanScheduler"), "harness.scheduling.plan"),
})

if TYPE_CHECKING:
    from harness.scheduling.context import Scheduler, SchedulerContext, SchedulerProcess
    from harness.scheduling.execution import ExecutionPolicy
    from harness.scheduling.handle import CallHandle
    from harness.scheduling.plan import Plan, PlanScheduler

__all__ = ["CallHandle", "ExecutionPolicy", "Plan", "PlanScheduler", "Scheduler", "SchedulerContext",
           "SchedulerProcess"]
