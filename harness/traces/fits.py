"""The fits beyond one log-normal, tried only where one log-normal falls short or the data supports more.

Owns two alternatives and how one is picked, by the Bayesian information criterion (BIC = k ln n -
2 ln L, lower is better; it charges each parameter, so a richer model must earn its parameters):

- **a two-component log-normal mixture**, tried when the single log-normal fails its KS test (p <
  `KS_ALPHA`) and no attempt was censored: fitted by EM on the log latencies from a split at their
  median (no random start, so the same sample gives the same fit), chosen when its BIC (5 parameters)
  is lower than the single log-normal's (2);
- **a split by an argument class**: a top-level argument whose value is one of 2 to `MAX_CLASSES`
  strings (or booleans, or integers) on every call of the tool, each class with at least `MIN_SAMPLES`
  latency samples; one log-normal per class (2 parameters each), chosen when its BIC is lower than the
  tool's best whole fit's. Among several such arguments the lowest BIC wins;
- **a split by an argument's size**: a top-level argument every call carries as a string (its size:
  its length) or a number (its value) with more than `MAX_CLASSES` distinct sizes, cut into 2 to
  `MAX_CLASSES` buckets at the quantiles of its calls' sizes (no search for the cuts, so the same
  sample gives the same buckets), each bucket with at least `MIN_SAMPLES` latency samples; one
  log-normal per bucket, and the cuts are charged as parameters too (3k - 1 for k buckets). It competes
  with the class splits on BIC.

Censored attempts (timeouts) enter a class's log-normal as `fit_lognormal` takes them; the BIC of a
fit with censoring counts them (their survival probability). numpy and scipy are imported inside the
functions (the `traces` extra). It never reads traces and never writes a scenario.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


class Fitted(Protocol):
    """What a class's log-normal fit gives (`harness.traces.learn.Fit`)."""

    @property
    def median_ms(self) -> float: ...

    @property
    def sigma(self) -> float: ...

#: A single log-normal whose KS p-value is below this is said to fail its test (a mixture is then tried).
KS_ALPHA = 0.05
#: An argument with more distinct values than this is not a class (it is an identifier or free text).
MAX_CLASSES = 4


@dataclass(frozen=True)
class Mixture:
    """`weight` of log-normal (median_ms, sigma) and 1 - weight of (median2_ms, sigma2), the faster first."""

    weight: float
    median_ms: float
    sigma: float
    median2_ms: float
    sigma2: float
    samples: int
    ks: float
    p_value: float
    bic: float
    single_bic: float

    @property
    def chosen(self) -> bool:
        """Whether the mixture's BIC beats the single log-normal's (the criterion the summary states)."""
        return self.bic < self.single_bic


@dataclass(frozen=True)
class ClassFit:
    """One class of a split: the argument's value (as JSON text), its latency samples and log-normal."""

    value: str
    calls: int
    samples: int
    median_ms: float
    sigma: float
    censored: int = 0


@dataclass(frozen=True)
class Split:
    """A tool's latency split by the value of `argument` (or, with `cuts`, by its size: class i holds the
    sizes up to `cuts[i]`, the last the rest): one log-normal per class, and the BICs that chose it."""

    argument: str
    classes: tuple[ClassFit, ...]
    bic: float
    whole_bic: float
    cuts: tuple[float, ...] = ()

    def class_of(self, arguments: Mapping[str, object]) -> int | None:
        """The 0-based class of a call with these arguments, or None when it has none."""
        value = arguments.get(self.argument)
        if self.cuts:
            size = size_of(value)
            return None if size is None else bisect.bisect_left(self.cuts, size)
        if not isinstance(value, str | bool | int) or isinstance(value, float):
            return None
        values = [c.value for c in self.classes]
        text = json.dumps(value)
        return values.index(text) if text in values else None


def lognormal_ll(values: Sequence[float], median_ms: float, sigma: float, censored: Sequence[float] = ()) -> float:
    """The log-likelihood of a log-normal for `values` and the right-censored `censored`."""
    from scipy import stats

    fitted = stats.lognorm(max(sigma, 1e-9), 0, median_ms)
    data = [max(v, 1e-3) for v in values]
    return float(sum(fitted.logpdf(data))) + float(sum(fitted.logsf([max(c, 1e-3) for c in censored])))


def bic(parameters: int, observations: int, ll: float) -> float:
    return parameters * math.log(observations) - 2 * ll


