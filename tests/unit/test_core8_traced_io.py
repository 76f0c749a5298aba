"""`TracedIO`'s own `path`, `read` and `read_resolved` (touches written inline) record what `ToolIO`'s
methods record through `_touch` and `_file_touch`, touch for touch.

`Generic` is `TracedIO` with `ToolIO`'s three methods back: every operation runs on both, each over its
own copy of the same world (lean and pyfakefs, with aliases: a symlink, a hard link, `~`, `..`, a
missing file, a directory), and the traces, answers and errors must be equal. Whole runs of every
built-in scenario are compared too, with attempts making the generic kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.scheduling import attempt
from harness.scheduling.traced_io import TracedIO
from harness.sim.kernel import Kernel
from harness.tools.spec import ToolIO
from harness.world import World
from harness.world.choice import pyfakefs_worlds
from harness.world.state import WorldState


class Generic(TracedIO):
    """`TracedIO` without its inlined operations: `ToolIO`'s, over `TracedIO`'s `_touch` / `_file_touch`."""

    __slots__ = ()

    path = ToolIO.path
    read = ToolIO.read
    read_resolved = ToolIO.read_resolved


def _state() -> WorldState:
    world = World(cwd="/repo", home="/home/ann")
    world.populate(files=[("/repo/a.txt", "alpha\n"), ("/repo/src/b.py", "x = 1\n"),
                          ("/home/ann/notes", "n\n"), ("/repo/big.txt", "y" * 5000)])
    world.symlink("/repo/link.txt", "/repo/a.txt")
    world.symlink("/repo/srcl", "/repo/src")
    world.hardlink("/repo/src/b.py", "/repo/hard.py")
    return world.state()


OPERATIONS: list[tuple[str, str]] = [
    ("path", "a.txt"), ("path", "/repo/a.txt"), ("path", "~/notes"), ("path", "src/../a.txt"), ("path", "./x/y"),
    ("path", "a\x00b"), ("read", "a.txt"), ("read", "/repo/a.txt"), ("read", "link.txt"), ("read", "srcl/b.py"),
    ("read", "hard.py"), ("read", "src/b.py"), ("read", "~/notes"), ("read", "missing.txt"), ("read", "src"),
    ("read", "big.txt"), ("read", "src/../a.txt"), ("read", "a.txt/x"), ("read_resolved", "/repo/a.txt"),
    ("read_resolved", "/repo/link.txt"), ("read_resolved", "/repo/srcl/b.py"), ("read_resolved", "/repo/hard.py"),
    ("read_resolved", "/repo/big.txt"), ("read_resolved", "/repo/nothing"), ("read_resolved", "/repo//a.txt"),
]


def _outcomes(kind: type[TracedIO], lean: bool) -> tuple[list[Any], list[dict[str, Any]]]:
    kernel = Kernel(1)
    state = _state()
    if lean:
        world = World.from_state(state)
    else:
        with pyfakefs_worlds():
            world = World.from_state(state)
    io = kind(world, "c1", 2, kernel.trace.events, kernel.env, "key")
    answers: list[Any] = []
    for name, raw in OPERATIONS:
        operation: Callable[[str], str] = getattr(io, name)
        try:
            answers.append(operation(raw))
        except Exception as exc:  # the error is part of what must agree
            answers.append((type(exc).__name__, str(exc)))
    return answers, kernel.trace.events


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "pyfakefs"])
def test_inlined_operations_record_what_the_generic_ones_record(lean: bool) -> None:
    fast, generic = _outcomes(TracedIO, lean), _outcomes(Generic, lean)
    assert fast == generic
    events = fast[1]
    assert [list(event) for event in events] == [list(event) for event in generic[1]]  # key order too
    assert any("as" in event for event in events)  # the aliases' way was taken
    assert sum(1 for event in events if event["target"] == "session:cwd") >= 10


def test_runs_are_the_same_with_the_generic_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    for scheduler in ("serial", "parallel"):
        policy = get_scheduler(scheduler)
        for name in scenario_names():
            scenario = find_scenario(name)
            fast = run(scenario, policy, 5)
            with monkeypatch.context() as patched:
                patched.setattr(attempt, "TracedIO", Generic)
                generic = run(scenario, policy, 5)
            assert fast.trace == generic.trace, name
            assert (fast.fingerprint, fast.status, fast.makespan_ms) == (
                generic.fingerprint, generic.status, generic.makespan_ms), name
