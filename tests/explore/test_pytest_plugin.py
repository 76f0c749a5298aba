"""The pytest plugin, driven through pytester: the seed (header, `last`, xdist workers), the failure
message first, the one-command reproduce section and the local example database (`.harness/`)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

TESTS = """
def test_serial(harness):
    harness.check("serial", scenarios=["config-clobber"], generated=False)

def test_parallel(harness):
    harness.check("parallel", scenarios=["config-clobber"], generated=False, swarm=False)
"""

#: A failing `check_scheduler` called directly (not through the fixture).
DIRECT = """
from harness.testing import check_scheduler

def test_parallel(harness):
    check_scheduler("parallel", scenarios=["config-clobber"], generated=False, swarm=False,
                    seed=harness.seed, profile="quick")
"""

FIXED = DIRECT.replace('"parallel"', '"serial"')


def _section(lines: list[str], title: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if title in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(("___", "---", "===")))
    return lines[start + 1:end]


def test_header_failure_section_and_reproducer(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=TESTS)
    report_dir = pytester.path / "repro"
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick",
                                f"--harness-report-dir={report_dir}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "harness: seed 7, profile quick, reproducers in *",
        "*serializability violated on scenario 'config-clobber': lost-update*",
        "*reproduce: harness replay *repro*.json*",
        "*harness reproduce*",
        f"cd {pytester.path} && python -m pytest {pytester.path}/test_policies.py::test_parallel "
        f"--harness-report-dir={report_dir} --harness-seed=7 --harness-profile=quick",
    ])
    assert list(report_dir.glob("*.json"))


def test_the_reproduce_section_is_one_command(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=TESTS)
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    assert _section(result.outlines, "harness reproduce") == [
        f"cd {pytester.path} && python -m pytest {pytester.path}/test_policies.py::test_parallel --harness-seed=7 "
        "--harness-profile=quick"]


#: A test that calls `check_scheduler` with the seed and profile of its own (the defaults: 1, ci).
OWN_SEED = """
from harness.testing import check_scheduler

def test_parallel():
    check_scheduler("parallel", scenarios=["config-clobber"], generated=False, swarm=False)
"""


def test_the_section_quotes_the_seed_and_profile_the_check_ran(pytester: pytest.Pytester) -> None:
    """A test that calls check_scheduler with its own seed is not rerun by --harness-seed: the section says
    so instead of quoting the plugin's seed."""
    pytester.makepyfile(test_policies=OWN_SEED)
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    assert _section(result.outlines, "harness reproduce") == [
        f"cd {pytester.path} && python -m pytest {pytester.path}/test_policies.py::test_parallel",
        "(the test runs check_scheduler with seed=1, profile='ci' of its own: --harness-seed and "
        "--harness-profile do not change it)"]


@pytest.mark.slow
def test_the_sections_command_runs_as_printed_from_another_directory(pytester: pytest.Pytester,
                                                                    tmp_path: Path) -> None:
    """A user's project as users lay it out: the runtime in src/ (not installed, on PYTHONPATH), the
    tests in tests/, pytest started from the project with PYTHONPATH=src. The section's command, run
    as printed in a fresh shell elsewhere, with no PYTHONPATH, reruns the test the same way."""
    import os
    import subprocess

    package = pytester.path / "src" / "acmert"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sched.py").write_text("from harness.policies import Parallel\n\nscheduler = Parallel()\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_rt.py").write_text(
        "def test_rt(harness):\n"
        "    harness.check('acmert.sched:scheduler', scenarios=['config-clobber'], generated=False, swarm=False)\n")
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    first = subprocess.run([sys.executable, "-m", "pytest", "tests/test_rt.py", "--harness-seed=7",
                            "--harness-profile=quick", "--harness-no-database", "-p", "no:cacheprovider"],
                           cwd=pytester.path, capture_output=True, text=True, timeout=300, check=False,
                           env={**bare, "PYTHONPATH": "src"})
    assert first.returncode == 1, first.stdout[-2000:]
    (command,) = _section(first.stdout.splitlines(), "harness reproduce")
    assert command.startswith(f"cd {pytester.path} && PYTHONPATH=src python -m pytest ")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(["bash", "-c", command + " -p no:cacheprovider --harness-no-database"], cwd=elsewhere,
                          capture_output=True, text=True, timeout=300, check=False, env=bare)
    assert done.returncode == 1, done.stdout[-2000:]
    assert "serializability violated on scenario 'config-clobber': lost-update" in done.stdout
    assert "1 failed" in done.stdout and "harness: seed 7, profile quick" in done.stdout


