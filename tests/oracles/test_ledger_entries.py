"""A ledger whose entries differ from model order is described by what differs: the order only when
the order differs, else the entry that holds something else (never a reorder of one entry)."""

from __future__ import annotations

from harness.oracles.anomalies import ledger_violations
from harness.world.ledger import LedgerEntry
from harness.world.state import WorldState


def world(*entries: LedgerEntry) -> WorldState:
    return WorldState(ledgers=(("audit", entries),))


def test_same_order_other_payload_is_a_divergent_entry_not_a_reorder() -> None:
    expected = world(LedgerEntry("e1", "put", "users"), LedgerEntry("e2", "log-it", "bob"))
    final = world(LedgerEntry("e1", "put", "users"), LedgerEntry("e2", "log-it", None))
    (found,) = ledger_violations(None, expected, final, set())  # type: ignore[arg-type]
    assert found.label == "divergent-world"
    assert found.witness["call"] == "log-it" and found.witness["field"] == "payload"
    assert found.witness["entry"] is None and found.witness["expected_entry"] == "bob"
    assert "another order" not in found.message


def test_another_order_is_a_reorder() -> None:
    expected = world(LedgerEntry("e1", "a", 1), LedgerEntry("e2", "b", 2))
    final = world(LedgerEntry("e1", "b", 2), LedgerEntry("e2", "a", 1))
    (found,) = ledger_violations(None, expected, final, set())  # type: ignore[arg-type]
    assert found.label == "reordered-effect"
    assert found.witness["expected_order"] == ["a", "b"] and found.witness["final_order"] == ["b", "a"]
