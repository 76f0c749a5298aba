"""Every oracle catches a deliberately broken scheduler, and passes `serial` on the same input."""

from __future__ import annotations

import pytest

from harness import find_scenario, get_scheduler, run
from harness.exitcodes import ExitCode
from harness.oracles import ORACLES, check, exit_code, reorder
from harness.oracles.verdict import Verdict
from harness.policies import Parallel
from harness.run import RunResult
from harness.scheduling import Scheduler
from tests.helpers import scenario
from tests.oracles import schedulers as broken


def verdict(result: RunResult, oracle: str) -> Verdict:
    return ORACLES[oracle](result)


def assert_all_pass(result: RunResult) -> None:
    failed = [(v.oracle, v.label, v.message) for v in check(result) if not v.ok]
    assert not failed, failed
    assert exit_code(check(result)) is ExitCode.PASS


SERIAL = get_scheduler("serial")


# -- serializability -----------------------------------------------------------------------


def test_lost_update_on_config_clobber_names_both_calls() -> None:
    sc = find_scenario("config-clobber")
    result = run(sc, get_scheduler("parallel"), 3)
    v = verdict(result, "serializability")
    assert v.label == "lost-update"
    assert {v.witness["lost"], v.witness["overwritten_by"]} == {"raise-timeout", "raise-retries"}
    assert v.witness["target"] == "/repo/config.yaml"
    assert exit_code(check(result)) is ExitCode.SAFETY_VIOLATION
    assert_all_pass(run(sc, SERIAL, 3))


def test_torn_read_on_edit_then_test() -> None:
    sc = find_scenario("edit-then-test")
    v = verdict(run(sc, get_scheduler("parallel"), 1), "serializability")
    assert v.label == "torn-read"
    assert v.witness["call"] == "run-tests" and v.witness["writer"] == "write-fix"
    assert v.witness["truncated_at_ms"] < v.witness["read_at_ms"] < v.witness["written_at_ms"]
    assert_all_pass(run(sc, SERIAL, 1))


READ_AFTER_ATOMIC_WRITE = scenario(
    [("w", "write_file_atomic", {"path": "a.txt", "content": "new"}), ("r", "read_file", {"path": "a.txt"})],
    files={"/repo/a.txt": "old"})


def test_stale_read_when_a_read_overtakes_an_earlier_write() -> None:
    v = verdict(run(READ_AFTER_ATOMIC_WRITE, get_scheduler("parallel"), 1), "serializability")
    assert v.label == "stale-read"
    assert (v.witness["call"], v.witness["writer"]) == ("r", "w")
    assert v.witness["read_at_ms"] < v.witness["written_at_ms"]
    assert_all_pass(run(READ_AFTER_ATOMIC_WRITE, SERIAL, 1))


def test_future_read_when_a_later_write_lands_first() -> None:
    sc = scenario([("r", "read_file", {"path": "a.txt"}), ("w", "write_file", {"path": "a.txt", "content": "new"})],
                  files={"/repo/a.txt": "old"})
    v = verdict(run(sc, broken.Reverse(), 1), "serializability")
    assert v.label == "future-read" and (v.witness["call"], v.witness["writer"]) == ("r", "w")
    assert_all_pass(run(sc, SERIAL, 1))


def test_lost_update_when_blind_writes_land_out_of_model_order() -> None:
    sc = scenario([("w1", "write_file_atomic", {"path": "a.txt", "content": "first"}),
                   ("w2", "write_file_atomic", {"path": "a.txt", "content": "second"})],
                  files={"/repo/a.txt": "old"})
    v = verdict(run(sc, broken.Reverse(), 1), "serializability")
    assert v.label == "lost-update" and (v.witness["lost"], v.witness["overwritten_by"]) == ("w2", "w1")
    assert_all_pass(run(sc, SERIAL, 1))


TICKET = scenario([("t", "create_ticket", {"title": "outage"})])


