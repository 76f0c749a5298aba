"""Every label has a rank (the order of a list of failures, worst first) and an oracle that gives it."""

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


def test_every_label_belongs_to_the_oracle_that_gives_it() -> None:
    """What a coverage summary says could fire is every single-run label, each under an oracle that
    exists (order-dependent needs many runs: reorder invariance)."""
    from harness.oracles import ORACLES
    from harness.oracles.applicable import ORACLE_LABELS, labels_of

    assert set(ORACLE_LABELS) == set(ORACLES)
    assert set(labels_of(list(ORACLES))) == set(LABELS) - {"order-dependent"}
