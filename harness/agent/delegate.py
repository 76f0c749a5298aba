"""`delegate`: the tool a parent agent calls to hand a task to a subagent of its crew.

Owns the tool's spec. A `delegate` call starts the `[[agents]]` entry it names (one declared
`delegated = true`, which does not start on its own) and ends when that agent's task ends; its value
is how the task ended (`agent`, `status`, `answer`, `rounds`, `tool_calls`), which the parent's
model reads like any result (Claude Code's Task tool, a parent delegating to subagents). The
subagent's own calls run through its own runtime on the shared world, so two subagents delegated in
one batch work at once. The executor (`SchedulerContext`) does the starting and waiting; this
module never runs an agent. A scenario gets the tool when one of its agents is delegated.
"""

from __future__ import annotations

from collections.abc import Generator

from harness.faults.latency import Fixed
from harness.model import JSONValue
from harness.tools.params import Parameters
from harness.tools.spec import Args, Declared, SideEffect, ToolIO, ToolSpec

NAME = "delegate"


def _returns_what_the_subagent_did(args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
    # Never driven in a run (the executor runs the subagent instead); a replay returns the recorded
    # outcome of the subagent's task (the realized scenario keeps it as the call's result).
    return None
    yield 0.0  # a generator, like every behaviour


SPEC = ToolSpec(
    NAME,
    "Delegate a task to a subagent of the crew: {\"agent\": NAME, \"task\": TEXT}; returns how its task ended.",
    # Whatever the subagent does is its own calls' effects: the delegating call itself touches nothing.
    Declared(read_only=False, side_effect=SideEffect.LOCAL, idempotent=False, honours_cancel=False,
             category="agent"),
    _returns_what_the_subagent_did,
    Fixed(0),
    stops_on_cancel=False,
    delegates=True,
    parameters=Parameters.of(agent="string", task="string?"),
)
