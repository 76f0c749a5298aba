"""Sound exploration: timers and faults are choices of order-first runs, and every claim says what it
covered and holds against brute force."""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import replace
from random import Random
from typing import Any

import pytest
import simpy
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.explore.engine import explore, first_violation
from harness.model import Batch, CallResult, Outcome
from harness.reproducers.replay import reproducer_of, save_verified, verify
from harness.scheduling import SchedulerContext
from harness.sim.arbiter import TIME, Tape
from tests.helpers import scenario


def _explore_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["explore", *args, "--no-save", "--format", "json"])
    assert result.exit_code in (0, 1, 3), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.parametrize("strategy", ["pct", "exhaustive", "auto"])
def test_a_timeout_retry_without_keys_is_found_by_every_strategy(strategy: str) -> None:
    doc = _explore_json("duplicate-ticket", "--scheduler", "partition", "--no-idempotency-keys",
                        "--strategy", strategy)
    assert doc["found"] and doc["label"] == "duplicate-effect", doc
    assert doc["execution"] == "--no-idempotency-keys"


def test_with_keys_exhaustive_proves_it_and_names_the_timers_it_ordered() -> None:
    doc = _explore_json("duplicate-ticket", "--scheduler", "partition", "--strategy", "exhaustive")
    assert not doc["found"] and doc["exhausted"] and doc["proven"]
    scope = doc["scope"]
    assert "timeout" in scope["timers"] and "backoff" in scope["timers"]
    assert scope["claim"].startswith("proven") and scope["not_covered"]


def test_timers_are_steps_of_the_tape_and_replay() -> None:
    sc = find_scenario("duplicate-ticket")
    policy = get_scheduler("partition")
    found = explore(sc, policy, "exhaustive", runs=50, keep_going=True)
    tapes = [f.result.tape for f in found.findings]
    assert not tapes  # keys on: nothing to find
    nokeys = explore(replace(sc, execution=sc.execution.merged(idempotency_keys=False)), policy, "exhaustive", runs=50)
    assert nokeys.found is not None
    tape = nokeys.found.result.tape
    assert tape is not None and TIME in tape
    again = run(nokeys.found.result.scenario, policy, nokeys.found.result.seed, chooser=Tape(tape))
    assert again.fingerprint == nokeys.found.result.fingerprint  # any chooser making the same choices


def test_a_timer_only_fires_where_the_latency_model_allows() -> None:
    """create_ticket takes exactly 900 ms on its first try, its append lands at 450 ms: the 500 ms
    timeout can never fire before the append, and always fires before the completion."""
    sc = find_scenario("duplicate-ticket")
    result = run(sc, get_scheduler("partition"), 1, chooser=Tape())
    decisions = [(d.enabled, d.chosen) for d in result.decisions]
    assert decisions[0] == (("open-ticket",), "open-ticket")  # the append: TIME not enabled
    assert (("@time",), "@time") in decisions  # the completion cannot come before the timeout


class FailFast:
    """Starts everything; at the first error returns what has finished (a realistic fail-fast bug)."""

    name = "fail-fast-drops"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        handles = [ctx.start(call) for call in batch]
        done: dict[str, CallResult] = {}
        while len(done) < len(handles):
            yield ctx.any_of([h for h in handles if h.call.id not in done])
            for h in handles:
                if h.triggered and h.call.id not in done:
                    done[h.call.id] = h.result
                    if h.result.outcome is Outcome.ERROR:
                        for other in handles:
                            ctx.cancel(other)
                        return [done[c.id] for c in batch if c.id in done]
        return [done[c.id] for c in batch]


def _flaky() -> Any:
    return scenario([("a", "read_file", {"path": "/repo/a.txt"}), ("b", "read_file", {"path": "/repo/b.txt"})],
                    files={"/repo/a.txt": "a\n", "/repo/b.txt": "b\n"},
                    tools={"read_file": {"failure": {"rate": 0.05}}})


@pytest.mark.parametrize("seed", range(1, 11))
def test_exhaustive_enumerates_failures_instead_of_one_seeds_draw(seed: int) -> None:
    exploration = explore(_flaky(), FailFast(), "exhaustive", runs=200, seed=seed, shrink=False)
    assert exploration.found is not None and exploration.found.label == "missing-result"
    assert "failure:a/1" in exploration.scope["faults"]


