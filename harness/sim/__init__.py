"""The simulation kernel: virtual clock, seeded random streams and the trace recorder."""

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
