"""Reproducers kept as regression tests: every file of a folder replayed and judged in a test suite.

Owns finding a folder's reproducers (its `*.json` files, by name), judging each against an
expectation (`fixed` by default: the code changed since it was recorded and no oracle fails; see
`harness.reproducers.replay.judge` for `fails` and `reproduces`), the `AssertionError` that lists every file that
does not meet it with its verdict, its story and the command that replays it, and the pytest
parametrisation that makes each file its own test item. It never explores and never writes.

    # tests/test_regressions.py: each reproducer in tests/regressions/ is a test that its bug stays fixed
    from pathlib import Path

    import pytest

    from harness.testing import assert_fixed, reproducers

    @pytest.mark.parametrize("reproducer", reproducers(Path(__file__).parent / "regressions"))
    def test_stays_fixed(reproducer: Path) -> None:
        assert_fixed(reproducer, trust=["acme"])

A reproducer copied there before the fix fails its test (`it reproduced`: the code is unchanged);
after the fix it passes, and fails again, naming the label and the files that changed, if the bug
comes back. A reproducer is data: code it names is imported only when `trust` lists it (or a package
containing it), as `harness replay --trust-module` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.reproducers.replay import EXPECTATIONS, Judgement, ReproducerError, judge, load, replay_command


@dataclass(frozen=True)
class Outcome:
    """One reproducer file judged against an expectation."""

    path: Path
    expected: str
    #: The judged replay; None when the file could not be replayed (see `error`).
    judgement: Judgement | None
    #: Why the file could not be replayed (malformed, or it names code not trusted); None when it was.
    error: str | None = None
    #: The interleaving story and hang lines of the run now (empty when it passes).
    story: tuple[str, ...] = ()
    #: The `harness replay ... --expect` line that replays it from any directory.
    command: str = ""

    @property
    def held(self) -> bool:
        return self.judgement is not None and bool(self.judgement.held)

    def describe(self) -> str:
        """What happened, in lines: the expectation, the verdict, the story and the replay command."""
        if self.judgement is None:
            return f"{self.path}: cannot be replayed: {self.error}"
        judgement = self.judgement
        lines = [f"{self.path}: {judgement.lines()[-1]}", *(f"  {line}" for line in judgement.lines()[:-1])]
        lines += [f"  {line}" for line in self.story]
        if self.command:
            lines.append(f"  replay: {self.command}")
        return "\n".join(lines)


def reproducer_files(path: str | os.PathLike[str]) -> list[Path]:
    """The reproducer files `path` names: itself if it is a file, else its `*.json` files sorted by
    name. A path that does not exist is a `FileNotFoundError` (a typo must not pass as no regressions)."""
    where = Path(path)
    if where.is_file():
        return [where]
    if not where.is_dir():
        raise FileNotFoundError(f"{where}: no such folder of reproducers")
    return sorted(p for p in where.glob("*.json") if p.is_file())


def reproducers(folder: str | os.PathLike[str]) -> list[Any]:
    """The reproducers of `folder` as pytest parameters, one test item each, named by file (without
    `.json`): `@pytest.mark.parametrize("reproducer", reproducers(FOLDER))`."""
    import pytest

    return [pytest.param(path, id=path.stem) for path in reproducer_files(folder)]


def judge_file(path: str | os.PathLike[str], *, trust: Iterable[str] = (), expect: str = "fixed") -> Outcome:
    """Replay one reproducer file and judge it against `expect` (one of `harness.reproducers.replay.EXPECTATIONS`)."""
    from harness.diagnosis.origins import recording
    from harness.report.hang import hang_lines
    from harness.report.story import story_lines

    if expect not in EXPECTATIONS:
        raise ValueError(f"expect: expected one of {', '.join(EXPECTATIONS)}, got {expect!r}")
    where = Path(path)
    trusted = tuple(trust)
    try:
        reproducer = load(where, trust=trusted)
    except ReproducerError as exc:
        return Outcome(where, expect, None, str(exc))
    with recording() as origins:  # the user's source lines for the story
        judgement = judge(reproducer, expect=expect)
    story: list[str] = []
    if not judgement.held:
        violations = [v for verdict in judgement.verdicts for v in verdict.violations]
        story = [*story_lines(violations, judgement.result, origins), *hang_lines(judgement.result)]
    command = replay_command(where, reproducer.modules, trust=trusted or None, expect=expect)
    return Outcome(where, expect, judgement, None, tuple(story), command)


def replay_all(path: str | os.PathLike[str], *, trust: Iterable[str] = (), expect: str = "fixed") -> list[Outcome]:
    """Every reproducer of `path` (a folder, or one file) replayed and judged against `expect`."""
    if expect not in EXPECTATIONS:
        raise ValueError(f"expect: expected one of {', '.join(EXPECTATIONS)}, got {expect!r}")
    trusted = tuple(trust)
    return [judge_file(file, trust=trusted, expect=expect) for file in reproducer_files(path)]


def assert_expected(path: str | os.PathLike[str], *, expect: str, trust: Iterable[str] = ()) -> list[Outcome]:
    """Replay every reproducer of `path` (a folder, or one file); an `AssertionError` lists each one
    whose expectation did not hold (or that cannot be replayed), with its verdict and story."""
    __tracebackhide__ = True
    outcomes = replay_all(path, trust=trust, expect=expect)
    failed = [outcome for outcome in outcomes if not outcome.held]
    if failed:
        head = f"expected {expect}: not met by {len(failed)} of {len(outcomes)} reproducer(s) of {path}"
        raise AssertionError("\n".join([head, *(outcome.describe() for outcome in failed)]))
    return outcomes


def assert_fixed(path: str | os.PathLike[str], *, trust: Iterable[str] = ()) -> list[Outcome]:
    """Every reproducer of `path` (a folder, or one file) is fixed: its code changed since it was
    recorded and no oracle fails now. An `AssertionError` lists each that still fails, reproduces
    unchanged, is nondeterministic or cannot be replayed, with its story."""
    __tracebackhide__ = True
    return assert_expected(path, expect="fixed", trust=trust)
