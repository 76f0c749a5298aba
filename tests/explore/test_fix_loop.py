"""The fix loop end to end, as the issue's "must show" asks, from a package outside the repository:
one `check_scheduler` call reports both bugs of an asyncio executor with two, each with a saved
reproducer whose printed replay line runs as printed; the user fixes one bug in place; replaying its
reproducer says `fixed` (exit 0) while the other's still fails (exit 1); and an unchanged executor that
reads a global counter still replays as nondeterminism (exit 5)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.helpers import as_printed

#: The user's runtime: the two-bug executor of the check's own tests, as a file of the user's package.
RUNTIME = (Path(__file__).parent / "two_bugs.py").read_text()
#: The line a user edits to fix the locks (the bugs still in the code are a set the executor reads).
BUGGY = 'BUGS = {"raw-path-locks", "key-per-attempt"}'


#: An executor that behaves differently on the first batch of a process (a warm-up it keeps in a
#: module-level counter: one call at a time until its pool is warm), and runs everything at once
#: after: its own runs agree with each other, a fresh process's first one does not.
COUNTER = '''
import asyncio
import itertools
import json

from harness.bridges import from_asyncio

_batches = itertools.count()


async def execute(tool_calls, tools):
    def call(tc):
        return tools[tc.function.name](**json.loads(tc.function.arguments))

    if next(_batches) == 0:
        values = [await call(tc) for tc in tool_calls]
    else:
        values = await asyncio.gather(*(call(tc) for tc in tool_calls))
    return [{"id": tc.id, "result": value} for tc, value in zip(tool_calls, values)]


scheduler = from_asyncio(execute)
'''


def _forget(package: str) -> None:
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


@pytest.fixture
def acme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's package, outside the repository, on sys.path as pytest puts a test tree; no other
    test's `acme` is seen, and this one is forgotten after the test."""
    package = tmp_path / "src" / "acme"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "runtime.py").write_text(RUNTIME)
    (package / "counted.py").write_text(COUNTER)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    _forget("acme")
    yield tmp_path / "src"
    _forget("acme")


@pytest.mark.slow
def test_check_reports_both_bugs_then_replay_says_fixed_for_one_and_still_fails_for_the_other(
        acme: Path, tmp_path: Path) -> None:
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("acme.runtime:scheduler", profile="quick", report_dir=tmp_path / "repro")
    failures = {(f.scenario, f.label): f for f in info.value.failures}
    locks = failures[("config-two-spellings", "lost-update")]
    keys = failures[("duplicate-ticket", "duplicate-effect")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for failure in (locks, keys):  # each line runs as printed, from another directory, in a fresh shell
        assert failure.reproduce is not None and failure.reproduce.startswith(f"PYTHONPATH={acme} harness replay ")
        done = as_printed(failure.reproduce, elsewhere)
        assert (done.returncode, done.stderr) == (1, ""), done.stdout
        assert "reproduced: same fingerprint" in done.stdout
    # The user fixes the lock (one lock per file, whatever its spelling), in place.
    runtime = acme / "acme" / "runtime.py"
    runtime.write_text(runtime.read_text().replace(BUGGY, 'BUGS = {"key-per-attempt"}'))
    fixed = as_printed(locks.reproduce, elsewhere)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed: the code changed since it was recorded (acme/runtime.py) and every oracle holds" in fixed.stdout
    still = as_printed(keys.reproduce, elsewhere)
    assert still.returncode == 1, still.stdout + still.stderr
    assert "still fails: the code changed since it was recorded (acme/runtime.py) and duplicate-effect still fires" \
        in still.stdout
    expect = as_printed(locks.reproduce + " --expect fixed", elsewhere)
    assert expect.returncode == 0 and "expected fixed; it is fixed: held (exit 0)" in expect.stdout


@pytest.mark.slow
def test_an_unchanged_executor_that_reads_a_global_counter_is_nondeterminism(acme: Path, tmp_path: Path) -> None:
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("acme.counted:scheduler", scenarios=["edit-then-test"], generated=False, swarm=False,
                        profile="quick", report_dir=tmp_path / "repro")
    failure = info.value.failures[0]
    assert failure.replays and failure.reproduce is not None  # its runs in this process agree
    done = as_printed(failure.reproduce, tmp_path)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "diverged at trace event" in done.stdout and "the code is unchanged since it was recorded" in done.stdout


def test_the_executor_text_is_what_the_test_edits() -> None:
    """The fix above replaces this exact line: a reworded two_bugs.py must keep the test honest."""
    assert RUNTIME.count(BUGGY) == 1
