"""The memo of model-order replays (`harness.oracles.replays`): bounded, and keyed so that a
verdict never depends on which runs were judged before it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.oracles import check, replays
from harness.world.state import WorldState


def _verdicts(name: str, scheduler: str, seed: int) -> list[object]:
    return [v.to_json() for v in check(run(find_scenario(name), get_scheduler(scheduler), seed))]


def test_it_keeps_at_most_max_entries() -> None:
    replays.forget()
    world, catalogue = WorldState(), find_scenario("config-clobber").catalogue
    for i in range(replays.MAX_ENTRIES + 20):
        assert replays.remembered(world, catalogue, ("call", i), lambda i=i: i) == i
    assert replays.size() == replays.MAX_ENTRIES
    # The oldest went first; a recent one is still there (its replay is not called again).
    assert replays.remembered(world, catalogue, ("call", replays.MAX_ENTRIES + 19), lambda: -1) == \
        replays.MAX_ENTRIES + 19
    assert replays.remembered(world, catalogue, ("call", 0), lambda: -1) == -1
    replays.forget()


def test_it_keeps_at_most_max_chars_of_worlds(monkeypatch: pytest.MonkeyPatch) -> None:
    replays.forget()
    monkeypatch.setattr(replays, "MAX_CHARS", 100_000)
    catalogue = find_scenario("config-clobber").catalogue
    worlds = [WorldState(files=((f"/f{i}", "x" * 20_000),)) for i in range(10)]
    for world in worlds:
        replays.remembered(world, catalogue, (), lambda: "replayed")
    assert replays.size() == 4  # 4 x (20,000 + 1,024) <= 100,000 < 5 x ...
    huge = WorldState(files=(("/huge", "x" * 200_000),))
    replays.remembered(huge, catalogue, (), lambda: "huge")
    assert replays.remembered(huge, catalogue, (), lambda: "again") == "again"  # never kept
    replays.forget()


def test_an_equal_world_that_is_another_object_is_not_taken_for_it() -> None:
    replays.forget()
    catalogue = find_scenario("config-clobber").catalogue
    first, twin = WorldState(cwd="/a"), WorldState(cwd="/a")
    assert replays.remembered(first, catalogue, (), lambda: "first") == "first"
    assert replays.remembered(twin, catalogue, (), lambda: "twin") == "twin"
    replays.forget()


def test_verdicts_do_not_depend_on_what_was_judged_before() -> None:
    cases = [(name, scheduler, seed) for name in scenario_names()[:12]
             for scheduler in ("parallel", "serial", "resource_keys") for seed in (1, 2)]
    cold = {}
    for case in cases:
        replays.forget()
        cold[case] = _verdicts(*case)
    replays.forget()
    warm = {case: _verdicts(*case) for case in [*cases, *reversed(cases)]}
    assert warm == cold


def test_a_scenario_with_another_initial_world_gets_its_own_replay() -> None:
    sc = find_scenario("config-clobber")
    files = tuple((path, content + "# changed\n") for path, content in sc.world.files)
    other = replace(sc, world=replace(sc.world, files=files, _digest=[]))

    def judged(scenario: object) -> list[object]:
        return [v.to_json() for v in check(run(scenario, get_scheduler("parallel"), 1))]  # type: ignore[arg-type]

    replays.forget()
    judged(sc)
    warm = judged(other)
    replays.forget()
    assert judged(other) == warm
