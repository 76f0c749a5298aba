"""Fault models: latency distributions (and, as they land, errors, timeouts and interrupts)."""

from harness.faults.failures import FailureModel, FailureSpecError, parse_failure
from harness.faults.latency import (
    Fixed,
    LatencyModel,
    LatencySpecError,
    LogNormal,
    PerAttempt,
    Uniform,
    parse_latency,
)

__all__ = [
    "FailureModel",
    "FailureSpecError",
    "Fixed",
    "LatencyModel",
    "LatencySpecError",
    "LogNormal",
    "PerAttempt",
    "Uniform",
    "parse_failure",
    "parse_latency",
]
