"""`Waiters` (harness.sim.waiters) is an event's callbacks list with constant-time `remove` and `in`:
every operation SimPy and the harness use gives what a list gives, and a wide batch's runs are the same
runs whichever of the two holds the batch's shared stop signals' callbacks."""

from __future__ import annotations

from typing import Any

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from harness import get_scheduler, run, scheduler_names
from harness.faults.failures import FailureModel
from harness.model import Batch
from harness.scenario import Scenario
from harness.scenario.spec import Interrupt
from harness.scheduling import runtime
from harness.scheduling.execution import ExecutionPolicy
from harness.sim.kernel import Limits
from harness.sim.waiters import MANY_WAITERS, Waiters, many_waiters
from harness.world import World


class _Owner:
    def check(self, event: Any) -> None: ...


class _Unhashable:
    """A callable equal to every other of its kind and without a hash (`__eq__` without `__hash__`)."""

    def __init__(self, tag: int) -> None:
        self.tag = tag

    def __call__(self, event: Any) -> None: ...

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable) and other.tag == self.tag


_OWNERS = [_Owner(), _Owner()]
#: Bound methods made afresh on every access (equal, not identical), plain functions, and unhashable
#: callables equal to one another: each kind of equality `list.remove` and `in` go by.
_POOL: list[Any] = [lambda: _OWNERS[0].check, lambda: _OWNERS[1].check, lambda: print, lambda: len,
                    lambda: _Unhashable(1), lambda: _Unhashable(2)]

_operation = st.one_of(
    st.tuples(st.just("append"), st.integers(0, len(_POOL) - 1)),
    st.tuples(st.just("remove"), st.integers(0, len(_POOL) - 1)),
    st.tuples(st.just("in"), st.integers(0, len(_POOL) - 1)),
    st.tuples(st.just("index"), st.integers(0, len(_POOL) - 1)),
    st.tuples(st.just("get"), st.integers(-8, 8)),
    st.tuples(st.just("set"), st.integers(-8, 8), st.integers(0, len(_POOL) - 1)),
    st.tuples(st.just("slice"), st.integers(0, 8)),
)


def _apply(target: Any, operation: tuple[Any, ...]) -> Any:
    """What `operation` returns on `target` (a list or a `Waiters`), or the exception type it raises."""
    kind = operation[0]
    try:
        if kind == "append":
            return target.append(_POOL[operation[1]]())
        if kind == "remove":
            return target.remove(_POOL[operation[1]]())
        if kind == "in":
            return _POOL[operation[1]]() in target
        if kind == "index":
            return target.index(_POOL[operation[1]]())
        if kind == "get":
            return target[operation[1]]
        if kind == "set":
            target[operation[1]] = _POOL[operation[2]]()
            return None
        return target[operation[1]:]
    except (ValueError, IndexError) as exc:
        return type(exc)


@given(st.lists(st.integers(0, len(_POOL) - 1), max_size=6), st.lists(_operation, max_size=40))
def test_waiters_answer_as_a_list_does(start: list[int], operations: list[tuple[Any, ...]]) -> None:
    plain = [_POOL[i]() for i in start]
    waiters = Waiters(plain)
    for operation in operations:
        assert _apply(waiters, operation) == _apply(plain, operation), operation
        assert list(waiters) == plain
        assert len(waiters) == len(plain) and bool(waiters) == bool(plain)


def test_many_waiters_keeps_an_events_callbacks_and_their_order() -> None:
    env = simpy.Environment()
    event = env.event()
    seen: list[str] = []
    for name in "abc":
        event.callbacks.append(lambda _, name=name: seen.append(name))
    assert many_waiters(event) is event and type(event.callbacks) is Waiters
    waiter = _Owner()
    event.callbacks.append(waiter.check)
    event.callbacks.remove(waiter.check)  # another bound method, equal: removed as a list would
    event.succeed()
    env.run()
    assert seen == ["a", "b", "c"]
    assert many_waiters(event) is event and event.callbacks is None  # processed: nothing to keep


def _wide(name: str, n: int, **fields: Any) -> Scenario:
    """A batch of `n` reads and writes over a few files, with `fields` (interrupt, execution, failures)."""
    world = World(cwd="/repo")
    world.populate(files=[(f"/repo/src/f{i}.py", f"v = -{i}\n") for i in range(7)])
    calls = [(f"c{i}", "write_file", {"path": f"src/f{i % 7}.py", "content": f"v = {i}\n"}) if i % 4 == 3
             else (f"c{i}", "read_file", {"path": f"src/f{i % 7}.py"}) for i in range(n)]
    return Scenario(name=name, batches=(Batch.of(calls),), world=world.state(),
                    limits=Limits(time_bound_ms=600_000, event_budget=40 * n + 10_000), **fields)


_FLAKY = {"read_file": FailureModel(rate=0.05), "write_file": FailureModel(rate=0.05)}
_WIDE = [
    _wide("interrupted", 96, interrupt=Interrupt(at_ms=150, grace_ms=40)),
    _wide("interrupt-polled", 96, interrupt=Interrupt(at_ms=150, grace_ms=40),
          execution=ExecutionPolicy(poll_interval_ms=70)),
    _wide("cancel-siblings", 96, tool_failures=_FLAKY,
          execution=ExecutionPolicy(on_failure="cancel_siblings", timeout_ms=150, retries=1, backoff_ms=10)),
    _wide("deadline", 96, tool_failures=_FLAKY, execution=ExecutionPolicy(batch_deadline_ms=260, retries=2)),
]


@pytest.mark.parametrize("scenario", _WIDE, ids=[s.name for s in _WIDE])
def test_a_wide_batch_runs_the_same_with_a_list_or_waiters(scenario: Scenario,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[simpy.Event] = []

    def counted(event: simpy.Event) -> simpy.Event:
        made.append(event)
        return many_waiters(event)

    monkeypatch.setattr(runtime, "many_waiters", counted)
    assert len(scenario.batches[0].calls) >= MANY_WAITERS
    names = [name for name in scheduler_names() if name != "serial"]
    with_waiters = {(name, seed): _observed(run(scenario, get_scheduler(name), seed))
                    for name in names for seed in (1, 2, 3)}
    assert made, "no scheduler put the batch's signals in Waiters: the comparison would prove nothing"
    monkeypatch.setattr(runtime, "MANY_WAITERS", 10 ** 9)
    made.clear()
    with_lists = {(name, seed): _observed(run(scenario, get_scheduler(name), seed))
                  for name in names for seed in (1, 2, 3)}
    assert not made
    assert with_waiters == with_lists


def _observed(result: Any) -> tuple[Any, ...]:
    return (result.fingerprint, result.status, result.makespan_ms,
            tuple((r.call_id, r.outcome, r.error) for batch in result.batches for r in batch.results))
