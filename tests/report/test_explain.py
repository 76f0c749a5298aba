"""Every violation label explained in words: one golden sentence per label, from a run that
produces it (built-in scenarios and the deliberately broken schedulers of tests/oracles and
tests/catalogue), plus the words in every report that shows them."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from harness import find_scenario, get_scheduler, run
from harness.bridges import from_asyncio
from harness.model import Batch, CallResult, Outcome
from harness.oracles import LABELS, check, reorder
from harness.oracles.loop_policy import loop_conformance_scenarios
from harness.oracles.verdict import Violation
from harness.policies import Parallel
from harness.report.explain import TEMPLATES, explain, explain_witness
from harness.report.races import racing_touches
from harness.run import RunResult
from harness.scenario import Scenario, scenario_from_data
from harness.scheduling import SchedulerContext
from tests.catalogue import buggy
from tests.catalogue.cases import local
from tests.helpers import scenario
from tests.oracles import schedulers as broken
from tests.oracles import test_loop_policy as loop_policy
from tests.policies import test_blocking_on_loop as blocking

TICKET = scenario([("t", "create_ticket", {"title": "outage"})])
INTERRUPTED = scenario([(f"q{i}", "query_service_logs", {"service_name": "api"}) for i in range(3)],
                       interrupt={"at_ms": 1000, "grace_ms": 500})
READ_THEN_WRITE = scenario([("r", "read_file", {"path": "a.txt"}),
                            ("w", "write_file", {"path": "a.txt", "content": "new"})], files={"/repo/a.txt": "old"})


def half_done() -> Scenario:
    """Agent a writes x, then y in its next turn; agent b reads x before the first write, y after the second."""
    from tests.agent.test_crew import call, crew

    scenario: Scenario = crew(("a", [[call("wx", "write_file_atomic", 200, path="/w/x", content="x1")],
                                     [call("wy", "write_file_atomic", 200, path="/w/y", content="y1")]], 0),
                              ("b", [[call("rx", "read_file", 50, path="/w/x"),
                                      call("ry", "read_file", 1000, path="/w/y")]], 0),
                              files={"/w/x": "x0", "/w/y": "y0"})
    return scenario


class ReportsAStranger:
    """Parallel, plus a result for a call that is not in the batch."""

    name = "reports-a-stranger"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        results = yield from Parallel()(batch, ctx)
        return [*results, CallResult("stranger", Outcome.OK, {"hello": True}, None, 1, 0, ctx.now)]


class ReturnsGarbage:
    name = "returns-garbage"

    def __call__(self, batch: Batch, ctx: SchedulerContext) -> Generator[Any, Any, Any]:
        yield ctx.start(batch.calls[0])
        return "all done"


def named(name: str, scheduler: str, seed: int = 1) -> RunResult:
    return run(find_scenario(name), get_scheduler(scheduler), seed)


def violation(result: RunResult, label: str, index: int = 0) -> Violation:
    found = [v for verdict in check(result) for v in verdict.violations if v.label == label]
    assert found, [v.label for verdict in check(result) for v in verdict.violations]
    return found[index]


Case = Callable[[], tuple[Violation, RunResult | None]]


def of(result: Callable[[], RunResult], label: str, index: int = 0) -> Case:
    def build() -> tuple[Violation, RunResult | None]:
        r = result()
        return violation(r, label, index), r
    return build


def order_dependent() -> tuple[Violation, RunResult | None]:
    verdict = reorder.check(find_scenario("config-clobber"), get_scheduler("parallel"), range(1, 6))
    return verdict.violations[0], None


def missing_input() -> tuple[Violation, RunResult | None]:
    # The data-flow oracle's witness (an `args_from` consumer that did not get its producer's value).
    return Violation("missing-input", "notify's argument 'ticket' read nothing although its producer ticket "
                     "returned one", {"consumer": "notify", "producer": "ticket", "arg": "ticket",
                                      "reference": "ticket.ticket", "attempt": 1, "started_at_ms": 900}), None


CASES: dict[str, Case] = {
    "lost-update": of(lambda: named("config-clobber", "parallel", 3), "lost-update"),
    "stale-read": of(lambda: named("shared-shell-cwd", "parallel"), "stale-read"),
    "torn-read": of(lambda: named("edit-then-test", "parallel"), "torn-read"),
    "future-read": of(lambda: run(READ_THEN_WRITE, broken.Reverse(), 1), "future-read"),
    "ghost-effect": of(lambda: run(TICKET, broken.TimesOut(100), 1), "ghost-effect"),
    "duplicate-effect": of(lambda: run(TICKET, broken.TimesOutAndRetries(use_key=False), 1), "duplicate-effect"),
    "reordered-effect": of(lambda: named("risky-writes", "parallel"), "reordered-effect"),
    "divergent-result": of(lambda: run(find_scenario("incident-triage"), broken.Relabels(), 1), "divergent-result"),
    "divergent-world": of(lambda: named("shared-shell-cwd", "parallel"), "divergent-world"),
    "missing-result": of(lambda: run(find_scenario("incident-triage"), broken.DropsLast(), 1), "missing-result"),
    "duplicate-result": of(lambda: run(find_scenario("incident-triage"), broken.DoublesFirst(), 1), "duplicate-result"),
    "orphan-result": of(lambda: run(find_scenario("incident-triage"), ReportsAStranger(), 1), "orphan-result"),
    "out-of-order": of(lambda: named("incident-triage", "parallel_completion_order"), "out-of-order"),
    "mispaired-result": of(lambda: run(find_scenario("incident-triage"), broken.Relabels(), 1), "mispaired-result"),
    "fabricated-result": of(lambda: run(find_scenario("incident-triage"), broken.Fabricates(), 1), "fabricated-result"),
    "scheduler-error": of(lambda: run(find_scenario("incident-triage"), broken.Raises(), 1), "scheduler-error"),
    "contract-error": of(lambda: run(find_scenario("incident-triage"), ReturnsGarbage(), 1), "contract-error"),
    "exclusivity": of(lambda: named("clarify-mixed", "parallel"), "exclusivity"),
    "cap-exceeded": of(lambda: named("scrape-fanout", "parallel"), "cap-exceeded"),
    "hang": of(lambda: named("stuck-extract", "parallel"), "hang"),
    "orphaned-call": of(lambda: run(find_scenario("incident-triage"), broken.FireAndForget(), 1), "orphaned-call"),
    "start-after-interrupt": of(lambda: run(INTERRUPTED, broken.StartsAfterInterrupt(), 1), "start-after-interrupt"),
    "grace-exceeded": of(lambda: named("interrupt-midbatch", "parallel"), "grace-exceeded"),
    "dropped-call": of(lambda: run(find_scenario("incident-triage"), buggy.CapsByCancelling(), 1), "dropped-call"),
    "order-dependent": order_dependent,
    "loop-blocked": of(lambda: run(find_scenario("sync-tool-on-loop"), from_asyncio(blocking.sync_on_loop), 1),
                       "loop-blocked"),
    "missing-input": missing_input,
    "unapproved-effect": of(lambda: run(find_scenario("ops-approvals"), buggy.OptimisticApproval(), 1),
                            "unapproved-effect"),
    "rollback-mismatch": of(lambda: run(local("slow-build")(), buggy.RollbackOnTimeout(), 4), "rollback-mismatch"),
    "torn-snapshot": of(lambda: named("checkpoint-race", "hermes_gate"), "torn-snapshot"),
    "cross-agent-lost-update": of(lambda: named("two-agents-report", "parallel"), "cross-agent-lost-update"),
    "cross-agent-stale-read": of(lambda: run(half_done(), get_scheduler("parallel"), 1), "cross-agent-stale-read"),
    "misreported-outcome": of(lambda: run(find_scenario("compare-three-files"), broken.StubsResults(), 3),
                              "misreported-outcome"),
    "round-limit-exceeded": of(lambda: run(loop_policy.under(find_scenario("max-round-exceeded"),
                                                             loop_policy.OffByOne()), get_scheduler("serial"), 1),
                               "round-limit-exceeded"),
    "retry-limit-exceeded": of(lambda: run(loop_conformance_scenarios(buggy.RetryKeyedByCallId(),
                                                                      ["tool-disabled"])[0],
                                           get_scheduler("serial"), 1), "retry-limit-exceeded"),
    "tool-disabled-silently": of(lambda: run(loop_policy.under(scenario_from_data(loop_policy.STUBBORN),
                                                               loop_policy.Forgets("refusals")),
                                             get_scheduler("serial"), 1), "tool-disabled-silently"),
    "loop-error": of(lambda: run(loop_policy.under(find_scenario("sales-report"), loop_policy.Crashes()),
                                 get_scheduler("serial"), 1), "loop-error"),
    "tool-error": of(lambda: run(find_scenario("compare-three-files", tools_modules=("tests.tools.broken",)),
                                 get_scheduler("serial"), 1), "tool-error"),
    "hint-violated": of(lambda: named("mcp-lying-read-only", "mcp_hints"), "hint-violated"),
}

GOLDEN = Path(__file__).parent / "golden" / "explanations.txt"


def read_golden() -> dict[str, str]:
    """`## label` headers, each followed by its explanation on one line."""
    golden: dict[str, str] = {}
    label = None
    for line in GOLDEN.read_text().splitlines():
        if line.startswith("## "):
            label = line[3:].strip()
        elif line.strip() and label is not None:
            golden[label] = line
    return golden


def test_every_label_has_a_template_and_a_golden_case() -> None:
    assert set(LABELS) <= set(TEMPLATES)
    assert set(LABELS) <= set(CASES)
    assert set(CASES) == set(read_golden())


@pytest.mark.parametrize("label", sorted(CASES))
def test_golden_explanation(label: str) -> None:
    found, result = CASES[label]()
    assert found.label == label
    text = explain(found, result)
    assert text != found.message, "the template fell back to the oracle's message"
    assert text == read_golden()[label]


def test_a_witness_the_template_cannot_read_falls_back_to_the_message() -> None:
    assert explain_witness("torn-read", {"call": "a"}, None, "the oracle's words") == "the oracle's words"
    assert explain_witness("no-such-label", {}, None, "as is") == "as is"


def test_without_the_run_the_witness_alone_still_speaks() -> None:
    found, _ = CASES["torn-read"]()
    assert explain(found) == (
        "run-tests read /repo/src/app.py at 210 ms, after write-fix truncated it (0 ms) and before it wrote the new "
        "content (266 ms): the tests ran against an empty file. It returned {\"failures\":[\"/repo/tests/test_app.py: "
        "src/app.py lacks 'return \\\"fixed\\\"'\"],...; in model order it returns "
        "{\"failures\":[],\"passed\":true,\"tests\":1}.")


def test_data_flow_future_read_has_its_own_words() -> None:
    witness = {"consumer": "notify", "producer": "ticket", "arg": "ticket", "reference": "ticket.ticket",
               "attempt": 1, "started_at_ms": 0, "producer_ended_at_ms": 400}
    assert explain_witness("future-read", witness) == (
        "notify started at 0 ms, before ticket ended (400 ms), so its argument 'ticket' (ticket.ticket) was taken "
        "before ticket's result existed. In model order ticket ends before notify starts, and notify would have "
        "received that result.")


def test_racing_touches_of_a_torn_read() -> None:
    found, result = CASES["torn-read"]()
    assert result is not None
    touches = racing_touches(found, result)
    assert [(t["call"], t["op"], t["t"], t["role"]) for t in touches] == [
        ("write-fix", "truncate", 0, "truncate"), ("run-tests", "read", 210, "read"),
        ("write-fix", "write", 266, "write")]
    assert [t["seq"] for t in touches] == sorted(t["seq"] for t in touches)


def _regenerate() -> None:
    """`python -m tests.report.test_explain` rewrites the golden file (review the diff!)."""
    blocks = []
    for label in sorted(CASES):
        found, result = CASES[label]()
        blocks.append(f"## {label}\n{explain(found, result)}\n")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text("\n".join(blocks))


if __name__ == "__main__":
    _regenerate()


# -- the words in every report ---------------------------------------------------------------------

TORN = read_golden()["torn-read"] if GOLDEN.exists() else ""


def invoke(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from harness.cli import main

    ran = CliRunner().invoke(main, list(args))
    return ran.exit_code, ran.stdout


def test_run_json_explains_each_violation() -> None:
    code, out = invoke("run", "edit-then-test", "--scheduler", "parallel", "--format", "json")
    assert code == 1
    failed = [v for v in json.loads(out)["verdicts"] if not v["ok"]]
    assert [(v["label"], v["explanation"]) for v in failed] == [("torn-read", TORN)]
    assert failed[0]["violations"][0]["explanation"] == TORN
    passed = [v for v in json.loads(out)["verdicts"] if v["ok"]]
    assert all(v["explanation"] is None and v["violations"] == [] for v in passed)


def test_run_text_says_why_under_the_verdicts() -> None:
    code, out = invoke("run", "edit-then-test", "--scheduler", "parallel")
    assert code == 1
    # The why lines end where the likelihood lines (harness.report.likelihood) begin.
    why = out[out.index("why (torn-read): "):out.index("likelihood (torn-read): ")]
    assert " ".join(why.split()) == "why (torn-read): " + TORN
    assert out.index("verdicts") < out.index("why (torn-read)") < out.index("FAILED") < out.index("reproduce: ")


def test_explore_prints_why() -> None:
    code, out = invoke("explore", "config-clobber", "--scheduler", "parallel", "--strategy", "random", "--runs", "3",
                       "--no-save")
    assert code == 1
    why = next(line for line in out.splitlines() if line.startswith("why: "))
    assert "update is lost" in why and "In model order" in why


def test_check_scheduler_message_says_why() -> None:
    from harness.testing import SchedulerCheckFailed, check_scheduler

    with pytest.raises(SchedulerCheckFailed) as info:
        check_scheduler("parallel", scenarios=["edit-then-test"], profile="quick")
    lines = info.value.failures[0].text.splitlines()
    assert lines[2] == "  why: " + TORN


def test_run_page_explains_each_violation(tmp_path: Path) -> None:
    import html

    code, _ = invoke("run", "edit-then-test", "--scheduler", "parallel", "--out", str(tmp_path))
    assert code == 1
    page = html.unescape((tmp_path / "index.html").read_text())
    assert "What went wrong" in page and " ".join(TORN.split()) in " ".join(page.split())


def test_run_text_says_each_why_once_when_two_oracles_find_the_same_fact() -> None:
    """A retried ticket without an idempotency key is a duplicate effect to serializability (the call's
    ledger entries) and to exactly-once: both verdicts stay in the table, the words are printed once
    (they were two byte-identical `why` lines)."""
    code, out = invoke("run", "duplicate-ticket", "--scheduler", "partition", "--no-idempotency-keys")
    assert code == 1
    table = out[out.index("verdicts"):out.index("why (")]
    assert "exactly-once     VIOLATED  duplicate-effect" in table
    assert table.count("duplicate-effect") == 3  # two from serializability, one from exactly-once
    whys = [" ".join(block.split()) for block in out[out.index("why ("):out.index("FAILED")].split("why (")[1:]]
    assert len(whys) == 2 and len(set(whys)) == 2
    assert whys[1].startswith("duplicate-effect): open-ticket added 2 entries to the tickets ledger")
