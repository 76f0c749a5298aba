"""check_scheduler(): the property suite users run against their own policy."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.model import Outcome
from harness.oracles import ORACLES
from harness.oracles.severity import rank
from harness.policies import Serial
from harness.run import run
from harness.testing import DEFAULT_SCENARIOS, SchedulerCheckFailed, check_scheduler
from tests.helpers import as_printed, scenario


@pytest.mark.parametrize("policy", ["serial", "partition", "rwlock"])
def test_safe_policies_pass(policy: str) -> None:
    check_scheduler(policy)


def test_an_instance_passes_too() -> None:
    check_scheduler(Serial(), profile="quick")
    check_scheduler(Serial(), profile="dev")  # the older name of quick


def test_unknown_profile_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid: quick, ci, deep"):
        check_scheduler("serial", profile="thorough")


def test_the_defaults_provoke_every_situation_the_issue_lists() -> None:
    """Aliases, `cd` then relative paths, caps, depends_on, a hung call, an interrupt with queued calls,
    retries of external effects, identical calls, failing siblings: each default scenario has one."""
    from harness.scenario import find_scenario

    scenarios = [find_scenario(name) for name in DEFAULT_SCENARIOS]
    assert any(s.world.to_json().get("symlinks") for s in scenarios)
    assert any(len(group) > 1 for s in scenarios for group in s.world.to_json().get("hardlinks", []))
    assert any(not s.world.case_sensitive for s in scenarios)
    assert any(s.max_concurrency for s in scenarios) and any(s.tool_caps for s in scenarios)
    assert any(s.depends_on for s in scenarios)
    assert any(s.interrupt is not None and len(s.calls) > 8 for s in scenarios)
    assert any(s.execution.retries and s.execution.timeout_ms for s in scenarios)
    assert any(c.arguments.startswith('{"command": "cd') for s in scenarios for c in s.calls)
    assert any("/../" in c.arguments for s in scenarios for c in s.calls)  # `..` after a symlink
    identical = [s for s in scenarios if len({(c.name, c.arguments) for c in s.calls}) < len(s.calls)]
    assert identical
    assert any(s.catalogue[c.name].declared.interactive for s in scenarios for c in s.calls if c.name in s.catalogue)
    assert any(s.tool_failures or s.call_failures for s in scenarios)  # a failing sibling
    hung = [s for s in scenarios for c in s.calls if c.name in s.catalogue
            and s.catalogue[c.name].latency.support()[1] >= s.limits.time_bound_ms]
    assert hung  # a call that may never answer


def test_parallel_fails_with_a_readable_message(tmp_path: Path) -> None:
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", report_dir=tmp_path)
    message = str(info.value)
    # Every failure, worst first, listed before any detail; the first is the lost update.
    assert message.startswith("parallel: ") and " failures, worst first:\n" in message.splitlines()[0] + "\n"
    assert message.splitlines()[1] == "  1. serializability violated on scenario 'config-clobber': lost-update"
    first = info.value.failures[0]
    assert first.text.startswith("serializability violated on scenario 'config-clobber': lost-update")
    assert "witness:" in first.text and '"lost": ' in first.text
    # With report_dir, each failure's one reproduce line replays its saved file (and nothing else is said).
    assert first.reproduce is not None and first.reproduce.startswith("harness replay ")
    assert "pass report_dir" not in message and "harness.run(" not in message
    assert info.value.reproducer is not None and info.value.reproducer.is_file()
    assert all(f.reproducer is not None and f.reproducer.is_file() for f in info.value.failures if f.replays)


def test_an_unnamed_instance_gets_no_command_it_cannot_run() -> None:
    from harness.policies import Parallel

    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler(Parallel(), scenarios=["config-clobber"], generated=False, swarm=False)
    text = info.value.failures[0].text
    assert "reproduce:" not in text and 'give it by name, check_scheduler("package.module:attr")' in text


def test_resource_keys_is_caught_letting_a_question_overlap_work() -> None:
    with pytest.raises(SchedulerCheckFailed, match="exclusivity violated on scenario 'clarify-mixed'"):
        check_scheduler("resource_keys", scenarios=["clarify-mixed"])
    with pytest.raises(SchedulerCheckFailed, match="lost-update"):  # and, by default, its symlink blind spot
        check_scheduler("resource_keys")


def test_users_add_their_own_scenarios_as_files() -> None:
    """`extra_scenarios` runs a user's scenario file after the defaults."""
    mine = Path(__file__).parents[1] / "catalogue" / "scenarios" / "read-then-edit.toml"
    check_scheduler("serial", scenarios=[], extra_scenarios=[mine], generated=False)
    with pytest.raises(SchedulerCheckFailed, match="scenario 'read-then-edit'"):
        check_scheduler("parallel", scenarios=[], extra_scenarios=[str(mine)], generated=False, swarm=False)


