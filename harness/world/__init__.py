"""The simulated world: a lean in-memory tree or a pyfakefs filesystem, external ledgers, shared session state."""

from harness.world import lean as _lean  # noqa: F401  (registers the lean world with `World`: harness.world.lean)
from harness.world.errors import WorldError
from harness.world.ledger import Ledger, LedgerEntry
from harness.world.state import WorldState, content_digest, diff
from harness.world.world import World

__all__ = ["Ledger", "LedgerEntry", "World", "WorldError", "WorldState", "content_digest", "diff"]
