"""The built-in scheduling policies, one module each, and the registry that names them.

Each module is one policy as a real runtime or a seed article writes it (`serial`, `parallel`,
`partition`, `rwlock`, `lanes`, `grouped`, `dag`, `resource_keys`, `hermes_gate`, `hermes_segments`,
`optimal`), except `hermes_paths`, the path rules both hermes policies share. `registry` maps a
`--scheduler` name (or `module:attr`) to a scheduler. Policies implement `harness.scheduling`'s
contract and never reach into the run, the oracles or the reports.
"""

from typing import TYPE_CHECKING

from harness.lazy import install

install(__name__, {
    **dict.fromkeys(("BUILTIN_SCHEDULERS", "UnknownSchedulerError", "get_scheduler", "scheduler_names"),
                    "harness.policies.registry"),
    "Parallel": "harness.policies.parallel",
    "Serial": "harness.policies.serial",
})

if TYPE_CHECKING:
    from harness.policies.parallel import Parallel
    from harness.policies.registry import BUILTIN_SCHEDULERS, UnknownSchedulerError, get_scheduler, scheduler_names
    from harness.policies.serial import Serial

__all__ = ["BUILTIN_SCHEDULERS", "Parallel", "Serial", "UnknownSchedulerError", "get_scheduler", "scheduler_names"]
