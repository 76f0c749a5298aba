"""MCP tool annotations as declared data: `readOnlyHint`, `destructiveHint`, `idempotentHint`,
`openWorldHint`, as a server's `tools/list` gives them.

Owns `McpHints` (each hint true, false or absent; absent stays absent, so a catalogue says what the
server said), the spec's worst-case reading of an absent hint (not read-only, destructive, not
idempotent, open world: `effective`); a scenario file's `annotations` also set the `Declared`
metadata a runtime that trusts them derives (`harness.scenario.tools_load`). Hints are a claim,
never behaviour: a tool's `does` is what it really touches, and `harness.oracles.hints` judges a call
whose effects contradict its hints.
It never reads a server or a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The annotation names of the MCP spec, in its order, and the attribute each is kept in.
HINTS = {"readOnlyHint": "read_only", "destructiveHint": "destructive", "idempotentHint": "idempotent",
         "openWorldHint": "open_world"}
#: What the spec says a client assumes of an absent hint: the worst case.
WORST_CASE = {"read_only": False, "destructive": True, "idempotent": False, "open_world": True}


@dataclass(frozen=True, slots=True)
class McpHints:
    """A tool's annotations: each hint True, False or None (the server did not say)."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def effective(self, name: str) -> bool:
        """The hint `name` (`read_only`, ...) as a spec-following client reads it: absent is the worst case."""
        value: bool | None = getattr(self, name)
        return WORST_CASE[name] if value is None else value

    @property
    def is_read_only(self) -> bool:
        return self.effective("read_only")

    @property
    def is_idempotent(self) -> bool:
        """Idempotent as a retrying runtime reads it: declared so, or read-only (a read changes nothing)."""
        return self.is_read_only or self.effective("idempotent")

    @property
    def is_open_world(self) -> bool:
        return self.effective("open_world")

    def to_data(self) -> dict[str, bool]:
        """The annotations table, in MCP's spelling, with only the hints that were given."""
        return {hint: getattr(self, attr) for hint, attr in HINTS.items() if getattr(self, attr) is not None}

    def said(self) -> str:
        """The given hints in MCP's spelling, for a story: `readOnlyHint=true, openWorldHint=false`; or `no hints`."""
        given = [f"{hint}={'true' if value else 'false'}" for hint, value in self.to_data().items()]
        return ", ".join(given) if given else "no hints"

    @classmethod
    def parse(cls, value: Any) -> McpHints:
        """An `annotations` object (a scenario table or a `tools/list` entry's): the four hints, each a
        boolean; other annotations (`title`, a vendor's) are ignored as a runtime ignores them. Raises
        `ValueError` saying which hint is not a boolean."""
        if not isinstance(value, Mapping):
            raise ValueError(f"a table of MCP hints ({', '.join(HINTS)}), got {value!r:.60}")
        given: dict[str, bool] = {}
        for hint, attr in HINTS.items():
            if hint in value and value[hint] is not None:
                if not isinstance(value[hint], bool):
                    raise ValueError(f"{hint}: true or false, got {value[hint]!r:.40}")
                given[attr] = value[hint]
        return cls(**given)
