"""Regressions of issue 9: oracles that crashed, double-reported, under-reported or took minutes.

Each test names the bug it pins. Schedulers are small generator functions `fn(batch, ctx)`.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pytest
import simpy
from click.testing import CliRunner

from harness import get_scheduler, run
from harness.cli import main
from harness.exitcodes import ExitCode
from harness.faults.latency import Fixed
from harness.model import Batch, CallResult, Outcome
from harness.oracles import ORACLES, check, exit_code
from harness.oracles.facts import RunFacts
from harness.oracles.verdict import Verdict
from harness.policies.registry import scheduler_names
from harness.run import RunResult, RunStatus
from harness.scenario import Scenario
from harness.scheduling import SchedulerContext
from harness.world import World
from tests.helpers import scenario

Process = Generator[Any, Any, Any]


def verdict(result: RunResult, oracle: str) -> Verdict:
    return ORACLES[oracle](result)


def failed(result: RunResult) -> dict[str, list[str]]:
    return {v.oracle: [x.label for x in v.violations] for v in check(result) if not v.ok}


# -- 1. a call cancelled in the instant it starts ------------------------------------------------


def start_and_cancel_at_once(batch: Batch, ctx: SchedulerContext) -> Process:
    """Fail fast: every call is cancelled in the very instant it is started (no yield in between),
    so the trace has the `abandon` of each attempt before its `start`."""
    results = []
    for call in batch:
        handle = ctx.start(call)
        ctx.cancel(handle)
        results.append((yield handle))
    return results


READ_WRITE = scenario([("write", "write_file_atomic", {"path": "out.txt", "content": "new"}),
                       ("read", "read_file", {"path": "in.txt"})],
                      files={"/repo/in.txt": "in", "/repo/out.txt": "old"})


def test_cancel_in_the_instant_of_start_is_judged_not_crashed() -> None:
    result = run(READ_WRITE, start_and_cancel_at_once, 1)
    events = [(e["ev"], e.get("call")) for e in result.trace if e["ev"] in ("start", "abandon")]
    assert events[0] == ("abandon", "write")  # before any start of it: what crashed RunFacts
    assert [r.outcome.value for r in result.results] == ["cancelled", "cancelled"]
    # Cancelled before they touched anything and reported cancelled: no safety violation. But nothing
    # stopped the turn: answering every call "cancelled" without running it is a dropped call.
    assert failed(result) == {"liveness": ["dropped-call"]}
    # Each attempt is there, abandoned at 0, and occupied no time.
    facts = RunFacts(result)
    assert [(a.call, a.abandoned_t, a.start_t, a.end_t) for a in facts.attempts] == [
        ("write", 0, 0, 0), ("read", 0, 0, 0)]


def test_run_facts_tolerate_events_of_an_attempt_not_yet_opened() -> None:
    """Whatever the context records, RunFacts keeps every attempt it hears of: an abandon, end or
    fault event for an attempt whose start it has not seen yields an attempt abandoned (or ended)
    then, which occupies no time; a later start is another handle's attempt."""
    result = run(READ_WRITE, get_scheduler("serial"), 1)
    head = [e for e in result.trace if e["ev"] in ("run", "batch")]
    t0 = {"t": 0}
    synthetic = (*head,
                 {**t0, "seq": 10, "ev": "abandon", "call": "write", "attempt": 1, "outcome": "cancelled"},
                 {**t0, "seq": 11, "ev": "start", "call": "write", "tool": "write_file_atomic", "attempt": 1},
                 {**t0, "seq": 12, "ev": "end", "call": "write", "attempt": 1, "outcome": "cancelled"},
                 {"t": 5, "seq": 13, "ev": "faults", "call": "read", "attempt": 2, "kinds": ["torn_write"]},
                 {"t": 7, "seq": 14, "ev": "end", "call": "read", "attempt": 2, "outcome": "error", "error": "x"},
                 {"t": 9, "seq": 15, "ev": "abandon", "call": "read", "attempt": 3, "outcome": "unknown"})
    facts = RunFacts(replace(result, trace=synthetic))
    by_key = {(a.call, a.attempt): a for a in facts.attempts}
    writes = [a for a in facts.attempts if a.call == "write"]
    assert [(a.opened, a.start_seq, a.abandoned_seq, a.outcome) for a in writes] == [
        (False, 10, 10, None), (True, 11, None, "cancelled")]
    ended = by_key[("read", 2)]
    assert (ended.opened, ended.injected, ended.outcome, ended.tool) == (False, ("torn_write",), "error", "read_file")
    never = by_key[("read", 3)]
    assert (never.opened, never.abandoned_t, never.start_t, never.end_t) == (False, 9, 9, 9)
    assert facts.started("write") and not facts.started("read")


