"""The learned models say what the data supports: a fit recovers the distribution it was drawn from,
states its sample count and KS distance, and a tool with too few samples gets no fit."""

from __future__ import annotations

import math

import pytest

from harness.sim.streams import RandomStreams
from harness.traces import MIN_SAMPLES, Attempt, CallRecord, Turn, learn

pytest.importorskip("scipy")


def _turns(tool: str, latencies: list[float], *, trace: str = "t") -> tuple[Turn, ...]:
    turns = []
    for i, ms in enumerate(latencies):
        start = i * 10**12
        attempt = Attempt(f"{i:016x}", start, start + round(ms * 1e6), "ok")
        turns.append(Turn(trace, f"p{i}", (CallRecord(f"c{i}", tool, (attempt,), '{"q": 1}'),)))
    return tuple(turns)


def test_a_fit_recovers_the_lognormal_it_was_drawn_from() -> None:
    rng = RandomStreams(11).stream("test/latency")
    drawn = [rng.lognormvariate(math.log(300), 0.5) for _ in range(2000)]
    (model,) = learn(_turns("search", drawn)).tools
    assert model.fit is not None and model.fit.samples == 2000
    assert model.fit.median_ms == pytest.approx(300, rel=0.05)
    assert model.fit.sigma == pytest.approx(0.5, rel=0.05)
    assert model.fit.ks < 0.03 and model.fit.p_value > 0.05
    assert model.fit.quantile(0.5) == pytest.approx(model.fit.median_ms)


def test_a_fit_to_the_wrong_shape_shows_in_its_ks_distance() -> None:
    """Bimodal latencies (a cache: 10 ms or 1000 ms) are no log-normal, and D says so."""
    (model,) = learn(_turns("cached", [10.0] * 60 + [1000.0] * 40)).tools
    assert model.fit is not None and model.fit.ks > 0.3 and model.fit.p_value < 0.001


def test_too_few_samples_get_no_fit_and_say_so() -> None:
    (model,) = learn(_turns("rare", [100.0 + i for i in range(MIN_SAMPLES - 1)])).tools
    assert model.fit is None and model.why_no_fit == f"too few samples for a fit ({MIN_SAMPLES - 1} < {MIN_SAMPLES})"
    assert len(model.latencies_ms) == MIN_SAMPLES - 1
    (enough,) = learn(_turns("rare", [100.0 + i for i in range(MIN_SAMPLES)])).tools
    assert enough.fit is not None


def test_timeouts_stay_out_of_the_sample_and_repeats_are_counted() -> None:
    ok = Attempt("a", 0, 5 * 10**6, "ok")
    timed_out = Attempt("b", 0, 2000 * 10**6, "timeout", "TimeoutError")
    both = (CallRecord("c1", "db", (ok,), '{"id": 1}'), CallRecord("c2", "db", (timed_out,), '{"id": 2}'))
    turns = (Turn("t", "p1", both),
             Turn("t", "p2", (CallRecord("c3", "db", (ok,), '{"id": 1}'),)),
             Turn("u", "p3", (CallRecord("c4", "db", (ok,), '{"id": 1}'),)))  # another trace: not a repeat
    learned = learn(turns)
    (model,) = learned.tools
    assert model.latencies_ms == (5.0, 5.0, 5.0) and model.timeouts == 1 and model.timeout_rate == 0.25
    assert (model.repeated_arguments, model.calls_with_arguments) == (1, 4)
    assert learned.workload.batch_sizes == ((1, 2), (2, 1))
    assert learned.workload.overlapping_turns == 1