def test_fault_bound_zero_claims_only_what_it_enumerated() -> None:
    exploration = explore(_flaky(), FailFast(), "exhaustive", runs=200, seed=1, fault_bound=0)
    assert exploration.proven
    assert "at most 0 injected" in exploration.scope["faults"]
    assert exploration.scope["fault_bound"] == 0


def test_processes_give_the_same_first_finding() -> None:
    sc = find_scenario("rare-torn-read")
    one = explore(sc, "parallel", "auto", runs=60, seed=3, shrink=False)
    two = explore(sc, "parallel", "auto", runs=60, seed=3, shrink=False, processes=2)
    assert one.found is not None and two.found is not None
    assert (one.found.label, one.found.run_index, one.found.result.fingerprint, one.found.found_by) == (
        two.found.label, two.found.run_index, two.found.result.fingerprint, two.found.found_by)
    assert one.runs == two.runs and one.scope["seeds"] == two.scope["seeds"]


def test_auto_mixes_random_pct_and_swarm_runs() -> None:
    exploration = explore(find_scenario("incident-triage"), "partition", "auto", runs=12, seed=1)
    assert exploration.found is None and exploration.runs == 12
    scope = exploration.scope
    assert "drawn from the scenario" in scope["latencies"] and "order-first" in scope["latencies"]
    assert scope["swarm"] and "duplicate-delivery" not in scope["swarm"]
    assert {"random", "pct(d=1)", "pct(d=2)", "pct(d=3)", "random+swarm"} <= set(scope["mix"])


# -- claims against brute force ---------------------------------------------------------------------


FILES = ("/repo/a.txt", "/repo/b.txt")


def _generated(rng: Random, index: int) -> Any:
    """A small scenario: 2-3 reads, writes, patches or tickets on two files, uniform latencies,
    sometimes failures, a timeout with retries, a batch deadline, a crash or an interrupt."""
    calls = []
    for k in range(rng.randint(2, 3)):
        tool = rng.choice(["read_file", "write_file", "patch", "create_ticket"])
        path = rng.choice(FILES)
        args: dict[str, Any] = {
            "read_file": {"path": path}, "write_file": {"path": path, "content": f"v{k}\n"},
            "patch": {"path": path, "old": "x", "new": f"x{k}"}, "create_ticket": {"title": f"t{k}", "body": "b"},
        }[tool]
        calls.append((f"c{k}", tool, args))
    tools: dict[str, Any] = {}
    for tool in sorted({c[1] for c in calls}):
        low = rng.randint(50, 400)
        tools[tool] = {"latency": {"uniform": [low, low + rng.randint(0, 600)]}}
        if rng.random() < 0.3:
            tools[tool]["failure"] = {"rate": 0.3}
    top: dict[str, Any] = {}
    execution: dict[str, Any] = {}
    if rng.random() < 0.5:
        execution.update(timeout_ms=rng.randint(200, 800), retries=rng.randint(0, 1), backoff_ms=100,
                         idempotency_keys=rng.random() < 0.5)
    if rng.random() < 0.2:
        execution["batch_deadline_ms"] = rng.randint(300, 1500)
    if execution:
        top["execution"] = execution
    if rng.random() < 0.2:
        top["faults"] = {"crash": {"at_ms": rng.randint(100, 1500)}}
    if rng.random() < 0.3:
        top["interrupt"] = {"at_ms": rng.randint(100, 1500), "grace_ms": rng.choice([0, 200])}
    return scenario(calls, files={p: "x\n" for p in FILES}, tools=tools, name=f"generated-{index}", **top)


@pytest.mark.slow
def test_nothing_exhaustive_proves_impossible_is_found_by_random_runs() -> None:
    """Over generated scenarios and five policies: wherever exhaustive search (faults enumerated up to
    the number of calls) claims "proven", 10,000+ random runs with drawn latencies and failures over
    many seeds find nothing; and the claims are not vacuous (some proofs, some findings)."""
    rng = Random(20261129)
    policies = [get_scheduler(n) for n in ("partition", "resource_keys", "hermes_segments", "parallel", "lanes")]
    proven = found = random_runs = 0
    index = 0
    while random_runs < 10_000:
        sc = _generated(rng, index)
        index += 1
        for policy in policies:
            exploration = explore(sc, policy, "exhaustive", runs=3000, fault_bound=len(sc.calls), shrink=False)
            if exploration.found is not None:
                found += 1
                continue
            if not exploration.proven:
                continue
            proven += 1
            for seed in range(1, 51):
                random_runs += 1
                violation = first_violation(run(sc, policy, seed))
                assert violation is None, (sc.name, policy.name, seed, violation)
    assert proven >= 50 and found >= 10


