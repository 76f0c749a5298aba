"""Built-in behaviours listed in `PLAIN_VALUED` return only str, int, bool, None, dict and list, so an
attempt digests their values without a type walk (`value_digest(value, plain=True)`): the digest must
be json's canonical one, for every built-in scenario and for arguments that try to smuggle a float in."""

from __future__ import annotations

from types import FunctionType

import pytest

from harness.model import Batch
from harness.run import run
from harness.scenario import Scenario, find_scenario, scenario_names
from harness.sim.trace import _needs_json, canonical_json, value_digest
from harness.tools.catalogue import PLAIN_VALUED
from harness.world import World


def _held(result_scenario: Scenario, results: object) -> int:
    """Assert every ok value of a plain-valued behaviour is plain and digested as json; count them."""
    names = {call.id: call.name for call in result_scenario.calls}
    checked = 0
    for result in results:  # type: ignore[attr-defined]
        spec = result_scenario.catalogue.running(names.get(result.call_id, ""))
        if not result.ok or spec is None or type(spec.behaviour) is not FunctionType \
                or spec.behaviour not in PLAIN_VALUED:
            continue
        assert not _needs_json(result.value), (result.call_id, result.value)
        assert value_digest(result.value, True) == value_digest(result.value)
        canonical_json(result.value)  # json can write it too
        checked += 1
    return checked


@pytest.mark.parametrize("name", scenario_names())
def test_every_builtin_scenarios_plain_values_are_plain(name: str) -> None:
    scenario = find_scenario(name)
    for scheduler in ("serial", "parallel"):
        result = run(scenario, scheduler, 3)
        _held(result.scenario, result.results)


def test_arguments_with_floats_do_not_reach_a_plain_value() -> None:
    world = World(cwd="/repo")
    world.populate(files=[("/repo/a.txt", "one\ntwo\nthree\n"), ("/repo/tests/test_a.py", "requires a.txt two\n")])
    calls = [
        ("c1", "read_file", {"path": "a.txt", "offset": 1.5, "limit": 2.5}),
        ("c2", "search_files", {"pattern": "t", "path": ".", "glob": 1.5, "limit": 0.5}),
        ("c3", "run_tests", {"path": ".", "timeout": 1.5}),
        ("c4", "web_search", {"query": "q", "max_results": 2.5}),
        ("c5", "write_file", {"path": "b.txt", "content": "x", "force": 1.5}),
        ("c6", "patch", {"path": "a.txt", "old": "one", "new": "uno", "replace_all": 1.5}),
        ("c7", "write_file_atomic", {"path": "c.txt", "content": "y", "mode": 0.5}),
        ("c8", "query_service_logs", {"service_name": "api", "minutes": 1.5}),
    ]
    scenario = Scenario(name="plain-values", batches=(Batch.of(calls),), world=world.state())
    result = run(scenario, "serial", 1)
    assert _held(result.scenario, result.results) == 7