def fit_mixture(values: Sequence[float], single_bic: float, iterations: int = 500) -> Mixture:
    """The two-component log-normal mixture of `values` by EM on their logs, with its KS test and BIC."""
    import numpy as np
    from scipy import stats

    logs = np.log(np.maximum(np.asarray(values, dtype=float), 1e-3))
    n = len(logs)
    ordered = np.sort(logs)
    low, high = ordered[: n // 2], ordered[n // 2:]
    weight, mu = 0.5, [float(low.mean()), float(high.mean())]
    sd = [max(float(low.std()), 1e-3), max(float(high.std()), 1e-3)]
    previous = -math.inf
    for _ in range(iterations):
        a = weight * stats.norm.pdf(logs, mu[0], sd[0])
        b = (1 - weight) * stats.norm.pdf(logs, mu[1], sd[1])
        total = np.maximum(a + b, 1e-300)
        ll = float(np.log(total).sum())
        r = a / total
        weight = float(min(max(r.mean(), 1e-3), 1 - 1e-3))
        mu = [float((r * logs).sum() / r.sum()), float(((1 - r) * logs).sum() / (1 - r).sum())]
        sd = [max(math.sqrt(float((r * (logs - mu[0]) ** 2).sum() / r.sum())), 1e-3),
              max(math.sqrt(float(((1 - r) * (logs - mu[1]) ** 2).sum() / (1 - r).sum())), 1e-3)]
        if ll - previous < 1e-9:
            break
        previous = ll
    if mu[0] > mu[1]:
        weight, mu, sd = 1 - weight, [mu[1], mu[0]], [sd[1], sd[0]]
    density = weight * stats.norm.pdf(logs, mu[0], sd[0]) + (1 - weight) * stats.norm.pdf(logs, mu[1], sd[1])
    ll = float(np.log(np.maximum(density, 1e-300)).sum() - logs.sum())  # in ms: the Jacobian of the log

    def cdf(x: object) -> object:
        z = np.log(np.maximum(np.asarray(x, dtype=float), 1e-300))
        return weight * stats.norm.cdf(z, mu[0], sd[0]) + (1 - weight) * stats.norm.cdf(z, mu[1], sd[1])

    test = stats.kstest(np.exp(logs), cdf)
    return Mixture(weight, math.exp(mu[0]), sd[0], math.exp(mu[1]), sd[1], n, float(test.statistic),
                   float(test.pvalue), bic(5, n, ll), single_bic)


def _objects(arguments: Sequence[str | None]) -> list[dict[str, object]]:
    """Every call's arguments as a JSON object, or none at all if one call's are not one."""
    parsed = []
    for text in arguments:
        try:
            value = json.loads(text) if text is not None else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            return []
        parsed.append(value)
    return parsed


def argument_classes(arguments: Sequence[str | None]) -> dict[str, list[str]]:
    """For each top-level argument every call carries with a class-like value (a string, boolean or
    integer; 2 to MAX_CLASSES distinct values), each call's value as JSON text, in call order."""
    parsed = _objects(arguments)
    if not parsed:
        return {}
    found: dict[str, list[str]] = {}
    for name in sorted(parsed[0]):
        values = [p.get(name) for p in parsed]
        if all(isinstance(v, str | bool | int) and not isinstance(v, float) for v in values):
            texts = [json.dumps(v) for v in values]
            if 2 <= len(set(texts)) <= MAX_CLASSES:
                found[name] = texts
    return found


def split_by_class(attempts: Sequence[tuple[str, float, bool]], argument: str, whole_bic: float,
                   minimum: int, calls: Mapping[str, int],
                   fit_lognormal: Callable[[tuple[float, ...], tuple[float, ...]], Fitted],
                   cuts: tuple[float, ...] = (), order: Sequence[str] = ()) -> Split | None:
    """The split of a tool's attempts, `(class value, ms, censored)`, by `argument`'s classes (`calls`:
    how many calls each class has; `fit_lognormal`: `harness.traces.learn`'s, which this module does not
    import, learn importing it): None when a class has fewer than `minimum` latency samples. With
    `cuts` the classes are size buckets (`size_buckets`), kept in size order and charged for the cuts."""
    classes: dict[str, tuple[list[float], list[float]]] = {}
    for value, ms, censored in attempts:
        classes.setdefault(value, ([], []))[1 if censored else 0].append(ms)
    if len(classes) < 2 or any(len(kept) < minimum for kept, _ in classes.values()):
        return None
    if order and sorted(order) != sorted(classes):
        return None
    fits, ll = [], 0.0
    for value, (kept, bounds) in ([(v, classes[v]) for v in order] if order else sorted(classes.items())):
        fit = fit_lognormal(tuple(kept), tuple(bounds))
        ll += lognormal_ll(kept, fit.median_ms, fit.sigma, bounds)
        fits.append(ClassFit(value, calls.get(value, 0), len(kept), fit.median_ms, fit.sigma, len(bounds)))
    return Split(argument, tuple(fits), bic(2 * len(fits) + len(cuts), len(attempts), ll), whole_bic, cuts)


def size_of(value: object) -> float | None:
    """A string's length or a number's value; None for anything else (a boolean is not a size)."""
    if isinstance(value, str):
        return float(len(value))
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def argument_sizes(arguments: Sequence[str | None]) -> dict[str, list[float]]:
    """For each top-level argument every call carries with a size (`size_of`) and more than
    MAX_CLASSES distinct sizes (fewer: the class split covers it), each call's size, in call order."""
    parsed = _objects(arguments)
    found: dict[str, list[float]] = {}
    for name in sorted(parsed[0]) if parsed else ():
        sizes = [size_of(p.get(name)) for p in parsed]
        if all(size is not None for size in sizes) and len(set(sizes)) > MAX_CLASSES:
            found[name] = [size for size in sizes if size is not None]
    return found


def size_buckets(sizes: Sequence[float], count: int) -> tuple[float, ...]:
    """The cuts of `count` buckets at the quantiles of `sizes` (bucket i: sizes up to cuts[i], the last
    the rest); fewer when sizes repeat so much that two quantiles coincide."""
    ordered = sorted(sizes)
    cuts = sorted({ordered[(len(ordered) * i) // count - 1] for i in range(1, count)})
    return tuple(c for c in cuts if c < ordered[-1])


def bucket_label(argument: str, cuts: tuple[float, ...], index: int, *, text: bool) -> str:
    """`len(content) <= 120`, `120 < len(content) <= 900`, `len(content) > 900` (`limit` for a number)."""
    size = f"len({argument})" if text else argument
    low = f"{cuts[index - 1]:g} < " if index > 0 else ""
    return f"{low}{size} <= {cuts[index]:g}" if index < len(cuts) else f"{size} > {cuts[index - 1]:g}"
