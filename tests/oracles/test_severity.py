"""The ranking of labels that orders a list of failures, worst first."""

from __future__ import annotations

from harness.oracles import LABELS
from harness.oracles.severity import GROUPS, group, rank


def test_every_label_has_exactly_one_rank() -> None:
    ranked = [label for _, labels in GROUPS for label in labels]
    assert sorted(ranked) == sorted(LABELS), "a new label needs a place in harness.oracles.severity.GROUPS"
    assert len(ranked) == len(set(ranked))


def test_damage_to_the_world_comes_before_a_broken_contract() -> None:
    assert rank("lost-update") < rank("stale-read") < rank("out-of-order") < rank("hang") < rank("cap-exceeded") \
        < rank("scheduler-error")
    assert group("ghost-effect") == "the world is damaged"


def test_an_unknown_label_comes_last() -> None:
    assert rank("no-such-label") == len(GROUPS) and group("no-such-label") == "other"
