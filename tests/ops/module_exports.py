"""A module's ``__all__`` as the API tests read it: every name it lists must exist."""

from __future__ import annotations

import importlib
from types import ModuleType


def listed_exports(module_name: str) -> tuple[ModuleType, list[str]]:
    """Import ``module_name``; return it and its ``__all__`` (in order), after checking that
    each listed name is defined in it."""
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    for name in names:
        assert hasattr(module, name), f"{module_name}.__all__ lists missing {name}"
    return module, names