class _Drifting:
    """Keeps a counter between runs and flips its order with it: the failure it shows does not replay."""

    name = "drifting"

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, batch, ctx):  # type: ignore[no-untyped-def]
        self.runs += 1
        calls = list(batch) if self.runs % 2 else list(reversed(list(batch)))
        results = {}
        for call in calls:
            results[call.id] = yield ctx.start(call)
        return [results[c.id] for c in batch]


def test_a_failure_that_does_not_replay_is_reported_as_nondeterministic() -> None:
    with pytest.raises(SchedulerCheckFailed, match=r"^nondeterministic: ") as info:
        check_scheduler(_Drifting(), scenarios=["edit-then-test"], generated=False, swarm=False)
    assert "reproduce:" not in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["serial", "partition", "rwlock", "hermes_segments"])
def test_correct_policies_never_crash_it(policy: str) -> None:
    """Over many seeds and every profile but deep, check_scheduler passes or reports a documented
    weakness (hermes_segments: `..` after a symlink, hard-link and case aliases); it never raises anything
    else."""
    for profile, seeds in (("quick", range(1, 13)), ("ci", range(13, 15))):
        for seed in seeds:
            try:
                check_scheduler(policy, profile=profile, seed=seed)
            except SchedulerCheckFailed as failure:
                assert policy == "hermes_segments", str(failure)
                for found in failure.failures:
                    # Generated batches reach its blind spots through the hard link /repo/hard.txt, or a
                    # `cd` its planner does not follow (it plans the turn against the cwd it started in).
                    blind = "hard.txt" in found.text or "=terminal" in found.text
                    generated = found.scenario == "generated" and blind
                    assert generated or (found.scenario, found.label) in (
                        ("symlink-dotdot", "stale-read"), ("hardlink-alias", "lost-update"),
                        ("case-alias", "lost-update")), str(failure)


def test_generated_batches_catch_what_no_builtin_scenario_has() -> None:
    with pytest.raises(SchedulerCheckFailed, match="scenario 'generated'"):
        check_scheduler("parallel", scenarios=[], swarm=False)


def test_unknown_may_mean_any_prefix_of_the_effects_but_cancelled_may_not() -> None:
    """An interrupted write_file has truncated its file: `unknown` accepts that, `cancelled` is a lie."""
    from collections.abc import Generator
    from typing import Any

    from harness.model import Batch, CallResult
    from harness.scheduling import SchedulerContext

    sc = scenario([("w", "write_file", {"path": "a", "content": "new"})], files={"/repo/a": "old"},
                  tools={"write_file": {"latency": {"fixed": 1000}}})

    class StopsEarly:
        name = "stops-early"

        def __init__(self, outcome: Outcome) -> None:
            self.outcome = outcome

        def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, list[CallResult]]:
            handle = ctx.start(batch.calls[0])
            yield ctx.sleep(100)
            ctx.cancel(handle, outcome=self.outcome, reason="gave up")
            return [handle.result]

    honest = run(sc, StopsEarly(Outcome.UNKNOWN), 1)
    assert honest.final.file_map["/repo/a"] == ""  # truncated, never rewritten
    assert ORACLES["serializability"](honest).ok
    lie = run(sc, StopsEarly(Outcome.CANCELLED), 1)
    assert ORACLES["serializability"](lie).label == "ghost-effect"


