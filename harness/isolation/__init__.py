"""Isolated runs: the user's code (scheduler, tools, models) in a child process the harness supervises.

`Supervisor(scheduler, ...)` starts one child per session (reused for many runs), sends it scenarios
and seeds, and rebuilds each `RunResult` from the plain data the child sends back, so the oracles run
in the parent, where the user's code cannot patch them. A child that spins past its deadline (even
ignoring SIGALRM), dies, forks, or leaves threads behind is killed with its whole process group; its
run becomes a `hang` or `scheduler-error` result. See docs/isolation.md.
"""

from harness.isolation.supervisor import GRACE_S, IsolatedRun, IsolationError, Limits, Supervisor, available

__all__ = ["GRACE_S", "IsolatedRun", "IsolationError", "Limits", "Supervisor", "available"]
