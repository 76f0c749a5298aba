"""Tail probabilities of the latency models: how likely one attempt's draw is to reach a value.

Owns P(latency >= ms), P(latency <= ms), the median and a description in words of each model of
`harness.faults.latency`, exact for the whole-millisecond values `sample` returns (a lognormal or
pareto draw is rounded: round(Y) >= ms exactly when Y >= ms - 0.5). It never draws: the models do.
A model it does not know (a user's own) gets None, never a guess.
"""

from __future__ import annotations

import math

from harness.faults.latency import Bimodal, Choice, Fixed, LatencyModel, LogNormal, Pareto, PerAttempt, Uniform


def tail_at_least(model: LatencyModel, attempt: int, ms: int) -> float | None:
    """P(latency >= ms) for one attempt's whole-millisecond draw; None for a model this module does
    not know (a user's own)."""
    if ms <= 0:
        return 1.0
    if isinstance(model, Fixed):
        return 1.0 if model.ms >= ms else 0.0
    if isinstance(model, PerAttempt):
        return 1.0 if model.ms[min(attempt, len(model.ms)) - 1] >= ms else 0.0
    if isinstance(model, Uniform):  # randint: every whole value in [low, high] alike
        return min(1.0, max(0.0, (model.high - max(ms, model.low) + 1) / (model.high - model.low + 1)))
    if isinstance(model, Choice):
        return sum(1 for v in model.ms if v >= ms) / len(model.ms)
    if isinstance(model, Bimodal):  # slow when random() < p_slow
        return model.p_slow * (model.slow >= ms) + (1 - model.p_slow) * (model.fast >= ms)
    if isinstance(model, LogNormal):
        if model.sigma == 0:
            return 1.0 if model.median >= ms else 0.0
        # round(Y) >= ms exactly when Y >= ms - 0.5 (a tie has probability 0); erfc keeps the far tail exact.
        z = (math.log(ms - 0.5) - math.log(model.median)) / model.sigma
        return 0.5 * math.erfc(z / math.sqrt(2))
    if isinstance(model, Pareto):  # min(cap, round(scale * X)), P(X >= x) = x ** -alpha for x >= 1
        if ms > model.cap:
            return 0.0
        if model.scale == 0:
            return 0.0
        ratio = (ms - 0.5) / model.scale
        return 1.0 if ratio <= 1 else ratio ** -model.alpha
    return None


def tail_at_most(model: LatencyModel, attempt: int, ms: int) -> float | None:
    """P(latency <= ms) for one attempt's whole-millisecond draw."""
    above = tail_at_least(model, attempt, ms + 1)
    return None if above is None else 1.0 - above


def median(model: LatencyModel, attempt: int) -> float | None:
    """The median of one attempt's draw (the middle of two middle values for an even choice)."""
    if isinstance(model, Fixed):
        return model.ms
    if isinstance(model, PerAttempt):
        return model.ms[min(attempt, len(model.ms)) - 1]
    if isinstance(model, Uniform):
        return (model.low + model.high) / 2
    if isinstance(model, Choice):
        ordered = sorted(model.ms)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    if isinstance(model, Bimodal):
        return model.fast if model.p_slow < 0.5 else model.slow if model.p_slow > 0.5 else (model.fast + model.slow) / 2
    if isinstance(model, LogNormal):
        return model.median
    if isinstance(model, Pareto):
        return min(model.cap, model.scale * 2 ** (1 / model.alpha))
    return None


def describe_model(model: LatencyModel, attempt: int) -> str:
    """A latency model in words, e.g. 'lognormal, median 700 ms, sigma 0.4'."""
    if isinstance(model, Fixed):
        return f"fixed {in_ms(model.ms)}"
    if isinstance(model, PerAttempt):
        return f"per attempt {', '.join(in_ms(v) for v in model.ms)} (attempt {attempt}: " \
               f"{in_ms(model.ms[min(attempt, len(model.ms)) - 1])})"
    if isinstance(model, Uniform):
        return f"uniform {in_ms(model.low)} to {in_ms(model.high)}"
    if isinstance(model, Choice):
        return f"one of {', '.join(in_ms(v) for v in model.ms)}"
    if isinstance(model, Bimodal):
        return f"bimodal, {in_ms(model.fast)} or {in_ms(model.slow)} with p_slow {model.p_slow:g}"
    if isinstance(model, LogNormal):
        return f"lognormal, median {in_ms(model.median)}, sigma {model.sigma:g}"
    if isinstance(model, Pareto):
        return f"pareto, scale {in_ms(model.scale)}, alpha {model.alpha:g}, cap {in_ms(model.cap)}"
    return type(model).__name__


def in_ms(value: float) -> str:
    """Milliseconds for a reader: `30,000 ms`."""
    return f"{value:,.0f} ms" if float(value).is_integer() else f"{value:,.1f} ms"
