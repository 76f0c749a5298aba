"""Named random streams split from one root seed.

Owns every random draw of a run. A stream is keyed by purpose, call id and attempt
(`latency/call-3/1`), so a call draws the same latency and the same failure whichever scheduler runs
it and in whatever order the calls start. It never uses the global `random` state, the wall clock
or the process hash seed.
"""

from __future__ import annotations

import hashlib
from random import Random
from typing import Any


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
            rng = self._cache[cache_key] = _Unseeded(self._seed, purpose, key, attempt)
        return rng


class _Unseeded(Random):
    """A stream not seeded yet: most streams a run asks for are never drawn from (a fixed latency
    takes no draw), and deriving and seeding one costs ~7 us. The first use of the generator's state
    seeds it exactly as `Random(derive_seed(...))` would and turns it into a plain `Random`, so every
    draw, state and pickle is that of the eagerly seeded stream."""

    def __init__(self, seed: int, purpose: str, key: str, attempt: int) -> None:  # no super(): no seeding yet
        self._material = (seed, purpose, key, attempt)
        self.gauss_next = None  # what Random.seed sets; gauss() reads it before drawing

    # Every way into the generator's state goes through one of these. A method bound before the
    # first draw (gauss keeps `self.random`) may be called again after it: _seed_once is idempotent.
    def random(self) -> float:
        return Random.random(_seed_once(self))

    def getrandbits(self, k: int, /) -> int:
        return Random.getrandbits(_seed_once(self), k)

    def getstate(self) -> tuple[Any, ...]:
        return Random.getstate(_seed_once(self))

    def setstate(self, state: tuple[Any, ...]) -> None:
        Random.setstate(_seed_once(self), state)

    def seed(self, a: Any = None, version: int = 2) -> None:
        Random.seed(_seed_once(self), a, version)

    def __reduce__(self) -> str | tuple[Any, ...]:  # copies and pickles are of a plain, seeded Random
        return Random.__reduce__(_seed_once(self))


def _seed_once(rng: Random) -> Random:
    material = rng.__dict__.pop("_material", None)
    if material is not None:
        rng.__class__ = Random  # same layout: from now on a plain Random, at plain Random's speed
        Random.seed(rng, derive_seed(*material))
    return rng


def derive_seed(seed: int, purpose: str, key: str = "", attempt: int = 0) -> int:
    """A 64-bit seed for a named stream; stable across processes and Python hash seeds."""
    material = f"{seed}\x1f{purpose}\x1f{key}\x1f{attempt}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")