# -- 2. a crashed runtime "starts" a call, then something cancels it -----------------------------


def starts_after_the_crash(batch: Batch, ctx: SchedulerContext) -> Process:
    """A runtime with a helper process that outlives the crash: it starts the second call after the
    crash (a dead runtime starts nothing and records nothing) and then cancels it (which is
    recorded)."""
    first, second = batch.calls

    def helper() -> Process:
        yield ctx.sleep(200)
        ctx.cancel(ctx.start(second))

    ctx.env.process(helper())
    done = yield ctx.start(first)
    return [done, ctx.skip(second)]


def test_abandon_of_a_call_the_crashed_runtime_never_started() -> None:
    sc = scenario([("slow", "terminal", {"command": "true"}), ("late", "read_file", {"path": "in.txt"})],
                  files={"/repo/in.txt": "in"}, faults={"crash": {"at_ms": 100}},
                  tools={"terminal": {"latency": {"fixed": 1000}}})
    result = run(sc, starts_after_the_crash, 1)
    assert result.status is RunStatus.CRASHED
    # A dead runtime's start is never traced, and neither is its cancel of that handle (the facts
    # would tolerate it: see test_run_facts_tolerate_events_of_an_attempt_not_yet_opened).
    assert [e["ev"] for e in result.trace if e.get("call") == "late"] == []
    assert failed(result) == {}  # it never ran: no effect to explain, no start after anything
    assert [a for a in RunFacts(result).attempts if a.call == "late"] == []


def test_explore_risky_writes_swarm_no_longer_crashes_the_harness() -> None:
    outcome = CliRunner().invoke(main, ["explore", "risky-writes", "--scheduler", "partition", "--strategy",
                                        "random", "--swarm", "--runs", "40", "--no-save"])
    assert outcome.exit_code != ExitCode.HARNESS_BUG, outcome.output
    assert "internal error" not in outcome.output


# -- 3. a ghost is reported once, as a ghost ----------------------------------------------------


def times_out(ms: int) -> Any:
    """`asyncio.wait_for` on every call at once; reports the timeouts."""
    def scheduler(batch: Batch, ctx: SchedulerContext) -> Process:
        waits = [ctx.with_timeout(ctx.start(call), ms) for call in batch]
        yield ctx.all_of(waits)
        return [w.value for w in waits]

    return scheduler


def test_a_ghost_ticket_is_one_ghost_effect_not_also_a_duplicate() -> None:
    # The ticket API ignores cancellation: timed out at 200 ms, the ticket lands at 450 ms anyway.
    sc = replace(scenario([("open-ticket", "create_ticket", {"title": "outage"})]),
                 call_latency={"open-ticket": Fixed(900)})
    result = run(sc, times_out(200), 1)
    assert result.results[0].outcome is Outcome.TIMEOUT and len(result.final.ledger("tickets")) == 1
    v = verdict(result, "serializability")
    assert [x.label for x in v.violations] == ["ghost-effect"]
    assert v.witness["call"] == "open-ticket" and v.witness["reported"] == "timeout"
    assert verdict(result, "exactly-once").ok


# -- 4. a hang names what it waits for ----------------------------------------------------------


def waits_forever_after(count: int) -> Any:
    def scheduler(batch: Batch, ctx: SchedulerContext) -> Process:
        for call in batch.calls[:count]:
            ctx.start(call)
        yield ctx.env.event()  # a deadlock: nothing will ever trigger it

    return scheduler


def test_deadlock_before_any_call_names_the_calls_never_started() -> None:
    sc = scenario([(f"q{i}", "web_search", {"query": str(i)}) for i in range(3)],
                  tools={"web_search": {"latency": {"fixed": 100}}})
    result = run(sc, waits_forever_after(1), 1)  # q0 runs and ends; q1, q2 are never started
    v = verdict(result, "liveness")
    assert v.label == "hang"
    assert v.witness["pending"] == [] and v.witness["never_started"] == ["q1", "q2"]
    assert "never started: q1, q2" in v.message


