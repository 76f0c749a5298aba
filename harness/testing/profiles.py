"""How hard `check_scheduler` looks and where: its profiles and its default scenarios.

Owns the names a check and its callers share (`PROFILES`, `DEFAULT_SCENARIOS`, `GENERATED`), in a
module that imports nothing of the harness, so that `harness.testing` and the search behind it
(`harness.testing.checking`) both read them without importing each other. It never runs anything.
"""

from __future__ import annotations

from typing import NamedTuple


class Profile(NamedTuple):
    """How hard to look: auto-exploration runs per scenario, and generated batches. (A named tuple, not
    a dataclass: `dataclasses` and the `inspect` it imports would double what importing the check costs.)"""

    runs: int
    generated: int


#: `quick` stays within ~5 s on one core for a fast policy, `ci` within ~30 s; `deep` is for nightly.
PROFILES = {"quick": Profile(12, 30), "ci": Profile(60, 120), "deep": Profile(400, 1000)}
#: Older names of the profiles.
ALIASES = {"dev": "quick"}

#: The scenarios whose races a correct policy must survive, if none are given; each names the
#: situation it provokes.
DEFAULT_SCENARIOS = (
    "config-clobber",           # two read-modify-writes of one file
    "config-two-spellings",     # one file spelled two ways (`./`)
    "symlink-alias",            # one file through a symlink
    "symlink-dotdot",           # `..` after a symlink: the kernel resolves the link first
    "v4a-multi-file",           # one V4A patch of two files, a read of the second beside it
    "hardlink-alias",           # one file through a hard link
    "case-alias",               # one file in two cases on a case-insensitive disk
    "edit-then-test",           # a write, then a read of the whole tree
    "fix-then-test-dag",        # a declared depends_on chain
    "shared-shell-cwd",         # shell state shared by calls
    "cd-then-cat",              # `cd` then a relative path, in one turn
    "cd-then-edit",             # `cd`, then relative and absolute spellings of one file next turn
    "home-assistant",           # an external device: write, then read its state
    "risky-writes",             # external effects in model order
    "restart-rollback-restart", # identical calls with different ids
    "duplicate-ticket",         # a timeout, a retry and an idempotency key
    "ticket-retry",             # a non-idempotent effect slower than the timeout
    "scrape-fanout",            # a global and a per-tool cap
    "interrupt-midbatch",       # a user interrupt with calls running
    "interrupt-search-fanout",  # a user interrupt with calls queued
    "stuck-extract",            # a call that never answers
    "cascade-cancel",           # a failing sibling next to a call that ignores cancellation
    "clarify-mixed",            # an interactive call among others
    "malformed-args",           # arguments that are not JSON
    "rare-torn-read",           # a race only a rare order shows
    "ops-approvals",            # calls that need the user's approval: approved, denied, unanswered
    "interleaved-caps",         # two capped tools whose calls interleave
    "two-agents-one-runtime",   # one scheduler instance serving two agents on one world at once
)

#: What `only=` and `skip=` call the Hypothesis-generated part.
GENERATED = "generated"


def default_scenarios(*, generated: bool = True) -> list[str]:
    """The names `check_scheduler` explores by default, for one pytest item per scenario (each then
    runs alone on an xdist worker, and `-k` picks one)::

        @pytest.mark.parametrize("scenario", default_scenarios())
        def test_my_policy(scenario):
            check_scheduler("mypackage.policies:MyPolicy", only=[scenario])

    `"generated"` (the Hypothesis-generated batches) is the last, unless `generated=False`."""
    return [*DEFAULT_SCENARIOS, *([GENERATED] if generated else [])]
