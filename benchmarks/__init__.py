"""Wakeful's benchmarks: ``wakeful bench NAME`` runs them from a source checkout.

They live in the repository, not in the installed package, with the datasets' code they
need (:mod:`benchmarks.locomo`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["module_env"]


def module_env() -> dict[str, str]:
    """The environment for ``python -m benchmarks.X`` in a child process: this checkout on
    its ``PYTHONPATH``, wherever the bench was started from. (Computed here, not at import:
    the peers' workflow modules import this package inside Temporal's sandbox, which
    refuses file-system calls at import.)"""
    checkout = str(Path(__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return os.environ | {"PYTHONPATH": os.pathsep.join(p for p in (checkout, path) if p)}
