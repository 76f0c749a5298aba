"""Learned models: what the recorded turns say about each tool and about the workload, stated with
how much data says it.

Owns the statistics. Per tool: the empirical latency distribution of its attempts (those that ended
ok or with an error; a timed-out or cancelled attempt's duration is where the runtime stopped waiting,
not the tool's latency: it is counted, and the fit takes it as right-censored, "at least this long"),
a log-normal fitted by maximum likelihood (scipy's `lognorm.fit` with the location fixed at 0, over
`CensoredData` when attempts were censored) with its Kolmogorov-Smirnov statistic and p-value against
the same sample (the p-value is optimistic, the parameters having been fitted to that sample: read D
first; with censoring, the sample below the least censoring time against the fit conditioned on that
range), or no fit and the reason when fewer than `MIN_SAMPLES` samples; the rates of
errors, timeouts and retries; how often a call repeats an earlier call of its trace with the same
arguments (only the arguments' equality is used, never their values). For the workload: the
batch-size and tool-mix distributions and the recorded makespans. scipy is imported inside `fit_lognormal`
(the `traces` extra), so importing this module stays cheap. It never reads files and never draws.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from dataclasses import dataclass

from harness.traces.fits import (
    KS_ALPHA,
    MAX_CLASSES,
    Mixture,
    Split,
    argument_classes,
    argument_sizes,
    bic,
    bucket_label,
    fit_mixture,
    lognormal_ll,
    size_buckets,
    split_by_class,
)
from harness.traces.records import CallRecord, Turn

#: Fewer attempts than this: no fit, the empirical values only (a fit to a handful says nothing).
MIN_SAMPLES = 20


@dataclass(frozen=True)
class Fit:
    """A log-normal fitted to `samples` latencies and `censored` lower bounds (timed-out attempts):
    median exp(mu) ms and shape sigma, with the Kolmogorov-Smirnov distance `ks` of the sample from
    it and that test's p-value."""

    median_ms: float
    sigma: float
    samples: int
    ks: float
    p_value: float
    censored: int = 0

    def quantile(self, q: float) -> float:
        """The fitted distribution's q-quantile in ms."""
        return self.median_ms * math.exp(self.sigma * _normal_quantile(q))


@dataclass(frozen=True)
class ToolModel:
    """Everything learned about one tool. `latencies_ms` is the sorted empirical sample (ok and error
    attempts); `fit` is None when there were fewer than MIN_SAMPLES of them (`why_no_fit` says so)."""

    tool: str
    calls: int
    attempts: int
    latencies_ms: tuple[float, ...]
    errors: int
    timeouts: int
    cancelled: int
    retried_calls: int
    calls_with_arguments: int
    repeated_arguments: int
    fit: Fit | None
    why_no_fit: str = ""
    #: The durations of timed-out and cancelled attempts, sorted: lower bounds of their latencies.
    censored_ms: tuple[float, ...] = ()
    #: The two-component mixture, when the single log-normal failed its KS test (`harness.traces.fits`).
    mixture: Mixture | None = None
    #: The split by an argument class, when one beats the whole fit (`harness.traces.fits`).
    split: Split | None = None

    @property
    def latency_model(self) -> str:
        """What the scenario's latency is: `split`, `mixture`, `lognormal` or `empirical` (too few samples)."""
        if self.split is not None:
            return "split"
        if self.fit is None:
            return "empirical"
        return "mixture" if self.mixture is not None and self.mixture.chosen else "lognormal"

    @property
    def error_rate(self) -> float:
        return self.errors / self.attempts if self.attempts else 0.0

    @property
    def timeout_rate(self) -> float:
        return self.timeouts / self.attempts if self.attempts else 0.0

    def quantile(self, q: float) -> float:
        """The empirical q-quantile (nearest rank) in ms; nan without samples."""
        values = self.latencies_ms
        if not values:
            return math.nan
        return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


@dataclass(frozen=True)
class Workload:
    """The shape of the recorded turns: how many calls a turn had, which tools together, how long the
    runtime took for them, and how often it really ran calls at the same time."""

    turns: int
    batch_sizes: tuple[tuple[int, int], ...]        # (size, turns), by size
    tool_mixes: tuple[tuple[str, int], ...]         # ("query_db+web_search", turns), most common first
    makespans_ms: tuple[float, ...]                 # sorted
    overlapping_turns: int                          # turns where two calls ran at one instant


@dataclass(frozen=True)
class Learned:
    tools: tuple[ToolModel, ...]
    workload: Workload


