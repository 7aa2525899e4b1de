"""Three real local tools for the demo agent, confined to one working directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wakeful.agents import Tool, ToolContext
from wakeful.errors import UserError

_MAX_READ = 16_000


def _inside(ctx: ToolContext, relative: str) -> Path:
    root = Path(ctx.workdir).resolve()
    path = (root / relative).resolve()
    if path != root and root not in path.parents:
        raise UserError(f"{relative!r} is outside the agent's working directory")
    return path


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = _inside(ctx, str(args["path"]))
    text = path.read_text(encoding="utf-8", errors="replace")
    return text if len(text) <= _MAX_READ else text[:_MAX_READ] + "\n[truncated]"


def list_dir(args: dict[str, Any], ctx: ToolContext) -> str:
    path = _inside(ctx, str(args.get("path", ".")))
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    return "\n".join(entries) if entries else "(empty)"


def write_note(args: dict[str, Any], ctx: ToolContext) -> str:
    notes = _inside(ctx, "notes")
    notes.mkdir(parents=True, exist_ok=True)
    name = "".join(c for c in str(args["title"]) if c.isalnum() or c in "-_") or "note"
    target = notes / f"{name}.md"
    target.write_text(str(args["text"]), encoding="utf-8")
    return f"wrote notes/{target.name} ({len(str(args['text']))} chars)"


DEMO_TOOLS = (
    Tool(
        name="list_dir",
        description="List the entries of a directory inside the working directory.",
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