def test_the_suggested_command_reproduces_a_swarm_finding() -> None:
    """The message's `harness explore` line must find the same label again."""
    import json

    from click.testing import CliRunner

    from harness.cli import main

    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", scenarios=["interrupt-midbatch"], generated=False)
    command = next(line for line in str(info.value).splitlines() if "reproduce: harness explore" in line)
    args = command.split("reproduce: harness ", 1)[1].split()
    result = CliRunner().invoke(main, [*args, "--no-save", "--format", "json"])
    assert json.loads(result.stdout)["label"] == info.value.finding.label


def test_a_generated_failure_of_a_named_scheduler_says_how_to_get_a_command_line() -> None:
    """The scheduler is named (module:attr or built-in): the hint is to save a reproducer, not to name it."""
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", scenarios=[], generated=True, profile="quick", seed=1)
    message = str(info.value)
    assert "harness.run(" not in message and "reproduce:" not in message
    assert "pass report_dir=DIR" in message and "give it by name" not in message


# -- keep going, then report everything ---------------------------------------------------------------

TWO_BUGS = "tests.explore.two_bugs:scheduler"


@pytest.fixture
def two_bugs() -> Iterator[set[str]]:
    """The two-bug executor's set of bugs, put back after the test (a test fixes them as a user would)."""
    from tests.explore import two_bugs as module

    kept = set(module.BUGS)
    yield module.BUGS
    module.BUGS.clear()
    module.BUGS.update(kept)


def test_one_check_reports_both_bugs_of_a_runtime_with_two(two_bugs: set[str]) -> None:
    # In this process (isolate=False): the fix below edits the module's state here, which an isolated
    # check's child (a fresh interpreter) would never see.
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler(TWO_BUGS, profile="quick", isolate=False)
    found = {(f.scenario, f.label) for f in info.value.failures}
    assert ("config-two-spellings", "lost-update") in found  # locks by the path's text
    assert ("duplicate-ticket", "duplicate-effect") in found  # a fresh idempotency key per retry
    # Worst first, and each failure once per scenario and label.
    ranks = [rank(f.label) for f in info.value.failures]
    assert ranks == sorted(ranks) and len(found) == len(info.value.failures)
    two_bugs.discard("raw-path-locks")  # the user fixes one bug
    with pytest.raises(SchedulerCheckFailed) as again:
        check_scheduler(TWO_BUGS, profile="quick", isolate=False)
    found = {(f.scenario, f.label) for f in again.value.failures}
    assert ("config-two-spellings", "lost-update") not in found and ("duplicate-ticket", "duplicate-effect") in found


def test_fail_fast_stops_at_the_first_failure() -> None:
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", profile="quick", fail_fast=True)
    assert len(info.value.failures) == 1 and info.value.report.stopped is not None
    assert str(info.value).startswith("serializability violated on scenario 'config-clobber': lost-update")
    assert [c.scenario for c in info.value.report.scenarios] == ["config-clobber"]


def test_a_label_every_run_shows_second_is_still_reported() -> None:
    """parallel_completion_order is out of order on every run of config-clobber, and loses an update on
    some: keeping going counts every label of a run, not only its first."""
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel_completion_order", scenarios=["config-clobber"], generated=False, swarm=False,
                        profile="quick")
    assert {f.label for f in info.value.failures} == {"lost-update", "out-of-order"}


def test_only_and_skip_pick_scenarios_by_name() -> None:
    report = check_scheduler("parallel", only=["incident-triage"], scenarios=["incident-triage", "config-clobber"],
                             profile="quick", swarm=False)
    assert [c.scenario for c in report.scenarios] == ["incident-triage"]
    report = check_scheduler("parallel", skip=["config-clobber", "generated"],
                             scenarios=["incident-triage", "config-clobber"], profile="quick", swarm=False)
    assert [c.scenario for c in report.scenarios] == ["incident-triage"]
    assert report.skipped == ("config-clobber", "generated")
    with pytest.raises(ValueError, match=r"only=: unknown scenario 'config-clober'; valid: .*config-clobber"):
        check_scheduler("serial", only=["config-clober"])
    with pytest.raises(TypeError, match="a list of scenario names"):
        check_scheduler("serial", skip="config-clobber")  # type: ignore[arg-type]


