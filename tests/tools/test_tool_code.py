"""User code is judged as user code (issue 26): a Python tool that raises or returns what the harness
cannot record is that tool's `tool-error` (exit 6), never the scheduler's `scheduler-error` +
`orphaned-call` and never a pass; a tools module, a model or a loop policy that raises (or exits)
when it loads is exit 2 naming it. Each broken case has its fixed twin."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.exitcodes import ExitCode
from harness.model import Outcome
from harness.oracles import check, exit_code
from harness.oracles.applicable import applicable
from harness.scenario import ScenarioError, scenario_from_data
from harness.tools.catalogue import BUILTIN, Catalogue
from harness.tools.guard import recordable
from tests.tools.broken import read_file

ROOT = Path(__file__).resolve().parents[2]
#: (A KeyboardInterrupt the tool raises is tested through the CLI, which tells it from a real Ctrl-C.)
BROKEN = ("raises", "exits", "nan", "set", "object", "int-key")


def _with(variant: str, scheduler: str = "serial") -> tuple[list[str], int, dict[str, Outcome]]:
    scenario = find_scenario("compare-three-files")
    catalogue = Catalogue({**dict(BUILTIN.items()), "read_file": read_file(variant)})
    result = run(replace(scenario, catalogue=catalogue), get_scheduler(scheduler), 3)
    verdicts = check(result)
    labels = sorted({v.label for verdict in verdicts for v in verdict.violations})
    return labels, int(exit_code(verdicts)), {r.call_id: r.outcome for r in result.results}


@pytest.mark.parametrize("scheduler", ["serial", "parallel"])
@pytest.mark.parametrize("variant", BROKEN)
def test_a_broken_python_tool_is_the_tools_error_never_the_schedulers(variant: str, scheduler: str) -> None:
    labels, code, outcomes = _with(variant, scheduler)
    assert labels == ["tool-error"] and code == ExitCode.TOOL_ERROR == 6
    assert "scheduler-error" not in labels and "orphaned-call" not in labels
    assert set(outcomes.values()) == {Outcome.ERROR}  # every read failed, and the scheduler reported each


@pytest.mark.parametrize("scheduler", ["serial", "parallel"])
def test_the_fixed_tool_passes_and_a_tool_failing_on_purpose_is_not_a_tool_error(scheduler: str) -> None:
    labels, code, outcomes = _with("fixed", scheduler)
    assert (labels, code) == ([], 0) and set(outcomes.values()) == {Outcome.OK}
    labels, code, outcomes = _with("fails-on-purpose", scheduler)  # ToolError: a real tool's failure
    assert (labels, code) == ([], 0) and set(outcomes.values()) == {Outcome.ERROR}


def test_the_tools_oracle_applies_to_scenarios_with_python_tools_only() -> None:
    scenario = find_scenario("compare-three-files")
    assert "tools" not in applicable(scenario)
    assert "tools" in applicable(replace(scenario, catalogue=Catalogue({**dict(BUILTIN.items()),
                                                                        "read_file": read_file("fixed")})))


def test_recordable_names_what_cannot_be_recorded() -> None:
    assert recordable({"a": [1, 2.5, None, True, "x", (3,)]}) is None
    assert "NaN" in str(recordable([float("nan")])) and "infinity" in str(recordable({"x": float("inf")}))
    assert recordable({1, 2}) == "a value of type set"
    assert recordable({1: "x"}) == "a key that is not a string (int)"


def test_the_cli_exit_code_is_six_for_a_broken_tool_and_zero_once_fixed() -> None:
    runner = CliRunner()
    broken = runner.invoke(main, ["run", "compare-three-files", "--tools", "tests.tools.broken"])
    assert broken.exit_code == 6, broken.output
    assert "tool-error" in broken.output and "returned a value of type set" in broken.output
    assert "scheduler-error" not in broken.output and "orphaned-call" not in broken.output
    fixed = runner.invoke(main, ["run", "compare-three-files", "--tools", "tests.tools.fixed"])
    assert fixed.exit_code == 0, fixed.output


def test_a_keyboard_interrupt_a_tool_raises_itself_is_its_error_not_a_ctrl_c(tmp_path: Path) -> None:
    _module(tmp_path, "tools_interrupting",
            "from tests.tools.broken import read_file\nTOOLS = [read_file('interrupts')]\n")
    done = _harness(tmp_path, "run", "compare-three-files", "--tools", "tools_interrupting", "--scheduler", "parallel")
    assert done.returncode == 6, (done.stdout[-2000:], done.stderr)
    assert "raised KeyboardInterrupt" in done.stdout and "interrupted" not in done.stderr


# -- at load: exit 2, naming the component, the module and what it raised ---------------------------


def _module(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))


def _harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command in a fresh process (a module raising SystemExit or KeyboardInterrupt at import
    must not end the harness, and only a fresh process shows what exit code it ends with)."""
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}, timeout=120, check=False)


