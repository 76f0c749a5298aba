"""Tools: the user's Python tools ran without failing in their own code.

Owns the label `tool-error`: an attempt of a Python tool whose code raised something other than
`ToolError`/`WorldError` (how a tool reports failure on purpose), or returned a value the harness
cannot record (NaN, a set, an object): see `harness.tools.guard`, which ends that call as an error
and marks its `end` event. The scheduler saw a failed call and is judged on the rest as usual; this
verdict says the run's input, the tool, is broken, so the run is never a pass and the exit code is
the tool's (6), never the scheduler's. It only reads the trace.
"""

from __future__ import annotations

from harness.oracles.facts import RunFacts
from harness.oracles.verdict import Kind, Verdict, Violation, passing
from harness.run import RunResult

NAME = "tools"

#: The passing verdict, made once: handed out without calling `Verdict.of` (a classmethod call per
#: oracle per checked run).
_PASSED = passing(NAME)
LABELS = ("tool-error",)


def check(result: RunResult) -> Verdict:
    if not RunFacts.of(result).tool_code:
        return _PASSED  # no attempt ended in its tool's own error: nothing to walk the trace for
    tools: dict[tuple[str, int], str] = {}
    violations = []
    for event in result.trace:
        ev = event.get("ev")
        if ev == "start":
            tools[(event["call"], event["attempt"])] = event["tool"]
        elif ev == "end" and event.get("tool_code"):
            call, attempt = event["call"], event["attempt"]
            tool = tools.get((call, attempt), "?")
            error = str(event.get("error", ""))
            violations.append(Violation(
                "tool-error", f"{call} (attempt {attempt}): {error}",
                {"call": call, "tool": tool, "attempt": attempt, "error": error, "at_ms": event["t"]}, Kind.TOOL))
    return Verdict.of(NAME, violations) if violations else _PASSED
