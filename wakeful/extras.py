"""Optional dependencies: which extra brings which module, and the one line that says so.

The core install runs agents, the worker and the CLI against configured servers. HTTP
servers (the ingress, the web console, the codec server, the provider simulator) need the
``server`` extra; the embedded stack needs the ``embedded`` extra. A command that needs a
missing extra stops with :class:`MissingExtraError`: one line naming the extra and the
command that installs it (``friendly`` CLI commands print it and exit 2).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from wakeful.errors import ConfigError

__all__ = ["EXTRAS", "MissingExtraError", "install_line", "require"]

# Module -> the extra of pyproject.toml that installs it.
EXTRAS: dict[str, str] = {
    "fastapi": "server",
    "uvicorn": "server",
    "psutil": "embedded",
    "pypdf": "pdf",
}


class MissingExtraError(ConfigError, ImportError):
    """An optional dependency is not installed. An :class:`ImportError` too, so a library
    import of a module that needs it fails the way Python's imports do."""


def install_line(what: str, extras: list[str]) -> str:
    """``<what> needs the X extra: pip install 'wakeful[X]'`` for one or more extras."""
    names = list(dict.fromkeys(extras))
    label = f"the {names[0]} extra" if len(names) == 1 else f"the {' and '.join(names)} extras"
    return f"{what} needs {label}: pip install 'wakeful[{','.join(names)}]'"


def require(what: str, *modules: str) -> list[ModuleType]:
    """Import ``modules`` (keys of :data:`EXTRAS`); raise one :class:`MissingExtraError` that
    names every extra still to install when any is missing. ``what`` names the command or
    feature for the message (``wakeful ingress serve``)."""
    found: list[ModuleType] = []
    missing: list[str] = []
    for name in modules:
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            # Only the module itself missing is a missing extra; a broken install of it
            # (one of its own imports missing) is that package's error, shown as it is.
            if exc.name is None or exc.name.partition(".")[0] != name:
                raise
            missing.append(EXTRAS[name])
    if missing:
        raise MissingExtraError(install_line(what, missing))
    return found
