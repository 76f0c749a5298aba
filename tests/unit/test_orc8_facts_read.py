"""RunFacts reads a trace as the straightforward reading does (issue 27's cheaper oracles).

`RunFacts._read` finds an event's attempt by its call first (`latest`) and by (call, attempt) only
for the others (`older`), keeps `latest` as the `attempts_by_call` index when no call has two
attempts, and reads the touch events from the trace only when asked. Here the reading it replaced,
kept below as it was (one dict keyed by (call, attempt), every touch collected as it passes, the
index built from the attempts), is the reference: on every run of the buggy-scheduler catalogue and
the correct policies, and on random traces full of what a well-behaved context never writes (a second
handle of one attempt, events before their start, abandons twice, attempts out of order), both must
find the same attempts, field for field and in the same order, and the same everything else.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from harness import get_scheduler, run
from harness.oracles import exclusivity, liveness
from harness.oracles.facts import Attempt, RunFacts
from harness.run import RunResult
from harness.sim.attempts import OK_END_KEYS
from harness.sim.trace import TraceEvent
from tests.catalogue.cases import CASES, CORRECT


def reference_read(result: RunResult) -> dict[str, Any]:
    """What `RunFacts._read` found before it looked attempts up by call (its code, as it was)."""
    facts: dict[str, Any] = {"attempts": [], "interrupts": [], "batch_end_seq": {}, "skipped": set(), "skips": [],
                             "crash_t": None, "tool_code": False, "keyed": False}
    open_attempts: dict[tuple[str, int], Attempt] = {}
    touch_events: list[TraceEvent] = []
    scenario = result.scenario
    tools = {call.id: call.name for call in scenario.calls}
    batch_of = {call.id: b for b, batch in enumerate(scenario.batches) for call in batch}
    kinds: set[str] = set()
    batch = -1
    owner = batch_of if result.agents else {}
    attempts: list[Attempt] = facts["attempts"]

    def placeholder(e: TraceEvent) -> Attempt:
        key = (e["call"], e["attempt"])
        a = Attempt(e["call"], e["attempt"], tools.get(e["call"], ""), e["t"], e["seq"],
                    owner.get(e["call"], batch), end_t=e["t"], end_seq=e["seq"], opened=False)
        attempts.append(a)
        open_attempts[key] = a
        return a

    for e in result.trace:
        ev = e["ev"]
        if ev == "touch":
            touch_events.append(e)
            continue
        kinds.add(ev)
        if ev == "batch":
            batch = e["index"]
        elif ev == "start":
            key = e.get("key")
            if key is not None:
                facts["keyed"] = True
            a = Attempt(e["call"], e["attempt"], e["tool"], e["t"], e["seq"], owner.get(e["call"], batch), key)
            attempts.append(a)
            open_attempts[(a.call, a.attempt)] = a
        elif ev == "end":
            a = open_attempts.get((e["call"], e["attempt"])) or placeholder(e)
            a.end_t, a.end_seq, a.outcome = e["t"], e["seq"], e["outcome"]
            a.error, a.value_digest, a.fault = e.get("error"), e.get("vd"), e.get("fault")
            if e.get("tool_code"):
                facts["tool_code"] = True
        elif ev == "faults":
            a = open_attempts.get((e["call"], e["attempt"])) or placeholder(e)
            a.injected = tuple(e["kinds"])
        elif ev == "background":
            a = open_attempts.get((e["call"], e["attempt"])) or placeholder(e)
            a.background_t, a.background_seq = e["t"], e["seq"]
        elif ev == "abandon":
            a_or_none = open_attempts.get((e["call"], e["attempt"]))
            a = a_or_none if a_or_none is not None and a_or_none.abandoned_t is None else placeholder(e)
            a.abandoned_t, a.abandoned_seq, a.abandoned_as = e["t"], e["seq"], e.get("outcome")
        elif ev == "interrupt":
            facts["interrupts"].append((e["t"], e["seq"], e["index"], e["grace_ms"]))
        elif ev == "batch_end":
            facts["batch_end_seq"][e["index"]] = e["seq"]
        elif ev == "skip":
            facts["skipped"].add(e["call"])
            facts["skips"].append((e["t"], e["seq"], e["call"], e.get("reason") or ""))
        elif ev == "crash":
            facts["crash_t"] = e["t"]
    if touch_events:
        kinds.add("touch")
    facts["kinds"] = frozenset(kinds)
    facts["touch_events"] = touch_events
    index: dict[str, Attempt | list[Attempt]] = {}
    for a in attempts:
        found = index.get(a.call)
        if found is None:
            index[a.call] = a
        elif isinstance(found, list):
            found.append(a)
        else:
            index[a.call] = [found, a]
    facts["attempts_by_call"] = index
    return facts


def read(result: RunResult) -> dict[str, Any]:
    """What `RunFacts` finds, in the reference's terms."""
    facts = RunFacts(result)
    found = {name: getattr(facts, name) for name in ("attempts", "interrupts", "batch_end_seq", "skipped", "skips",
                                                     "crash_t", "tool_code", "keyed", "kinds", "attempts_by_call")}
    found["touch_events"] = facts._touch_events
    return found


