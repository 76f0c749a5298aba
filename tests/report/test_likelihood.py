"""How likely a finding is (harness.report.likelihood, harness.faults.tails): every figure checked
against brute force — the harness's own latency streams sampled many times, and many seeds of the
same scenario run to count how often the finding really shows — plus findings that need nothing
unusual, order-first findings that say only what they can, swarm runs judged under the user's own
distributions, and the line and field in `harness run` and `harness explore`."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.explore.engine import explore
from harness.faults.latency import (
    Bimodal,
    Choice,
    Fixed,
    LatencyModel,
    LogNormal,
    Pareto,
    PerAttempt,
    Uniform,
    boundary,
)
from harness.faults.tails import median, tail_at_least, tail_at_most
from harness.oracles import check
from harness.oracles.verdict import Violation
from harness.report.likelihood import likelihood_line, likelihood_of
from harness.report.likelihood_values import UNLIKELY_BELOW, Likelihood, _share
from harness.run import RunResult
from harness.scenario.spec import Scenario
from harness.sim.streams import RandomStreams
from tests.helpers import scenario
from tests.oracles.schedulers import TimesOutAndRetries
from tests.report.likelihood_schedulers import ReportsTimeout, Staggered

TICKET_LATENCY = {"lognormal": {"median": 700, "sigma": 0.4}}


def _ticket(timeout_ms: int, **tools: Any) -> Scenario:
    """The issue's ticket tool: lognormal latency with median 700 ms, a runtime timeout of `timeout_ms`."""
    return scenario([("open-ticket", "create_ticket", {"title": "order-service: database pool exhausted"})],
                    tools={"create_ticket": {"latency": TICKET_LATENCY, **tools}},
                    execution={"timeout_ms": timeout_ms})


def _violations(result: RunResult, label: str) -> list[Violation]:
    return [v for verdict in check(result) for v in verdict.violations if v.label == label]


def _within(freq: float, p: float, n: int, sigmas: float = 5.0) -> bool:
    """The observed share `freq` of n trials agrees with probability p (binomial standard error)."""
    return abs(freq - p) <= sigmas * math.sqrt(max(p * (1 - p), 1 / n) / n)


# -- the distributions, against the harness's own streams ---------------------------------------------

MODELS: list[LatencyModel] = [Fixed(700), Uniform(100, 900), LogNormal(700, 0.4), LogNormal(300, 1.5),
                              Pareto(100, 1.5, 60000), Pareto(50, 0.8, 2000), Bimodal(100, 5000, 0.1),
                              Choice((499, 500, 501)), PerAttempt((900, 300))]


def _draws(model: LatencyModel, attempt: int, n: int) -> list[int]:
    """What `n` runs draw for one attempt: the stream the executor uses, one seed per run."""
    return [model.sample(RandomStreams(seed).stream("latency", "call-1", attempt), attempt) for seed in range(n)]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: json.dumps(m.to_json()))
def test_tails_and_median_agree_with_the_harness_own_draws(model: LatencyModel) -> None:
    n = 6000
    for attempt in (1, 2):
        draws = sorted(_draws(model, attempt, n))
        thresholds = {draws[int(q * (n - 1))] + d for q in (0.001, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999) for d in (0, 1)}
        for ms in sorted(thresholds | {0, 1, 10**6}):
            above = tail_at_least(model, attempt, ms)
            below = tail_at_most(model, attempt, ms)
            assert above is not None and below is not None
            assert _within(sum(d >= ms for d in draws) / n, above, n), (ms, above)
            assert _within(sum(d <= ms for d in draws) / n, below, n), (ms, below)
        middle = median(model, attempt)
        assert middle is not None
        assert sum(d <= middle for d in draws) / n >= 0.5 - 0.03 and sum(d >= middle for d in draws) / n >= 0.5 - 0.03


def _normal_tail_by_integration(z: float) -> float:
    """P(N(0,1) >= z) by Simpson's rule on the density (independent of math.erfc)."""
    steps, width = 200_000, 30.0
    h = width / steps
    total = sum((1 if i in (0, steps) else 4 if i % 2 else 2) * math.exp(-((z + i * h) ** 2) / 2)
                for i in range(steps + 1))
    return total * h / 3 / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("ms", [800, 2_000, 30_000])
