"""harness: a deterministic simulation and chaos-testing harness for schedulers of LLM tool-call
batches.

The public API is deliberately small::

    from harness import find_scenario, get_scheduler, run

    result = run(find_scenario("config-clobber"), get_scheduler("parallel"), seed=3)
    result.makespan_ms, result.fingerprint, result.results

Write your own policy against `Scheduler` / `SchedulerContext` (see README). Importing this package
never imports pandas or matplotlib.
"""

from typing import TYPE_CHECKING

from harness import moved
from harness.lazy import install

__version__ = "0.1.0"

# Each public name loads its module when first read: `import harness` stays a few milliseconds and
# `harness --help` never pays for SimPy, pyfakefs or asyncio (see harness.lazy).
install(__name__, {
    **dict.fromkeys(("Batch", "CallResult", "Outcome", "ToolCall"), "harness.model"),
    **dict.fromkeys(("RunResult", "RunStatus", "run"), "harness.run"),
    **dict.fromkeys(("Scenario", "ScenarioError", "find_scenario", "load_scenario", "scenario_names"),
                    "harness.scenario"),
    **dict.fromkeys(("Scheduler", "SchedulerContext"), "harness.scheduling"),
    **dict.fromkeys(("get_scheduler", "scheduler_names"), "harness.policies"),
})
moved.install()  # old module paths still import, with a DeprecationWarning (see harness.moved)

if TYPE_CHECKING:
    from harness.model import Batch, CallResult, Outcome, ToolCall
    from harness.policies import get_scheduler, scheduler_names
    from harness.run import RunResult, RunStatus, run
    from harness.scenario import Scenario, ScenarioError, find_scenario, load_scenario, scenario_names
    from harness.scheduling import Scheduler, SchedulerContext

__all__ = [
    "Batch",
    "CallResult",
    "Outcome",
    "RunResult",
    "RunStatus",
    "Scenario",
    "ScenarioError",
    "Scheduler",
    "SchedulerContext",
    "ToolCall",
    "__version__",
    "find_scenario",
    "get_scheduler",
    "load_scenario",
    "run",
    "scenario_names",
    "scheduler_names",
]
