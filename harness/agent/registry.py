"""The loop-policy registry: name -> policy, like the scheduler registry.

Owns name lookup (`taskloop`, `run_agent`, or `package.module:attribute` for a user's loop) and the
error for an unknown name, which lists the valid ones. It never runs a loop.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from harness.agent.run_agent import RunAgent
from harness.agent.runtime import LoopPolicy
from harness.agent.spec import AgentSpec
from harness.agent.taskloop import TaskLoop
from harness.sim.realtime import sigint_mark
from harness.tools.guard import described, users_ctrl_c

BUILTIN_LOOPS: dict[str, Callable[[], LoopPolicy]] = {"taskloop": TaskLoop, "run_agent": RunAgent}
DEFAULT_LOOP = "taskloop"


class UnknownLoopError(LookupError):
    def __init__(self, name: str, problem: str | None = None) -> None:
        super().__init__(f"{problem or f'unknown loop policy {name!r}'}; valid: {', '.join(loop_names())} "
                         "(or package.module:attribute for your own)")
        self.name = name


def loop_names() -> list[str]:
    return sorted(BUILTIN_LOOPS)


def loop_tools(name: str) -> tuple[str, ...]:
    """The tools a built-in loop answers itself (`taskloop`'s `recall`): a model under it may call them."""
    factory = BUILTIN_LOOPS.get(name)
    return tuple(getattr(factory, "LOOP_TOOLS", ())) if factory is not None else ()


def describe_loops() -> list[tuple[str, str, str]]:
    """(name, description, source) of every built-in loop."""
    rows = []
    for name in loop_names():
        policy = BUILTIN_LOOPS[name]()
        rows.append((name, str(getattr(policy, "description", "")), str(getattr(policy, "source", ""))))
    return rows


def loop_of(spec: AgentSpec) -> LoopPolicy:
    """The loop policy an agent runs: its `policy` object if it has one, else `get_loop(spec.loop)`."""
    if spec.policy is not None:
        return spec.policy  # type: ignore[no-any-return]
    return get_loop(spec.loop)


def get_loop(name: str) -> LoopPolicy:
    """A built-in loop policy by name, or a user's one as `package.module:attribute` (an instance, or a
    class / factory called with no arguments)."""
    factory = BUILTIN_LOOPS.get(name)
    if factory is not None:
        return factory()
    if ":" not in name:
        raise UnknownLoopError(name)
    module_name, _, attribute = name.partition(":")
    mark = sigint_mark()
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownLoopError(name, f"cannot load {name!r} ({exc})") from None
    except BaseException as exc:  # SystemExit too: the loop's module must not choose the exit code
        if users_ctrl_c(exc, mark):
            raise
        raise UnknownLoopError(name, f"cannot load the loop policy {name!r}: importing {module_name} raised "
                                     f"{described(exc)}") from None
    if isinstance(target, type) or (callable(target) and not hasattr(target, "name")):
        try:
            target = target()
        except BaseException as exc:  # sys.exit must not end the harness with exit 0
            if users_ctrl_c(exc, mark):
                raise
            raise UnknownLoopError(name, f"cannot build a loop policy from {name!r}: calling it with no "
                                         f"arguments raised {type(exc).__name__}: {exc}") from None
    if not callable(target):
        raise UnknownLoopError(name, f"{name!r} is not a loop policy")
    return target  # type: ignore[no-any-return]
