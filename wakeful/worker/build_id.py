"""The worker's build id: a short hash of Wakeful's own code.

Temporal stamps the build id of the worker that ran each workflow and activity task into
history (four to a dozen stamps per wake). Its default is a 32-character hash of every
loaded module's bytecode, computed by walking ``sys.modules`` at worker start. Without
worker versioning the id is informational — which code ran a task, for debugging a
non-determinism error — so a 12-character hash of the ``wakeful`` package's sources and
the SDK version serves the same purpose in a third of the bytes, and is the same in every
process that runs the same code.
"""

from __future__ import annotations

import functools
import hashlib
from importlib.metadata import version
from pathlib import Path

import wakeful

__all__ = ["build_id"]


@functools.cache
def build_id() -> str:
    root = Path(wakeful.__file__).parent
    digest = hashlib.blake2b(digest_size=6)
    digest.update(version("temporalio").encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
