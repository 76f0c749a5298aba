"""Where benchmark figures go: printed as JSON and kept in benchmarks/results/NAME.json (gitignored)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(name: str, figures: dict[str, Any]) -> None:
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    text = json.dumps(figures, indent=2)
    (out / f"{name}.json").write_text(text + "\n")
    print(text)
