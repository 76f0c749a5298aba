"""check_scheduler(): the property suite users run against their own policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.model import Outcome
from harness.oracles import ORACLES
from harness.run import run
from harness.schedulers import Serial
from harness.testing import SchedulerCheckFailed, check_scheduler
from tests.helpers import scenario


@pytest.mark.parametrize("policy", ["serial", "partition"])
def test_safe_policies_pass(policy: str) -> None:
    check_scheduler(policy)


def test_an_instance_passes_too() -> None:
    check_scheduler(Serial(), profile="dev")


def test_parallel_fails_with_a_readable_message(tmp_path: Path) -> None:
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", report_dir=tmp_path)
    message = str(info.value)
    assert message.startswith("serializability violated on scenario 'config-clobber': lost-update")
    assert "witness:" in message and '"lost": ' in message
    assert "reproduce: harness replay " in message
    assert info.value.reproducer is not None and info.value.reproducer.is_file()


def test_an_unnamed_instance_gets_a_python_reproduce_line() -> None:
    from harness.schedulers import Parallel

    with pytest.raises(SchedulerCheckFailed, match=r"reproduce: harness.run\(<scenario>, <your scheduler>, seed=1"):
        check_scheduler(Parallel(), scenarios=["config-clobber"], generated=False, swarm=False)


def test_resource_keys_is_caught_letting_a_question_overlap_work() -> None:
    with pytest.raises(SchedulerCheckFailed, match="exclusivity violated on scenario 'clarify-mixed'"):
        check_scheduler("resource_keys")


def test_generated_batches_catch_what_no_builtin_scenario_has() -> None:
    with pytest.raises(SchedulerCheckFailed, match="scenario 'generated'"):
        check_scheduler("parallel", scenarios=[], swarm=False)


def test_unknown_may_mean_any_prefix_of_the_effects_but_cancelled_may_not() -> None:
    """An interrupted write_file has truncated its file: `unknown` accepts that, `cancelled` is a lie."""
    from collections.abc import Generator
    from typing import Any

    from harness.model import Batch, CallResult
    from harness.schedulers import SchedulerContext

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
