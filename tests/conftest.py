"""Shared test configuration: Hypothesis profiles and small scenario builders."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["pytester"]

# CI: derandomized (the same examples every run), no deadline (virtual time, shared runners),
# bounded example counts so the whole suite stays fast. `dev` explores more, `deep` much more.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.register_profile("deep", deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
