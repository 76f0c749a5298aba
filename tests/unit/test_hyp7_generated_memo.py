"""check_scheduler's generated part: the same examples for a seed, each distinct batch run once, and
what it reports unchanged (issue 27). The pinned figures were taken before the per-search memo."""

from __future__ import annotations

import hashlib
from random import Random
from typing import Any

import pytest

import harness.testing.generated as generated
from harness import get_scheduler
from harness.explore.pct import PCT
from harness.model import Batch
from harness.oracles import replays
from harness.scenario import Scenario
from harness.sim.arbiter import TIME

#: seed -> (digest of the distinct generated batches in the order first tried, how many, tools started),
#: 200 examples under `serial`.
PINNED = {
    1: ("5fc32620fbdea5b1", 173, {"patch": 122, "read_file": 93, "run_tests": 39, "search_files": 62,
                                  "terminal": 151, "write_file": 142, "write_file_atomic": 115}),
    2: ("927cd4a7a663ca76", 168, {"patch": 103, "read_file": 116, "run_tests": 30, "search_files": 56,
                                  "terminal": 145, "write_file": 101, "write_file_atomic": 99}),
    3: ("9803912a9ee90f1f", 165, {"patch": 85, "read_file": 109, "run_tests": 34, "search_files": 68,
                                  "terminal": 155, "write_file": 116, "write_file_atomic": 143}),
}


def _digest(batches: list[Batch]) -> str:
    text = repr([(c.name, c.arguments) for b in batches for c in b.calls] + [len(b.calls) for b in batches])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[Batch]:
    ran: list[Batch] = []
    real = generated.run

    def spy(scenario: Scenario, *args: Any, **kwargs: Any) -> Any:
        ran.append(scenario.batches[0])
        return real(scenario, *args, **kwargs)

    monkeypatch.setattr(generated, "run", spy)
    return ran


@pytest.mark.parametrize("seed", sorted(PINNED))
def test_the_examples_of_a_seed_and_what_they_cover_stay_the_same(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    ran = _spied(monkeypatch)
    replays.forget()
    exploration = generated.explore_generated(get_scheduler("serial"), 200, seed)
    digest, distinct, started = PINNED[seed]
    assert _digest(list(dict.fromkeys(ran))) == digest  # the strategy's examples for this seed
    assert len(set(ran)) == distinct
    assert exploration.runs == 200  # every example counts, a batch tried again included
    assert exploration.started == started
    assert not exploration.findings


def test_a_batch_tried_again_is_not_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _spied(monkeypatch)
    replays.forget()
    exploration = generated.explore_generated(get_scheduler("serial"), 200, 1)
    assert len(ran) == len(set(ran)) == PINNED[1][1] < exploration.runs


@pytest.mark.parametrize(("policy", "seed", "runs", "label", "calls", "fingerprint"), [
    ("parallel", 1, 4, "stale-read",
     [("terminal", '{"command": "cd src"}'), ("read_file", '{"path": "c.txt"}'), ("read_file", '{"path": "c.txt"}')],
     "e1aa7703dc0bf0c6613785630c852794f5738e8f2b2ddb01deb64d4c8238cf36"),
    ("resource_keys", 2, 13, "stale-read",
     [("terminal", '{"command": "cd src"}'), ("read_file", '{"path": "c.txt"}'),
      ("patch", '{"path": "c.txt", "old": "alpha", "new": "ALPHA"}')],
     "b49ea006eabb315970961a4cd4d523f6f66d213a8ed042fdbb895d27d6db49a1"),
    ("hermes_segments", 1, 22, "torn-read",
     [("terminal", '{"command": "cd src"}'), ("read_file", '{"path": "c.txt"}'),
      ("write_file", '{"path": "/repo/src/c.txt", "content": "alpha"}')],
     "60c7aeeccbe08e9eee8d4910ce680fba2134b6d7a77a21236a889838a26749aa"),
])
def test_what_a_failing_policy_is_found_with_stays_the_same(policy: str, seed: int, runs: int, label: str,
                                                            calls: list[tuple[str, str]], fingerprint: str) -> None:
    replays.forget()
    exploration = generated.explore_generated(get_scheduler(policy), 200, seed)
    found = exploration.found
    assert found is not None and exploration.runs == runs
    assert (found.label, found.oracle) == (label, "serializability")
    assert [(c.name, c.arguments) for c in found.result.scenario.calls] == calls
    assert found.result.fingerprint == fingerprint


def test_an_example_scenario_is_the_one_the_constructor_makes() -> None:
    state = generated.generated_state()
    made = generated._Examples(get_scheduler("serial"), 1, state)
    batch = Batch.of([("call-1", "read_file", {"path": "/repo/a.txt"}), ("call-2", "terminal", {"command": "pwd"})])
    built = Scenario(name=generated.NAME, batches=(batch,), world=state)
    copied = made.scenario(batch)
    assert made.copyable  # a Scenario is still its fields alone: examples copy one
    assert copied == built and vars(copied).keys() == vars(built).keys()
    assert made.scenario(batch) is not copied and made.judge(batch) == made.judge(batch)


def test_a_forked_pct_chooses_as_a_new_one() -> None:
    entities = ["call-1", "call-2", "call-3", TIME]
    template = PCT(Random(5), entities, 16)
    for _ in range(2):  # a fork's choices do not move the template
        fresh, forked = PCT(Random(5), entities, 16), template.fork()
        rng = Random(9)
        for step in range(40):
            enabled = sorted(rng.sample(entities, rng.randint(1, len(entities))), key=entities.index)
            assert forked.choose(enabled, step) == fresh.choose(enabled, step)
        assert forked.priority == fresh.priority

