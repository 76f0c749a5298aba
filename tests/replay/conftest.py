"""One `harness explore` of the user's package for the tests of this folder (it takes a few seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.userpkg import explore_acme


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`acme` (under `src/`) and the reproducer `harness explore` saved of its lost update (under
    `saved/`), and the replay line it printed."""
    root = tmp_path_factory.mktemp("recorded")
    return root, explore_acme(root)