def test_the_lognormal_far_tail_is_exact(ms: int) -> None:
    """Far beyond what sampling can reach (the issue's 30 s against a 700 ms median is ~9.4 sigma)."""
    z = (math.log(ms - 0.5) - math.log(700)) / 0.4
    expected = _normal_tail_by_integration(z)
    got = tail_at_least(LogNormal(700, 0.4), 1, ms)
    assert got is not None and math.isclose(got, expected, rel_tol=1e-6)


def test_a_user_model_gets_no_guess() -> None:
    class Mine:
        def sample(self, rng: Any, attempt: int = 1) -> int:
            return 5

    assert tail_at_least(Mine(), 1, 3) is None  # type: ignore[arg-type]
    assert median(Mine(), 1) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("p", [0.9, 0.5, 0.0123, 0.001, 8.3e-4, 1 / 1234, 3.3e-7, 2.9e-21])
def test_the_share_printed_never_understates_the_bound(p: float) -> None:
    text = _share(p)
    if text.endswith("%"):
        shown = float(text[:-1]) / 100
    elif "^" in text:
        shown = 10.0 ** -int(text.rpartition("^")[2])
    else:
        shown = 1 / int(text.removeprefix("1 run in ").replace(",", ""))
    assert shown >= p and shown <= 10 * p + 1e-12


# -- ghost effects and retries: the figure against many seeds ------------------------------------------


def test_a_ghost_effect_needs_the_attempt_to_outlive_its_timeout_as_often_as_the_figure_says() -> None:
    """ReportsTimeout reports a timeout while create_ticket keeps running: a ghost effect exactly when
    the attempt outlives the 800 ms timeout, which the figure says happens in P(latency >= 800) of runs."""
    sc, n = _ticket(800), 600
    expected = tail_at_least(LogNormal(700, 0.4), 1, 800)
    assert expected is not None and 0.3 < expected < 0.45
    ghosts = 0
    for seed in range(1, n + 1):
        result = run(sc, ReportsTimeout(), seed)
        found = _violations(result, "ghost-effect")
        drawn = LogNormal(700, 0.4).sample(RandomStreams(seed).stream("latency", "open-ticket", 1))
        if not found:
            assert drawn <= 800  # the need is also sufficient here: the bound is tight
            continue
        ghosts += 1
        told = likelihood_of(result, found[0])
        assert told.computed and told.mode == "random" and not told.conditional
        (need,) = told.needs
        assert (need.kind, need.call, need.attempt, need.at_least_ms, need.fixed) == ("latency", "open-ticket", 1,
                                                                                      800, True)
        assert need.drawn_ms == drawn and drawn >= 800  # the need the run met, and the draw it met it with
        assert need.probability == told.probability == expected
        assert need.median_ms == 700 and not told.unlikely
    assert _within(ghosts / n, expected, n)


def test_a_duplicate_after_a_retry_is_as_likely_as_its_first_attempt_timing_out() -> None:
    sc, n = _ticket(800), 400
    expected = tail_at_least(LogNormal(700, 0.4), 1, 800)
    assert expected is not None
    duplicates = 0
    for seed in range(1, n + 1):
        result = run(sc, TimesOutAndRetries(timeout_ms=800), seed)
        found = _violations(result, "duplicate-effect")
        if found:
            duplicates += 1
            for violation in found:  # serializability's and exactly-once's witnesses rest on the same draw
                told = likelihood_of(result, violation)
                assert [(n.call, n.attempt, n.at_least_ms) for n in told.needs] == [("open-ticket", 1, 800)]
                assert told.probability == expected
    assert _within(duplicates / n, expected, n)


