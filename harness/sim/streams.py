"""Named random streams split from one root seed.

Owns every random draw of a run. A stream is keyed by purpose, call id and attempt
(`latency/call-3/1`), so a call draws the same latency and the same failure whichever scheduler runs
it and in whatever order the calls start. It never uses the global `random` state, the wall clock
or the process hash seed.
"""

from __future__ import annotations

import hashlib
from random import Random


class RandomStreams:
    """A factory of independent, reproducible `Random` streams for one run."""

    __slots__ = ("_cache", "_seed")

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self._seed = seed
        self._cache: dict[tuple[str, str, int], Random] = {}

    @property
    def seed(self) -> int:
        return self._seed

    def stream(self, purpose: str, key: str = "", attempt: int = 0) -> Random:
        """The stream for (purpose, key, attempt); asking twice returns the same object.

        Sharing the object means two draws for the same key continue one sequence rather than
        repeating the first number.
        """
        cache_key = (purpose, key, attempt)
        rng = self._cache.get(cache_key)
        if rng is None:
            rng = Random(derive_seed(self._seed, purpose, key, attempt))
            self._cache[cache_key] = rng
        return rng


def derive_seed(seed: int, purpose: str, key: str = "", attempt: int = 0) -> int:
    """A 64-bit seed for a named stream; stable across processes and Python hash seeds."""
    material = f"{seed}\x1f{purpose}\x1f{key}\x1f{attempt}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")
