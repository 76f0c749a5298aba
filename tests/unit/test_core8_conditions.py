"""`FlatAllOf` / `FlatAnyOf` (harness.sim.conditions) are SimPy's `AllOf` / `AnyOf`: the same moment, the
same value, the same failure, the same callbacks left behind; whole runs make the same trace with SimPy's.

Each scripted case is played twice on fresh environments, once with SimPy's class and once with ours,
and everything observable is recorded: when the condition fires, its value's events (by name), whether
it failed and with what, what remains on each event's callbacks, and the attributes it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import simpy
from simpy.events import Condition

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.run import single
from harness.scheduling.context import SchedulerContext
from harness.sim.conditions import FlatAllOf, FlatAnyOf

Case = Callable[[simpy.Environment, type[Condition], list[Any]], None]


def _names(env: simpy.Environment, count: int) -> list[simpy.Event]:
    return [env.event() for _ in range(count)]


def _watch(env: simpy.Environment, condition: Condition, events: list[simpy.Event], seen: list[Any]) -> None:
    def waiter() -> Any:
        try:
            value = yield condition
            seen.append(("fired", env.now, [events.index(e) if e in events else repr(e) for e in value.events]))
        except Exception as exc:  # a failed condition hands its exception on
            seen.append(("failed", env.now, type(exc).__name__, str(exc)))

    env.process(waiter())


def _all_in_order(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    events = _names(env, 3)
    condition = kind(env, events)
    _watch(env, condition, events, seen)
    for delay, event in zip((3, 1, 2), events, strict=True):
        env.process(_succeed_after(env, event, delay))
    env.run()
    seen.append([len(e.callbacks or ()) for e in events])


def _succeed_after(env: simpy.Environment, event: simpy.Event, delay: int, fail: bool = False) -> Any:
    yield env.timeout(delay)
    if fail:
        event.fail(KeyError("boom"))
    else:
        event.succeed(delay)


def _one_fails(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    events = _names(env, 3)
    condition = kind(env, events)
    _watch(env, condition, events, seen)
    env.process(_succeed_after(env, events[0], 1))
    env.process(_succeed_after(env, events[1], 2, fail=True))
    env.process(_succeed_after(env, events[2], 3))
    try:
        env.run()
    except KeyError as exc:  # a failure nobody waits for any more (an `AnyOf` already fired) crashes the run
        seen.append(("crashed", env.now, str(exc)))
    seen.append([hasattr(e, "_defused") for e in events])


def _some_already_processed(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    events = _names(env, 3)
    events[1].succeed("early")
    env.run()
    condition = kind(env, events)
    _watch(env, condition, events, seen)
    env.process(_succeed_after(env, events[0], 4))
    env.run(until=2)
    seen.append([len(e.callbacks or ()) for e in events])  # still waiting: the checks are attached
    env.process(_succeed_after(env, events[2], 1))
    env.run()
    seen.append([len(e.callbacks or ()) for e in events])


def _nested(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    inner = _names(env, 2)
    events: list[simpy.Event] = [simpy.AllOf(env, inner), env.event()]
    condition = kind(env, events)
    _watch(env, condition, [*events, *inner], seen)
    env.process(_succeed_after(env, inner[0], 1))
    env.process(_succeed_after(env, inner[1], 2))
    env.process(_succeed_after(env, events[1], 3))
    env.run()


def _empty(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    condition = kind(env, [])
    _watch(env, condition, [], seen)
    env.run()


def _timeouts_and_processes(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    def worker(ms: int) -> Any:
        yield env.timeout(ms)
        return ms

    events: list[simpy.Event] = [env.process(worker(5)), env.timeout(2, "t"), env.process(worker(1))]
    condition = kind(env, events)
    _watch(env, condition, events, seen)
    env.run()
    seen.append(sorted(k for k in vars(condition) if k != "_flat"))
    seen.append(condition._evaluate is (Condition.all_events if isinstance(condition, simpy.AllOf)
                                        else Condition.any_events))


def _same_instant(env: simpy.Environment, kind: type[Condition], seen: list[Any]) -> None:
    """An event scheduled in the instant the condition is met, just before it: it is processed first."""
    events = _names(env, 2)
    for event in events:  # (any of: met by the first; all of: by the second)
        late = env.event()
        late.callbacks.append(lambda _, at=env: seen.append(("late", at.now)))
        event.callbacks.append(lambda _, late=late: late.succeed())  # before the condition's own check
    condition = kind(env, events)
    _watch(env, condition, events, seen)
    env.process(_succeed_after(env, events[0], 1))
    env.process(_succeed_after(env, events[1], 2))
    env.run()


CASES: list[Callable[..., None]] = [_same_instant, _all_in_order, _one_fails, _some_already_processed, _nested, _empty,
                                    _timeouts_and_processes]


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
@pytest.mark.parametrize(("simpys", "ours"), [(simpy.AllOf, FlatAllOf), (simpy.AnyOf, FlatAnyOf)],
                         ids=["all", "any"])
def test_the_flat_conditions_behave_as_simpys(case: Callable[..., None], simpys: type[Condition],
                                              ours: type[Condition]) -> None:
    expected: list[Any] = []
    case(simpy.Environment(), simpys, expected)
    got: list[Any] = []
    case(simpy.Environment(), ours, got)
    assert got == expected
    assert any(entry[0] in ("fired", "failed") for entry in got if isinstance(entry, tuple))


def test_mixing_environments_fails_as_simpys() -> None:
    one, other = simpy.Environment(), simpy.Environment()
    for kind in (FlatAllOf, FlatAnyOf):
        with pytest.raises(ValueError, match="not allowed to mix events"):
            kind(one, [one.event(), other.event()])


def test_runs_are_the_same_with_simpys_conditions(monkeypatch: pytest.MonkeyPatch) -> None:
    def as_simpy(result: Any) -> tuple[Any, ...]:
        waits = [batch.waits for batch in result.batches]
        return result.trace, result.fingerprint, result.status, result.makespan_ms, waits

    for scheduler in ("parallel", "serial", "resource_keys", "parallel_completion_order"):
        policy = get_scheduler(scheduler)
        for name in scenario_names():
            scenario = find_scenario(name)
            ours = as_simpy(run(scenario, policy, 2))
            with monkeypatch.context() as patched:
                patched.setattr(single, "FlatAnyOf", simpy.AnyOf)
                patched.setattr(SchedulerContext, "all_of", lambda self, events: simpy.AllOf(self.env, list(events)))
                patched.setattr(SchedulerContext, "any_of", lambda self, events: simpy.AnyOf(self.env, list(events)))
                theirs = as_simpy(run(scenario, policy, 2))
            assert ours == theirs, (name, scheduler)
