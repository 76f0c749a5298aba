"""Scenarios: named workloads stored as data, validated on load, never executed."""

from harness.scenario.library import UnknownScenarioError, builtin_dir, find_scenario, scenario_names
from harness.scenario.load import ScenarioError, load_scenario, scenario_from_data
from harness.scenario.spec import Interrupt, Scenario

__all__ = [
    "Interrupt",
    "Scenario",
    "ScenarioError",
    "UnknownScenarioError",
    "builtin_dir",
    "find_scenario",
    "load_scenario",
    "scenario_from_data",
    "scenario_names",
]