def test_failures_before_a_retry_are_needs_with_their_rate() -> None:
    """Attempts that failed by injection before the duplicating retry are needs of their own (rate 0.5
    each, independent streams): the figure is their product with the timeout's."""
    sc = scenario([("t", "create_ticket", {"title": "outage"})],
                  tools={"create_ticket": {"latency": TICKET_LATENCY, "failure": {"rate": 0.5}}},
                  execution={"timeout_ms": 800, "retries": 3, "retry_non_idempotent": True,
                             "idempotency_keys": False, "backoff_ms": 10})
    timeout = tail_at_least(LogNormal(700, 0.4), 1, 800)
    assert timeout is not None
    seen_failures = False
    for seed in range(1, 80):
        result = run(sc, get_scheduler("partition"), seed)
        for violation in _violations(result, "duplicate-effect"):
            told = likelihood_of(result, violation)
            failures = [n for n in told.needs if n.kind == "failure"]
            latencies = [n for n in told.needs if n.kind == "latency"]
            assert all(n.probability == n.rate == 0.5 for n in failures)
            assert all(n.probability == timeout for n in latencies)
            assert told.probability is not None
            assert math.isclose(told.probability, 0.5 ** len(failures) * timeout ** len(latencies))
            facts = {(a["call"], a["attempt"]): a for a in result.trace if a["ev"] == "end"}
            for need in failures:  # each failure need is one the run really met
                assert facts[(need.call, need.attempt)].get("fault") == "failure"
            seen_failures = seen_failures or bool(failures)
    assert seen_failures


def test_the_issue_ghost_needs_30_s_against_a_700_ms_median_and_is_called_unlikely() -> None:
    """The issue's case: PCT lets the 30 s timeout fire before the call ends (a lognormal has no upper
    bound), so the ghost is found at once; the report says what that needs and how rare it is."""
    sc = _ticket(30_000)
    exploration = explore(sc, ReportsTimeout(), "pct", runs=30, seed=1)
    finding = exploration.shrunk
    assert finding is not None and finding.label == "ghost-effect"
    told = likelihood_of(finding.result, finding)
    assert told.mode == "order-first" and told.unlikely
    (need,) = told.needs
    assert (need.at_least_ms, need.fixed, need.median_ms, need.drawn_ms) == (30_000, True, 700, None)
    z = (math.log(30_000 - 0.5) - math.log(700)) / 0.4
    assert told.probability is not None and math.isclose(told.probability, _normal_tail_by_integration(z),
                                                         rel_tol=1e-6)
    assert told.probability < 1e-20
    line = likelihood_line(finding.result, finding)
    assert line is not None
    for words in ("open-ticket (attempt 1) >= 30,000 ms", "outlived its 30,000 ms timeout", "median 700 ms",
                  "UNLIKELY: at most 1 run in 10^20", "chosen by the explorer (pct(d=3))", "not computed"):
        assert words in line, (words, line)
    # And random runs agree: 300 seeds of the scenario's own draws show no ghost at all.
    assert not any(_violations(run(sc, ReportsTimeout(), seed), "ghost-effect") for seed in range(1, 301))


def test_a_swarm_run_is_judged_under_the_user_scenario() -> None:
    """Swarm's timeout-boundary latencies (29,999, 30,000 or 30,001 ms) make the 30 s ghost common; under
    the user's own lognormal it stays a 1-in-10^20 event, and the report says which is which."""
    own = _ticket(30_000)
    swarmed = replace(own, catalogue=own.catalogue.overridden("create_ticket", latency=boundary(30_000)))
    result = next(r for seed in range(1, 40) if _violations(r := run(swarmed, ReportsTimeout(), seed),
                                                            "ghost-effect"))
    violation = _violations(result, "ghost-effect")[0]
    as_ran = likelihood_of(result, violation)
    assert as_ran.probability == pytest.approx(2 / 3) and not as_ran.unlikely
    under_own = likelihood_of(result, violation, scenario=own)
    assert under_own.unlikely and under_own.probability is not None and under_own.probability < 1e-20
    (need,) = under_own.needs
    assert need.drawn_ms in (30_000, 30_001) and need.note is not None and "swarm" in need.note