def test_pct_hit_rate_on_a_timer_bug_meets_its_printed_bound() -> None:
    base = find_scenario("duplicate-ticket")
    sc = replace(base, execution=base.execution.merged(idempotency_keys=False))
    trials = range(1, 41)
    hits = sum(bool(explore(sc, "partition", "pct", runs=1, seed=s, shrink=False).found) for s in trials)
    bound = explore(sc, "partition", "pct", runs=1, seed=1, shrink=False).bound
    assert bound is not None and hits / len(trials) >= bound["per_run"]


# -- the determinism self-check ---------------------------------------------------------------------


class _Drifting:
    """Keeps state between runs: every run starts the calls in a different order (a realistic
    module-level counter or cache)."""

    name = "drifting"
    runs = 0

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        type(self).runs += 1
        order = list(batch)[type(self).runs % len(batch):] + list(batch)[:type(self).runs % len(batch)]
        results = {}
        for call in order:
            results[call.id] = yield ctx.start(call)
        return [results[c.id] for c in batch]


def test_a_reproducer_that_does_not_replay_is_reported_and_not_saved(tmp_path: Any) -> None:
    sc = find_scenario("config-clobber")
    result = run(sc, _Drifting(), 1)
    reproducer = reproducer_of(result, "tests.explore.test_sound_exploration:_Drifting", "x", "o", "test")
    path, check = save_verified(reproducer, tmp_path, version="test")
    assert path is None and not check.ok and list(tmp_path.iterdir()) == []
    assert check.describe().startswith("nondeterministic") and "state" in check.describe()