def same(result: RunResult, name: str) -> None:
    expected, got = reference_read(result), read(result)
    for key, value in expected.items():
        assert got[key] == value, f"{name}: {key}"
        if key == "attempts_by_call":  # the same index, in the same order, holding the same objects
            assert list(got[key]) == list(value), name
    # The same objects: the index holds the attempts of the list, not copies.
    listed = {id(a) for a in got["attempts"]}
    for found in got["attempts_by_call"].values():
        for a in found if isinstance(found, list) else [found]:
            assert id(a) in listed, name


def catalogue_runs() -> Iterator[tuple[str, RunResult]]:
    scenarios = {}
    for case in CASES:
        scenario = case.load()
        scenarios.setdefault(scenario.name, scenario)
        for seed in (1, 2):
            yield f"{case.name} seed {seed}", run(scenario, case.scheduler, seed)
    for scenario in scenarios.values():
        for name, scheduler in [*CORRECT, ("parallel", get_scheduler("parallel"))]:
            yield f"{name} on {scenario.name}", run(scenario, scheduler, 1, jitter=0.4)


def test_every_catalogue_run_is_read_as_the_reference_reads_it() -> None:
    by_index_adopted = by_index_built = 0
    for name, result in catalogue_runs():
        same(result, name)
        facts = RunFacts(result)
        if any(isinstance(found, list) for found in facts.attempts_by_call.values()):
            by_index_built += 1
        else:
            by_index_adopted += 1
    assert by_index_adopted and by_index_built  # both ways of making the index were taken


_KINDS = ("start", "start", "start", "end", "end", "end", "touch", "touch", "faults", "background", "abandon",
          "abandon", "batch", "skip", "interrupt", "batch_end", "crash", "report")


