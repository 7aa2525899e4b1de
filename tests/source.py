"""Parsing the project's own source in tests.

CPython 3.11's ``ast.parse`` can fail with ``SystemError: AST constructor recursion depth
mismatch`` when a garbage collection during the parse runs a finalizer that raises or logs
(python/cpython#106905; a test before may leave such an object, e.g. a future whose error
nobody read). The parse runs with the collector paused, so whatever ran before cannot fail
it.
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse_file(path: Path) -> ast.Module:
    source = path.read_text(encoding="utf-8")
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename=str(path))
    finally:
        if enabled:
            gc.enable()
