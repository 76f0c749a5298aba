"""The oracles hand out passing verdicts kept as constants (`verdict.passing`), not made per run by
`Verdict.of`: each constant is the verdict `Verdict.of` gives for no violation, oracle name and note
alike, and every passing verdict `check` gives is one of them (or serializability's model-order one)."""

from __future__ import annotations

from harness import get_scheduler, run
from harness.oracles import (
    ORACLES,
    approvals,
    checkpoints,
    contract,
    data_flow,
    exactly_once,
    exclusivity,
    hints,
    liveness,
    loop_policy,
    protocol,
    serializability,
    tool_code,
)
from harness.oracles import check as check_all
from harness.oracles.verdict import Verdict
from tests.catalogue.cases import CASES

CONSTANTS = {
    (approvals, "_PASSED"): (approvals.NAME, ""), (checkpoints, "_PASSED"): (checkpoints.NAME, ""),
    (contract, "_PASSED"): (contract.NAME, ""), (data_flow, "_PASSED"): (data_flow.NAME, ""),
    (exactly_once, "_PASSED"): (exactly_once.NAME, ""), (tool_code, "_PASSED"): (tool_code.NAME, ""),
    (hints, "_PASSED"): (hints.NAME, ""), (hints, "_UNHINTED"): (hints.NAME, "no tool of the scenario gives MCP hints"),
    (loop_policy, "_NOT_A_LOOP"): (loop_policy.NAME, "not a loop run"), (liveness, "_PASSED"): (liveness.NAME, ""),
    (protocol, "_PASSED"): (protocol.NAME, ""), (serializability, "_PASSED"): (serializability.NAME, ""),
    (exclusivity, "_EXCLUSIVE_PASSED"): (exclusivity.EXCLUSIVITY, ""),
    (exclusivity, "_CAPS_PASSED"): (exclusivity.CAPS, ""),
    (exclusivity, "_NO_CAPS"): (exclusivity.CAPS, "the scenario declares no caps"),
}


def test_each_kept_passing_verdict_is_the_one_verdict_of_gives() -> None:
    for (module, name), (oracle, note) in CONSTANTS.items():
        kept = getattr(module, name)
        assert kept == Verdict.of(oracle, [], note) == Verdict(oracle, True, (), note), (module.__name__, name)
        assert oracle in ORACLES


def test_every_passing_verdict_of_the_catalogue_is_a_kept_one_or_a_fresh_equal() -> None:
    kept = {id(getattr(module, name)) for module, name in CONSTANTS}
    seen = 0
    for case in CASES:
        scenario = case.load()
        for scheduler in (case.scheduler, get_scheduler("serial")):
            for verdict in check_all(run(scenario, scheduler, 1)):
                if verdict.ok and not verdict.violations:
                    assert verdict == Verdict(verdict.oracle, True, (), verdict.note, verdict.reference)
                    seen += id(verdict) in kept
    assert seen
