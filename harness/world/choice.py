"""Which kind of world a run gets: the lean in-memory world where it can, pyfakefs where it must.

Owns the switch (`lean_allowed`): on by default, off for the process with `HARNESS_WORLD=pyfakefs`
in the environment, or within a `pyfakefs_worlds()` block on this thread (the differential test runs
the same work both ways). The two worlds behave identically (same trace, values, final state and
fingerprint: `tests/unit/test_lean_world_differential.py`), so the switch never changes a result,
only what it costs. It never decides whether a particular state *can* be lean
(`harness.world.lean_image.image_of` does) and never builds a world.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

#: `HARNESS_WORLD=pyfakefs`: every world of this process is a pyfakefs world (read once, at import).
ENV = "HARNESS_WORLD"
_FORCED = os.environ.get(ENV, "").strip().lower() == "pyfakefs"
_local = threading.local()


def lean_allowed() -> bool:
    """Whether a world built now may be lean."""
    return not _FORCED and not getattr(_local, "pyfakefs", False)


@contextlib.contextmanager
def pyfakefs_worlds() -> Iterator[None]:
    """Within this block, on this thread, every world built is a pyfakefs world (nested blocks nest)."""
    outer = getattr(_local, "pyfakefs", False)
    _local.pyfakefs = True
    try:
        yield
    finally:
        _local.pyfakefs = outer
