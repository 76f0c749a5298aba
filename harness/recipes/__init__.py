"""Recipes: the glue between real agent runtimes and the harness's bridges, shipped with the package.

One module per runtime (`harness.recipes.openai_agents`, `.langgraph`, `.pydantic_ai`, `.smolagents`,
`.autogen`), each the runtime's own tool-execution code, unchanged, wrapped in a few dozen lines and
exposing `scheduler` (docs/recipes/ shows each module and what the oracles find with it):

    harness run incident-triage --scheduler harness.recipes.openai_agents:scheduler

A recipe module imports its runtime at import time, so it is importable only with that runtime
installed (`pip install 'harness[runtimes]'`); without it the import fails with an `ImportError` that
names the package to install. Importing `harness` (or this package) never imports a recipe: only
naming the module does. The recipes own no harness behaviour: they only use the public bridges
(`from_asyncio`, `from_threads`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_object", "runtime_missing"]


def json_object(arguments: str) -> dict[str, Any]:
    """The model's arguments as a JSON object; `{}` for text that is not one (the runtime's to judge)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def runtime_missing(module: str, error: ImportError, *requirements: str) -> ImportError:
    """The error a recipe raises when its runtime cannot be imported: what to install, and why."""
    quoted = " ".join(f"'{requirement}'" for requirement in requirements)
    return ImportError(f"{module} needs {' and '.join(requirements)}, which could not be imported ({error}): "
                       f"pip install 'harness[runtimes]' (or pip install {quoted})")
