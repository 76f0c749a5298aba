"""What a traced call touches, guessed from its arguments and its tool's name: calls naming the same
file collide without the file's name being written, and the what-if then sees the hazards of running
them at once (issue 29: "what would it break")."""

from __future__ import annotations

import json
import tomllib

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.scenario import scenario_from_data
from harness.traces import Attempt, CallRecord, Turn, learn, scenario_text
from harness.traces.resources import FILE, READ, UNKNOWN, WRITE, infer, kind_of, namespace_of


def _call(call_id: str, tool: str, arguments: str | None, start: int = 0) -> CallRecord:
    return CallRecord(call_id, tool, (Attempt(f"{call_id:0>16}", start, start + 5_000_000, "ok"),), arguments)


def _turns() -> tuple[Turn, ...]:
    return (
        Turn("a" * 32, "p1", (_call("1", "read_file", '{"path": "/srv/secret-plan.md"}'),
                              _call("2", "write_file", '{"path": "/srv/./secret-plan.md", "content": "x"}', 1),
                              _call("3", "getTicket", '{"ticket_id": 41}', 2))),
        Turn("a" * 32, "p2", (_call("4", "read_file", '{"path": "/srv/other.md"}'),
                              _call("5", "run_tests", '{"dir": "tests"}', 1),
                              _call("6", "getTicket", '{"ticket_id": "42"}', 2),
                              _call("7", "web_search", None, 3))),
    )


def test_tool_kinds_and_resource_namespaces_come_from_names() -> None:
    assert [kind_of(t) for t in ("read_file", "getUser", "web.search", "write_file", "update_ticket", "send_email",
                                 "readAndDelete", "run_tests")] == [READ, READ, READ, WRITE, WRITE, WRITE, WRITE,
                                                                     UNKNOWN]
    names = ("path", "file_path", "filePath", "dir", "ticket_id", "ticketId", "id", "query", "profile", "valid",
             "my-path")
    assert [namespace_of(f) for f in names] == [FILE, FILE, FILE, FILE, "ticket", "ticket", "record", None, None, None,
                                                None]


def test_calls_naming_one_file_share_a_pseudonym_that_hides_the_name() -> None:
    resources = infer(_turns())
    values = {k: dict((f, v) for f, _, v in found) for k, found in resources.values.items()}
    assert values[(0, 0)]["path"] == values[(0, 1)]["path"] != values[(1, 0)]["path"]  # ./ normalized first
    assert values[(0, 2)]["ticket_id"].startswith("ticket-") and values[(0, 2)] != values[(1, 2)]
    assert resources.tools["web_search"].fields == () and (1, 3) not in values
    text = json.dumps(list(values.values()))
    assert "secret" not in text and "srv" not in text and "41" not in text
    assert infer(_turns()) == resources  # stable within an import ...
    other = (Turn("b" * 32, "p1", _turns()[0].calls),)
    assert infer(other).values[(0, 0)] != values[(0, 0)]  # ... and keyed by it: another import, other pseudonyms
    kept = infer(_turns(), keep_arguments=True)
    assert dict((f, v) for f, _, v in kept.values[(0, 0)]) == {"path": "/srv/secret-plan.md"}


def test_a_resource_argument_is_one_every_call_of_the_tool_carries() -> None:
    turns = (Turn("c" * 32, "p", (_call("1", "edit_file", '{"path": "a.py"}'), _call("2", "edit_file", "{}", 1))),)
    assert infer(turns).tools["edit_file"].fields == ()


def test_the_scenario_marks_its_guesses_and_loads() -> None:
    turns = _turns()
    text = scenario_text(learn(turns), turns, name="guess", files=["x.jsonl"])
    assert "secret" not in text and "/srv" not in text
    scenario_from_data(tomllib.loads(text), "x")
    assert "# guess (inferred, not recorded): a reading name" in text
    assert "# guess (inferred, not recorded): a changing name" in text
    assert "a name that says neither read nor write (taken as a change)" in text  # run_tests
    assert 'resource_keys = ["file:/traced/file/{path}"] }  # guess' in text
    assert 'resource_keys = ["ticket:{ticket_id}"] }  # guess' in text


def test_the_what_if_on_the_sample_shows_hazards_under_parallel_only() -> None:
    pytest.importorskip("scipy")
    args = ["traces", "whatif", "--sample", "--schedulers", "serial,parallel,resource_keys", "--runs", "4",
            "--format", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    policies = {p["scheduler"]: p for p in json.loads(result.stdout)["policies"]}
    assert policies["serial"]["hazard_share"] == 0 == policies["resource_keys"]["hazard_share"]
    assert policies["parallel"]["hazard_share"] > 0.01
    assert {"stale-read", "lost-update"} <= set(policies["parallel"]["labels"])


@pytest.mark.parametrize("keep", [False, True])
def test_every_guessed_touch_finds_its_file_under_serial(keep: bool) -> None:
    """Absolute, `./` and relative recorded paths, ids as numbers and strings: each call's read finds the
    world file that stands for its resource (kept values are normalized as the world normalizes them)."""
    from harness.oracles import check
    from harness.policies import get_scheduler
    from harness.run import run

    turns = _turns()
    text = scenario_text(learn(turns), turns, name="guess", files=["x.jsonl"], keep_arguments=keep)
    result = run(scenario_from_data(tomllib.loads(text), "x"), get_scheduler("serial"), 3)
    assert [r.outcome.value for b in result.batches for r in b.results] == ["ok"] * 7
    assert not [x for verdict in check(result) for x in verdict.violations]
    assert ('"/traced/file/srv/secret-plan.md" = ""' in text) is keep


def test_no_guess_guesses_nothing_and_the_what_if_then_sees_no_hazard() -> None:
    """`--no-guess`: every tool only waits and claims the most conservative metadata, so no call touches
    a file and no scheduler shows a hazard, where the guesses show `parallel`'s."""
    turns = _turns()
    none = infer(turns, guess=False)
    assert none.values == {} and {a.kind for a in none.tools.values()} == {UNKNOWN}
    assert all(a.fields == () for a in none.tools.values()) and sorted(none.tools) == sorted(infer(turns).tools)
    text = scenario_text(learn(turns), turns, name="none", files=["x.jsonl"], guess=False)
    assert "# guess" not in text and "[world.files]" not in text and "nothing was guessed (--no-guess)" in text
    scenario_from_data(tomllib.loads(text), "x")
    assert text.count('arguments = "{}"') == 7 and "file-" not in text and "ticket-" not in text
    pytest.importorskip("scipy")
    args = ["traces", "whatif", "--sample", "--schedulers", "serial,parallel", "--runs", "4", "--format", "json"]
    guessed, unguessed = (CliRunner().invoke(main, args + extra) for extra in ([], ["--no-guess"]))
    assert guessed.exit_code == 0 == unguessed.exit_code, unguessed.stderr
    shares = [{p["scheduler"]: p["hazard_share"] for p in json.loads(r.stdout)["policies"]}
              for r in (guessed, unguessed)]
    assert shares[0]["parallel"] > 0.01 and shares[1] == {"serial": 0, "parallel": 0, "dag": 0}  # dag: production


def test_no_guess_in_import_and_only_with_traces_in_compare() -> None:
    result = CliRunner().invoke(main, ["traces", "import", "--sample", "--no-guess"])
    assert result.exit_code == 0, result.stderr
    assert "# guess" not in result.stdout and "nothing was guessed" in result.stdout
    misplaced = CliRunner().invoke(main, ["compare", "config-clobber", "--no-guess"])
    assert misplaced.exit_code == 2 and "--no-guess goes with --traces" in misplaced.stderr
