"""The values a likelihood is made of and how they are said: each `Need` (one draw a witness rests
on, with its probability under the scenario's distributions) and the `Likelihood` of a witness (its
needs, their product, the notes), with the one line reports print, the share of runs a probability
stands for and `UNLIKELY_BELOW`, under which a finding is called unlikely.

Owns these frozen values, their JSON and their words only: computing them is
`harness.report.likelihood`'s (and `harness.report.witness_needs`'). It never reads a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.faults.tails import in_ms

#: Below this per-run probability a finding is called unlikely in the text reports.
UNLIKELY_BELOW = 1e-3


@dataclass(frozen=True, slots=True)
class Need:
    """One draw the witness rests on, and how probable it is under the scenario's distributions."""

    kind: str  # "latency", "failure" or "duplicate-delivery"
    call: str
    attempt: int
    tool: str
    because: str
    #: P(the draw meets the need); None where it cannot be justified (the note says why).
    probability: float | None
    #: The same in every run (a timeout from the attempt's own start, a fault rate); False: set by
    #: other moments of this run.
    fixed: bool
    at_least_ms: int | None = None
    median_ms: float | None = None
    model: str | None = None
    model_json: Mapping[str, Any] | None = None
    #: Random runs: what this run drew, and how unusual that draw is on its own side of the median.
    drawn_ms: int | None = None
    drawn_side: str | None = None
    drawn_tail: float | None = None
    rate: float | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "call": self.call, "attempt": self.attempt, "tool": self.tool,
                "because": self.because, "probability": self.probability, "fixed": self.fixed,
                "at_least_ms": self.at_least_ms, "median_ms": self.median_ms, "model": self.model,
                "model_json": dict(self.model_json) if self.model_json is not None else None,
                "drawn_ms": self.drawn_ms, "drawn_side": self.drawn_side, "drawn_tail": self.drawn_tail,
                "rate": self.rate, "note": self.note}

    def describe(self) -> str:
        who = f"{self.call} (attempt {self.attempt})"
        if self.kind == "latency":
            details = [self.model or "model unknown"]
            if self.drawn_ms is not None:
                details.append(f"drew {in_ms(self.drawn_ms)}")
            text = f"{who} >= {in_ms(self.at_least_ms or 0)}, as it {self.because} ({self.tool}: {'; '.join(details)})"
        elif self.kind == "failure":
            text = f"{who} to fail by an injected failure"
        else:
            text = f"{who} to be delivered twice"
        text += f": P {_p(self.probability)}" if self.probability is not None else ""
        return text + (f" [{self.note}]" if self.note else "")


@dataclass(frozen=True)
class Likelihood:
    """What a violation's witness rests on and how likely that is (see the module docstring)."""

    label: str
    computed: bool
    mode: str  # "random", "order-first" or "jittered"
    needs: tuple[Need, ...] = ()
    #: Upper bound on the share of runs meeting every need with a probability; None: not computed.
    probability: float | None = None
    conditional: bool = False
    #: Facts that needed no draw (calls that started together) and what was left out, in words.
    notes: tuple[str, ...] = ()
    explorer: str = ""

    @property
    def unlikely(self) -> bool:
        return self.probability is not None and self.probability < UNLIKELY_BELOW

    def to_json(self) -> dict[str, Any]:
        return {"computed": self.computed, "mode": self.mode, "probability": self.probability,
                "unlikely": self.unlikely, "unlikely_below": UNLIKELY_BELOW, "conditional": self.conditional,
                "needs": [need.to_json() for need in self.needs], "notes": list(self.notes),
                "summary": self.line()}

    def line(self) -> str | None:
        """One line for a person (what reports print after `likelihood: `), or None when nothing is
        computed for the label."""
        if not self.computed:
            return None
        parts: list[str] = []
        if self.needs:
            parts.append("needs " + "; and ".join(need.describe() for need in self.needs))
        if self.probability is not None and self.needs:
            that = "that" if len(self.needs) == 1 else "all of that"
            given = ", given this run's other timings" if self.conditional else ""
            if self.probability >= 1:
                parts.append(f"certain under the scenario's distributions{given}: no rare draw")
            elif self.probability <= 0:
                parts.append(f"UNLIKELY: no run of the scenario's own distributions meets {that}{given}")
            else:
                share = _share(self.probability)
                some = (f"{share} of the scenario's draws meets" if share.startswith("1 ")
                        else f"{share} of the scenario's runs meet")
                parts.append(("UNLIKELY: " if self.unlikely else "") + f"at most {some} {that}{given}")
        elif self.probability is not None:
            parts.append("no rare draw found in what the witness rests on")
        parts.extend(self.notes)
        # Parts joined, never capitalised: most begin with a call id, spelled as the scenario spells it.
        return "; ".join(parts) or None


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 or p == 0 else f"{p:.1e}"


def _share(p: float) -> str:
    """A per-run probability as a share of runs, rounded so the bound is never understated."""
    if p <= 0:
        return "0 runs (never)"
    if p >= 0.01:
        return f"{min(100.0, math.ceil(p * 1000) / 10):g}%"
    inverse = 1 / p
    if inverse < 1e6:
        digits = 10 ** max(0, math.floor(math.log10(inverse)) - 1)  # two significant figures, rounded down
        return f"1 run in {math.floor(inverse / digits) * digits:,}"
    return f"1 run in 10^{math.floor(math.log10(inverse))}"
