"""from_threads: thread-based executors, unchanged, deterministic on the virtual clock.

Seed 000's executor (tests/policies/seed000_executor.py: a pool of 8, `wait(timeout=5)` polling the
interrupt flag, pending futures cancelled and 3 s of grace for running ones) runs as hermes
describes; broken executors are caught by the oracles; thread switches are choices for exhaustive
search and replay from a tape; no real thread outlives a run, whatever the executor does.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures._base
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.explore.engine import explore
from harness.model import Outcome
from harness.oracles import check
from harness.run import RunStatus
from harness.sim.arbiter import Tape
from harness.testing import check_scheduler, default_scenarios
from tests.helpers import scenario
from tests.policies import seed000_executor
from tests.policies.seed000_executor import execute as seed000

ROOT = Path(__file__).resolve().parents[2]


def failed(result: Any) -> list[str]:
    return sorted({violation.label for verdict in check(result) for violation in verdict.violations})


#: Every test: no thread outlives it, the patches are gone, and nothing reached stderr.
pytestmark = pytest.mark.usefixtures("no_threads_left_and_quiet")


# -- seed 000, unchanged ------------------------------------------------------------------------


def test_seed000_runs_incident_triage_in_parallel_on_eight_workers() -> None:
    result = run(find_scenario("incident-triage"), from_threads(seed000), seed=1)
    assert result.status is RunStatus.COMPLETED and failed(result) == []
    assert result.makespan_ms == 4000  # parallel: the 4 s query; serial would take 9 s
    assert [r.call_id for r in result.results] == ["call-logs", "call-metrics", "call-deploys"]
    assert [r.start_ms for r in result.results] == [0, 0, 0]


def test_seed000_pool_never_runs_more_than_eight_calls() -> None:
    result = run(find_scenario("fanout-100"), from_threads(seed000), seed=1)
    edges = sorted([(r.start_ms, 1) for r in result.results] + [(r.end_ms, -1) for r in result.results])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert peak == 8
    assert "cap-exceeded" in failed(result)  # the scenario caps at 4: hermes' pool of 8 ignores it


def test_seed000_notices_an_interrupt_only_at_its_five_second_poll() -> None:
    """interrupt-midbatch: Ctrl-C at 1.5 s with 1 s of grace. hermes wakes at 5 s, sees the flag, and
    gives what still runs its 3 s of grace; the metrics query ended at 4 s, the tests end at 6 s: both
    past the scenario's grace, exactly as hermes' executor behaves."""
    seed000_executor.heartbeats.clear()
    result = run(find_scenario("interrupt-midbatch"), from_threads(seed000), seed=1)
    assert result.makespan_ms == 6000
    assert failed(result) == ["grace-exceeded"]
    late = {v.witness["call"]: v.witness["settled_at_ms"] for verdict in check(result) for v in verdict.violations}
    assert late == {"metrics": 4000, "tests": 6000}
    assert all(r.outcome is Outcome.OK for r in result.results)
    assert seed000_executor.heartbeats == []


def test_seed000_gives_running_calls_three_seconds_of_grace() -> None:
    """An interrupt just before the 5 s poll: the tests still running get exactly 3 s, then are
    reported with their effect unknown at 8 s. The pool is shut down without waiting, so its worker
    goes on running them, as in a real process: they end at 20 s, long after the turn (an orphan
    beyond the grace), which the thread bridge no longer hides by abandoning them for the runtime."""
    sc = scenario([("search", "web_search", {"query": "q"}), ("tests", "run_tests", {"path": "."})],
                  files={"/repo/src/app.py": "ok\n", "/repo/tests/test_app.py": "requires src/app.py ok\n"},
                  tools={"run_tests": {"latency": {"fixed": 20000}}},
                  interrupt={"at_ms": 5000, "grace_ms": 3000})
    result = run(sc, from_threads(seed000), seed=1)
    assert result.makespan_ms == 8000
    assert [(r.call_id, r.outcome, r.end_ms) for r in result.results] == [
        ("search", Outcome.OK, result.results[0].end_ms), ("tests", Outcome.UNKNOWN, 8000)]
    assert [(e["call"], e["t"], e["outcome"]) for e in result.trace if e["ev"] == "end"] == [
        ("search", result.results[0].end_ms, "ok"), ("tests", 20000, "ok")]
    assert sorted(failed(result)) == ["grace-exceeded", "orphaned-call"]


_FRESH = """
import json
from tests.policies.seed000_executor import execute  # under its own module name: the scheduler is named by it
from harness import find_scenario, run
from harness.bridges.threads import from_threads
from harness.sim.arbiter import Tape
out = {}
for name in ("incident-triage", "interrupt-midbatch", "fanout-100"):
    out[name] = run(find_scenario(name), from_threads(execute), seed=1).fingerprint
    ordered = run(find_scenario(name), from_threads(execute), seed=2, chooser=Tape())
    out[name + "/order-first"] = [ordered.fingerprint, list(ordered.tape)]
