"""Explorations through an isolated child (`IsolatedScheduler`): the same exploration as in process,
strategy by strategy; the chooser stays in the parent and answers the child's questions, which are
checked; a chooser that raises ends the child, not the session; and the stand-in travels to pool
workers as its name."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

import pytest

from harness.explore.engine import STRATEGIES, Exploration, explore
from harness.isolation import wire
from harness.isolation.asking import Answering, ArbiterView
from harness.isolation.remote import IsolatedScheduler
from harness.oracles import check
from harness.run import run
from harness.scenario import find_scenario
from harness.sim.arbiter import Tape

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer") or not hasattr(os, "killpg"),
                                reason="isolation needs POSIX process groups")


def _summary(exploration: Exploration) -> tuple[object, ...]:
    shrunk = exploration.shrunk
    return (exploration.runs, [(f.label, f.result.fingerprint, f.found_by) for f in exploration.findings],
            shrunk.result.fingerprint if shrunk else None, exploration.scope, exploration.exhausted,
            exploration.classes)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("scenario", "scheduler"), [("incident-ticket-notify", "parallel"),
                                                     ("config-clobber", "serial"),
                                                     ("cascade-cancel", "parallel")])  # fault choices too
def test_an_isolated_exploration_is_the_in_process_one(strategy: str, scenario: str, scheduler: str) -> None:
    """Every strategy, a buggy and a correct policy: the same runs, findings, shrunk run and scope
    (an exhaustive proof included), although every choice of the order-first runs crossed the pipe."""
    found = find_scenario(scenario)
    here = explore(found, scheduler, strategy, runs=40, seed=7, keep_going=True)
    with IsolatedScheduler(scheduler) as isolated:
        there = explore(found, isolated, strategy, runs=40, seed=7, keep_going=True)
    assert _summary(there) == _summary(here)
    if scheduler == "serial":
        assert not here.findings
    if scenario == "incident-ticket-notify":
        assert here.findings


def test_an_isolated_exploration_on_a_pool_is_the_one_process_one() -> None:
    """Pickled to a worker process, the stand-in is its name and starts a child there: the exploration
    is the one-process one."""
    found = find_scenario("incident-ticket-notify")
    one = explore(found, "parallel", "auto", runs=80, seed=3, keep_going=True)
    with IsolatedScheduler("parallel") as isolated:
        pooled = explore(found, isolated, "auto", runs=80, seed=3, keep_going=True, processes=2)
    assert _summary(pooled) == _summary(one)


class _Raises:
    def choose(self, enabled: Sequence[str], step: int) -> str:
        raise LookupError("the search stops here")


def test_a_chooser_that_raises_ends_the_child_and_the_next_run_goes_on() -> None:
    scenario = find_scenario("config-clobber")
    with IsolatedScheduler("parallel") as isolated:
        with pytest.raises(LookupError, match="the search stops here"):
            run(scenario, isolated, 1, chooser=_Raises())
        again = run(scenario, isolated, 1, chooser=Tape())
    assert again.fingerprint == run(scenario, "parallel", 1, chooser=Tape()).fingerprint


def test_a_forged_question_is_the_schedulers_error_not_the_choosers() -> None:
    scenario = find_scenario("config-clobber")
    with IsolatedScheduler("tests.isolation.adversaries:AsksAForgedQuestion") as isolated:
        result = run(scenario, isolated, 1, chooser=Tape())
    assert result.status.value == "scheduler-error" and "wrong shape" in (result.error or "")
    assert "scheduler-error" in {v.label for v in check(result) for v in v.violations}


def test_questions_are_checked_before_the_chooser_sees_them() -> None:
    seen: list[tuple[tuple[str, ...], int, object]] = []

    class Bound:
        view: ArbiterView | None = None

        def bind(self, view: ArbiterView) -> None:
            self.view = view

        def choose(self, enabled: Sequence[str], step: int) -> str:
            assert self.view is not None
            request = self.view.request("b#2")
            seen.append((tuple(enabled), step, request and (request.final, self.view.steps_taken)))
            return enabled[-1]

    answering = Answering(Bound())
    pending = [("a", 1, False, 0, float("inf")), ("b", 2, True, 5, 9.0)]
    assert answering.reply(("choose", 3, ("a", "b#2"), 4, pending, [(("b", 2), 1)]), 3) == ("chose", 3, "b#2")
    assert seen == [(("a", "b#2"), 4, (True, {("b", 2): 1}))]
    for forged in [("choose", 2, ("a",), 0, [], []),  # another run's
                   ("choose", 3, ["a"], 0, [], []),  # a list, not a tuple
                   ("choose", 3, (), 0, [], []),  # nothing enabled
                   ("choose", 3, ("a",), 0, [("a", "1", False, 0, 1.0)], []),  # an attempt that is text
                   ("choose", 3, ("a",), 0, [], [(("a", 1), None)]),
                   ("fault", 3, "tok", 1, 0, [], []),  # drawn is not a bool
                   ("steal", 3), ("choose",)]:
        with pytest.raises(wire.WireError):
            answering.reply(forged, 3)
    assert len(seen) == 1


def test_a_rebuilt_run_starts_from_the_parents_own_initial_world() -> None:
    """The initial world comes back as the scenario's own state object, so the oracles' replay thaws
    the world built from it once (harness.world.templates) instead of building one per run."""
    scenario = find_scenario("config-clobber")
    with IsolatedScheduler("serial") as isolated:
        result = run(scenario, isolated, 1)
    assert result.initial is scenario.world


def test_a_long_session_keeps_a_bounded_number_of_scenarios_known_to_the_child() -> None:
    """A new scenario each run (as swarm makes them): the session keeps at most 64 known to the child,
    pipelined runs whose scenarios were dropped meanwhile still run the right one, and a scenario
    used again after it was dropped is sent again."""
    import dataclasses

    from harness.isolation import Supervisor

    base = find_scenario("config-clobber")
    variants = [dataclasses.replace(base, name=f"v{i}") for i in range(150)]
    requests = [(variants[i], i % 5 + 1, 0.0) for i in range(150)] + [(variants[i], 1, 0.0) for i in (0, 149, 3)]
    expected = [run(scenario, "serial", seed, jitter=jitter).fingerprint for scenario, seed, jitter in requests]
    with Supervisor("serial") as supervisor:
        got = [isolated.result.fingerprint for isolated in supervisor.runs(requests)]
        assert supervisor._child is not None and len(supervisor._child.sent) <= 64
    assert got == expected


def test_an_isolated_story_names_the_users_lines_as_in_process() -> None:
    """The story's `started at` / `awaited at` lines come from the child, which works in a private
    directory: they read relative to the user's directory all the same."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    stories = []
    for flag in ("--isolate", "--no-isolate"):
        done = subprocess.run([sys.executable, "-m", "harness", "explore", "config-two-spellings", "--scheduler",
                               "tests.explore.two_bugs:scheduler", "--seed", "2", "--no-save", "--format", "json",
                               flag],
                              cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 1 and done.stderr == "", done.stdout[-2000:] + done.stderr
        stories.append(json.loads(done.stdout)["story"])
    assert stories[0] == stories[1]
    assert "tests/explore/two_bugs.py:" in json.dumps(stories[0])


def test_the_default_isolates_a_users_scheduler_only_where_the_system_can(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.isolation
    from harness.cli.isolated import isolating
    from harness.policies import get_scheduler
    from harness.testing import check_scheduler
    from harness.testing.checking import _isolated

    assert not isolating(None, ["serial", "parallel"]) and isolating(None, ["serial", "pkg.mod:attr"])
    assert isolating(True, ["serial"]) and not isolating(False, ["pkg.mod:attr"])
    assert _isolated("serial", None, None) is None and _isolated(None, None, None) is None
    with pytest.raises(ValueError, match="needs the scheduler's name"):
        check_scheduler(get_scheduler("serial"), isolate=True)
    monkeypatch.setattr(harness.isolation, "available", lambda: False)  # no POSIX process groups here
    assert not isolating(None, ["pkg.mod:attr"]) and _isolated("pkg.mod:attr", None, None) is None


USERLAND = "tests.isolation.userland"


def test_a_declared_grace_reaches_the_swarm_of_an_isolated_exploration() -> None:
    """The child tells which grace the scheduler declares: the 5 s poller passes the interrupt swarm
    isolated, as in process, instead of failing it against the default 500 ms."""
    scenario = find_scenario("incident-triage")
    here = explore(scenario, f"{USERLAND}:poller5s", "random", runs=24, seed=3, swarm=True, swarm_kinds=("interrupt",),
                   keep_going=True, shrink=False)
    with IsolatedScheduler(f"{USERLAND}:poller5s") as isolated:
        assert isolated.grace_ms == 5000
        there = explore(scenario, isolated, "random", runs=24, seed=3, swarm=True, swarm_kinds=("interrupt",),
                        keep_going=True, shrink=False)
    assert _summary(there) == _summary(here) and not here.findings


def test_an_isolated_sweep_builds_the_scheduler_for_each_cell_as_in_process() -> None:
    """A scheduler that keeps state between runs: the isolated rows are the in-process rows, whatever
    the order of the cells or the number of processes."""
    from harness.sweep import grid, sweep

    cells = grid(["config-clobber", "edit-then-test"], [f"{USERLAND}:Warms"], range(1, 7))
    here = sweep(cells, processes=1)
    assert sweep(cells, processes=1, isolate=True) == here
    assert sweep(cells, processes=2, isolate=True) == here


def test_an_unknown_name_is_the_same_error_isolated_or_not() -> None:
    from harness.policies import UnknownSchedulerError
    from harness.testing import check_scheduler

    for name in ("nosuch.module:thing", "nosuch", f"{USERLAND}:Nope"):
        for isolate in (None, False):
            with pytest.raises(UnknownSchedulerError, match="valid:"):
                check_scheduler(name, scenarios=["config-clobber"], profile="quick", generated=False, isolate=isolate)
