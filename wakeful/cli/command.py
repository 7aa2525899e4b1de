"""How to type the ``wakeful`` command here: what the hints the CLI and the demo print say.

A fresh clone runs ``.venv/bin/wakeful demo`` without activating the virtualenv; a hint
saying ``wakeful explain ...`` is then "command not found". Hints name the command as it
works from the current directory: ``wakeful`` when that is this installation's command on
PATH, else the path of this installation's script.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["in_hints", "wakeful_command"]


def wakeful_command() -> str:
    """``wakeful``, or the path to this installation's script when PATH finds another or
    none (relative to the current directory when it lies below it)."""
    script = Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin") / "wakeful"
    if not script.is_file():
        return "wakeful"  # not installed with a script (run from a source tree): as is
    found = shutil.which("wakeful")
    if found is not None and Path(found).resolve() == script.resolve():
        return "wakeful"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def in_hints(text: str) -> str:
    """``text`` with each quoted ```wakeful ...``` command as it works here."""
    command = wakeful_command()
    return text if command == "wakeful" else text.replace("`wakeful ", f"`{command} ")
