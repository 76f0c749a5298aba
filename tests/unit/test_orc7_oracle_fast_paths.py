"""The oracles' fast paths give exactly the verdicts of the paths they short-cut (issue 27).

Each fast path skips work when a run's facts show it has nothing to find: serializability takes the
scenario's certain steps and their replay-memo key (`model_order.certain_steps`, `replays.Hashed`) and
no ghost effects when every call was reported ok; protocol skips its pairing checks when a batch
reported one result per call in model order, and reads a call's single attempt directly; liveness
skips its orphan walk when every attempt settled before its batch's answer; RunFacts reads an ok
`end` event without asking for the keys it lacks. Here every
run of the buggy-scheduler catalogue (and the correct built-in policies on the same scenarios), under
several seeds and jitters, is judged twice: once as `check` does, with the replay memo shared by every
run; once with each fast path switched off and no replay memo at all. The verdicts must be equal,
violation for violation, and the runs must take each fast path and its slow path both.
"""

from __future__ import annotations

import enum
import gc
import weakref
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from harness import Scenario, find_scenario, get_scheduler, run
from harness.faults.plan import FaultPlan
from harness.oracles import check, liveness, model_order, protocol, replays, serializability
from harness.oracles.anomalies import ghost_effects
from harness.oracles.facts import RunFacts
from harness.oracles.verdict import Verdict
from harness.run import RunResult
from harness.scheduling import Scheduler
from harness.sim import attempts as attempts_module
from harness.sim.trace import bytes_digest, canonical_bytes, value_digest
from tests.catalogue.cases import CASES, CORRECT

SEEDS = (1, 2, 3)
JITTERS = (0.0, 0.4)


#: Built-in scenarios whose calls read other calls' values (`args_from`), which the catalogue lacks.
ARGS_FROM = ("sales-report", "incident-ticket-notify")
#: Faults injected into every scenario in a second pass: torn writes (a step's `torn`), duplicates.
FAULTS = FaultPlan(torn_writes=0.5, duplicate_delivery=0.3)


def _pairs() -> Iterator[tuple[str, Scenario, Scheduler]]:
    scenarios: dict[str, Scenario] = {}
    for case in CASES:
        scenario = case.load()
        scenarios.setdefault(scenario.name, scenario)
        yield case.name, scenario, case.scheduler
    for name in ARGS_FROM:
        scenarios.setdefault(name, find_scenario(name))
    for scenario in scenarios.values():
        faulty = replace(scenario, faults=FAULTS)
        for name, scheduler in [*CORRECT, ("parallel", get_scheduler("parallel"))]:
            yield f"{name} on {scenario.name}", scenario, scheduler
            yield f"{name} on {scenario.name} with faults", faulty, scheduler


def _runs() -> Iterator[tuple[str, RunResult, RunResult]]:
    """Each run twice (the same seed: the same run), so neither judging reuses the other's facts."""
    for name, scenario, scheduler in _pairs():
        for seed in SEEDS:
            for jitter in JITTERS:
                first = run(scenario, scheduler, seed, jitter=jitter)
                second = run(scenario, scheduler, seed, jitter=jitter)
                assert first.fingerprint == second.fingerprint
                yield f"{name} seed {seed} jitter {jitter}", first, second


def _slow(result: RunResult, monkeypatch: pytest.MonkeyPatch) -> list[Verdict]:
    """`check(result)` with every fast path switched off and no replay remembered."""
    with monkeypatch.context() as patch:
        patch.setattr(model_order, "certain_steps", lambda facts: None)
        patch.setattr(serializability, "certain_steps", lambda facts: None)
        patch.setattr(RunFacts, "every_call_ok", property(lambda facts: False))
        patch.setattr(RunFacts, "attempts_by_call", property(lambda facts: {}))
        patch.setattr(protocol, "_one_each_in_order", lambda expected, in_model, reported: False)
        patch.setattr(liveness, "_settled_in_time", lambda facts: False)
        patch.setattr(attempts_module, "OK_END_KEYS", -1)

        def unremembered(initial: object, catalogue: object, calls: object, replay: Any) -> Any:
            return replay()

        patch.setattr(serializability, "remembered", unremembered)
        return check(result)


