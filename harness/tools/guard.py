"""A Python tool's own code, judged as the tool's: what it raises and what it returns.

Owns `ToolCodeError`, `guarded` (a user's behaviour wrapped so that an exception it raises, or a
value the harness cannot record, ends that call as an error of the tool's code instead of escaping
into the scheduler as if the scheduler had raised) and `recordable`, the check on returned values.
Real tools fail, so the scheduler still sees a failed call and is judged on how it handles it, as a
runtime would see a tool that raised; the trace marks the attempt (`tool_code`), and the tools
oracle reports it as `tool-error`, so the run is never a pass and never the scheduler's fault.

A `ToolError` or a `WorldError` (a missing file) is how a tool reports failure on purpose: it goes
through untouched, as does cancellation (`GeneratorExit`), a real Ctrl-C and the wall-clock
watchdog. The harness's own tools (modules under `harness.`, declared tools' scripts) are never
wrapped: an exception there is a harness bug. It never decides when a call runs.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Generator
from typing import Any

from harness.model import JSONValue
from harness.sim.realtime import WallClockExceeded, aborts, sigint_mark
from harness.tools.spec import Args, Behaviour, ToolError, ToolIO
from harness.world.errors import WorldError


class ToolCodeError(ToolError):
    """A Python tool's code raised (anything but `ToolError`/`WorldError`) or returned a value the
    harness cannot record. The call ends as an error with this message; the trace marks it."""

    def __init__(self, tool: str, module: str, problem: str) -> None:
        super().__init__(tool, module, problem)  # rebuilt as type(exc)(*exc.args) (SimPy, pickle)
        self.tool, self.module, self.problem = tool, module, problem

    def __str__(self) -> str:
        return f"tool {self.tool!r} ({self.module}) {self.problem}"


def user_code(behaviour: object) -> bool:
    """Whether a behaviour is the user's code (not the harness's own tools or a declared tool's script)."""
    return not str(getattr(behaviour, "__module__", None) or "").startswith("harness.")


def recordable(value: Any, depth: int = 0) -> str | None:
    """What makes `value` impossible to record as a call's result (None: nothing). A result is JSON:
    strings, finite numbers, booleans, null, lists and objects with string keys (a tuple counts as a
    list). A set, NaN, an object, a key that is not a string are not."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"the number {value!r} (JSON has no NaN or infinity)"
    if depth > 200:
        return "a value nested more than 200 levels deep"
    if isinstance(value, list | tuple):
        for item in value:
            problem = recordable(item, depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a key that is not a string ({type(key).__name__})"
            problem = recordable(item, depth + 1)
            if problem is not None:
                return problem
        return None
    return f"a value of type {type(value).__name__}"


def described(exc: BaseException) -> str:
    """`Type: first line of the message` (200 characters at most), or the type alone."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return type(exc).__name__ + (f": {text[:200]}" if text else "")


def users_ctrl_c(exc: BaseException, mark: int) -> bool:
    """Whether `exc` is the user's Ctrl-C (see `harness.sim.realtime.aborts`; `mark`: the SIGINT count
    when the user's code was entered) rather than a `KeyboardInterrupt` the user's code raised itself.
    With SIGINT ignored (nohup, CI runners) no Ctrl-C can arrive, so it is the code's."""
    return aborts(exc, mark) and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN


class Guarded:
    """`behaviour` (a user's), whose failures are the tool's (`ToolCodeError`)."""

    __slots__ = ("behaviour", "module", "tool")

    def __init__(self, behaviour: Behaviour, tool: str) -> None:
        self.behaviour, self.tool = behaviour, tool
        self.module = str(getattr(behaviour, "__module__", None) or "?")

    def __call__(self, args: Args, io: ToolIO) -> Generator[float, None, JSONValue]:
        mark = sigint_mark()
        try:
            steps = self.behaviour(args, io)
            if not isinstance(steps, Generator):
                raise ToolCodeError(self.tool, self.module, f"returned {type(steps).__name__}, not a generator "
                                    "(a tool's behaviour is a generator function: it yields latency fractions)")
            value = yield from steps
        except (ToolError, WorldError, GeneratorExit, WallClockExceeded):
            raise
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the harness must not end
            if users_ctrl_c(exc, mark):
                raise
            raise ToolCodeError(self.tool, self.module, f"raised {described(exc)}") from None
        problem = recordable(value)
        if problem is not None:
            raise ToolCodeError(self.tool, self.module, f"returned {problem}, which the harness cannot record "
                                "as a result (a JSON value)")
        return value