def test_coverage_is_printed_on_request_for_passes_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=TESTS)
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick", "--harness-coverage")
    result.stdout.fnmatch_lines([
        "*= harness coverage =*",
        "test_policies.py::test_parallel",
        "check_scheduler(parallel) FAILED: 1 scenario, 12 runs, 24 calls started through the scheduler, *",
        "test_policies.py::test_serial",
        "check_scheduler(serial) passed: 1 scenario, 12 runs, * calls started through the scheduler, *",
        "*config-clobber*12 runs*calls started*ok",
    ])
    # Under the failure, the message has the summary already: no second copy in a section.
    assert "- harness coverage -" not in result.stdout.str()
    assert "harness coverage" not in pytester.runpytest("--harness-seed=7", "--harness-profile=quick",
                                                        "-p", "no:cacheprovider").stdout.str().split("FAILURES")[0]


@pytest.mark.parametrize("source", [TESTS, DIRECT], ids=["fixture", "check_scheduler"])
def test_the_explanation_and_the_command_come_first(pytester: pytest.Pytester, source: str) -> None:
    """No harness source above the message: the failure's first 15 lines say why and how to reproduce."""
    pytester.makepyfile(test_policies=source)
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    lines = result.outlines
    title = next(i for i, line in enumerate(lines) if re.fullmatch(r"_+ test_parallel _+", line))
    first = "\n".join(lines[title:title + 15])
    assert re.search(r"why: raise-\w+ read /repo/config.yaml", first)
    assert "reproduce: harness explore config-clobber --scheduler parallel" in first
    assert "harness/testing.py" not in result.stdout.str() and "def check_scheduler" not in result.stdout.str()
    quiet = pytester.runpytest("-q", "--harness-seed=7", "--harness-profile=quick", "--harness-no-database")
    assert "why: " in "\n".join(quiet.outlines[:15]) and "reproduce: " in "\n".join(quiet.outlines[:15])


def test_a_second_run_replays_the_stored_failure_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=DIRECT)
    first = pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    first.assert_outcomes(failed=1)
    stored = list((pytester.path / ".harness" / "examples").glob("*/*.json"))
    assert len(stored) == 1 and stored[0].name.startswith("config-clobber--lost-update--")
    # A plain second run (another random seed): the stored failure, from seed 7, is what fails,
    # so it ran before the exploration, which would have failed with the new seed.
    again = pytester.runpytest("--harness-profile=quick")
    again.assert_outcomes(failed=1)
    out = again.stdout.str()
    seed = re.search(r"harness: seed (\d+)", out)
    assert seed is not None and seed.group(1) != "7"
    again.stdout.fnmatch_lines([
        "harness: seed *, profile quick *; 1 stored failure in .harness/ (each replayed first by its own test)",
        "*test_policies.py F*",
        "*serializability violated on scenario 'config-clobber': lost-update",
        # The file's absolute path: the command works from any directory.
        f"*reproduce: harness replay {pytester.path}/.harness/examples/*/config-clobber--lost-update--*.json",
        "*seed 7, found by check_scheduler; stored in the example database as config-clobber--lost-update--*.json, "
        "replayed first",
    ])
    # Fixed: the stored failure passes, is forgotten, and the run is green.
    pytester.makepyfile(test_policies=FIXED)
    fixed = pytester.runpytest("--harness-profile=quick")
    fixed.assert_outcomes(passed=1)
    assert "stored failure" in fixed.stdout.str()
    assert not list((pytester.path / ".harness" / "examples").glob("*/*.json"))
    assert "stored failure" not in pytester.runpytest("--harness-profile=quick").stdout.str()