def test_ghost_effect_when_a_timed_out_call_lands_anyway() -> None:
    result = run(TICKET, broken.TimesOut(100), 1)
    v = verdict(result, "serializability")
    assert v.label == "ghost-effect" and v.witness["call"] == "t" and v.witness["reported"] == "timeout"
    assert v.witness["effects"][0]["t"] > v.witness["reported_at_ms"]
    assert_all_pass(run(TICKET, SERIAL, 1))


def test_a_cancelled_call_that_stops_leaves_no_ghost() -> None:
    sc = scenario([("w", "write_file_atomic", {"path": "a.txt", "content": "new"})], files={"/repo/a.txt": "old"})
    assert verdict(run(sc, broken.TimesOut(100), 1), "serializability").ok


def test_duplicate_effect_on_retry_without_key_and_none_with_key() -> None:
    without = run(TICKET, broken.TimesOutAndRetries(use_key=False), 1)
    assert verdict(without, "serializability").label == "duplicate-effect"
    with_key = run(TICKET, broken.TimesOutAndRetries(use_key=True), 1)
    assert verdict(with_key, "serializability").ok
    assert len(with_key.final.ledger("tickets")) == 1


# -- protocol and contract -----------------------------------------------------------------


def test_completion_order_is_caught_as_out_of_order() -> None:
    sc = find_scenario("incident-triage")
    v = verdict(run(sc, get_scheduler("parallel_completion_order"), 1), "protocol")
    assert v.label == "out-of-order"
    assert v.witness["reported_order"] == ["call-deploys", "call-logs", "call-metrics"]
    assert verdict(run(sc, get_scheduler("parallel"), 1), "protocol").ok
    assert_all_pass(run(sc, SERIAL, 1))


def test_relabelled_results_are_caught_as_mispaired() -> None:
    v = verdict(run(find_scenario("incident-triage"), broken.Relabels(), 1), "protocol")
    assert v.label == "mispaired-result" and v.witness["call"] == "call-logs"
    assert v.witness["produced_by"] == "call-deploys"


@pytest.mark.parametrize("scheduler, label, code", [
    (broken.DropsLast(), "missing-result", ExitCode.CONTRACT_ERROR),
    (broken.DoublesFirst(), "duplicate-result", ExitCode.CONTRACT_ERROR),
    (broken.Fabricates(), "fabricated-result", ExitCode.SAFETY_VIOLATION),
])
def test_protocol_violations(scheduler: Scheduler, label: str, code: ExitCode) -> None:
    result = run(find_scenario("incident-triage"), scheduler, 1)
    assert verdict(result, "protocol").label == label
    assert exit_code(check(result)) is code


def test_raising_scheduler_is_a_contract_error() -> None:
    result = run(find_scenario("incident-triage"), broken.Raises(), 1)
    assert verdict(result, "contract").label == "scheduler-error"
    assert exit_code(check(result)) is ExitCode.CONTRACT_ERROR


# -- exclusivity and caps ------------------------------------------------------------------

CLARIFY = scenario([("q", "clarify", {"question": "which file?"}), ("r", "read_file", {"path": "a.txt"})],
                   files={"/repo/a.txt": "x"})


def test_interactive_tool_overlapping_another_call() -> None:
    v = verdict(run(CLARIFY, get_scheduler("parallel"), 1), "exclusivity")
    assert v.label == "exclusivity" and {v.witness["call"], v.witness["other"]} == {"q", "r"}
    assert_all_pass(run(CLARIFY, SERIAL, 1))


CAPPED = scenario([(f"q{i}", "web_search", {"query": str(i)}) for i in range(4)], max_concurrency=2,
                  tools={"web_search": {"max_concurrency": 3}})


