"""The simulation kernel: virtual clock (`kernel`), seeded random streams (`streams`), the trace
recorder (`trace`), order-first execution (`arbiter`), the declared machine (`machine`), garbage
collection held off during large runs (`collector`), and the harness's only contacts with real time
and signals (`realtime`: the wall-clock watchdog and Ctrl-C).

The bottom of the layers: it imports nothing of the harness above `harness.model`.
"""

from typing import TYPE_CHECKING

from harness.lazy import install

# Loaded when first read: `harness --help` reads `realtime` only and never pays for SimPy.
install(__name__, {
    **dict.fromkeys(("Kernel", "Limits", "StopReason"), "harness.sim.kernel"),
    **dict.fromkeys(("RandomStreams", "derive_seed"), "harness.sim.streams"),
    **dict.fromkeys(("TraceRecorder", "canonical_json", "fingerprint"), "harness.sim.trace"),
})

if TYPE_CHECKING:
    from harness.sim.kernel import Kernel, Limits, StopReason
    from harness.sim.streams import RandomStreams, derive_seed
    from harness.sim.trace import TraceRecorder, canonical_json, fingerprint

__all__ = [
    "Kernel",
    "Limits",
    "RandomStreams",
    "StopReason",
    "TraceRecorder",
    "canonical_json",
    "derive_seed",
    "fingerprint",
]