def test_a_stored_failure_replays_through_harness_replay(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=DIRECT)
    pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    from harness.reproducers.replay import load, replay

    (stored,) = (pytester.path / ".harness" / "examples").glob("*/*.json")
    assert replay(load(stored)).identical
    assert (stored.parent / "test").read_text() == "test_policies.py::test_parallel\n"


def test_a_corrupted_entry_is_ignored_with_a_warning(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=DIRECT)
    pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    (stored,) = (pytester.path / ".harness" / "examples").glob("*/*.json")
    stored.write_text("{not json")
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*seed 7, found by random*",
                                 "*HarnessDatabaseWarning: ignoring the stored failure *config-clobber*.json: "
                                 "(syntax): expected JSON*; delete it to silence this"])


def test_the_database_never_leaves_the_rootdir(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
                                               ) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (pytester.path / ".harness").symlink_to(elsewhere, target_is_directory=True)
    pytester.makepyfile(test_policies=DIRECT)
    result = pytester.runpytest("--harness-seed=7", "--harness-profile=quick")
    result.assert_outcomes(failed=1)
    assert not any(elsewhere.rglob("*"))
    assert "resolves outside the rootdir" in result.stdout.str() + result.stderr.str()


def test_no_database_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=DIRECT)
    pytester.runpytest("--harness-seed=7", "--harness-profile=quick", "--harness-no-database")
    assert not (pytester.path / ".harness").exists()


def test_gitignore_keeps_the_database_out_of_the_repository() -> None:
    root = Path(__file__).resolve().parents[2]
    assert ".harness/" in (root / ".gitignore").read_text().splitlines()


def test_seed_last_reuses_the_previous_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_seed="def test_seed(harness):\n    print('SEED', harness.seed)\n")
    first = pytester.runpytest("--harness-seed=random", "-s")
    seed = re.search(r"SEED (\d+)", first.stdout.str())
    assert seed is not None
    again = pytester.runpytest("--harness-seed=last", "-s")
    again.stdout.fnmatch_lines([f"harness: seed {seed.group(1)}, profile *", f"*SEED {seed.group(1)}*"])


def test_seed_last_without_a_cached_seed_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(harness):\n    pass\n")
    result = pytester.runpytest("--harness-seed=last")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-seed=last: no previous harness seed is cached*"])
    disabled = pytester.runpytest("--harness-seed=last", "-p", "no:cacheprovider")
    assert disabled.ret == pytest.ExitCode.USAGE_ERROR


def test_xdist_workers_get_the_controllers_seed(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_seeds="""
import os
import pytest

@pytest.mark.parametrize("n", range(6))
def test_seed(harness, n, request):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (request.config.rootpath / f"seed-{n}-{worker}").write_text(str(harness.seed))
""")
    result = pytester.runpytest("-n", "2", "--harness-seed=random")
    result.assert_outcomes(passed=6)
    header = re.search(r"harness: seed (\d+)", result.stdout.str())
    assert header is not None
    written = list(pytester.path.glob("seed-*-gw*"))
    assert len(written) == 6
    assert {path.read_text() for path in written} == {header.group(1)}
    assert len({path.name.rsplit("-", 1)[1] for path in written}) == 2


def test_ci_profile_defaults_to_a_fixed_seed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_x="def test_x(harness):\n    assert harness.seed == 1 and harness.profile == 'ci'\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_bad_seed_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(harness):\n    pass\n")
    result = pytester.runpytest("--harness-seed=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-seed must be an integer, 'last' or 'random', got 'soon'*"])


#: A runtime of the user's beside their tests (not installed): pytest puts its directory on sys.path.
USER_RUNTIME = """
from harness.policies import get_scheduler


class Eager:
    name = "eager"

    def __init__(self):
        self.inner = get_scheduler("parallel")

    def __call__(self, batch, ctx):
        return self.inner(batch, ctx)
"""

USER_TEST = """
from harness.testing import check_scheduler

def test_eager():
    check_scheduler("myrt_beside:Eager", scenarios=["config-clobber"], generated=False, swarm=False,
                    seed=7, profile="quick")
"""


