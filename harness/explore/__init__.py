"""Exploration: how runs are varied to find bugs — random latencies, order-first PCT, bounded
exhaustive search, Hypothesis — and how a failure is shrunk and kept. Order-first execution itself
(the arbiter, choosers, tapes) belongs to the kernel: `harness.sim.arbiter`."""

from harness.sim.arbiter import TIME, Arbiter, Chooser, Decision, Tape

__all__ = ["TIME", "Arbiter", "Chooser", "Decision", "Tape"]
