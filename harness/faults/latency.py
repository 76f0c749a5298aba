"""Latency models: how long one attempt of a call takes, drawn from a named random stream.

Owns the distributions and their data spelling (`{fixed = 3000}`, `{uniform = [100, 900]}`,
`{lognormal = {median = 3000, sigma = 0.4}}`, `{per_attempt = [900, 300]}`, heavy-tailed
`{pareto = {scale = 100, alpha = 1.5, cap = 60000}}`, `{bimodal = {fast = 100, slow = 5000, p_slow = 0.1}}`,
`{choice = [499, 500, 501]}` for boundary values around a timeout). Every model returns
whole milliseconds >= 0. It never
chooses the stream: the executor passes `latency/<call id>/<attempt>`, which is what makes a call's
latency independent of the scheduler.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from random import Random
from typing import Any, Protocol

from harness.suggest import SpecError, check_keys


class LatencyModel(Protocol):
    def sample(self, rng: Random, attempt: int = 1) -> int: ...

    def support(self, attempt: int = 1) -> tuple[int, float]:
        """The least and the greatest value `sample` can return for this attempt (inf: unbounded).
        Order-first exploration orders a call's steps against timers only as this range allows."""
        ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Fixed:
    ms: int

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return self.ms

    def support(self, attempt: int = 1) -> tuple[int, float]:
        return self.ms, self.ms

    def to_json(self) -> dict[str, Any]:
        return {"fixed": self.ms}


@dataclass(frozen=True, slots=True)
class Uniform:
    low: int
    high: int

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return rng.randint(self.low, self.high)

    def support(self, attempt: int = 1) -> tuple[int, float]:
        return self.low, self.high

    def to_json(self) -> dict[str, Any]:
        return {"uniform": [self.low, self.high]}


@dataclass(frozen=True, slots=True)
class LogNormal:
    """Log-normal with the given median (ms) and shape sigma; the usual shape of RPC latency."""

    median: int
    sigma: float

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return max(0, round(rng.lognormvariate(math.log(self.median), self.sigma)))

    def support(self, attempt: int = 1) -> tuple[int, float]:
        return (self.median, self.median) if self.sigma == 0 else (0, math.inf)

    def to_json(self) -> dict[str, Any]:
        return {"lognormal": {"median": self.median, "sigma": self.sigma}}


@dataclass(frozen=True, slots=True)
class PerAttempt:
    """Attempt n takes `ms[n-1]` (the last value for later attempts): a slow first try and a fast
    retry, as after a cold start or a lost response."""

    ms: tuple[int, ...]

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return self.ms[min(attempt, len(self.ms)) - 1]

    def support(self, attempt: int = 1) -> tuple[int, float]:
        value = self.ms[min(attempt, len(self.ms)) - 1]
        return value, value

    def to_json(self) -> dict[str, Any]:
        return {"per_attempt": list(self.ms)}


@dataclass(frozen=True, slots=True)
class Pareto:
    """Heavy-tailed: `scale` ms times a Pareto(alpha) draw, capped (most calls fast, a few very slow)."""

    scale: int
    alpha: float
    cap: int

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return min(self.cap, round(self.scale * rng.paretovariate(self.alpha)))

    def support(self, attempt: int = 1) -> tuple[int, float]:
        return min(self.scale, self.cap), self.cap

    def to_json(self) -> dict[str, Any]:
        return {"pareto": {"scale": self.scale, "alpha": self.alpha, "cap": self.cap}}


@dataclass(frozen=True, slots=True)
class Bimodal:
    """Usually `fast` ms, with probability `p_slow` `slow` ms (a cache miss, a cold start)."""

    fast: int
    slow: int
    p_slow: float

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return self.slow if rng.random() < self.p_slow else self.fast

    def support(self, attempt: int = 1) -> tuple[int, float]:
        values = [v for v, p in ((self.fast, 1 - self.p_slow), (self.slow, self.p_slow)) if p > 0]
        return min(values), max(values)

    def to_json(self) -> dict[str, Any]:
        return {"bimodal": {"fast": self.fast, "slow": self.slow, "p_slow": self.p_slow}}


@dataclass(frozen=True, slots=True)
class Choice:
    """One of the listed values, uniformly: e.g. just below, at and just above a timeout."""

    ms: tuple[int, ...]

    def sample(self, rng: Random, attempt: int = 1) -> int:
        return self.ms[rng.randrange(len(self.ms))]

    def support(self, attempt: int = 1) -> tuple[int, float]:
        return min(self.ms), max(self.ms)

    def to_json(self) -> dict[str, Any]:
        return {"choice": list(self.ms)}


def boundary(timeout_ms: int) -> Choice:
    """Latencies just below, at and just above a timeout, where off-by-one races live."""
    return Choice((max(0, timeout_ms - 1), timeout_ms, timeout_ms + 1))


