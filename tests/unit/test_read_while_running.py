"""A large run's attempts are read while it runs, and that reading is the reading after it.

From `LARGE_CALLS` calls, the kernel hands its trace to an `AttemptReader` every `READ_EVERY` steps
and the result keeps the reader, so judging does not walk the trace again (`harness.sim.attempts`).
Here the threshold is forced down to every run, and the reads to every few steps: on the
buggy-scheduler catalogue and the correct policies, the facts must be the reference reading's field
for field, the fingerprint and every verdict those of the same run read afterwards, and a reader that
cannot read an event, or a result holding another trace, must leave judging to read the trace itself.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from harness import Batch, RunStatus, Scenario, find_scenario, get_scheduler, run
from harness.oracles import check
from harness.oracles.facts import RunFacts
from harness.run import RunResult, single
from harness.run.result import READ_WHILE_RUNNING
from harness.scheduling import SchedulerContext
from harness.sim import kernel
from harness.sim.attempts import AttemptReader
from harness.sim.realtime import WallClockExceeded
from tests.unit.test_orc8_facts_read import catalogue_runs, random_trace, same


def _forced(monkeypatch: pytest.MonkeyPatch, every: int) -> None:
    monkeypatch.setattr(single, "LARGE_CALLS", 1)
    monkeypatch.setattr(kernel, "READ_EVERY", every)


def _reader(result: RunResult) -> AttemptReader | None:
    found = result.__dict__.get(READ_WHILE_RUNNING)
    assert found is None or isinstance(found, AttemptReader)
    return found


def _without_reader(result: RunResult) -> RunResult:
    """The same run as a result that never had a reader (`replace` keeps only the fields)."""
    again = replace(result)
    assert _reader(again) is None
    return again


@pytest.mark.parametrize("every", [1, 3, 1_024])
def test_catalogue_runs_read_while_running_are_read_as_afterwards(monkeypatch: pytest.MonkeyPatch,
                                                                   every: int) -> None:
    afterwards = {name: result for name, result in catalogue_runs()}
    _forced(monkeypatch, every)
    read_while_running = 0
    for name, result in catalogue_runs():
        before = afterwards[name]
        assert result.fingerprint == before.fingerprint, name  # reading changes nothing a run does
        reader = _reader(result)
        if result.scenario.agents or result.source is not None:
            assert reader is None, name  # several agents, or a model's turns: read afterwards
            continue
        assert reader is not None and reader.read(result.trace), name
        read_while_running += 1
        same(result, name)  # the reference reading of the trace, field for field
        assert check(result) == check(_without_reader(result)) == check(before), name
    assert read_while_running > 50


def _batch(calls: int) -> Scenario:
    base = find_scenario("compare-three-files")
    call = base.batches[0].calls[0]
    return replace(base, name="wide",
                   batches=(Batch.of([(f"c{i}", call.name, call.arguments) for i in range(calls)]),))


@pytest.mark.parametrize("policy", ["serial", "parallel"])
def test_a_large_run_keeps_the_reader_that_read_all_of_its_trace(policy: str) -> None:
    result = run(_batch(single.LARGE_CALLS), get_scheduler(policy), 3, jitter=0.5)
    reader = _reader(result)
    assert reader is not None and reader.fed == len(result.trace) and reader.last is result.trace[-1]
    facts = RunFacts.of(result)
    assert facts.attempts is reader.attempts  # adopted, not read again
    same(result, policy)
    assert check(result) == check(_without_reader(result))
    small = run(_batch(single.LARGE_CALLS - 1), get_scheduler(policy), 3, jitter=0.5)
    assert _reader(small) is None  # a small run is read when judged, and only then


def test_a_result_holding_another_trace_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    _forced(monkeypatch, 2)
    result = run(find_scenario("compare-three-files"), get_scheduler("parallel"), 1)
    reader = _reader(result)
    assert reader is not None
    shorter = result.trace[:-1]
    swapped = (*shorter, dict(result.trace[-1]))  # as long, another last event
    for trace in (shorter, swapped):
        other = replace(result, trace=trace)
        other.__dict__[READ_WHILE_RUNNING] = reader  # as if it had kept the reader
        assert not reader.read(trace)
        facts = RunFacts(other)
        assert facts.attempts is not reader.attempts
        same(other, "another trace")


class _RecordsItsOwnEvent:
    """A scheduler that records an `interrupt` event of its own, without the fields the runner's has."""

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Iterator[Any]:
        ctx.kernel.record("interrupt", why="mine")
        results = []
        for call in batch:
            results.append((yield ctx.settle(ctx.start(call))))
        return results


def test_a_reader_that_cannot_read_an_event_leaves_judging_to_read_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = find_scenario("compare-three-files")
    unread = run(scenario, _RecordsItsOwnEvent(), 1)
    _forced(monkeypatch, 1)
    result = run(scenario, _RecordsItsOwnEvent(), 1)
    assert result.fingerprint == unread.fingerprint and result.status == unread.status
    assert _reader(result) is None
    with pytest.raises(KeyError):  # what judging said of that trace before runs read their own
        RunFacts(unread)
    with pytest.raises(KeyError):
        RunFacts(result)


_READ = ("attempts", "interrupts", "batch_end_seq", "skipped", "skips", "crash_t", "tool_code", "keyed", "kinds",
         "latest", "fed")


def test_a_trace_read_in_pieces_is_read_as_in_one() -> None:
    """Random traces full of what a well-behaved context never writes (events before their start, a
    second handle of one attempt, abandons twice), fed whole and fed in pieces of 1 to 7 events."""
    rng = random.Random(1024)
    calls = [("a", "read_file"), ("b", "write_file"), ("c", "read_file")]
    several = 0
    for _ in range(600):
        trace = random_trace(rng, calls, rng.randint(0, 60))
        whole, pieces = AttemptReader(lambda call: "t"), AttemptReader(lambda call: "t")
        whole.feed(trace)
        upto = 0
        while upto < len(trace):
            upto += rng.randint(1, 7)
            pieces.feed(trace[:upto])  # the recorder's list as it grows
        pieces.feed(trace)  # nothing new: nothing read twice
        for name in _READ:
            assert getattr(pieces, name) == getattr(whole, name), name
        assert pieces.attempts_by_call() == whole.attempts_by_call()
        assert whole.read(trace) and pieces.read(trace)
        several += whole.attempts_by_call() is None
    assert several  # traces where a call has two attempts were among them


def test_the_watchdog_landing_in_a_read_still_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall-clock watchdog raises its expiry wherever the run's thread is: inside the reader it
    must go on up as from anywhere else (the run ends as hung), not be taken for an unreadable event."""
    _forced(monkeypatch, 1)
    scenario = find_scenario("compare-three-files")
    fed = AttemptReader.feed
    reads = [0]

    def expiring(reader: AttemptReader, events: Any) -> None:
        reads[0] += 1
        if reads[0] == 3:
            raise WallClockExceeded("real time ran out")
        fed(reader, events)

    monkeypatch.setattr(AttemptReader, "feed", expiring)
    result = run(scenario, get_scheduler("serial"), 1)
    assert reads[0] >= 3 and result.wall_clock_exceeded and result.status is RunStatus.HANG
    assert _reader(result) is None  # partly read: judging reads the trace itself
    same(result, "stopped while reading")