def hash_ordered(batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
    """Runs the calls one by one in the order of a set of their ids: stable in one process, not
    under another PYTHONHASHSEED."""
    results = {}
    for call_id in {c.id for c in batch}:
        results[call_id] = yield ctx.start(next(c for c in batch if c.id == call_id))
    return [results[c.id] for c in batch]


hash_ordered.name = "hash_ordered"  # type: ignore[attr-defined]


@pytest.mark.slow
def test_check_determinism_replays_in_a_fresh_process_under_another_hash_seed() -> None:
    calls = [(f"call-{i}", "read_file", {"path": f"/repo/f{i}.txt"}) for i in range(8)]
    sc = scenario(calls, files={f"/repo/f{i}.txt": f"{i}\n" for i in range(8)})
    result = run(sc, hash_ordered, 1)  # type: ignore[arg-type]
    reproducer = reproducer_of(result, "tests.explore.test_sound_exploration:hash_ordered", "x", "o", "test")
    assert verify(reproducer).ok  # same process: identical
    fresh = verify(reproducer, fresh_process=True)
    assert not fresh.ok and "PYTHONHASHSEED" in fresh.describe()
    steady = reproducer_of(run(sc, get_scheduler("serial"), 1), "serial", "x", "o", "test")
    assert verify(steady, fresh_process=True).ok


# -- regressions found by review ---------------------------------------------------------------------


class _RetryTicketOnTimeout:
    """Starts every call; the ticket gets a 201 ms timeout and one retry if it timed out."""

    name = "retry-ticket-on-timeout"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        def one(call: Any) -> Generator[simpy.Event, Any, CallResult]:
            if call.id != "ticket":
                return (yield ctx.start(call))  # type: ignore[no-any-return]
            first = yield ctx.with_timeout(ctx.start(call), 201)
            if first.outcome is Outcome.TIMEOUT:
                return (yield ctx.start(call, attempt=2))  # type: ignore[no-any-return]
            return first  # type: ignore[no-any-return]

        processes = [ctx.env.process(one(c)) for c in batch]
        yield ctx.all_of(processes)
        return [p.value for p in processes]


def _restart_and_ticket() -> Any:
    from harness.faults.latency import Uniform

    sc = scenario([("restart", "restart_service", {"service_name": "api"}),
                   ("ticket", "create_ticket", {"title": "t", "body": "b"})], name="restart-and-ticket")
    # The ticket API answers within 10-20 ms: its 201 ms timeout can never fire.
    return replace(sc, call_latency={"restart": Uniform(400, 400), "ticket": Uniform(10, 20)})


@pytest.mark.parametrize("strategy", ["exhaustive", "pct"])
def test_a_slow_sibling_cannot_push_the_clock_onto_a_timer(strategy: str) -> None:
    """Granting the restart's step used to move the clock to 200 ms and the next decision's tick to
    201, firing the ticket's timeout before its 10-20 ms request: a duplicate ticket no run can have."""
    sc = _restart_and_ticket()
    policy = _RetryTicketOnTimeout()
    assert all(first_violation(run(sc, policy, seed)) is None for seed in range(1, 51))
    assert explore(sc, policy, strategy, runs=200, shrink=False).found is None


class _TimeoutAll:
    name = "timeout-all"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        waits = [ctx.with_timeout(ctx.start(c), 201) for c in batch]
        yield ctx.all_of(waits)
        return [w.value for w in waits]


def test_sleep_sets_with_timers_cover_the_same_outcomes_as_no_reduction() -> None:
    from harness.explore.exhaustive import ExhaustiveSearch
    from harness.explore.footprints import footprints
    from harness.faults.latency import Uniform

    sc = replace(scenario([("c0", "restart_service", {"service_name": "s0"}),
                           ("c1", "create_ticket", {"title": "t", "body": "b"})], name="m"),
                 call_latency={"c0": Uniform(400, 400), "c1": Uniform(0, 10)})

    def outcomes(prints: Any) -> set[tuple[str, ...]]:
        search = ExhaustiveSearch(lambda chooser: run(sc, _TimeoutAll(), 1, chooser=chooser), prints, 1000, 0)
        found = {tuple(r.outcome.value for r in step.result.results) for step in search if step.counted}
        assert search.exhausted
        return found

    realistic = {tuple(r.outcome.value for r in run(sc, _TimeoutAll(), seed).results) for seed in range(1, 30)}
    assert outcomes(footprints(sc)) == outcomes({}) == realistic == {("timeout", "ok")}


def test_a_retry_and_its_abandoned_attempt_are_two_choices() -> None:
    """The first attempt (detached after its timeout) and the retry run side by side; the order of
    their steps decides which ticket id each gets, so it is explored."""
    from harness.faults.latency import Uniform

    base = find_scenario("duplicate-ticket")
    sc = replace(base, execution=base.execution.merged(idempotency_keys=False),
                 catalogue=base.catalogue.overridden("create_ticket", latency=Uniform(400, 900)))
    exploration = explore(sc, "partition", "exhaustive", runs=500, keep_going=True, shrink=False)
    enabled = {entry for f in exploration.findings for d in f.result.decisions for entry in d.enabled}
    assert "open-ticket#2" in enabled and "open-ticket" in enabled


def test_labels_are_checked_and_named_in_the_claim() -> None:
    result = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "parallel", "--strategy",
                                       "exhaustive", "--label", "lost_update", "--no-save"])
    assert result.exit_code == 2 and "unknown label 'lost_update'" in result.output
    doc = _explore_json("config-clobber", "--scheduler", "parallel", "--strategy", "exhaustive",
                        "--label", "duplicate-effect")
    assert doc["proven"] and doc["scope"]["claim"].startswith("proven: no duplicate-effect violation")
    text = CliRunner().invoke(main, ["explore", "config-clobber", "--scheduler", "parallel", "--strategy",
                                     "exhaustive", "--label", "duplicate-effect", "--no-save"]).output
    assert "no duplicate-effect violation in" in text


def test_a_fresh_replay_that_cannot_run_is_an_error_not_nondeterminism() -> None:
    from harness.reproducers.replay import ReproducerError

    result = run(find_scenario("config-clobber"), get_scheduler("serial"), 1)
    reproducer = reproducer_of(result, "no_such_module_anywhere:Policy", "x", "o", "test")
    with pytest.raises(ReproducerError, match="could not be replayed in a fresh process"):
        verify(reproducer, fresh_process=True, scheduler=get_scheduler("serial"))
