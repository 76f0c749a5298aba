"""Which oracles have something to check on a scenario: what a pass on it can mean.

Owns the rule, per oracle, of what a scenario must contain for that oracle to be able to fire: caps
need a cap, exactly-once an external effect, exclusivity an interactive or exclusive tool, approvals
a scripted user, data-flow a call that takes an argument from another's result, loop-policy a model
that a loop drives, tools a Python tool of the user's, hints a tool with MCP hints. The rest (contract,
protocol, serializability, liveness) apply to every run. A coverage summary lists them next to a
pass, so "every oracle holds" says which ones could have failed. It is a static reading of the
scenario (and the tools a run started); it never runs anything and never judges. The checkpoints
oracle is left out: it has something to check only when a scheduler rolls back, which no scenario
can promise.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from harness.oracles import (
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
    tool_code,
)
from harness.oracles import serializability as serializability_oracle
from harness.scenario.spec import Scenario
from harness.tools.catalogue import BUILTIN
from harness.tools.guard import user_code
from harness.tools.spec import SideEffect

#: Oracles that have something to check on every run.
ALWAYS = (contract.NAME, protocol.NAME, serializability_oracle.NAME, liveness.NAME)

#: The labels each single-run oracle can give (what "could fire" means for a scenario it applies to).
ORACLE_LABELS: dict[str, tuple[str, ...]] = {
    contract.NAME: ("scheduler-error", "contract-error"),
    protocol.NAME: ("missing-result", "duplicate-result", "orphan-result", "out-of-order", "mispaired-result",
                    "fabricated-result", "misreported-outcome"),
    data_flow.NAME: ("future-read", "missing-input"),
    approvals.NAME: ("unapproved-effect",),
    checkpoints.NAME: ("torn-snapshot", "rollback-mismatch"),
    serializability_oracle.NAME: ("lost-update", "stale-read", "torn-read", "future-read", "ghost-effect",
                                  "duplicate-effect", "reordered-effect", "divergent-result", "divergent-world",
                                  "cross-agent-lost-update", "cross-agent-stale-read"),
    exclusivity.EXCLUSIVITY: ("exclusivity",),
    exclusivity.CAPS: ("cap-exceeded",),
    exactly_once.NAME: ("duplicate-effect",),
    liveness.NAME: ("hang", "orphaned-call", "start-after-interrupt", "grace-exceeded", "dropped-call",
                    "loop-blocked"),
    loop_policy.NAME: loop_policy.LABELS,
    tool_code.NAME: tool_code.LABELS,
    hints.NAME: hints.LABELS,
}


def labels_of(oracles: Sequence[str]) -> tuple[str, ...]:
    """The labels `oracles` can give, each once, in the oracles' order."""
    return tuple(dict.fromkeys(label for oracle in oracles for label in ORACLE_LABELS.get(oracle, ())))


def applicable(scenario: Scenario | None, tools: Collection[str] = ()) -> tuple[str, ...]:
    """The oracles that can fire on `scenario`, in report order. `tools` adds tool names the runs
    started (a loop scenario's calls are decided as it runs); with no scenario (batches generated
    run by run over the built-in tools), those tools alone decide."""
    calls = scenario.calls if scenario is not None else ()
    catalogue = scenario.catalogue if scenario is not None else BUILTIN
    names = sorted({call.name for call in calls} | set(tools))
    specs = [catalogue[name] for name in names if name in catalogue]
    found = list(ALWAYS)
    if scenario is not None and (scenario.args_from or scenario.looped):
        found.append(data_flow.NAME)
    if scenario is not None and scenario.approvals is not None:
        found.append(approvals.NAME)
    if any(spec.declared.interactive or spec.declared.exclusive for spec in specs):
        found.append(exclusivity.EXCLUSIVITY)
    if scenario is not None and (scenario.max_concurrency is not None or scenario.tool_caps):
        found.append(exclusivity.CAPS)
    if any(spec.declared.side_effect is SideEffect.EXTERNAL for spec in specs):
        found.append(exactly_once.NAME)
    if scenario is not None and scenario.looped:
        found.append(loop_policy.NAME)
    if any(user_code(spec.behaviour) and not spec.delegates for spec in specs):
        found.append(tool_code.NAME)  # a Python tool of the user's: its own code may fail
    if any(spec.declared.hints is not None for spec in specs):
        found.append(hints.NAME)  # an MCP tool's hints: its effects may contradict them
    order = [contract.NAME, protocol.NAME, data_flow.NAME, approvals.NAME, serializability_oracle.NAME,
             exclusivity.EXCLUSIVITY, exclusivity.CAPS, exactly_once.NAME, liveness.NAME, loop_policy.NAME,
             tool_code.NAME, hints.NAME]
    return tuple(name for name in order if name in found)
