"""`AttemptProcess` (harness.scheduling.handle) is SimPy's `Process` with the scheduling of its end written
out: every built-in scenario runs the same with SimPy's own `Process` in its place, and generators that
end, fail, are interrupted, wait on processed events or yield garbage do the same under both."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest
import simpy

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.scheduling import context
from harness.scheduling.handle import AttemptProcess

Script = Callable[[simpy.Environment], Generator[Any, Any, Any]]


def _ends(env: simpy.Environment) -> Generator[Any, Any, Any]:
    yield env.timeout(3)
    done = env.event().succeed("now")
    got = yield done  # triggered, not processed: waits for it
    env.run  # noqa: B018 (nothing: a step between yields)
    yield env.timeout(0)
    marker = env.event()  # an event of the same instant, scheduled just before the end: it comes first
    marker.callbacks.append(lambda event: env.seen.append("marker"))  # type: ignore[attr-defined]
    marker.succeed()
    return got


def _fails(env: simpy.Environment) -> Generator[Any, Any, Any]:
    yield env.timeout(2)
    raise ValueError("broken")


def _catches_a_failed_event(env: simpy.Environment) -> Generator[Any, Any, Any]:
    failing = env.event()
    failing.fail(KeyError("k"))
    try:
        yield failing
    except KeyError as exc:
        return f"caught {exc}"
    return "not caught"


def _interrupted(env: simpy.Environment) -> Generator[Any, Any, Any]:
    try:
        yield env.timeout(10)
    except simpy.Interrupt as interrupt:
        return f"interrupted by {interrupt.cause} at {env.now}"
    return "never"


def _garbage(env: simpy.Environment) -> Generator[Any, Any, Any]:
    yield env.timeout(1)
    yield 42


SCRIPTS: list[Script] = [_ends, _fails, _catches_a_failed_event, _interrupted, _garbage]


def _play(kind: type[simpy.Process], script: Script) -> list[Any]:
    env = simpy.Environment()
    seen: list[Any] = []
    env.seen = seen  # type: ignore[attr-defined]
    process = kind(env, script(env))
    process.callbacks.append(lambda event: seen.append(("ended", env.now, event._ok, repr(event._value))))
    if script is _interrupted:
        def interrupter() -> Generator[Any, Any, None]:
            yield env.timeout(4)
            process.interrupt("the user")

        env.process(interrupter())
    try:
        env.run()
    except Exception as exc:  # a failure nobody waited for crashes the run, as SimPy's does
        seen.append(("crashed", env.now, type(exc).__name__, str(exc).replace(__file__, "<here>")))
    seen.append((process.is_alive, process._target is None, len(env._queue)))
    if not getattr(process, "_ok", True) and isinstance(process._value, BaseException):
        trace = process._value.__traceback__
        seen.append(trace.tb_frame.f_code.co_name if trace is not None else None)  # the resume frame stripped
    return seen


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.__name__ for script in SCRIPTS])
def test_an_attempt_process_does_what_simpys_does(script: Script) -> None:
    ours, theirs = _play(AttemptProcess, script), _play(simpy.Process, script)
    assert ours == theirs
    assert len(ours) >= 2


def test_runs_are_the_same_with_simpys_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for scheduler in ("parallel", "serial", "resource_keys", "hermes_segments"):
        policy = get_scheduler(scheduler)
        for name in scenario_names():
            scenario = find_scenario(name)
            ours = run(scenario, policy, 6)
            with monkeypatch.context() as patched:
                patched.setattr(context, "AttemptProcess", simpy.Process)
                theirs = run(scenario, policy, 6)
            assert (ours.trace, ours.fingerprint, ours.status, [b.waits for b in ours.batches]) == (
                theirs.trace, theirs.fingerprint, theirs.status, [b.waits for b in theirs.batches]), (name, scheduler)