print(json.dumps(out))
"""


def test_seed000_fingerprints_match_in_fresh_processes_under_other_hash_seeds() -> None:
    runs = [json.loads(subprocess.run([sys.executable, "-c", _FRESH], cwd=ROOT, capture_output=True, text=True,
                                      timeout=120, check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout)
            for seed in ("0", "4242")]
    assert runs[0] == runs[1]
    here = run(find_scenario("incident-triage"), from_threads(seed000), seed=1)
    assert runs[0]["incident-triage"] == here.fingerprint
    assert any(entry.startswith("@thread:") for entry in runs[0]["fanout-100/order-first"][1])


# -- broken executors are caught; a correct one passes ----------------------------------------


def completion_order(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    """smolagents-style: results appended as futures complete."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    futures = {pool.submit(run_tool, tc): tc for tc in tool_calls}
    results = [{"id": futures[f].id, "result": f.result()} for f in concurrent.futures.as_completed(futures)]
    pool.shutdown()
    return results


def deaf_to_interrupts(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    """One worker, never looks at the interrupt flag."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        futures = [pool.submit(run_tool, tc) for tc in tool_calls]
    return [{"id": tc.id, "result": f.result()} for tc, f in zip(tool_calls, futures, strict=True)]


def serial_and_attentive(tool_calls: list[Any], run_tool: Any, interrupted: Any) -> list[dict[str, Any]]:
    """One call at a time on a one-worker pool, polling the interrupt every 50 ms; once interrupted,
    pending calls are skipped and the running one is given up (effect unknown) without waiting."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    results: list[dict[str, Any]] = []
    for tc in tool_calls:
        if interrupted.is_set():
            results.append({"id": tc.id, "outcome": "cancelled", "error": "skipped due to user interrupt"})
            continue
        future = pool.submit(run_tool, tc)
        while True:
            try:
                results.append({"id": tc.id, "result": future.result(timeout=0.05)})
            except concurrent.futures.TimeoutError:
                if not interrupted.is_set():
                    continue
                results.append({"id": tc.id, "outcome": "unknown", "error": "interrupted; effect unknown"})
            except Exception as error:
                results.append({"id": tc.id, "success": False, "error": str(error)})
            break
    pool.shutdown(wait=False, cancel_futures=True)  # not `with`: its exit would wait for the running call
    return results


def test_results_in_completion_order_are_caught() -> None:
    result = run(find_scenario("incident-triage"), from_threads(completion_order), seed=1)
    assert [r.call_id for r in result.results] == ["call-deploys", "call-logs", "call-metrics"]
    assert "out-of-order" in failed(result)


def test_an_executor_deaf_to_interrupts_is_caught() -> None:
    result = run(find_scenario("interrupt-midbatch"), from_threads(deaf_to_interrupts), seed=1)
    assert "start-after-interrupt" in failed(result)


def test_a_serial_attentive_executor_passes_check_scheduler_where_no_user_interrupts() -> None:
    # Under an interrupt it gives up its running call without waiting, and the call runs on in its
    # worker (no thread can be stopped): an orphan, reported (tests/policies/test_thread_orphans.py).
    interrupted = [n for n in default_scenarios(generated=False) if find_scenario(n).interrupt is not None]
    assert interrupted  # the built-in interrupt scenarios exist: skipping them is a real choice
    check_scheduler(from_threads(serial_and_attentive), profile="quick", swarm=False, skip=interrupted)


def test_threading_thread_queue_and_lock_work_as_in_production() -> None:
    """Hand-rolled workers: threading.Thread, queue.Queue (get with a timeout), a Lock and Event."""

    def workers(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        jobs: queue.Queue[Any] = queue.Queue()
        done, lock, results = threading.Event(), threading.Lock(), {}

        def work() -> None:
            while True:
                try:
                    tc = jobs.get(timeout=0.5)
                except queue.Empty:
                    return
                value = run_tool(tc)
                with lock:
                    results[tc.id] = value
                    if len(results) == len(tool_calls):
                        done.set()

        for tc in tool_calls:
            jobs.put(tc)
        threads = [threading.Thread(target=work, name=f"w{i}") for i in range(2)]
        for thread in threads:
            thread.start()
        assert done.wait(timeout=60)
        for thread in threads:
            thread.join()
        return [results[tc.id] for tc in tool_calls]

    result = run(find_scenario("incident-triage"), from_threads(workers), seed=1)
    # Two workers: logs (3 s) and metrics (4 s) first, deploys (2 s) after logs: 5 s; the workers
    # then leave after 0.5 s of empty queue.
    assert result.makespan_ms == 5500
    assert [r.start_ms for r in result.results] == [0, 0, 3000]
    assert failed(result) == []


def test_time_inside_threads_is_virtual() -> None:
    seen: list[float] = []

    def sleepy(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        start = time.monotonic()
        time.sleep(2.5)
        seen.append(time.monotonic() - start)
        seen.append(time.time() % 86400)  # fixed epoch: midnight plus virtual time
        return [run_tool(tc) for tc in tool_calls]

    result = run(find_scenario("incident-triage"), from_threads(sleepy), seed=1)
    assert seen == [2.5, 2.5] and result.makespan_ms == 2500 + 9000


# -- thread switches are choices --------------------------------------------------------------


def lock_arrival(tool_calls: list[Any], run_tool: Any) -> list[dict[str, Any]]:
    """One thread per call, serialised by a lock: calls run in lock-arrival order, which is model
    order only if the threads happen to run in creation order (REFERENCE.md pattern 12)."""
    lock, results = threading.Lock(), {}

    def one(tc: Any) -> None:
        with lock:
            results[tc.id] = run_tool(tc)

    threads = [threading.Thread(target=one, args=(tc,)) for tc in tool_calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [{"id": tc.id, "result": results[tc.id]} for tc in tool_calls]


def test_exhaustive_search_orders_thread_switches_and_the_tape_replays() -> None:
    sc = find_scenario("edit-then-test")
    scheduler = from_threads(lock_arrival)
    assert failed(run(sc, scheduler, seed=1)) == []  # threads in creation order: model order
    found = explore(sc, scheduler, "exhaustive", runs=50, seed=1, shrink=False).found
    assert found is not None and found.label == "stale-read"
    tape = found.result.tape or ()
    assert "@thread:002" in tape[: tape.index("@thread:001")]  # the test's thread took the lock first
    again = run(found.result.scenario, scheduler, found.result.seed, chooser=Tape(tape))
    assert again.fingerprint == found.result.fingerprint


def test_pct_gives_threads_priorities_and_finds_the_switch_that_matters() -> None:
    # Before: only calls and time had priorities, threads ran in creation order, and 60 PCT runs missed it.
    found = explore(find_scenario("edit-then-test"), from_threads(lock_arrival), "pct", runs=20, seed=1,
                    shrink=False, depth=2)
    assert found.found is not None and found.found.label == "stale-read"
    assert found.bound is not None
    assert (found.bound["calls"], found.bound["threads"], found.bound["entities"]) == (2, 3, 6)  # and time


# -- no real thread outlives a run --------------------------------------------------------------


def deadlocked(tool_calls: list[Any], run_tool: Any) -> list[Any]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    for tc in tool_calls:
        pool.submit(run_tool, tc)
    threading.Event().wait()  # nobody ever sets it
    return []


def sleeps_forever(tool_calls: list[Any], run_tool: Any) -> list[Any]:
    while True:
        time.sleep(1)


def raises(tool_calls: list[Any], run_tool: Any) -> list[Any]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    for tc in tool_calls:
        pool.submit(run_tool, tc)
    raise ValueError("the executor broke")


@pytest.mark.parametrize(("executor", "status", "label"), [
    (deadlocked, RunStatus.HANG, "hang"),
    (sleeps_forever, RunStatus.HANG, "hang"),
    (raises, RunStatus.SCHEDULER_ERROR, "scheduler-error"),
])
def test_threads_are_released_whatever_the_executor_does(executor: Any, status: RunStatus, label: str) -> None:
    result = run(find_scenario("incident-triage"), from_threads(executor), seed=1)
    assert result.status is status and label in failed(result)
    # (the autouse fixture checks that every thread is gone and every patch restored)


def test_a_crashing_runtime_releases_its_threads() -> None:
    sc = scenario([("a", "web_search", {"query": "a"}), ("b", "web_search", {"query": "b"})],
                  faults={"crash": {"at_ms": 100}})
    result = run(sc, from_threads(seed000), seed=1)
    assert result.status is RunStatus.CRASHED


def test_a_real_thread_subclass_is_refused_with_the_reason() -> None:
    class Worker(threading.Thread):  # defined outside the run: the real class
        pass

    def executor(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        Worker(target=lambda: None).start()
        return []

    result = run(find_scenario("incident-triage"), from_threads(executor), seed=1)
    assert result.status is RunStatus.SCHEDULER_ERROR and "outside the turnstile" in (result.error or "")


_STUCK = """
import threading, time
from harness import find_scenario, run
from harness.bridges.threads import from_threads

def stuck(tool_calls, run_tool):
    threading.Thread(target=lambda: threading.Event().wait()).start()
    threading.Event().wait()

def stubborn(tool_calls, run_tool):
    def never_ends():
        while True:
            try:
                time.sleep(1)
            except BaseException:
                pass
    threading.Thread(target=never_ends).start()
    return [run_tool(tc) for tc in tool_calls]

def spins(tool_calls, run_tool):
    while True:  # never reaches a controlled point: only a wall-clock timeout ends the run
        pass

for executor in (stuck, stubborn):
    print(run(find_scenario("incident-triage"), from_threads(executor), seed=1).status.value, flush=True)

import signal
from harness.run import WallClockExceeded

def wall_timeout(*_):
    raise WallClockExceeded("wall clock")  # as harness run --wall-timeout does

signal.signal(signal.SIGALRM, wall_timeout)
signal.setitimer(signal.ITIMER_REAL, 0.5)
print(run(find_scenario("incident-triage"), from_threads(spins), seed=1).status.value, threading.Lock is
      __import__("_thread").allocate_lock, flush=True)
"""


def test_the_process_exits_even_with_a_thread_that_swallows_its_release_or_spins() -> None:
    done = subprocess.run([sys.executable, "-c", _STUCK], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["hang", "completed", "hang", "True"], "")


def test_the_recipe_in_docs_threads_md_runs_as_written() -> None:
    text = (ROOT / "docs" / "threads.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {"__name__": "docs_threads"}
    exec(compile(block, "docs/threads.md", "exec"), namespace)  # its asserts are the claims
    # A recipe to copy survives check_scheduler's approvals scenario: a denied call's exception is its
    # answer, not an exception out of the executor.
    for seed in (1, 13):
        result = run(find_scenario("ops-approvals"), from_threads(namespace["execute"]), seed=seed)
        assert result.status.value == "completed" and all(v.ok for v in check(result)), seed


def test_barrier_and_timer_wait_in_virtual_time() -> None:
    fired: list[float] = []

    def executor(tool_calls: list[Any], run_tool: Any) -> list[Any]:
        barrier = threading.Barrier(len(tool_calls) + 1)
        results: dict[str, Any] = {}

        def one(tc: Any) -> None:
            results[tc.id] = run_tool(tc)
            barrier.wait()

        for tc in tool_calls:
            threading.Thread(target=one, args=(tc,)).start()
        timer = threading.Timer(1.5, lambda: fired.append(time.monotonic()))
        timer.start()
        barrier.wait(timeout=10)
        timer.join()
        return [results[tc.id] for tc in tool_calls]

    result = run(find_scenario("incident-triage"), from_threads(executor), seed=1)
    assert result.makespan_ms == 4000 and fired == [1.5] and failed(result) == []


def test_a_generator_a_failed_executor_left_behind_closes_quietly_after_the_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`as_completed` abandoned when a tool fails is closed by the collector after the run, on a thread
    of no run: its `with f._condition:` takes and gives back the bridged lock by that thread's ident
    (an int equal to the last, not identical), with nothing printed to stderr."""
    import gc
    import sys

    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    result = run(find_scenario("malformed-args"), from_threads(completion_order), 3)
    assert result.status.value == "scheduler-error"
    del result
    gc.collect()
    assert unraisable == []