class LatencySpecError(SpecError):
    """A latency spelling is wrong; the message says what was expected, `field` which key of the
    latency's table it is about (`lognormal.sigm`), if one."""


#: The spellings of a latency model, and the keys of those spelled as a table.
_KINDS = ("fixed", "uniform", "lognormal", "pareto", "bimodal", "choice", "per_attempt")
_TABLE_KEYS = {"lognormal": ("median", "sigma"), "pareto": ("scale", "alpha", "cap"),
               "bimodal": ("fast", "slow", "p_slow")}


def parse_latency(data: Any) -> LatencyModel:
    """Parse the data spelling of a latency model; raises LatencySpecError saying what was expected."""
    expected = (
        "a table with exactly one of: fixed = MS, uniform = [LOW, HIGH], "
        "lognormal = {median = MS, sigma = S}, per_attempt = [MS, ...], "
        "pareto = {scale = MS, alpha = A, cap = MS}, bimodal = {fast = MS, slow = MS, p_slow = P}, choice = [MS, ...]"
    )
    if isinstance(data, int) and not isinstance(data, bool):
        data = {"fixed": data}
    check_keys(data, _KINDS, error=LatencySpecError)
    if not isinstance(data, Mapping) or len(data) != 1:
        raise LatencySpecError(f"expected {expected}, got {data!r}")
    ((kind, value),) = data.items()
    if kind in _TABLE_KEYS:
        check_keys(value, _TABLE_KEYS[kind], kind, LatencySpecError)
    if kind == "fixed":
        return Fixed(_ms(value, "fixed"))
    if kind == "uniform":
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise LatencySpecError(f"uniform expects [LOW, HIGH], got {value!r}")
        low, high = _ms(value[0], "uniform low"), _ms(value[1], "uniform high")
        if low > high:
            raise LatencySpecError(f"uniform expects LOW <= HIGH, got [{low}, {high}]")
        return Uniform(low, high)
    if kind == "lognormal":
        if not isinstance(value, Mapping) or set(value) != {"median", "sigma"}:
            raise LatencySpecError(f"lognormal expects {{median = MS, sigma = S}}, got {value!r}")
        sigma = value["sigma"]
        if not isinstance(sigma, int | float) or isinstance(sigma, bool) or not 0 <= sigma <= 5:
            raise LatencySpecError(f"lognormal sigma must be a number in [0, 5], got {sigma!r}")
        median = _ms(value["median"], "lognormal median")
        if median <= 0:
            raise LatencySpecError(f"lognormal median must be a whole number of milliseconds > 0, got {median!r}")
        return LogNormal(median, float(sigma))
    if kind == "pareto":
        if not isinstance(value, Mapping) or set(value) != {"scale", "alpha", "cap"}:
            raise LatencySpecError(f"pareto expects {{scale = MS, alpha = A, cap = MS}}, got {value!r}")
        alpha = value["alpha"]
        if not isinstance(alpha, int | float) or isinstance(alpha, bool) or not 0.1 <= alpha <= 10:
            raise LatencySpecError(f"pareto alpha must be a number in [0.1, 10], got {alpha!r}")
        return Pareto(_ms(value["scale"], "pareto scale"), float(alpha), _ms(value["cap"], "pareto cap"))
    if kind == "bimodal":
        if not isinstance(value, Mapping) or set(value) != {"fast", "slow", "p_slow"}:
            raise LatencySpecError(f"bimodal expects {{fast = MS, slow = MS, p_slow = P}}, got {value!r}")
        p_slow = value["p_slow"]
        if not isinstance(p_slow, int | float) or isinstance(p_slow, bool) or not 0 <= p_slow <= 1:
            raise LatencySpecError(f"bimodal p_slow must be a number in [0, 1], got {p_slow!r}")
        return Bimodal(_ms(value["fast"], "bimodal fast"), _ms(value["slow"], "bimodal slow"), float(p_slow))
    if kind == "choice":
        if not isinstance(value, list | tuple) or not value:
            raise LatencySpecError(f"choice expects a non-empty list of milliseconds, got {value!r}")
        return Choice(tuple(_ms(v, "choice entry") for v in value))
    if kind == "per_attempt":
        if not isinstance(value, list | tuple) or not value:
            raise LatencySpecError(f"per_attempt expects a non-empty list of milliseconds, got {value!r}")
        return PerAttempt(tuple(_ms(v, "per_attempt entry") for v in value))
    raise LatencySpecError(f"unknown latency model {kind!r}; expected {expected}")


def _ms(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise LatencySpecError(f"{what} must be a whole number of milliseconds >= 0, got {value!r}")
    return value
