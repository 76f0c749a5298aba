"""Every reproducer in fixtures/regressions/ replays byte for byte, to its recorded label.

They are known bugs of built-in policies, kept with `harness.testing.regressions` as a user keeps theirs
(`expect="fails"`: the recorded label still fires; a user's fixed bugs use `assert_fixed`). They were
saved before reproducers recorded the identity of their code, so a difference is a divergence (exit 5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.oracles import check
from harness.reproducers.replay import ReproducerError, load, replay
from harness.testing import assert_expected, reproducers

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "regressions"
FIXTURES = sorted(FOLDER.glob("*.json"))


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) >= 5


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_replays_identically(path: Path) -> None:
    outcome = replay(load(path))
    assert outcome.identical, outcome.describe()
    labels = {v.label for v in check(outcome.result) if not v.ok}
    assert outcome.reproducer.label in labels


@pytest.mark.parametrize("reproducer", reproducers(FOLDER))
def test_fixture_still_fails_and_reproduces_as_a_regression_test(reproducer: Path) -> None:
    assert [o.judgement.verdict for o in assert_expected(reproducer, expect="reproduces") if o.judgement] == \
        ["reproduced"]
    assert_expected(reproducer, expect="fails")


def test_replay_command_and_divergence(tmp_path: Path) -> None:
    source = FIXTURES[0]
    result = CliRunner().invoke(main, ["replay", str(source), "--format", "json"])
    document = json.loads(result.stdout)
    assert result.exit_code in (1, 3) and document["replayed"] is True
    assert document["fingerprint"] == json.loads(source.read_text())["fingerprint"]
    tampered = json.loads(source.read_text())
    tampered["trace"][2]["t"] += 1
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(tampered))
    result = CliRunner().invoke(main, ["replay", str(bad)])
    assert result.exit_code == 5 and "diverged at trace event 2" in result.stdout


def test_malformed_reproducer_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "harness-reproducer/1", "scheduler": 3}')
    with pytest.raises(ReproducerError, match="scheduler: expected str"):
        load(bad)
    result = CliRunner().invoke(main, ["replay", str(bad)])
    assert result.exit_code == 2 and "bad.json: scheduler: expected str" in result.stderr
