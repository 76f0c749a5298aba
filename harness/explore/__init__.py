"""Exploration: how runs are varied to find bugs — random latencies, order-first PCT, bounded
exhaustive search, Hypothesis — and how a failure is shrunk and kept."""

from harness.explore.arbiter import Arbiter, Chooser, Decision, Tape

__all__ = ["Arbiter", "Chooser", "Decision", "Tape"]