def test_global_cap_exceeded_and_respected() -> None:
    v = verdict(run(CAPPED, get_scheduler("parallel"), 1), "caps")
    assert v.label == "cap-exceeded"
    assert {x.witness["limit"] for x in v.violations} == {"max_concurrency", "tools.web_search.max_concurrency"}
    assert verdict(run(CAPPED, Parallel(max_workers=2), 1), "caps").ok
    assert_all_pass(run(CAPPED, SERIAL, 1))


# -- exactly-once --------------------------------------------------------------------------


def test_exactly_once() -> None:
    assert verdict(run(TICKET, broken.TimesOutAndRetries(use_key=False), 1), "exactly-once").label == "duplicate-effect"
    assert verdict(run(TICKET, broken.TimesOutAndRetries(use_key=True), 1), "exactly-once").ok
    assert verdict(run(TICKET, SERIAL, 1), "exactly-once").ok


# -- liveness ------------------------------------------------------------------------------


def test_hang_names_the_stuck_calls_and_exits_3() -> None:
    sc = scenario([("slow", "web_search", {"query": "x"})], time_bound_ms=10_000,
                  tools={"web_search": {"latency": {"fixed": 60_000}}})
    result = run(sc, broken.NeverReturns(), 1)
    v = verdict(result, "liveness")
    assert v.label == "hang" and v.witness["pending"] == ["slow"]
    assert exit_code(check(result)) is ExitCode.LIVENESS_VIOLATION


def test_orphaned_calls_after_the_scheduler_returns() -> None:
    result = run(find_scenario("incident-triage"), broken.FireAndForget(), 1)
    v = verdict(result, "liveness")
    assert v.label == "orphaned-call"
    # call-deploys (2 s) finished before the first call (3 s) did; only call-metrics (4 s) is orphaned.
    assert [x.witness["call"] for x in v.violations] == ["call-metrics"]
    assert v.witness["returned_at_ms"] == 3000 and v.witness["call_ended_at_ms"] == 4000


INTERRUPTED = scenario([(f"q{i}", "query_service_logs", {"service_name": "api"}) for i in range(3)],
                       interrupt={"at_ms": 1000, "grace_ms": 500})


def test_running_calls_beyond_the_grace_period() -> None:
    v = verdict(run(INTERRUPTED, get_scheduler("parallel"), 1), "liveness")
    assert v.label == "grace-exceeded" and len(v.violations) == 3
    assert v.witness["interrupt_at_ms"] == 1000 and v.witness["grace_ms"] == 500


def test_calls_started_after_the_interrupt() -> None:
    labels = [x.label for x in verdict(run(INTERRUPTED, broken.StartsAfterInterrupt(), 1), "liveness").violations]
    assert labels == ["grace-exceeded", "start-after-interrupt", "start-after-interrupt"]


def test_serial_honours_the_interrupt() -> None:
    result = run(INTERRUPTED, SERIAL, 1)
    assert_all_pass(result)
    # the running call is abandoned after the grace period: it may have had an effect, so `unknown`;
    # the calls never started are skipped as `cancelled`
    assert [(r.outcome.value, r.end_ms) for r in result.results] == [("unknown", 1500), ("cancelled", 1500),
                                                                       ("cancelled", 1500)]
    assert "effect unknown" in (result.results[0].error or "")
    assert result.results[1].error == "skipped due to user interrupt"


# -- reorder invariance --------------------------------------------------------------------


def test_reorder_invariance() -> None:
    clobber = find_scenario("config-clobber")
    v = reorder.check(clobber, get_scheduler("parallel"), range(10))
    assert v.label == "order-dependent" and len(v.witness["seeds"]) == 2
    assert v.witness["completion_orders"][0] != v.witness["completion_orders"][1]
    assert reorder.check(clobber, SERIAL, range(10)).ok
    triage = reorder.check(find_scenario("incident-triage"), get_scheduler("parallel"), range(10))
    assert triage.ok and "distinct completion orders" in triage.note
    assert not triage.note.startswith("10 runs, 1 distinct")  # the jitter really reorders
