"""External ledgers: the record of effects outside the filesystem (tickets, messages, payments).

Owns append-with-idempotency: an entry sent with a key that is already present is not appended
again, the existing entry is returned. It never decides whether a caller *should* send a key:
that is the scheduler's retry policy, and a missing key is how duplicates happen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    entry_id: str
    call_id: str
    payload: Any
    idempotency_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "call_id": self.call_id,
            "payload": self.payload,
            "idempotency_key": self.idempotency_key,
        }


class Ledger:
    """An append-only list of entries, deduplicated by idempotency key when one is given."""

    __slots__ = ("_by_key", "_entries", "name")

    def __init__(self, name: str, entries: tuple[LedgerEntry, ...] = ()) -> None:
        self.name = name
        self._entries: list[LedgerEntry] = list(entries)
        self._by_key: dict[str, LedgerEntry] = {
            e.idempotency_key: e for e in entries if e.idempotency_key is not None
        }

    def append(self, call_id: str, payload: Any, idempotency_key: str | None = None) -> tuple[LedgerEntry, bool]:
        """Append an entry; returns (entry, deduplicated)."""
        if idempotency_key is not None and idempotency_key in self._by_key:
            return self._by_key[idempotency_key], True
        entry = LedgerEntry(f"{self.name}-{len(self._entries) + 1}", call_id, payload, idempotency_key)
        self._entries.append(entry)
        if idempotency_key is not None:
            self._by_key[idempotency_key] = entry
        return entry, False

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
