"""A replay judged: reproduced, nondeterministic, fixed or still fails, and whether an expectation held.

Owns `judge` and `Judgement` (the verdict, what changed in the code since it was recorded, the exit
code, the lines a replay prints and their JSON form). It never saves anything.

How a replay under the recorded scheduler is judged:

| code since it was recorded | the run now | verdict | exit code |
|---|---|---|---|
| unchanged | same fingerprint | reproduced | the verdicts' |
| unchanged | another trace | nondeterministic | 5 |
| changed (files named) | no violation | fixed | 0 |
| changed | a violation | still fails (naming the labels) | the verdicts' |
| not recorded (older file) | same fingerprint | reproduced | the verdicts' |
| not recorded | another trace | diverged (nondeterminism, or a change it cannot see) | 5 |

A changed run is replayed twice: two runs of the same code that differ are nondeterministic (exit 5),
never `fixed`. With an expectation (`fixed`, `fails`: the recorded label still fires, `reproduces`:
the same fingerprint) an older file is judged by the oracles as if its code changed, unless the
expectation is `reproduces`; the exit code is 0 when it held, 1 when not, 5 for nondeterminism.
Under another scheduler than the recorded one the trace is not compared: fixed or still fails by the
oracles alone, never nondeterministic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.exitcodes import ExitCode
from harness.reproducers.code_identity import CodeChanges, changes_since
from harness.reproducers.divergence import (
    Divergence,
    Replay,
    describe_divergence,
    first_difference,
    likely_cause,
    replay,
)
from harness.reproducers.file import Reproducer
from harness.run import RunResult
from harness.scheduling import Scheduler

if TYPE_CHECKING:
    from harness.oracles.verdict import Verdict


REPRODUCED = "reproduced"
NONDETERMINISTIC = "nondeterministic"
FIXED = "fixed"
STILL_FAILS = "still fails"
#: An older reproducer (no code identity) whose replay differs: nondeterminism or a change it cannot see.
DIVERGED = "diverged"
#: What `--expect` takes: the run has no violation / the recorded label still fires / the same fingerprint.
EXPECTATIONS = ("fixed", "fails", "reproduces")


@dataclass(frozen=True)
class Judgement:
    """A replay judged: the verdict, what changed in the code, and whether an expectation held."""

    replay: Replay
    verdicts: tuple[Verdict, ...]
    #: The violation labels of the run now, sorted.
    labels: tuple[str, ...]
    #: The oracles' exit code for the run now.
    verdicts_exit: int
    verdict: str
    #: How the code differs from the recorded identity; None when none was recorded, or under another scheduler.
    changes: CodeChanges | None
    #: The other scheduler it was judged under (the trace is then not compared); None under the recorded one.
    under: str | None = None
    #: A second run of changed code, made to check that it agrees with the first; None when not made.
    second: RunResult | None = None
    #: What the caller expected (one of EXPECTATIONS), or None.
    expected: str | None = None

    @property
    def reproducer(self) -> Reproducer:
        return self.replay.reproducer

    @property
    def result(self) -> RunResult:
        return self.replay.result

    @property
    def code_changed(self) -> bool | None:
        """Whether the code changed since it was recorded; None when that is not known."""
        return None if self.changes is None else bool(self.changes)

    @property
    def changed_files(self) -> tuple[str, ...]:
        return self.changes.files if self.changes is not None else ()

    @property
    def unstable(self) -> Divergence | None:
        """The first difference between the two runs of changed code, when they differ."""
        if self.second is None or self.second.fingerprint == self.result.fingerprint:
            return None
        return first_difference(self.result.trace, self.second.trace) or (len(self.result.trace), None, None)

    @property
    def held(self) -> bool | None:
        """Whether the expectation held; None without one."""
        if self.expected is None:
            return None
        if self.verdict in (NONDETERMINISTIC, DIVERGED):
            return False
        if self.expected == "fixed":
            return self.verdict == FIXED
        if self.expected == "fails":
            return self.reproducer.label in self.labels
        return self.under is None and self.replay.identical

    @property
    def exit_code(self) -> int:
        """The process's exit code: the expectation's when there is one (0 held, 1 not, 5 nondeterminism),
        else the verdict's (5 for nondeterminism, 0 fixed, else the oracles')."""
        if self.verdict in (NONDETERMINISTIC, DIVERGED):
            return int(ExitCode.NONDETERMINISM)
        if self.expected is not None:
            return int(ExitCode.PASS) if self.held else int(ExitCode.SAFETY_VIOLATION)
        return int(ExitCode.PASS) if self.verdict == FIXED else self.verdicts_exit

    def headline(self) -> str:
        """The verdict in one line."""
        label = self.reproducer.label
        if self.under is not None:
            failed = f"FAILED ({', '.join(self.labels)}); exit code {self.verdicts_exit}" if self.labels else \
                "every oracle holds"
            return f"replayed under {self.under} instead of {self.reproducer.scheduler}: {failed}"
        if self.verdict == REPRODUCED:
            return self.replay.describe()
        if self.verdict == DIVERGED:
            return self.replay.describe()
        changed = f"the code changed since it was recorded ({self.changes.describe()})" if self.changes else \
            "judged by the oracles"
        if self.verdict == NONDETERMINISTIC:
            unstable = self.unstable
            if unstable is not None:
                return f"nondeterministic: {changed}, and two replays of it differ: {describe_divergence(unstable)}"
            return f"nondeterministic: {self.replay.describe()}"
        same = "; the run is byte for byte the recorded one" if self.replay.identical else ""
        if self.verdict == FIXED:
            return f"fixed: {changed} and every oracle holds ({label} no longer fires){same}"
        if label in self.labels:
            others = [x for x in self.labels if x != label]
            return f"still fails: {changed} and {label} still fires" + \
                (f" (with {', '.join(others)})" if others else "") + same
        return f"still fails: {changed}; {label} no longer fires, but the run fails with: {', '.join(self.labels)}"

    def lines(self) -> list[str]:
        """What a replay prints under its header: the verdict, the code, the labels, the expectation."""
        out = [self.headline()]
        label = self.reproducer.label
        if self.under is not None:
            out.append(f"recorded under {self.reproducer.scheduler}: {label}; the trace is not compared "
                       "(another policy runs another schedule)")
        else:
            code = self.reproducer.code
            if self.verdict == NONDETERMINISTIC:
                unstable = self.unstable
                out.append(likely_cause(self.result.trace, self.second.trace, unstable)
                           if unstable is not None and self.second is not None else self.replay.cause())
                if unstable is None and code is not None:
                    out.append(f"the code is unchanged since it was recorded ({code.summary()}); a change "
                               "outside these files is not seen")
            elif code is None:
                out.append("the code identity was not recorded (a reproducer from an older harness)"
                           + (": the run was judged by the oracles, as --expect asks" if self.verdict in
                              (FIXED, STILL_FAILS) else ""))
                if self.verdict == DIVERGED:
                    out.append("if nothing changed, this is nondeterminism: " + self.replay.cause())
                    out.append("if you changed the code since, --expect fixed judges the run by the oracles "
                               "(exit 0 when every oracle holds)")
            elif self.verdict == REPRODUCED:
                out.append(f"the code is unchanged since it was recorded ({code.summary()})")
            out.append(f"expected {label}; verdicts now: {', '.join(self.labels) or 'all oracles hold'}")
        if self.expected is not None:
            failing = (f"it still fails ({', '.join(self.labels)})" if label in self.labels else
                       f"{label} no longer fires (the run fails with {', '.join(self.labels)})")
            happened = {REPRODUCED: "it reproduced, byte for byte", FIXED: "it is fixed", STILL_FAILS: failing,
                        NONDETERMINISTIC: "it is nondeterministic", DIVERGED: "it diverged"}[self.verdict]
            if self.verdict == REPRODUCED and self.code_changed is False and self.expected == "fixed":
                happened += " (the code is unchanged since it was recorded)"
            elif self.verdict == STILL_FAILS and self.replay.identical:
                happened += ", the recorded run byte for byte"
            out.append(f"expected {self.expected}; {happened}: "
                       f"{'held' if self.held else 'did not hold'} (exit {self.exit_code})")
        return out

    def to_json(self) -> dict[str, Any]:
        """The judgement's fields for `--format json` (the text's, as data)."""
        unstable = self.unstable
        return {
            "verdict": self.verdict, "code_recorded": self.reproducer.code is not None,
            "code_changed": self.code_changed, "changed_files": list(self.changed_files),
            "code_changes": ([*self.changes.harness, *self.changes.files] if self.changes is not None else None),
            "labels_now": list(self.labels), "expected": self.expected, "expectation_held": self.held,
            "judged_under": self.under,
            "second_replay": None if self.second is None else
            ("agrees" if unstable is None else describe_divergence(unstable)),
        }


def judge(reproducer: Reproducer, scheduler: Scheduler | None = None, *, under: str | None = None,
          expect: str | None = None) -> Judgement:
    """Replay `reproducer` (under `scheduler`, an instance, if given; else the one it names) and judge
    the run (see the table in the module's docstring). `under` names the scheduler when the caller
    replays under one of its own choosing (`--scheduler NAME`): another policy than the recorded one
    is judged by the oracles alone; the recorded one, named otherwise, is not another. `expect` is
    one of EXPECTATIONS or None."""
    from harness.oracles import check, exit_code

    if expect is not None and expect not in EXPECTATIONS:
        raise ValueError(f"expect: expected one of {', '.join(EXPECTATIONS)}, got {expect!r}")
    outcome = replay(reproducer, scheduler)
    verdicts = tuple(check(outcome.result))
    labels = tuple(sorted({x.label for v in verdicts for x in v.violations}))
    judged = functools.partial(Judgement, outcome, verdicts, labels, int(exit_code(verdicts)), expected=expect)
    if under is not None and _another_scheduler(reproducer, under, outcome.result):
        return judged(FIXED if not labels else STILL_FAILS, None, under)
    changes = changes_since(reproducer.code) if reproducer.code is not None else None
    if changes is not None and not changes:
        return judged(REPRODUCED if outcome.identical else NONDETERMINISTIC, changes)
    if outcome.identical and changes is None:
        return judged(REPRODUCED, None)
    if changes is None and expect in (None, "reproduces"):
        return judged(DIVERGED, None)
    # The code changed (or an older file is judged as asked): the oracles decide, once a second run of
    # the same code agrees with the first; two that differ say nothing about a fix.
    second = None if outcome.identical else reproducer.run(scheduler)
    if second is not None and second.fingerprint != outcome.result.fingerprint:
        return judged(NONDETERMINISTIC, changes, second=second)
    return judged(FIXED if not labels else STILL_FAILS, changes, second=second)


def _another_scheduler(reproducer: Reproducer, name: str, result: RunResult) -> bool:
    """Whether `name` is another policy than the recorded one. Another policy's trace differs by design
    (it names the scheduler in its first event); the recorded policy named otherwise (`module:attr` of
    a built-in, a name its trace carries) is not another."""
    first = reproducer.trace[0] if reproducer.trace else {}
    recorded = first.get("scheduler") if first.get("ev") == "run" else None
    return name != reproducer.scheduler and result.scheduler != (recorded or reproducer.scheduler)

