"""Fault models: latency distributions, the fault plan (duplicate delivery, torn writes, rate limits)."""

from __future__ import annotations

import random

import pytest

from harness import get_scheduler, run
from harness.faults.latency import Bimodal, Choice, LatencySpecError, Pareto, boundary, parse_latency
from harness.model import Outcome
from harness.oracles import ORACLES, check
from harness.policies.partition import Partition
from harness.scenario import ScenarioError
from harness.scheduling import ExecutionPolicy
from tests.helpers import scenario


def test_latency_models_parse_and_draw() -> None:
    rng = random.Random(0)
    heavy = parse_latency({"pareto": {"scale": 100, "alpha": 1.2, "cap": 60_000}})
    draws = [heavy.sample(rng) for _ in range(2000)]
    assert isinstance(heavy, Pareto) and min(draws) >= 100 and max(draws) <= 60_000
    assert sorted(draws)[1000] < 300 < max(draws)  # most fast, a long tail
    two = parse_latency({"bimodal": {"fast": 100, "slow": 5000, "p_slow": 0.1}})
    assert isinstance(two, Bimodal)
    share = sum(two.sample(rng) == 5000 for _ in range(2000)) / 2000
    assert 0.07 < share < 0.13
    assert boundary(500) == Choice((499, 500, 501)) == parse_latency({"choice": [499, 500, 501]})
    for bad in ({"pareto": {"scale": 1}}, {"bimodal": {"fast": 1, "slow": 2, "p_slow": 2}}, {"choice": []}):
        with pytest.raises(LatencySpecError):
            parse_latency(bad)


def test_duplicate_delivery_is_caught_without_a_key_and_harmless_with_one() -> None:
    sc = scenario([("t", "create_ticket", {"title": "x"})], faults={"duplicate_delivery": {"rate": 1.0}})
    plain = run(sc, get_scheduler("serial"), 1)
    assert len(plain.final.ledger("tickets")) == 2
    assert ORACLES["exactly-once"](plain).label == "duplicate-effect"
    keyed = run(sc, Partition(ExecutionPolicy(idempotency_keys=True)), 1)
    assert len(keyed.final.ledger("tickets")) == 1 and all(v.ok for v in check(keyed))


def test_torn_write_shows_a_half_written_file_to_a_concurrent_reader() -> None:
    sc = scenario([("w", "write_file", {"path": "a", "content": "0123456789"}), ("r", "read_file", {"path": "a"})],
                  files={"/repo/a": "old"}, faults={"torn_writes": {"rate": 1.0}},
                  tools={"write_file": {"latency": {"fixed": 400}}, "read_file": {"latency": {"fixed": 600}}})
    torn = run(sc, get_scheduler("parallel"), 1)  # halves at 200 and 400 ms; the read at 300 ms
    assert torn.results[1].value["content"] == "01234"
    verdict = ORACLES["serializability"](torn)
    assert verdict.label == "torn-read" and verdict.witness["writer"] == "w"
    assert all(v.ok for v in check(run(sc, get_scheduler("serial"), 1)))


def test_rate_limit_rejects_bursts_and_retries_recover() -> None:
    sc = scenario([(f"q{i}", "web_search", {"query": str(i)}) for i in range(4)],
                  faults={"rate_limit": {"tool": "web_search", "limit": 2, "window_ms": 1000}})
    burst = run(sc, get_scheduler("parallel"), 1)
    outcomes = [r.outcome for r in burst.results]
    assert outcomes == [Outcome.OK, Outcome.OK, Outcome.ERROR, Outcome.ERROR]
    assert "429 Too Many Requests" in (burst.results[2].error or "")
    assert all(v.ok for v in check(burst))  # a rejected request had no effect
    patient = run(sc, Partition(ExecutionPolicy(retries=3, backoff_ms=1000)), 1)
    assert all(r.ok for r in patient.results)


def test_fault_plan_is_validated_and_round_trips() -> None:
    from harness.scenario import scenario_from_data
    from harness.scenario.dump import scenario_to_data

    with pytest.raises(ScenarioError, match="faults: expected rate_limit tool 'nope' is not a known tool"):
        scenario([("a", "web_search", {"query": "q"})], faults={"rate_limit": {"tool": "nope", "limit": 1,
                                                                                 "window_ms": 1}})
    with pytest.raises(ScenarioError, match=r"faults\.earthquake: expected one of the keys crash, duplicate_delivery"):
        scenario([("a", "web_search", {"query": "q"})], faults={"earthquake": {}})
    sc = scenario([("a", "web_search", {"query": "q"})], faults={"torn_writes": {"rate": 0.5},
                  "rate_limit": [{"tool": "web_search", "limit": 1, "window_ms": 10}]})
    assert scenario_from_data(scenario_to_data(sc)).faults == sc.faults


def test_a_crash_ends_the_run_and_the_world_stays_explainable() -> None:
    from harness.run import RunStatus

    sc = scenario([("w", "write_file", {"path": "a", "content": "new"}), ("t", "create_ticket", {"title": "x"})],
                  files={"/repo/a": "old"}, faults={"crash": {"at_ms": 100}},
                  extra_batches=[[("later", "web_search", {"query": "q"})]])
    serial = run(sc, get_scheduler("serial"), 1)
    assert serial.status is RunStatus.CRASHED and serial.results == ()
    assert [b.status for b in serial.batches] == [RunStatus.CRASHED]  # the second turn never came
    assert serial.final.file_map["/repo/a"] == ""  # the write died after its truncate: a prefix of its effects
    assert all(v.ok for v in check(serial))
    parallel = run(sc, get_scheduler("parallel"), 1)
    assert len(parallel.final.ledger("tickets")) == 1  # the request was already out: it lands anyway
    assert all(v.ok for v in check(parallel))
    assert not any(e["ev"] == "start" and e["t"] > 100 for e in parallel.trace)