def test_a_fault_only_swarm_switched_on_has_no_probability() -> None:
    own = _ticket(800)
    swarmed = scenario([("t", "create_ticket", {"title": "outage"})],
                       tools={"create_ticket": {"latency": TICKET_LATENCY, "failure": {"attempts": [1]}}},
                       execution={"timeout_ms": 800, "retries": 2, "retry_non_idempotent": True,
                                  "idempotency_keys": False, "backoff_ms": 10})
    own = replace(own, batches=swarmed.batches)
    for seed in range(1, 80):
        result = run(swarmed, get_scheduler("partition"), seed)
        for violation in _violations(result, "duplicate-effect"):
            told = likelihood_of(result, violation, scenario=own)
            failure = next(n for n in told.needs if n.kind == "failure")
            assert failure.probability is None and failure.note is not None and "swarm" in failure.note
            as_ran = likelihood_of(result, violation)
            assert next(n for n in as_ran.needs if n.kind == "failure").probability == 1.0  # attempts = [1]
            return
    raise AssertionError("no duplicate found")


# -- overlaps -------------------------------------------------------------------------------------------

TWO_PATCHES = [("a", "patch", {"path": "notes.txt", "old_string": "alpha", "new_string": "ALPHA"}),
               ("b", "patch", {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})]
NOTES = {"/repo/notes.txt": "alpha beta\n"}


def test_a_lost_update_between_staggered_calls_needs_the_first_to_still_run_and_is_as_likely_as_said() -> None:
    """b starts 700 ms after a; both patch one file (read at start, write at the end). The update is lost
    exactly when a is still running then: P(uniform 0-1000 >= 700) = 301/1001."""
    sc = scenario(TWO_PATCHES, files=NOTES, tools={"patch": {"latency": {"uniform": [0, 1000]}}})
    n, lost = 500, 0
    for seed in range(1, n + 1):
        result = run(sc, Staggered(), seed)
        found = _violations(result, "lost-update")
        if not found:
            continue
        lost += 1
        told = likelihood_of(result, found[0])
        (need,) = told.needs
        assert (need.call, need.at_least_ms, need.fixed) == ("a", 700, False)
        assert need.drawn_ms is not None and need.drawn_ms >= 700
        assert told.probability == 301 / 1001 and told.conditional
        assert "given this run's other timings" in (told.line() or "")
    assert _within(lost / n, 301 / 1001, n)


def test_a_finding_that_needs_nothing_unusual_is_not_called_unlikely() -> None:
    sc = scenario(TWO_PATCHES, files=NOTES, tools={"patch": {"latency": {"lognormal": {"median": 50,
                                                                                      "sigma": 2.0}}}})
    for seed in (1, 2, 3):
        result = run(sc, get_scheduler("parallel"), seed)
        (violation,) = _violations(result, "lost-update")
        told = likelihood_of(result, violation)
        assert told.computed and told.needs == () and told.probability == 1.0 and not told.unlikely
        line = told.line() or ""
        assert "no rare draw" in line and "a and b started together" in line and "UNLIKELY" not in line


def test_a_need_the_scenario_makes_certain_says_so() -> None:
    """duplicate-ticket: the first attempt takes 900 ms against a 500 ms timeout, every run."""
    result = run(replace(sc := find_scenario("duplicate-ticket"),
                         execution=replace(sc.execution, idempotency_keys=False)), get_scheduler("partition"), 7)
    violation = _violations(result, "duplicate-effect")[0]
    told = likelihood_of(result, violation)
    assert told.probability == 1.0 and not told.unlikely
    assert "certain under the scenario's distributions" in (told.line() or "")


def test_order_first_overlaps_are_not_priced() -> None:
    """PCT ordered the steps of two calls that started 700 ms apart: the order is the explorer's, so no
    latency it implies is claimed; the report says so instead of printing a figure."""
    sc = scenario(TWO_PATCHES, files=NOTES, tools={"patch": {"latency": {"lognormal": {"median": 200,
                                                                                      "sigma": 0.3}}}})
    exploration = explore(sc, Staggered(), "pct", runs=40, seed=3)
    finding = exploration.found
    assert finding is not None and finding.label == "lost-update"
    told = likelihood_of(finding.result, finding)
    assert told.mode == "order-first" and told.probability is None and not told.unlikely and told.needs == ()
    line = told.line() or ""
    assert "chosen by the explorer (pct(d=3))" in line and "not computed" in line and "P " not in line
    assert "a was still running when b started" in line


