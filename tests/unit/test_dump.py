import json

import pytest

from harness import find_scenario, get_scheduler, run, scenario_names
from harness.scenario import scenario_from_data
from harness.scenario.dump import scenario_to_data


@pytest.mark.parametrize("name", scenario_names())
def test_every_scenario_round_trips_through_data(name: str) -> None:
    original = find_scenario(name)
    data = json.loads(json.dumps(scenario_to_data(original)))  # plain JSON data, nothing else
    again = scenario_from_data(data, "<round-trip>")
    assert again.world == original.world
    for scheduler in ("serial", "parallel", "resource_keys"):
        policy = get_scheduler(scheduler)
        assert run(again, policy, 3).fingerprint == run(original, policy, 3).fingerprint
