"""Mock tools: declared metadata kept apart from real behaviour, and the built-in catalogue."""

from harness.tools.catalogue import BUILTIN, Catalogue, prepare
from harness.tools.params import Parameters
from harness.tools.semantics import Observation, apply
from harness.tools.spec import (
    Declared,
    ResourceKeys,
    SideEffect,
    ToolError,
    ToolIO,
    ToolSpec,
)

__all__ = [
    "BUILTIN",
    "Catalogue",
    "Declared",
    "Observation",
    "Parameters",
    "ResourceKeys",
    "SideEffect",
    "ToolError",
    "ToolIO",
    "ToolSpec",
    "apply",
    "prepare",
]
