"""Planner bridges: a runtime's gate or planner function becomes a scheduler (`adapters`), and sees the
simulated world's `os` read-only while it plans (`world_view`)."""
