"""The what-if on a Dask cluster (`compare --traces --dask`, `traces whatif --dask`: issue 29 item 3's
"the same through sweep --dask for large exports") gives what one local process gives. A LocalCluster of
two one-thread worker processes, as tests/cluster does; skipped without the `[dask]` extra."""

from __future__ import annotations

import json
import tomllib

import pytest
from click.testing import CliRunner

pytest.importorskip("distributed")
pytest.importorskip("scipy")

from harness.cli import main
from harness.distribute.cluster import connect
from harness.scenario import scenario_from_data
from harness.traces import SAMPLE, import_traces, learn, scenario_text
from harness.traces.whatif import what_if


def test_the_what_if_on_two_dask_workers_is_the_what_if_of_one_process() -> None:
    imported = import_traces([SAMPLE])
    text = scenario_text(learn(imported.turns), imported.turns, name="whatif", files=imported.files)
    scenario = scenario_from_data(tomllib.loads(text), "<test>")
    schedulers, seeds = ["serial", "parallel", "resource_keys"], range(7, 10)
    here = what_if(scenario, imported.turns, schedulers, seeds)
    seen: list[int] = []
    with connect("local", workers=2) as cluster:
        assert cluster.workers == 2
        there = what_if(scenario, imported.turns, schedulers, seeds, lambda done, total: seen.append(done), cluster)
    assert there == here
    assert here.policies[1].hazard_runs > 0  # the figures compared include parallel's hazards
    assert len(seen) > 2 and seen[-1] == 3 * 90  # progress followed the chunks


def test_compare_with_traces_on_dask_prints_what_a_local_run_prints() -> None:
    args = ["compare", "--traces", str(SAMPLE), "--schedulers", "serial,parallel", "--runs", "2", "--seed-start", "5",
            "--format", "json"]
    local = CliRunner().invoke(main, args)
    distributed = CliRunner().invoke(main, [*args, "--dask", "local", "--processes", "2"])
    assert local.exit_code == 0 == distributed.exit_code, distributed.stderr
    assert json.loads(distributed.stdout) == json.loads(local.stdout)
    assert json.loads(local.stdout)["policies"][1]["hazard_share"] > 0


def test_an_unreachable_scheduler_is_a_usage_error_before_any_run() -> None:
    result = CliRunner().invoke(main, ["traces", "whatif", "--sample", "--dask", "not a url:::"])
    assert result.exit_code == 2 and "--dask" not in result.stdout
    assert "cannot reach the Dask scheduler" in result.stderr and "Traceback" not in result.stderr