def random_trace(rng: random.Random, calls: list[tuple[str, str]], length: int) -> list[TraceEvent]:
    """Events of few calls and attempt numbers, in any order: every lookup `_read` makes is tried
    against events of the same call with other numbers, and of the same number by another handle."""
    events: list[TraceEvent] = []
    batch = -1
    for seq in range(length):
        kind = rng.choice(_KINDS)
        call, tool = rng.choice(calls)
        attempt = rng.randint(1, 3)
        base: TraceEvent = {"t": seq // 2, "seq": seq, "ev": kind}
        if kind == "start":
            base |= {"call": call, "tool": tool, "attempt": attempt}
            if rng.random() < 0.2:
                base["key"] = f"k{seq}"
        elif kind == "end":
            base |= {"call": call, "attempt": attempt, "outcome": rng.choice(("ok", "error", "timeout"))}
            if base["outcome"] == "ok":
                base["vd"] = f"d{seq}"
                if rng.random() < 0.2:
                    base["detached"] = True
            else:
                base["error"] = "boom"
                if rng.random() < 0.3:
                    base["fault"] = "injected"
                if rng.random() < 0.2:
                    base["tool_code"] = True
        elif kind == "touch":
            base |= {"call": call, "attempt": attempt, "op": rng.choice(("read", "write")), "target": "/a",
                     "digest": "x"}
        elif kind in ("faults", "background", "abandon"):
            base |= {"call": call, "attempt": attempt}
            if kind == "faults":
                base["kinds"] = ["torn_write"]
            elif kind == "abandon":
                base["outcome"] = rng.choice(("timeout", "cancelled", "unknown"))
        elif kind in ("batch", "interrupt", "batch_end"):
            batch += kind == "batch"
            base["index"] = max(batch, 0)  # the real run's batches are 0 and up
            if kind == "interrupt":
                base["grace_ms"] = 5
        elif kind == "skip":
            base |= {"call": call, "reason": rng.choice(("", "interrupted", None))}
        events.append(base)
    return events


def test_random_traces_are_read_as_the_reference_reads_them() -> None:
    rng = random.Random(27)
    answers = {True: 0, False: 0}
    for case in CASES[:6]:
        scenario = case.load()
        result = run(scenario, case.scheduler, 1)
        calls = [*[(call.id, call.name) for call in scenario.calls][:3], ("stranger", "read_file")]
        for i in range(300):
            trace = tuple(random_trace(rng, calls, rng.randint(1, 40)))
            varied = replace(result, trace=trace)
            same(varied, f"{case.name} random trace {i}")
            facts = RunFacts(varied)
            settled = reference_settled_in_time(facts)
            assert liveness._settled_in_time(facts) is settled, f"{case.name} random trace {i}"
            answers[settled] += 1
    assert all(answers.values()), answers


def test_an_ok_end_the_context_writes_has_seven_keys() -> None:
    """`_read` reads an ok `end` without asking for its absent keys when it has exactly these keys."""
    result = run(CASES[0].load(), CASES[0].scheduler, 1)
    ends = [e for e in result.trace if e["ev"] == "end" and e["outcome"] == "ok"]
    assert ends and all(len(e) == OK_END_KEYS for e in ends if "detached" not in e)


def reference_settled_in_time(facts: RunFacts) -> bool:
    answered = {b.index: facts.batch_end_seq.get(b.index, 1 << 62) for b in facts.result.batches
                if b.status in liveness._ENDED}
    return all(a.batch not in answered or a.settled_seq <= answered[a.batch] for a in facts.attempts)


def test_liveness_and_exclusivity_loops_answer_as_their_generators_did() -> None:
    settled = {True: 0, False: 0}
    for name, result in catalogue_runs():
        facts = RunFacts.of(result)
        expected = reference_settled_in_time(facts)
        assert liveness._settled_in_time(facts) is expected, name
        settled[expected] += 1
        exclusive = facts.shape.exclusive
        verdict = exclusivity.check_exclusivity(result)
        if not any(a.tool in exclusive for a in facts.attempts):
            assert verdict.ok and not verdict.violations, name
    assert all(settled.values()), settled


def test_a_call_settled_by_its_background_result_or_abandonment_settled_in_time() -> None:
    """Settled is abandonment first, then a result reported by work that runs on, then the end."""
    result = run(CASES[0].load(), CASES[0].scheduler, 1)
    call = result.scenario.calls[0]
    start = {"t": 0, "seq": 1, "ev": "start", "call": call.id, "tool": call.name, "attempt": 1}
    answer = {"t": 2, "seq": 4, "ev": "batch_end", "index": 0}
    end = {"t": 3, "seq": 5, "ev": "end", "call": call.id, "attempt": 1, "outcome": "ok", "vd": "x", "detached": True}
    batch = {"t": 0, "seq": 0, "ev": "batch", "index": 0}
    for settle, expected in ((None, False),
                             ({"t": 1, "seq": 3, "ev": "background", "call": call.id, "attempt": 1}, True),
                             ({"t": 1, "seq": 3, "ev": "abandon", "call": call.id, "attempt": 1, "outcome": "timeout"},
                              True)):
        trace = tuple(e for e in (batch, start, settle, answer, end) if e is not None)
        facts = RunFacts(replace(result, trace=trace))
        assert reference_settled_in_time(facts) is expected
        assert liveness._settled_in_time(facts) is expected
