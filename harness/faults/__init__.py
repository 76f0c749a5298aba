"""Fault models: latency distributions (and, as they land, errors, timeouts and interrupts)."""

from harness.faults.latency import Fixed, LatencyModel, LatencySpecError, LogNormal, Uniform, parse_latency

__all__ = ["Fixed", "LatencyModel", "LatencySpecError", "LogNormal", "Uniform", "parse_latency"]
