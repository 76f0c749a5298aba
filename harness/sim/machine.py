"""The simulated machine: the host facts code under test may read, declared instead of measured.

Owns `Machine` (how many CPUs the runtime's process sees) and `DEFAULT_CPUS`. A runtime that sizes
itself from the host (`ThreadPoolExecutor()` takes `os.cpu_count() + 4` workers) would otherwise run
a different schedule, and get a different fingerprint, on a laptop and on CI: the scenario declares
the machine (`[machine] cpus = N`), a run option may override it, and the bridges answer
`os.cpu_count()` and its relatives from it (see `harness.bridges.threads.patches`). It
never reads the real host and never patches anything.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The CPUs a scenario's machine has when it does not say: a common developer laptop and CI runner
#: size, big enough that a pool sized by `os.cpu_count()` runs calls in parallel (12 workers).
DEFAULT_CPUS = 8


@dataclass(frozen=True, slots=True)
class Machine:
    """The machine the runtime under test runs on, as bridged code sees it."""

    cpus: int = DEFAULT_CPUS

    def __post_init__(self) -> None:
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 1:
            raise ValueError(f"a machine has a positive whole number of cpus, got {self.cpus!r}")