def test_default_scenarios_make_one_pytest_item_each(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_items="""
        import pytest
        from harness.testing import check_scheduler, default_scenarios

        @pytest.mark.parametrize("scenario", default_scenarios())
        def test_serial(scenario):
            check_scheduler("serial", only=[scenario], profile="quick")
    """)
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    items = [line for line in result.outlines if line.startswith("test_items.py::test_serial[")]
    assert items == [f"test_items.py::test_serial[{name}]" for name in (*DEFAULT_SCENARIOS, "generated")]
    run_two = pytester.runpytest("-q", "-p", "no:cacheprovider", "-k", "config-clobber or generated")
    run_two.assert_outcomes(passed=2)


def test_a_pass_says_what_it_covered() -> None:
    report = check_scheduler("serial", scenarios=["config-clobber", "ops-approvals"], profile="quick")
    assert report.passed and [c.scenario for c in report.scenarios] == ["config-clobber", "ops-approvals",
                                                                         "generated"]
    clobber, approvals, generated = report.scenarios
    assert clobber.runs == 12 and clobber.calls_started == 24 and clobber.exercised
    assert "caps" not in clobber.oracles and "approvals" in approvals.oracles
    assert generated.runs >= 1 and generated.calls_started > 0
    summary = report.summary()
    assert summary.startswith("check_scheduler(serial) passed: 3 scenarios, ")
    assert "config-clobber" in summary and "checked: contract, protocol, serializability, liveness" in summary
    assert report.to_json()["scenarios"][0]["calls_started"] == 24


# -- no vacuous pass -------------------------------------------------------------------------------------


def test_seed_003s_executor_with_its_three_tools_is_not_exercised() -> None:
    """Seed 003's executor knows three incident tools: every other default scenario's calls get its own
    "tool not found" answer and never start. That is not a pass."""
    from harness.bridges import from_asyncio
    from tests.policies import seed003_executor as seed

    executor = from_asyncio(seed.execute_tools_in_parallel, registry=seed.TOOL_REGISTRY, name="seed003")
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler(executor, profile="quick")
    message = str(info.value)
    idle = [c.scenario for c in info.value.report.not_exercised]
    assert len(idle) >= 20 and "config-clobber" in idle and "generated" in idle
    assert message.startswith(f"not exercised: {len(idle)} of ")
    assert "config-clobber (patch)" in message and "Tools your scheduler never started: " in message
    assert "skip=[...]" in message
    # An idle scenario's row says nothing was checked there (not the oracles that would have checked it).
    row = message[message.index("\n  config-clobber "):].splitlines()[1:3]
    assert "NOT EXERCISED" in row[0] and row[1].strip() == "nothing checked: no call started through the " \
        "scheduler; never started: patch"
    # Skipping them leaves what it runs: it passes there.
    check_scheduler(executor, scenarios=["incident-triage", "incident-jitter"], profile="quick", generated=False)


def test_a_partly_exercised_scenario_passes_and_says_what_never_started() -> None:
    report = check_scheduler("serial", scenarios=["ops-approvals"], profile="quick", generated=False)
    (approvals,) = report.scenarios
    assert approvals.exercised and approvals.never_started  # denied or unanswered: never started
    assert f"never started: {', '.join(approvals.never_started)}" in report.summary()


# -- every printed reproduce line runs as printed ---------------------------------------------------------

SHOP_SCHEDULER = '''
class AllAtOnce:
    """Starts every call at once: two edits of one file race."""
    name = "all-at-once"

    def __call__(self, batch, ctx):
        handles = [ctx.start(call) for call in batch]
        yield ctx.all_of(handles)
        return [handle.result for handle in handles]
'''