def test_a_printed_command_for_a_scheduler_beside_the_tests_works_in_a_fresh_shell(pytester: pytest.Pytester) -> None:
    """pytest found the user's module through the test directory, which a `harness` run from a shell does
    not search: the printed commands say PYTHONPATH=<that directory>, and work exactly as printed."""
    import os
    import shlex
    import subprocess
    import sys

    pytester.makepyfile(myrt_beside=USER_RUNTIME, test_user=USER_TEST)
    result = pytester.runpytest("--harness-no-database")
    result.assert_outcomes(failed=1)
    printed = [line.split("reproduce: ", 1)[1] for line in result.outlines if "reproduce: " in line
               and "harness explore" in line]
    assert printed, result.stdout.str()
    assert printed[0].startswith(f"PYTHONPATH={shlex.quote(str(pytester.path))} harness explore config-clobber "
                                 "--scheduler myrt_beside:Eager")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    words = shlex.split(printed[0])
    env["PYTHONPATH"] = words[0].split("=", 1)[1]
    again = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *words[2:], "--no-save"],
                           cwd="/", env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 1 and "FOUND lost-update" in again.stdout, again.stdout + again.stderr
    del env["PYTHONPATH"]  # what the line said before it named the directory: a clear error, nothing found
    bare = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *words[2:], "--no-save"],
                          cwd="/", env=env, capture_output=True, text=True, timeout=300, check=False)
    assert bare.returncode == 2 and "myrt_beside" in bare.stderr, bare.stdout + bare.stderr


#: A scheduler of the test module's own whose code the test edits between runs, as a user fixes theirs.
EDITED = """
from harness import get_scheduler
from harness.testing import check_scheduler

POLICY = "parallel_completion_order"


class Mine:
    name = "mine"

    def __call__(self, batch, ctx):
        return get_scheduler(POLICY)(batch, ctx)


def test_mine():
    check_scheduler(Mine(), scenarios=["config-clobber"], generated=False, swarm=False, profile="quick", seed=7)
"""


def _failure_heads(result: pytest.RunResult) -> list[str]:
    text = result.stdout.str()
    return re.findall(r"(?m)^E\s+\d+\. (.*)$", text) or re.findall(r"(?m)^E\s+\S+SchedulerCheckFailed: (.*)$", text)


def test_a_stored_failure_is_judged_by_its_own_label_and_a_regression_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies=EDITED)
    first = pytester.runpytest("-p", "no:cacheprovider")
    first.assert_outcomes(failed=1)
    assert sorted(_failure_heads(first)) == [
        "protocol violated on scenario 'config-clobber': out-of-order",
        "serializability violated on scenario 'config-clobber': lost-update"]
    examples = pytester.path / ".harness" / "examples"
    assert len(list(examples.glob("*/*.json"))) == 2
    # Results in model order now: the out-of-order entry passes (it is kept as fixed), the lost update is
    # still there, and is reported once (not again under the out-of-order entry's name, nor twice).
    pytester.makepyfile(test_policies=EDITED.replace('"parallel_completion_order"', '"parallel"'))
    second = pytester.runpytest("-p", "no:cacheprovider")
    second.assert_outcomes(failed=1)
    assert _failure_heads(second) == ["serializability violated on scenario 'config-clobber': lost-update"]
    assert [p.name.split("--")[1] for p in examples.glob("*/fixed/*.json")] == ["config-clobber"]
    assert "out-of-order" in next(examples.glob("*/fixed/*.json")).name
    # The bug comes back: the fixed entry fails again, and says so.
    pytester.makepyfile(test_policies=EDITED)
    third = pytester.runpytest("-p", "no:cacheprovider")
    third.assert_outcomes(failed=1)
    assert "protocol violated on scenario 'config-clobber': out-of-order (fixed before, it fails again)" in \
        _failure_heads(third)


def test_the_fixture_returns_the_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_policies="""
        def test_serial(harness):
            report = harness.check("serial", scenarios=["config-clobber"], generated=False)
            assert report.passed and report.scenarios[0].scenario == "config-clobber"
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