def test_hang_separates_running_calls_from_calls_never_started() -> None:
    sc = scenario([(f"q{i}", "web_search", {"query": str(i)}) for i in range(3)], time_bound_ms=10_000,
                  tools={"web_search": {"latency": {"fixed": 60_000}}})
    v = verdict(run(sc, waits_forever_after(2), 1), "liveness")
    assert (v.label, v.witness["pending"], v.witness["never_started"]) == ("hang", ["q0", "q1"], ["q2"])


# -- 5. a call left running by a scheduler that failed ------------------------------------------


def raises_after_the_first(batch: Batch, ctx: SchedulerContext) -> Process:
    handles = [ctx.start(call) for call in batch]
    yield handles[0]
    raise RuntimeError("runtime bug")


def returns_garbage_after_the_first(batch: Batch, ctx: SchedulerContext) -> Process:
    handles = [ctx.start(call) for call in batch]
    yield handles[0]
    return "done"


def siblings(**top: Any) -> Scenario:
    return replace(scenario([("fast", "web_search", {"query": "a"}), ("slow", "web_search", {"query": "b"})], **top),
                   call_latency={"fast": Fixed(100), "slow": Fixed(5000)})


SIBLINGS = siblings()


def test_a_sibling_left_running_after_a_scheduler_error_is_orphaned() -> None:
    for scheduler, status in ((raises_after_the_first, RunStatus.SCHEDULER_ERROR),
                              (returns_garbage_after_the_first, RunStatus.CONTRACT_ERROR)):
        result = run(SIBLINGS, scheduler, 1)
        assert result.status is status
        v = verdict(result, "liveness")
        assert [(x.label, x.witness["call"], x.witness["status"]) for x in v.violations] == [
            ("orphaned-call", "slow", status.value)]
        assert exit_code(check(result)) is ExitCode.CONTRACT_ERROR  # the broken contract still decides


def test_hung_and_crashed_batches_report_no_orphans() -> None:
    hung = run(siblings(time_bound_ms=1000), waits_forever_after(2), 1)
    assert [x.label for x in verdict(hung, "liveness").violations] == ["hang"]
    crashed = run(siblings(faults={"crash": {"at_ms": 1000}}), waits_forever_after(2), 1)
    assert crashed.status is RunStatus.CRASHED and verdict(crashed, "liveness").ok


# -- 6. judging a hung run stays linear and never invents a divergence ----------------------------


def starts_everything_and_never_returns(batch: Batch, ctx: SchedulerContext) -> Process:
    """Parallel, except that a batch labelled `hang` is never returned from."""
    handles = [ctx.start(call) for call in batch]
    if batch.label == "hang":
        yield ctx.env.event()
    yield ctx.all_of(handles)
    return [h.result for h in handles]


def read_write_calls(n: int, files: int, prefix: str = "c") -> list[tuple[str, str, Any]]:
    return [(f"{prefix}{i}", "read_file", {"path": f"f{i % files}.txt"}) if i % 2 else
            (f"{prefix}{i}", "write_file", {"path": f"f{i % files}.txt", "content": f"v{i}"}) for i in range(n)]


def hung(n: int, files: int, write_ms: int) -> Scenario:
    sc = scenario(read_write_calls(n, files), files={f"/repo/f{j}.txt": "init" for j in range(files)},
                  time_bound_ms=10_000,
                  tools={"read_file": {"latency": {"fixed": 1000}}, "write_file": {"latency": {"fixed": write_ms}}})
    return replace(sc, batches=(replace(sc.batches[0], label="hang"),))