def learn(turns: tuple[Turn, ...]) -> Learned:
    """The tool models (by tool name) and the workload of `turns`."""
    samples: dict[str, list[float]] = {}
    censored: dict[str, list[float]] = {}
    counts: dict[str, Counter[str]] = {}
    seen_arguments: dict[str, set[tuple[str, str]]] = {}
    calls_of: dict[str, list[CallRecord]] = {}
    for turn in turns:
        earlier = seen_arguments.setdefault(turn.trace_id, set())
        for call in turn.calls:
            calls_of.setdefault(call.tool, []).append(call)
            count = counts.setdefault(call.tool, Counter())
            count["calls"] += 1
            count["retried"] += len(call.attempts) > 1
            for attempt in call.attempts:
                count["attempts"] += 1
                count[attempt.outcome] += 1
                if attempt.outcome in ("ok", "error"):
                    samples.setdefault(call.tool, []).append(attempt.duration_ms)
                else:
                    censored.setdefault(call.tool, []).append(attempt.duration_ms)
            if call.arguments is not None:
                count["with_arguments"] += 1
                key = (call.tool, call.arguments)
                count["repeated"] += key in earlier
                earlier.add(key)
    models = []
    for tool in sorted(counts):
        values = tuple(sorted(samples.get(tool, [])))
        bounds = tuple(sorted(censored.get(tool, [])))
        count = counts[tool]
        fit, why, mixture, split = None, "", None, None
        if len(values) < MIN_SAMPLES:
            why = f"too few samples for a fit ({len(values)} < {MIN_SAMPLES})"
        else:
            fit = fit_lognormal(values, bounds)
            mixture, split = _beyond(fit, values, bounds, calls_of[tool])
        models.append(ToolModel(tool, count["calls"], count["attempts"], values, count["error"], count["timeout"],
                                count["cancelled"], count["retried"], count["with_arguments"], count["repeated"],
                                fit, why, bounds, mixture, split))
    sizes = Counter(len(t.calls) for t in turns)
    mixes = Counter("+".join(sorted({c.tool for c in t.calls})) for t in turns)
    workload = Workload(len(turns), tuple(sorted(sizes.items())),
                        tuple(sorted(mixes.items(), key=lambda kv: (-kv[1], kv[0]))),
                        tuple(sorted(t.makespan_ms for t in turns)),
                        sum(1 for t in turns if t.peak_concurrency() > 1))
    return Learned(tuple(models), workload)


def _beyond(fit: Fit, values: tuple[float, ...], bounds: tuple[float, ...],
            calls: list[CallRecord]) -> tuple[Mixture | None, Split | None]:
    """The mixture (tried when the log-normal fails its KS test and nothing was censored) and the best
    split by an argument class that beats the better whole fit (`harness.traces.fits`)."""
    single = bic(2, len(values) + len(bounds), lognormal_ll(values, fit.median_ms, fit.sigma, bounds))
    mixture = fit_mixture(values, single) if fit.p_value < KS_ALPHA and not bounds else None
    whole = mixture.bic if mixture is not None and mixture.chosen else single
    best = None
    texts = [c.arguments for c in calls]
    candidates: list[tuple[str, list[str], tuple[float, ...], list[str]]] = [
        (argument, classes, (), []) for argument, classes in argument_classes(texts).items()]
    for argument, sizes in argument_sizes(texts).items():
        text = isinstance(json.loads(texts[0] or "{}").get(argument), str)
        for count in range(2, MAX_CLASSES + 1):
            cuts = size_buckets(sizes, count)
            if len(cuts) == count - 1:  # else the same buckets as a smaller count (sizes repeat)
                labels = [bucket_label(argument, cuts, i, text=text) for i in range(count)]
                candidates.append((argument, [labels[bisect.bisect_left(cuts, size)] for size in sizes], cuts, labels))
    for argument, classes, cuts, order in candidates:
        attempts = [(value, a.duration_ms, a.outcome not in ("ok", "error"))
                    for call, value in zip(calls, classes, strict=True) for a in call.attempts]
        split = split_by_class(attempts, argument, whole, MIN_SAMPLES, Counter(classes), fit_lognormal, cuts, order)
        if split is not None and split.bic < split.whole_bic and (best is None or split.bic < best.bic):
            best = split
    return mixture, best


def fit_lognormal(values: tuple[float, ...], censored: tuple[float, ...] = ()) -> Fit:
    """The maximum-likelihood log-normal of `values` (ms; a value <= 0, a span of no measurable
    length, counts as 1 us) and of the right-censored `censored` (each: the latency was at least
    this), and its one-sample KS test. Needs scipy (the `traces` extra)."""
    from scipy import stats

    data = [max(v, 1e-3) for v in values]
    if not censored:
        sigma, _, scale = stats.lognorm.fit(data, floc=0)
        test = stats.kstest(data, "lognorm", args=(sigma, 0, scale))
        return Fit(float(scale), float(sigma), len(data), float(test.statistic), float(test.pvalue))
    bounds = [max(v, 1e-3) for v in censored]
    sigma, _, scale = stats.lognorm.fit(stats.CensoredData(uncensored=data, right=bounds), floc=0)
    limit = min(bounds)
    fitted = stats.lognorm(sigma, 0, scale)
    below = fitted.cdf(limit)
    test = stats.kstest([v for v in data if v <= limit], lambda x: fitted.cdf(x) / below)
    return Fit(float(scale), float(sigma), len(data), float(test.statistic), float(test.pvalue), len(bounds))


def _normal_quantile(q: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)
