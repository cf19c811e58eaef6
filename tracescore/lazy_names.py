"""Public names of a package that load on first use rather than when the package is imported.

Importing any submodule runs its package's ``__init__`` first, so a package that imported its
public names eagerly made every process that needed one small submodule (config validation, the
CLI) pay for all of them: the eval runner, litellm's client stack, every prebuilt scorer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_names(
    namespace: MutableMapping[str, Any], where: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` (PEP 562) for the package whose ``globals()`` is
    ``namespace``: it imports each name of ``where`` from the module it maps to, the first time
    the name is asked for, and keeps it in the namespace so later lookups don't come back here."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