def test_a_hung_thousand_call_run_is_judged_without_branching(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every call ran to its end, but the scheduler never returned: no call has a result, so each
    # may or may not have taken effect. The replay used to try both for every call, copying the
    # world each time (20 s here at 1,000 calls); the history the trace shows settles it at once.
    result = run(hung(1000, 7, 1000), starts_everything_and_never_returns, 1)
    assert result.status is RunStatus.HANG
    copies = []
    from_state = World.from_state
    monkeypatch.setattr(World, "from_state", classmethod(lambda cls, state: copies.append(1) or from_state(state)))
    assert failed(result) == {"liveness": ["hang"]}
    assert len(copies) <= 2  # the replay's world, not one per call of unknown effect
    assert verdict(result, "liveness").witness["never_started"] == []


def test_calls_stopped_mid_write_by_a_hang_are_no_divergence() -> None:
    # Every write truncated its file and was still running at the bound: past 64 histories the old
    # replay counted them as landed and reported a divergent world.
    for n in (40, 1000):
        result = run(hung(n, 7, 60_000), starts_everything_and_never_returns, 1)
        assert dict(result.final.files)["/repo/f0.txt"] == ""
        assert failed(result) == {"liveness": ["hang"]}


def lost_update_then_hang(writes: int, files: int) -> Scenario:
    """Batch 0: two patches of one file run together and lose an update (reported ok). Batch 1: a
    hang with `writes` writes still running over `files` files."""
    sc = scenario([("p1", "patch", {"path": "cfg", "old": "a=1", "new": "a=2"}),
                   ("p2", "patch", {"path": "cfg", "old": "b=1", "new": "b=2"})],
                  files={"/repo/cfg": "a=1\nb=1\n"}, time_bound_ms=10_000,
                  extra_batches=[[(f"w{i}", "write_file", {"path": f"out{i % files}.txt", "content": "x"})
                                  for i in range(writes)]],
                  tools={"write_file": {"latency": {"fixed": 60_000}}, "patch": {"latency": {"fixed": 100}}})
    return replace(sc, batches=(sc.batches[0], replace(sc.batches[1], label="hang")))


def test_a_real_violation_next_to_a_thousand_calls_of_unknown_effect_is_exact() -> None:
    # Calls of unknown effect that share no target with anyone are decided on their own, so the
    # lost update of batch 0 is found without exploring 2^1000 histories, and nothing else is.
    for files in (1000, 10):
        v = verdict(run(lost_update_then_hang(1000, files), starts_everything_and_never_returns, 1),
                    "serializability")
        assert [x.label for x in v.violations] == ["lost-update"], files
        assert v.witness["lost"] == "p1" and v.witness["overwritten_by"] == "p2"


def gives_up_on_the_writes(batch: Batch, ctx: SchedulerContext) -> Process:
    """Starts the patches and the writes at once, abandons the writes as `unknown` after 100 ms
    (each has truncated its file), then reads the files."""
    handles = {c.id: ctx.start(c) for c in batch if c.name != "read_file"}
    yield ctx.sleep(100)
    for h in handles.values():
        if h.call.name == "write_file":
            ctx.cancel(h, outcome=Outcome.UNKNOWN, reason="gave up; effect unknown")
    for call in batch:
        if call.name == "read_file":
            handles[call.id] = ctx.start(call)
    yield ctx.all_of(handles.values())
    return [handles[c.id].result for c in batch]


def test_too_many_histories_give_a_limited_check_not_a_violation() -> None:
    # Twenty writes of unknown effect over two files, each read later with a reported result: how
    # far each write got decides what the reads saw, so they cannot be decided one by one, and
    # 12 x 12 worlds are more than 64 histories. The lost update of the patches lies beyond the
    # limit: the verdict says the check was limited instead of inventing (or missing) anything.
    writes = [(f"w{i}", "write_file", {"path": "fg"[i % 2], "content": f"v{i}"}) for i in range(20)]
    sc = scenario([("p1", "patch", {"path": "cfg", "old": "a=1", "new": "a=2"}),
                   ("p2", "patch", {"path": "cfg", "old": "b=1", "new": "b=2"}), *writes,
                   ("read-f", "read_file", {"path": "f"}), ("read-g", "read_file", {"path": "g"})],
                  files={"/repo/cfg": "a=1\nb=1\n", "/repo/f": "f0", "/repo/g": "g0"},
                  tools={"write_file": {"latency": {"fixed": 1000}}, "patch": {"latency": {"fixed": 100}},
                         "read_file": {"latency": {"fixed": 100}}})
    result = run(sc, gives_up_on_the_writes, 1)
    assert [r.outcome.value for r in result.results].count("unknown") == 20
    v = verdict(result, "serializability")
    assert v.ok and v.violations == ()
    assert v.message.startswith("check limited: 20 calls of unknown effect")


# -- 7. optimal is a lower bound under per-tool caps ----------------------------------------------


LENGTHS = {"s1": 1000, "s2": 1000, "s3": 1000, "logs": 3000}
CAPPED = replace(
    scenario([("s1", "web_search", {"query": "a"}), ("s2", "web_search", {"query": "b"}),
              ("s3", "web_search", {"query": "c"}), ("logs", "query_service_logs", {"service_name": "api"})],
             max_concurrency=2, tools={"web_search": {"max_concurrency": 1}}),
    call_latency={call: Fixed(ms) for call, ms in LENGTHS.items()})


def brute_force_makespan(sc: Scenario, length: dict[str, int]) -> int:
    """The best makespan of any schedule within the caps (no call conflicts here): every order of
    the calls, each placed at its earliest feasible start (the serial schedule generation scheme,
    which reaches an optimal schedule for some order)."""
    global_cap = sc.max_concurrency or len(sc.calls)
    best = None
    for order in itertools.permutations(sc.calls):
        placed: list[tuple[int, int, str]] = []
        for call in order:
            for start in sorted({0} | {end for _, end, _ in placed}):
                end = start + length[call.id]
                moments = {start} | {s for s, _, _ in placed if start <= s < end}
                running = [[p for p in placed if p[0] <= m < p[1]] for m in moments]
                if all(len(r) < global_cap and sum(1 for p in r if p[2] == call.name) < sc.tool_caps.get(
                        call.name, global_cap) for r in running):
                    placed.append((start, end, call.name))
                    break
        makespan = max(end for _, end, _ in placed)
        best = makespan if best is None else min(best, makespan)
    assert best is not None
    return best


def test_optimal_under_tool_caps_is_the_brute_force_optimum_and_beats_every_policy() -> None:
    # A search waiting for the search slot used to sit on one of the two global slots, so the
    # 3000 ms log query waited for the searches: 5000 ms, where 3000 ms (the query alongside three
    # searches in a row) is possible and is also the trivial bound (the query alone takes 3000).
    best = run(CAPPED, get_scheduler("optimal"), 1)
    assert failed(best) == {}
    assert best.makespan_ms == brute_force_makespan(CAPPED, LENGTHS) == 3000
    for policy in scheduler_names():
        assert best.makespan_ms <= run(CAPPED, get_scheduler(policy), 1).makespan_ms, policy


def test_optimal_hands_freed_slots_to_model_order_not_to_who_asked_first() -> None:
    # When `read` (which waits for `write`) becomes ready in the instant `write` ends, the freed
    # global slot goes to it, not to `later`, which had been waiting since 0 but comes after it.
    sc = replace(scenario([("write", "write_file", {"path": "a", "content": "x"}), ("read", "read_file", {"path": "a"}),
                           ("block", "web_search", {"query": "q"}), ("later", "web_search", {"query": "r"})],
                          max_concurrency=2),
                 call_latency={"write": Fixed(100), "read": Fixed(1000), "block": Fixed(2000), "later": Fixed(100)})
    result = run(sc, get_scheduler("optimal"), 1)
    starts = {r.call_id: r.start_ms for r in result.results}
    assert starts == {"write": 0, "block": 0, "read": 100, "later": 1100}
    assert failed(result) == {}


def test_a_call_cancelled_in_the_instant_it_starts_never_runs_and_draws() -> None:
    """As asyncio never runs a task cancelled before its first step: no start, no touch, no ghost;
    and the Gantt chart of such a run is drawn (it used to raise KeyError)."""
    from harness.report.gantt import gantt_data

    sc = scenario([("w", "write_file", {"path": "/repo/a.txt", "content": "new\n"})], files={"/repo/a.txt": "old\n"})

    def cancel_at_once(batch: Batch, ctx: SchedulerContext) -> Generator[simpy.Event, Any, list[CallResult]]:
        handle = ctx.start(batch.calls[0])
        ctx.cancel(handle)
        yield ctx.sleep(1)
        return [handle.result]

    cancel_at_once.name = "cancel-at-once"  # type: ignore[attr-defined]
    result = run(sc, cancel_at_once, 1)  # type: ignore[arg-type]
    assert not any(e["ev"] in ("start", "touch") for e in result.trace)
    assert result.final_files() == run(sc, get_scheduler("serial"), 1).initial.to_json()["files"]
    # Nothing ran: no safety violation. Cancelled for no reason, it is a dropped call (liveness).
    assert failed(result) == {"liveness": ["dropped-call"]}
    gantt_data(result)
