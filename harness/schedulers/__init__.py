"""The old home of the scheduling contract, the built-in policies and the bridges (before issue 25's
layout): every name and submodule still imports, with a `DeprecationWarning` naming its new place.

Now: the contract in `harness.scheduling`, the policies and their registry in `harness.policies`, the
bridges in `harness.bridges`, diagnosis in `harness.diagnosis` (see `harness.moved`). Owns nothing.
"""

import importlib
from typing import Any

from harness.moved import install, warn_moved

install()

_NEW_HOME = {
    **dict.fromkeys(("CallHandle", "Scheduler", "SchedulerContext", "SchedulerProcess", "ExecutionPolicy", "Plan",
                     "PlanScheduler"), "harness.scheduling"),
    **dict.fromkeys(("BUILTIN_SCHEDULERS", "UnknownSchedulerError", "get_scheduler", "scheduler_names", "Serial",
                     "Parallel"), "harness.policies"),
    **dict.fromkeys(("ToolFailed", "from_asyncio", "from_threads", "from_gate", "from_plan"), "harness.bridges"),
}

__all__ = sorted(_NEW_HOME)


def __getattr__(name: str) -> Any:
    home = _NEW_HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warn_moved(f"{__name__}.{name}", f"{home}.{name}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # one warning a name: `from ... import` reads it twice
    return value
