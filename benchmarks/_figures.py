"""Where benchmark figures go: printed as JSON and kept in benchmarks/results/NAME.json (gitignored)."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

#: The libraries whose speed is part of the figures: a Hypothesis release alone moved the examples/s
#: row by a fifth, so a figure says which versions it was measured with.
LIBRARIES = ("simpy", "hypothesis", "pyfakefs", "orjson")


def library_versions() -> dict[str, str]:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def emit(name: str, figures: dict[str, Any]) -> None:
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    text = json.dumps({**figures, "libraries": library_versions()}, indent=2)
    (out / f"{name}.json").write_text(text + "\n")
    print(text)