def test_labels_without_a_rule_say_nothing() -> None:
    result = run(find_scenario("cascade-cancel"), get_scheduler("parallel_completion_order"), 1)
    violation = next(v for verdict in check(result) for v in verdict.violations if v.label == "out-of-order")
    told = likelihood_of(result, violation)
    assert not told.computed and told.line() is None and likelihood_line(result, violation) is None
    assert told.to_json()["computed"] is False and told.to_json()["probability"] is None


def test_jittered_runs_are_not_the_scenario_draws() -> None:
    result = run(_ticket(800), ReportsTimeout(), 2, jitter=1.0)
    for violation in _violations(result, "ghost-effect"):
        assert not likelihood_of(result, violation).computed


def test_the_json_names_every_field() -> None:
    result = run(_ticket(800), ReportsTimeout(), next(s for s in range(1, 50)
                                                      if _violations(run(_ticket(800), ReportsTimeout(), s),
                                                                     "ghost-effect")))
    document = likelihood_of(result, _violations(result, "ghost-effect")[0]).to_json()
    assert set(document) == {"computed", "mode", "probability", "unlikely", "unlikely_below", "conditional", "needs",
                             "notes", "summary"}
    assert document["unlikely_below"] == UNLIKELY_BELOW
    assert set(document["needs"][0]) >= {"kind", "call", "attempt", "at_least_ms", "median_ms", "drawn_ms",
                                         "drawn_tail", "probability", "fixed", "because"}
    assert json.loads(json.dumps(document)) == document
    assert isinstance(likelihood_of(result, _violations(result, "ghost-effect")[0]), Likelihood)


# -- in the reports ----------------------------------------------------------------------------------------

TICKET_TOML = """name = "ghost-ticket"
[execution]
timeout_ms = {timeout}
[tools.create_ticket]
latency = {{ lognormal = {{ median = 700, sigma = 0.4 }} }}
[[batches]]
[[batches.calls]]
id = "open-ticket"
name = "create_ticket"
arguments = '{{"title": "order-service: database pool exhausted"}}'
"""


@pytest.fixture
def ticket_file(tmp_path: Any) -> Any:
    def make(timeout: int) -> str:
        path = tmp_path / f"ghost-{timeout}.toml"
        path.write_text(TICKET_TOML.format(timeout=timeout))
        return str(path)
    return make


def test_harness_run_prints_the_line_and_the_json_field(ticket_file: Any) -> None:
    path = ticket_file(700)
    runner = CliRunner()
    text = runner.invoke(main, ["run", path, "--scheduler", "tests.report.likelihood_schedulers:ReportsTimeout",
                                "--seed", "1"], env={"COLUMNS": "400"})
    assert text.exit_code == 1, text.output
    lines = text.output.splitlines()
    why = next(i for i, line in enumerate(lines) if line.startswith("why (ghost-effect):"))
    likely = next(i for i, line in enumerate(lines) if line.startswith("likelihood (ghost-effect): needs "))
    assert why < likely and "open-ticket (attempt 1) >= 700 ms" in lines[likely]
    done = runner.invoke(main, ["run", path, "--scheduler", "tests.report.likelihood_schedulers:ReportsTimeout",
                                "--seed", "1", "--format", "json"])
    document = json.loads(done.output)
    (violation,) = [v for verdict in document["verdicts"] for v in verdict["violations"]]
    assert violation["likelihood"]["needs"][0]["at_least_ms"] == 700
    assert violation["likelihood"]["summary"] in lines[likely]
    # A passing run has no violations, so nothing to say.
    clean = runner.invoke(main, ["run", path, "--scheduler", "serial", "--seed", "1", "--format", "json"])
    assert all(not verdict["violations"] for verdict in json.loads(clean.output)["verdicts"])


