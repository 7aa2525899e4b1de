"""``read_code``: raw code by file, symbol or line range, with the file's version.

Give it to an agent with ``Agent(tools=[READ_CODE, ...])``; it reads beneath the agent's
``workdir`` through :mod:`wakeful.files` (no link followed, nothing that blocks, bounded).
The model names what it wants as ``path`` (``pkg/mod.py``), ``path::Class.method`` (a
symbol, found with :mod:`wakeful.code_outline`: Python always, other languages with the
``code`` extra) or ``path`` with ``lines`` (``"10-40"``). The result opens with a line
naming what was read and the file's version, the same hash the code map
(``substrate.code_map``) shows, its size and modification time:

    pkg/mod.py::Greeter.greet lines 5-9 of 30 [version 1a2b3c4d5e6f, 812 bytes,
    modified 2026-05-01T10:00:00Z]

(one line in the answer)
so a read older than the map in a later window is recognisable as stale; given the
``version`` it read before, the tool also says whether the file changed since.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from wakeful import files
from wakeful.code_outline import file_version, find_symbol, outline
from wakeful.files import FileToolError
from wakeful.tool_spec import Tool, ToolContext

__all__ = ["CODE_TOOLS", "READ_CODE", "read_code", "read_section"]

MAX_FILE_BYTES = 2_000_000
MAX_SECTION_CHARS = 16_000
SEP = "::"


def read_section(
    root: str,
    path: str,
    *,
    symbol: str | None = None,
    lines: str | None = None,
    version: str | None = None,
    max_chars: int = MAX_SECTION_CHARS,
) -> str:
    """The text :func:`read_code` answers (see the module's docstring). ``path`` may hold
    ``::symbol``; bad input is a :class:`~wakeful.files.FileToolError` naming it."""
    if SEP in path:
        path, named = path.split(SEP, 1)
        if symbol and symbol != named:
            raise FileToolError(f"{path!r}: give the symbol once (path::{named} or symbol)")
        symbol = named
    if symbol and lines:
        raise FileToolError(f"{path!r}: give a symbol or a line range, not both")
    whole = files.read_whole(root, path, MAX_FILE_BYTES)
    text = whole.data.decode("utf-8", "replace")
    all_lines = text.splitlines()
    total = len(all_lines)
    start, end, name = 1, total, path
    if symbol:
        symbols = outline(os.path.splitext(path)[1].lower(), text)
        if symbols is None:
            raise FileToolError(
                f"{path!r}: no parser reads this language here (pip install 'wakeful[code]'"
                " for JavaScript, TypeScript and Go); read it by line range"
            )
        found = find_symbol(symbols, symbol)
        if found is None:
            known = ", ".join(s.qualname for s in symbols[:30]) or "none"
            raise FileToolError(f"{path!r} has no symbol {symbol!r}; it has: {known}")
        start, end, name = found.start, found.end, f"{path}{SEP}{found.qualname}"
    elif lines:
        start, end = _line_range(path, lines, total)
    shown = "\n".join(f"{n}| {all_lines[n - 1]}" for n in range(start, end + 1))
    current = file_version(whole.data)
    when = datetime.fromtimestamp(whole.mtime_ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    head = (
        f"{name} lines {start}-{end} of {total} "
        f"[version {current}, {whole.size} bytes, modified {when}]"
    )
    if version:
        head += (
            f"\nunchanged since version {version}"
            if version == current
            else f"\nCHANGED since version {version}: earlier reads of this file are stale"
        )
    if len(shown) > max_chars:
        cut = shown[:max_chars].rsplit("\n", 1)[0]
        last = cut.rsplit("\n", 1)[-1].split("|", 1)[0]
        shown = f"{cut}\n[truncated after line {last}: read lines {int(last) + 1}-{end} next]"
    return f"{head}\n{shown}" if shown else head


def _line_range(path: str, lines: str, total: int) -> tuple[int, int]:
    a, sep, b = lines.partition("-")
    try:
        start = int(a)
        end = int(b) if sep else start
    except ValueError:
        raise FileToolError(
            f"{path!r}: lines {lines!r} is not a range; give e.g. '10-40'"
        ) from None
    if start < 1 or end < start:
        raise FileToolError(
            f"{path!r}: lines {lines!r} is not a range from 1 up; give e.g. '10-40'"
        )
    if start > total:
        raise FileToolError(f"{path!r} has {total} lines; lines {lines!r} starts past its end")
    return start, min(end, total)


def read_code(args: dict[str, Any], ctx: ToolContext) -> str:
    return read_section(
        ctx.workdir,
        str(args["path"]),
        symbol=args.get("symbol") or None,
        lines=str(args["lines"]) if args.get("lines") else None,
        version=args.get("version") or None,
    )


READ_CODE = Tool(
    name="read_code",
    description=(
        "Read source code inside the working directory: a whole file (path), one class or"
        " function (path::Class.method, as the code map names it) or a line range (lines"
        " '10-40'). The answer names the file's version; pass the version you read before"
        " to learn whether the file changed since."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Relative path, optionally ::Symbol."},
            "symbol": {"type": "string", "description": "A qualified name: Class.method."},
            "lines": {"type": "string", "description": "A line range, e.g. '10-40'."},
            "version": {"type": "string", "description": "The version read before."},
        },
        "required": ["path"],
    },
    fn=read_code,
    timeout_s=10.0,
    local=True,
)
CODE_TOOLS = (READ_CODE,)