def test_every_fast_path_gives_the_slow_paths_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    replays.forget()
    taken = {"certain": 0, "every call ok, steps worked out": 0, "not every call ok": 0,
             "one result each in order": 0, "pairing judged": 0, "settled in time": 0, "orphans walked": 0}
    differing: list[str] = []
    for name, fast_run, slow_run in _runs():
        slow = _slow(slow_run, monkeypatch)
        fast = check(fast_run)
        assert RunFacts.of(fast_run).attempts == RunFacts.of(slow_run).attempts, name
        if fast != slow:
            differing.append(f"{name}: " + "; ".join(f"{a} != {b}" for a, b in zip(fast, slow, strict=True) if a != b))
        facts = RunFacts.of(fast_run)
        certain = model_order.certain_steps(facts)
        if certain is not None:
            taken["certain"] += 1
            steps = model_order.replay_steps_of(facts)
            assert list(certain.steps) == steps, name
            flat = tuple(x for s in steps for x in (s.call, s.key, s.torn, s.stopped_after))
            assert certain.calls == flat and flat == certain.calls and hash(certain.calls) == hash(flat), name
        elif facts.every_call_ok:
            taken["every call ok, steps worked out"] += 1
        else:
            taken["not every call ok"] += 1
        if facts.every_call_ok:
            assert list(ghost_effects(facts)) == [], name
        for batch_run in fast_run.batches:
            expected = list(batch_run.batch.ids)
            reported = [r.call_id for r in batch_run.results]
            key = "one result each in order" if protocol._one_each_in_order(expected, set(expected), reported) \
                else "pairing judged"
            taken[key] += 1
        taken["settled in time" if liveness._settled_in_time(facts) else "orphans walked"] += 1
    assert not differing, "\n".join(differing[:5])
    assert all(taken.values()), taken


def test_a_memo_key_hashed_once_is_the_tuple_it_holds() -> None:
    items = ("a", None, False, None, "b", "k", True, 2)
    hashed = replays.Hashed(items)
    assert hashed == items and items == hashed and hash(hashed) == hash(items) and len(hashed) == len(items)
    assert hashed != (*items[:-1], 3) and hashed != replays.Hashed((*items[:-1], 3))
    assert hashed != list(items)


def test_a_checked_run_is_freed_as_soon_as_its_last_user_drops_it() -> None:
    """The facts the oracles share refer back to their run weakly: no cycle keeps a checked run (its
    trace, world and facts) alive until the garbage collector happens to look."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = run(find_scenario("config-clobber"), get_scheduler("parallel"), 3)
        check(result)
        facts = RunFacts.of(result)
        assert facts.result is result and RunFacts.of(result) is facts
        gone = weakref.ref(result)
        del result
        assert gone() is None, "the checked run outlived its last reference"
        with pytest.raises(ReferenceError):
            facts.result  # noqa: B018 -- the read is the test
    finally:
        if was_enabled:
            gc.enable()


class _Colour(enum.Enum):
    RED = "red"


#: Values of every kind a scheduler may report: plain ones (orjson's bytes), floats, tuples and
#: non-str keys (json's), and ones JSON cannot spell (the same exception either way).
VALUES: tuple[object, ...] = (
    None, True, 1, 1.0, 1e-05, float("nan"), "1", "", "é\ud800", 1 << 70, [1, 2], (1, 2), {"a": 1, "b": [1.5, None]},
    {1: "x"}, {"path": "/repo/a.py", "content": "x" * 2000}, [{"t": i} for i in range(50)], _Colour.RED,
    {"c": _Colour.RED}, {1, 2}, b"bytes",
)


def test_a_remembered_digest_is_the_value_digest() -> None:
    """What protocol digests a reported value with (`value_digest`, remembered by the canonical bytes
    for short ones) is SHA-256 of those bytes, the first time and from the memo alike."""
    for _ in range(2):  # the second time from the memo
        for value in VALUES:
            try:
                expected: object = bytes_digest(canonical_bytes(value))
            except Exception as error:
                expected = type(error)
            try:
                got: object = value_digest(value)
            except Exception as error:
                got = type(error)
            assert got == expected, value
