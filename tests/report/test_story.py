"""The interleaving story (harness.report.story): golden text for each kind of race, with a `*` on the
steps that ran out of model order, the user's source lines for a hand-written scheduler, and the note
when a bug needs no reordering; plus the story in every report that shows it (run, replay, explore,
check_scheduler) and proof that recording source lines changes no run's fingerprint."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.diagnosis.origins import Origins, recording
from harness.oracles import check
from harness.oracles.verdict import Violation
from harness.report.story import render, story
from harness.run import RunResult
from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.helpers import scenario
from tests.oracles import schedulers as broken
from tests.report.story_schedulers import SerialSwapped, StartsAll

GOLDEN = Path(__file__).parent / "golden" / "stories.txt"
TICKET = scenario([("t", "create_ticket", {"title": "outage"})])


def _recorded(build: Callable[[], RunResult]) -> tuple[RunResult, Origins]:
    with recording() as origins:
        result = build()
    return result, origins


def _told(result: RunResult, origins: Origins | None, label: str) -> list[str]:
    violation = next(v for verdict in check(result) for v in verdict.violations if v.label == label)
    told = story(violation, result, origins)
    assert told is not None
    # Source paths as the test tree spells them, wherever pytest runs from.
    return [re.sub(r"\S*story_schedulers\.py", "story_schedulers.py", line) for line in render(told)]


def _case(scenario_name: str, scheduler: object, seed: int, label: str) -> Callable[[], list[str]]:
    def build() -> list[str]:
        sched = get_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
        result, origins = _recorded(lambda: run(find_scenario(scenario_name), sched, seed))  # type: ignore[arg-type]
        return _told(result, origins, label)
    return build


def _ticket(scheduler: object, label: str) -> Callable[[], list[str]]:
    def build() -> list[str]:
        # Without source lines: tests/oracles/schedulers.py is not this test's to pin line numbers in.
        return _told(run(TICKET, scheduler, 1), None, label)  # type: ignore[arg-type]
    return build


CASES: dict[str, Callable[[], list[str]]] = {
    "torn-read under parallel": _case("edit-then-test", "parallel", 1, "torn-read"),
    "torn-read under a hand-written scheduler": _case("edit-then-test", StartsAll(), 1, "torn-read"),
    "lost-update under parallel": _case("config-clobber", "parallel", 3, "lost-update"),
    "stale-read under parallel": _case("shared-shell-cwd", "parallel", 1, "stale-read"),
    "reordered-effect under parallel": _case("risky-writes", "parallel", 1, "reordered-effect"),
    "mispaired-result needs no reordering": _case("incident-triage", SerialSwapped(), 1, "mispaired-result"),
    "ghost-effect needs no reordering": _ticket(broken.TimesOut(100), "ghost-effect"),
    "duplicate-effect needs no reordering": _ticket(broken.TimesOutAndRetries(use_key=False), "duplicate-effect"),
    "cross-agent-lost-update between two agents": _case("two-agents-report", "parallel", 1, "cross-agent-lost-update"),
}


def read_golden() -> dict[str, str]:
    """`## case` headers, each followed by its story's lines."""
    golden: dict[str, list[str]] = {}
    case = None
    for line in GOLDEN.read_text().splitlines():
        if line.startswith("## "):
            case = line[3:].strip()
            golden[case] = []
        elif case is not None and line:
            golden[case].append(line)
    return {case: "\n".join(lines) for case, lines in golden.items()}


def test_every_case_has_a_golden_story() -> None:
    assert set(CASES) == set(read_golden())


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_story(case: str) -> None:
    assert "\n".join(CASES[case]()) == read_golden()[case]


def _regenerate() -> None:
    """`python -m tests.report.test_story` rewrites the golden file (review the diff!)."""
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text("\n".join(f"## {case}\n" + "\n".join(CASES[case]()) + "\n" for case in sorted(CASES)))


if __name__ == "__main__":
    _regenerate()


# -- the story in every report that shows it -------------------------------------------------------


def invoke(*args: str) -> tuple[int, str]:
    from harness.cli import main

    ran = CliRunner().invoke(main, list(args))
    return ran.exit_code, ran.stdout


def test_recording_source_lines_changes_no_run() -> None:
    from harness.bridges import from_asyncio

    async def gathered(tool_calls, tools):  # type: ignore[no-untyped-def]
        import asyncio

        return await asyncio.gather(*(tools[tc.function.name](**json.loads(tc.function.arguments))
                                      for tc in tool_calls))

    for name in ("edit-then-test", "config-clobber", "incident-triage"):
        for scheduler in (get_scheduler("parallel"), get_scheduler("resource_keys"), StartsAll(),
                          from_asyncio(gathered)):
            plain = run(find_scenario(name), scheduler, 2)
            with recording() as origins:
                recorded = run(find_scenario(name), scheduler, 2)
            assert recorded.fingerprint == plain.fingerprint, (name, scheduler)
            assert recorded.trace == plain.trace
            if isinstance(scheduler, StartsAll):
                assert origins.started and origins.awaited
            elif scheduler.name in ("parallel", "resource_keys"):
                assert not origins  # a built-in policy has no source line of the user's


