"""Regressions of harness bugs found by trying exploration as users would (issue 9, items 3-5)."""

from __future__ import annotations

from pathlib import Path
from random import Random

import pytest
from click.testing import CliRunner

from harness import find_scenario, get_scheduler, run
from harness.cli import main
from harness.explore.engine import explore
from harness.explore.swarm import swarm_scenario
from harness.run import RunStatus
from harness.testing import SchedulerCheckFailed, check_scheduler


def test_reproducers_of_generated_batches_replay(tmp_path: Path) -> None:
    """Hypothesis-built batches have no label; their reproducers used to be refused by replay."""
    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", scenarios=[], swarm=False, report_dir=tmp_path)
    path = info.value.reproducer
    assert path is not None and info.value.finding.result.scenario.batches[0].label == ""
    result = CliRunner().invoke(main, ["replay", str(path)])
    assert result.exit_code in (1, 3) and "reproduced: same fingerprint" in result.stdout


def test_swarm_slow_start_scales_the_time_bound() -> None:
    """Five-times-slower first attempts made serial on fanout-100 a false hang."""
    sc = find_scenario("fanout-100")
    slow = next(changed for seed in range(50)
                for changed, kinds in [swarm_scenario(sc, Random(seed), ("slow-start",))] if kinds)
    assert slow.limits.time_bound_ms == 5 * sc.limits.time_bound_ms
    assert run(slow, get_scheduler("serial"), 1).status is RunStatus.COMPLETED


def test_shrinking_keeps_the_swarm_faults_of_the_finding() -> None:
    exploration = explore(find_scenario("risky-writes"), "serial", "random", runs=60, swarm=True)
    assert exploration.found is not None and exploration.shrunk is not None
    assert "duplicate-delivery" in exploration.found.swarm
    assert exploration.shrunk.swarm == exploration.found.swarm
    assert len(exploration.shrunk.result.scenario.calls) < len(exploration.found.result.scenario.calls)
