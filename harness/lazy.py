"""Lazy package attributes: a package names the module each public attribute comes from, and that
module is imported the first time the attribute is read, not when the package is (PEP 562, done
by giving the package module a subclass of `ModuleType`).

Owns that mechanism. It is why `import harness` costs a few milliseconds and loads neither SimPy,
pyfakefs nor asyncio until something needs them; what each name refers to is what the package's
eager imports made it. It never imports anything before a name is asked for.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping
from typing import Any, ClassVar


class _LazyPackage(types.ModuleType):
    _origins: ClassVar[Mapping[str, str]] = {}

    def __getattr__(self, name: str) -> Any:
        origin = self._origins.get(name)
        if origin is not None:
            value = getattr(importlib.import_module(origin), name)
            self.__dict__[name] = value  # from now on a plain attribute
            return value
        if not name.startswith("_"):  # a submodule, as if the package had imported it
            try:
                return importlib.import_module(f"{self.__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{self.__name__}.{name}":
                    raise
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self._origins})

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it on its package: `harness.run` the module would replace
        # `harness.run` the function. Eagerly, the package bound the function after the module and
        # the function won; a public name keeps winning here.
        if (name in self._origins and isinstance(value, types.ModuleType)
                and value.__name__ == f"{self.__name__}.{name}"):
            return
        super().__setattr__(name, value)


def install(package: str, origins: Mapping[str, str]) -> None:
    """Make the public names of `package` (name -> module it comes from) load on first use."""
    module = sys.modules[package]
    module.__class__ = type(f"LazyPackage[{package}]", (_LazyPackage,), {"_origins": dict(origins)})
