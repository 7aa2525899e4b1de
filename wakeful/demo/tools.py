"""Three real local tools for the demo agent, confined to one working directory.

They reach the directory only through :mod:`wakeful.files`: no symbolic link is followed,
only regular files and directories are opened (never blocking on a FIFO or device), and a
read costs only the bytes its result can hold."""

from __future__ import annotations

from typing import Any

from wakeful import files
from wakeful.agents import Tool, ToolContext

_MAX_READ = 16_000
_MAX_ENTRIES = 1_000


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    # Bounded and non-blocking: a FIFO, a device or a link is refused, a huge file costs
    # only the bytes the result can hold (wakeful.files).
    got = files.read_text(ctx.workdir, str(args["path"]), _MAX_READ)
    return got.text + "\n[truncated]" if got.truncated else got.text


def list_dir(args: dict[str, Any], ctx: ToolContext) -> str:
    names, total = files.list_entries(ctx.workdir, str(args.get("path", ".")), _MAX_ENTRIES)
    if not names:
        return "(empty)"
    more = f"\n[{total - len(names)} more]" if total > len(names) else ""
    return "\n".join(names) + more


def write_note(args: dict[str, Any], ctx: ToolContext) -> str:
    name = "".join(c for c in str(args["title"]) if c.isalnum() or c in "-_") or "note"
    text = str(args["text"])
    files.write_text(ctx.workdir, f"notes/{name}.md", text)
    return f"wrote notes/{name}.md ({len(text)} chars)"


DEMO_TOOLS = (
    Tool(
        name="list_dir",
        description=(
            "List the entries of a directory inside the working directory (dirs end in /)."
        ),
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Relative path."}},
        },
        fn=list_dir,
        # Quick reads: local activities, without a task-queue round trip each.
        timeout_s=10.0,
        local=True,
    ),
    Tool(
        name="read_file",
        description="Read a UTF-8 text file inside the working directory.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Relative path."}},
            "required": ["path"],
        },
        fn=read_file,
        timeout_s=10.0,
        local=True,
    ),
    Tool(
        name="write_note",
        description="Write a markdown note under notes/ in the working directory.",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
            "required": ["title", "text"],
        },
        fn=write_note,
        max_attempts=1,
    ),
)