SHOP_SCENARIO = '''
name = "stock-clobber"
description = "Two restocks of one stock file in one turn."
[world]
cwd = "/shop"
[world.files]
"/shop/stock.txt" = "apples: 3\\npears: 4\\n"
[tools.patch]
latency = { uniform = [100, 900] }
[[batches]]
[[batches.calls]]
id = "apples"
name = "patch"
arguments = '{"path": "stock.txt", "old": "apples: 3", "new": "apples: 9"}'
[[batches.calls]]
id = "pears"
name = "patch"
arguments = '{"path": "stock.txt", "old": "pears: 4", "new": "pears: 8"}'
'''


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's package outside the repository (on sys.path as pytest puts a test tree) and a scenario file."""
    package = tmp_path / "src" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sched.py").write_text(SHOP_SCHEDULER)
    (tmp_path / "stock.toml").write_text(SHOP_SCENARIO)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    for name in ("shop", "shop.sched"):  # another test's copy, from another directory, must not be reused
        sys.modules.pop(name, None)
    yield tmp_path
    for name in ("shop", "shop.sched"):  # nor this one by a later test
        sys.modules.pop(name, None)


@pytest.mark.slow
@pytest.mark.parametrize("saved", [False, True], ids=["explore-line", "replay-line"])
def test_the_reproduce_line_of_a_named_scheduler_and_a_file_scenario_runs_as_printed(
        shop: Path, tmp_path: Path, saved: bool) -> None:
    report_dir = tmp_path / "repro" if saved else None
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("shop.sched:AllAtOnce", scenarios=[shop / "stock.toml"], generated=False, swarm=False,
                        profile="quick", report_dir=report_dir)
    (failure,) = info.value.failures
    lines = [line for line in str(info.value).splitlines() if "reproduce:" in line or "report_dir" in line]
    assert lines == [f"  reproduce: {failure.reproduce}"]  # one line, and no other advice
    assert failure.reproduce is not None and f"PYTHONPATH={shop / 'src'} " in failure.reproduce
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = as_printed(failure.reproduce, elsewhere)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == ""
    if saved:
        assert failure.reproduce.startswith(f"PYTHONPATH={shop / 'src'} harness replay {tmp_path}/repro/")
        assert "reproduced: same fingerprint" in done.stdout, done.stdout  # seen once under load without it
    else:
        assert f"harness explore {shop / 'stock.toml'} --scheduler shop.sched:AllAtOnce" in failure.reproduce
        assert "FOUND lost-update" in done.stdout
        assert {p.name for p in elsewhere.iterdir()} <= {".harness"}  # explore's default save dir, nothing else


def test_a_failure_whose_reproducer_cannot_be_saved_is_still_reported(tmp_path: Path) -> None:
    """A scenario holding a tool data cannot name (defined outside any module) cannot be saved as a
    reproducer: the check still fails with the finding and says why no file was written, instead of
    raising the save's error out of `check_scheduler`."""
    from harness import find_scenario
    from harness.scenario.dump import NotSerializable, scenario_to_data
    from harness.testing import SchedulerCheckFailed
    from harness.tools import BUILTIN, Declared, ToolSpec

    def adhoc(args, io):  # type: ignore[no-untyped-def]
        yield 1.0
        return None

    base = find_scenario("config-clobber")
    unsavable = type(base)(**{**base.__dict__,
                              "catalogue": BUILTIN.replace_tool(ToolSpec("adhoc", "a test's", Declared(read_only=True),
                                                                         adhoc))})
    with pytest.raises(NotSerializable):
        scenario_to_data(unsavable)
    with pytest.raises(SchedulerCheckFailed) as failed:
        check_scheduler("parallel", scenarios=[unsavable], generated=False, swarm=False, report_dir=tmp_path)
    text = str(failed.value)
    assert "config-clobber" in text and f"no reproducer saved in {tmp_path}: " in text
    assert "outside a tools module" in text
    assert not list(tmp_path.glob("*.json"))
