"""Verdicts: what an oracle concluded about a run, with a label and a witness.

Owns the verdict value, its JSON form and how verdicts map to an exit code. It never inspects a
run itself.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.exitcodes import ExitCode


class Kind(enum.StrEnum):
    """What sort of failure a violation is; decides the exit code."""

    SAFETY = "safety"
    LIVENESS = "liveness"
    CONTRACT = "contract"
    TOOL = "tool"  # a user's Python tool failed in its own code: the run's input is broken, not the scheduler


_EXIT = {Kind.SAFETY: ExitCode.SAFETY_VIOLATION, Kind.LIVENESS: ExitCode.LIVENESS_VIOLATION,
         Kind.CONTRACT: ExitCode.CONTRACT_ERROR, Kind.TOOL: ExitCode.TOOL_ERROR}
# When several kinds fail at once, the most fundamental one wins: a tool whose own code failed makes
# the run's input broken (fix it first), a broken contract makes the other verdicts moot, and a hang
# makes safety verdicts partial.
_PRECEDENCE = (Kind.TOOL, Kind.CONTRACT, Kind.LIVENESS, Kind.SAFETY)


@dataclass(frozen=True, slots=True)
class Violation:
    label: str
    message: str
    witness: Mapping[str, Any]
    kind: Kind = Kind.SAFETY

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "kind": self.kind.value, "message": self.message, "witness": dict(self.witness)}


@dataclass(frozen=True, slots=True)
class Verdict:
    """One oracle's conclusion. When violated, `label`/`witness` are those of the first violation
    and `violations` lists them all."""

    oracle: str
    ok: bool
    violations: tuple[Violation, ...] = field(default=())
    note: str = ""
    #: The order the verdict was judged against (serializability: "model" or "writes-first"; see
    #: `harness.oracles.reference`), None for an oracle that judges no order.
    reference: str | None = None

    @classmethod
    def of(cls, oracle: str, violations: Iterable[Violation], note: str = "") -> Verdict:
        found = tuple(violations)
        if not found and cls is Verdict:
            # Nearly every verdict of an exploration is a pass: one frozen value per (oracle, note),
            # shared, instead of a new one per run.
            passed = _PASSED.get((oracle, note))
            if passed is None:
                passed = cls(oracle, True, (), note)
                if len(_PASSED) < _PASSED_MAX:
                    _PASSED[(oracle, note)] = passed
            return passed
        return cls(oracle, not found, found, note)

    @property
    def label(self) -> str | None:
        return self.violations[0].label if self.violations else None

    @property
    def witness(self) -> Mapping[str, Any]:
        return self.violations[0].witness if self.violations else {}

    @property
    def message(self) -> str:
        if not self.violations:
            return self.note or "ok"
        # A note next to violations says what the oracle could not check (e.g. a limited search).
        return self.violations[0].message + (f" ({self.note})" if self.note else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "oracle": self.oracle,
            "ok": self.ok,
            "label": self.label,
            "witness": dict(self.witness),
            "message": self.message,
            "violations": [v.to_json() for v in self.violations],
            **({"reference": self.reference} if self.reference is not None else {}),
        }


def passing(oracle: str, note: str = "") -> Verdict:
    """The passing verdict `Verdict.of(oracle, [], note)` hands out, for an oracle to keep as a constant
    and return without a call (every oracle passes nearly every run of an exploration)."""
    return Verdict.of(oracle, [], note)


#: The passing verdicts `Verdict.of` hands out, by (oracle, note); only fixed notes ever reach it
#: often, and the few that name a run's detail are kept small by `_PASSED_MAX`.
_PASSED: dict[tuple[str, str], Verdict] = {}
_PASSED_MAX = 256


def exit_code(verdicts: Iterable[Verdict]) -> ExitCode:
    kinds = {v.kind for verdict in verdicts for v in verdict.violations}
    for kind in _PRECEDENCE:
        if kind in kinds:
            return _EXIT[kind]
    return ExitCode.PASS


def calls_named(witness: Mapping[str, Any], position: Mapping[str, int]) -> list[str]:
    """The call ids (keys of `position`) a witness names in its top-level values, a string or a list
    of strings each, in model order (`position`)."""
    named: set[str] = set()
    for value in witness.values():
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, str) and item in position:
                named.add(item)
    return sorted(named, key=position.__getitem__)