LOAD_FAILURES = {"exit0": "raise SystemExit(0)", "exit3": "raise SystemExit(3)",
                 "interrupt": "raise KeyboardInterrupt", "raises": "raise RuntimeError('broken at import')"}


@pytest.mark.parametrize("kind", sorted(LOAD_FAILURES))
def test_a_tools_module_that_raises_or_exits_at_import_is_exit_2_naming_it(tmp_path: Path, kind: str) -> None:
    _module(tmp_path, f"tools_{kind}", LOAD_FAILURES[kind])
    done = _harness(tmp_path, "run", "compare-three-files", "--tools", f"tools_{kind}")
    assert done.returncode == 2, (done.stdout, done.stderr)
    raised = LOAD_FAILURES[kind].split()[1].split("(")[0]
    assert f"tools module 'tools_{kind}'" in done.stderr and raised in done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    # Fixed, it loads and runs.
    _module(tmp_path, f"tools_{kind}", "from tests.tools.fixed import TOOLS\n")
    assert _harness(tmp_path, "run", "compare-three-files", "--tools", f"tools_{kind}").returncode == 0


MODEL = {"name": "py-model", "model": "MODULE:decide", "world": {}, "tools": {}}
LOOP = {"name": "py-loop", "loop": "MODULE:Loop", "world": {}, "tools": {},
        "model": {"task": "t", "rules": [{"name": "a", "action": "final_answer", "text": "done"}]}}


@pytest.mark.parametrize("kind", ["exit0", "raises"])
@pytest.mark.parametrize("component", ["model", "loop"])
def test_a_model_or_loop_that_raises_at_import_is_a_load_error_not_a_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, component: str, kind: str) -> None:
    name = f"user_{component}_{kind}"
    _module(tmp_path, name, LOAD_FAILURES[kind])
    monkeypatch.syspath_prepend(str(tmp_path))
    data = {**(MODEL if component == "model" else LOOP)}
    data[component] = data[component].replace("MODULE", name)
    with pytest.raises(ScenarioError, match=rf"{component}: expected a {component} that loads; .*importing {name} "
                                            rf"raised (SystemExit: 0|RuntimeError: broken at import)"):
        run(scenario_from_data(data, trust=[name]), get_scheduler("serial"), 1)
    # Fixed, the same scenario runs.
    fixed = "def decide(transcript):\n    return {'type': 'final_answer', 'content': 'done'}\n" \
        if component == "model" else "from harness.agent.taskloop import TaskLoop as Loop\n"
    _module(tmp_path, name + "_fixed", fixed)
    data[component] = data[component].replace(name, name + "_fixed")
    result = run(scenario_from_data(data, trust=[name + "_fixed"]), get_scheduler("serial"), 1)
    assert result.agent is not None and result.agent.status == "final_answer"


def test_the_cli_refuses_a_model_that_exits_at_import_with_exit_2(tmp_path: Path) -> None:
    _module(tmp_path, "model_exit0", "raise SystemExit(0)")
    (tmp_path / "s.toml").write_text('name = "s"\nmodel = "model_exit0:decide"\n')
    done = _harness(tmp_path, "run", "s.toml", "--trust-module", "model_exit0")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "s.toml: model:" in done.stderr and "importing model_exit0 raised SystemExit: 0" in done.stderr


def test_the_story_of_a_tool_error_blames_the_tool_not_the_order() -> None:
    told = CliRunner().invoke(main, ["run", "compare-three-files", "--tools", "tests.tools.broken"]).output
    assert "the tool's own code failed on this call: fix the tool" in told
    assert "the bug comes from how" not in told


def _cleanup_fails(args, io_):  # type: ignore[no-untyped-def]
    text = io_.read(args["path"])
    try:
        yield 1.0
    finally:
        raise ValueError("cleanup failed")  # a tool whose clean-up fails when it is cancelled
    return text


class _CancelsEveryCall:
    name = "cancels-every-call"

    def __call__(self, batch, ctx):  # type: ignore[no-untyped-def]
        handles = [ctx.start(call) for call in batch.calls]
        yield ctx.sleep(1)
        for handle in handles:
            ctx.cancel(handle)
        results = []
        for handle in handles:
            results.append((yield ctx.settle(handle)))
        return results


def test_a_tool_whose_clean_up_fails_when_cancelled_is_a_tool_error_not_a_scheduler_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Found in review: the guard's error raised from `close()` inside the cancellation handler could
    not be rebuilt by SimPy (`type(exc)(*exc.args)`), and the run ended as a garbled scheduler-error."""
    scenario = find_scenario("compare-three-files")
    failing = replace(BUILTIN["read_file"], behaviour=_cleanup_fails)
    catalogue = Catalogue({**dict(BUILTIN.items()), "read_file": failing})
    result = run(replace(scenario, catalogue=catalogue), _CancelsEveryCall(), 3)
    assert result.status.value == "completed", result.error
    assert sorted({v.label for verdict in check(result) for v in verdict.violations}) == ["tool-error"]
    assert "cleanup failed" in str([v.message for verdict in check(result) for v in verdict.violations])
    assert capsys.readouterr().err == ""