def test_harness_explore_prints_the_line_and_the_json_field(ticket_file: Any, tmp_path: Any) -> None:
    path = ticket_file(30_000)
    runner = CliRunner()
    args = ["explore", path, "--scheduler", "tests.report.likelihood_schedulers:ReportsTimeout", "--strategy", "pct",
            "--runs", "30", "--no-save"]
    text = runner.invoke(main, args, env={"COLUMNS": "400"})
    assert text.exit_code == 1, text.output
    line = next(line for line in text.output.splitlines() if line.startswith("likelihood: "))
    assert "UNLIKELY" in line and "30,000 ms" in line and "median 700 ms" in line
    document = json.loads(runner.invoke(main, [*args, "--format", "json"]).output)
    assert document["likelihood"]["unlikely"] is True
    assert document["likelihood"]["mode"] == "order-first"
    assert document["likelihood"]["needs"][0]["at_least_ms"] == 30_000
    nothing = json.loads(runner.invoke(main, ["explore", path, "--scheduler", "serial", "--runs", "5", "--no-save",
                                              "--format", "json"]).output)
    assert nothing["found"] is False and nothing["likelihood"] is None


@pytest.mark.parametrize("scheduler", ["parallel", "grouped", "partition", "parallel_completion_order"])
def test_every_need_is_a_fact_of_its_run(scheduler: str) -> None:
    """Across the built-in scenarios: each latency need of a random run was met by the draw the run
    made (a need is what the witness rests on, never a guess), each failure need by a failure the run
    injected; only labels with a rule compute anything."""
    from harness.report.witness_needs import RULED
    from harness.scenario.library import scenario_names

    checked = 0
    for name in scenario_names():
        for seed in (1, 2):
            result = run(find_scenario(name), get_scheduler(scheduler), seed)
            ends = {(e["call"], e["attempt"]): e for e in result.trace if e["ev"] == "end"}
            for verdict in check(result):
                for violation in verdict.violations:
                    told = likelihood_of(result, violation)
                    if violation.label not in RULED:
                        assert not told.computed and told.line() is None
                    for need in told.needs:
                        checked += 1
                        if need.kind == "latency" and need.drawn_ms is not None:
                            assert need.drawn_ms >= (need.at_least_ms or 0), (name, seed, violation, need)
                        if need.kind == "failure":
                            assert ends[(need.call, need.attempt)].get("fault") == "failure"
    assert checked


def test_a_race_in_the_order_the_calls_started_needs_no_latency() -> None:
    """grouped runs run-tests before write-fix (it reorders): the stale read comes from that order, not
    from an overlap, so no latency is a need (else: 'run-tests still running when write-fix started')."""
    result = run(find_scenario("edit-then-test"), get_scheduler("grouped"), 1)
    (violation,) = _violations(result, "stale-read")
    told = likelihood_of(result, violation)
    assert told.needs == () and told.probability == 1.0
    assert "in the order run-tests and write-fix started: the scheduler's order" in (told.line() or "")


def test_a_need_the_user_latencies_cannot_meet_is_said_to_be_impossible() -> None:
    """Swarm's slow start (5x a first attempt) outlives a timeout the scenario's uniform 100-300 ms
    never reaches: under the user's scenario no run meets that need."""
    own = scenario([("t", "create_ticket", {"title": "outage"})],
                   tools={"create_ticket": {"latency": {"uniform": [100, 300]}}}, execution={"timeout_ms": 1000})
    slow = replace(own, catalogue=own.catalogue.overridden("create_ticket", latency=PerAttempt((1500, 300))))
    result = run(slow, ReportsTimeout(), 4)
    (violation,) = _violations(result, "ghost-effect")
    told = likelihood_of(result, violation, scenario=own)
    assert told.probability == 0.0 and told.unlikely
    assert "UNLIKELY: no run of the scenario's own distributions meets that" in (told.line() or "")


def test_check_scheduler_says_the_finding_is_unlikely(ticket_file: Any) -> None:
    """The failure message pytest shows, and the report's JSON, carry the same line."""
    from harness.testing import SchedulerCheckFailed, check_scheduler

    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler(ReportsTimeout(), scenarios=[ticket_file(30_000)], generated=False, swarm=False,
                        profile="quick")
    (failure,) = info.value.failures
    assert failure.label == "ghost-effect"
    line = next(line for line in failure.text.splitlines() if line.startswith("  likelihood: "))
    assert "UNLIKELY" in line and "30,000 ms" in line and "median 700 ms" in line
    assert line in str(info.value)
    assert info.value.report.to_json()["failures"][0]["likelihood"]["unlikely"] is True