def test_run_prints_the_story_under_the_reproduce_line() -> None:
    code, out = invoke("run", "edit-then-test", "--scheduler", "parallel")
    assert code == 1
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("story (torn-read)")))
    assert lines[start + 1:start + 8] == read_golden()["torn-read under parallel"].splitlines()[1:]
    assert any(line.startswith("why (torn-read)") for line in lines[:start])
    assert lines[start - 1].startswith("reproduce: harness run edit-then-test")


def test_run_json_has_the_story_on_each_violation() -> None:
    _, out = invoke("run", "edit-then-test", "--scheduler", "parallel", "--format", "json")
    document = json.loads(out)
    told = next(v["story"] for verdict in document["verdicts"] for v in verdict["violations"]
                if v["label"] == "torn-read")
    assert told["reordered"] is True and told["note"] is None
    assert [(s["call"], s["step"], s["deviated"], s["race"]) for s in told["steps"]][:4] == [
        ("write-fix", "start", False, None), ("write-fix", "truncate /repo/src/app.py", False, "truncate"),
        ("run-tests", "start", True, None), ("run-tests", "read /repo/src/app.py", True, "read")]


def test_explore_and_replay_print_the_story(tmp_path: Path) -> None:
    code, out = invoke("explore", "edit-then-test", "--scheduler", "parallel", "--runs", "5",
                       "--save-dir", str(tmp_path))
    assert code == 1
    assert "story (torn-read): model order write-fix, run-tests" in out
    assert "  *     210 ms  run-tests  read /repo/src/app.py      <- torn-read: read" in out
    saved = next(tmp_path.glob("*.json"))
    code, out = invoke("replay", str(saved))
    assert code == 1
    assert "story (torn-read)" in out and "<- torn-read: truncate" in out


def test_check_scheduler_failure_tells_the_story_with_the_users_lines() -> None:
    with pytest.raises(SchedulerCheckFailed) as failed:
        check_scheduler(StartsAll(), scenarios=["edit-then-test"], generated=False, swarm=False)
    lines = failed.value.failures[0].text.splitlines()
    assert any("give it by name" in line for line in lines[:6])
    story_at = next(i for i, line in enumerate(lines) if line.startswith("  story (torn-read)"))
    assert any("started at" in line and "story_schedulers.py:21 (__call__)" in line
               for line in lines[story_at:story_at + 8])
    assert any("awaited at" in line and "story_schedulers.py:22 (__call__)" in line
               for line in lines[story_at:story_at + 8])


def test_a_liveness_violation_has_no_story() -> None:
    result = run(find_scenario("stuck-extract"), get_scheduler("parallel"), 1)
    hang = next(v for verdict in check(result) for v in verdict.violations if v.label == "hang")
    assert story(hang, result) is None


def test_a_witness_naming_no_call_has_no_story() -> None:
    result = run(find_scenario("edit-then-test"), get_scheduler("parallel"), 1)
    assert story(Violation("torn-read", "words", {"call": "nobody"}), result) is None


def test_calls_that_never_started_have_no_story() -> None:
    result = run(find_scenario("edit-then-test"), get_scheduler("parallel"), 1)
    unstarted = scenario([("a", "read_file", {"path": "x"}), ("b", "read_file", {"path": "y"})])
    never = run(unstarted, broken.Fabricates(), 1)
    fabricated = [v for verdict in check(never) for v in verdict.violations if v.label == "fabricated-result"]
    assert fabricated and all(story(v, never) is None for v in fabricated)
    assert story(Violation("missing-result", "words", {"call": "write-fix"}), result) is not None


def test_the_run_page_tells_the_story(tmp_path: Path) -> None:
    code, _ = invoke("run", "edit-then-test", "--scheduler", "parallel", "--out", str(tmp_path))
    assert code == 1
    page = (tmp_path / "index.html").read_text()
    assert '<div class="story">story (torn-read): model order write-fix, run-tests' in page
    assert "&lt;- torn-read: read" in page


def test_an_asyncio_executor_shows_where_each_call_was_started_and_awaited() -> None:
    from harness.bridges import from_asyncio
    from tests.report import story_schedulers

    for executor, started, awaited in ((story_schedulers.gathers, ":51 (one)", ":51 (one)"),
                                       (story_schedulers.tasks_then_awaits, None, ":62 (")):
        result, origins = _recorded(lambda e=executor: run(find_scenario("edit-then-test"), from_asyncio(e), 1))
        lines = _told(result, origins, "torn-read")
        starts = [line for line in lines if " start " in line or line.rstrip().endswith(" start")]
        ends = [line for line in lines if " end ok" in line]
        if started is None:
            assert not any("started at" in line for line in starts)  # a task's own coroutine: no user frame
        else:
            assert all(line.endswith(f"started at story_schedulers.py{started}") for line in starts)
        # (A comprehension's own frame is named <listcomp> before Python 3.12.)
        assert all(f"awaited at story_schedulers.py{awaited}" in line for line in ends), ends
