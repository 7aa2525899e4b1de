"""``wakeful docs``: an agent's documents, which retrieval searches beside its history.

wakeful docs add ops README.md docs/ "notes/**/*.txt"   files, folders, globs
wakeful docs list ops [--json]                         live documents: path, version, chunks
wakeful docs remove ops docs/runbook.md                its chunks are never retrieved again

Files are markdown, text, code or (with the ``pdf`` extra) PDF, stored as chunks by their
structure (headings, paragraphs, fenced code blocks; a code file's top-level definitions or
line windows; a PDF's pages) with their path, heading and version
(``wakeful.substrate.doc_chunks``). Adding a file again does nothing when it is unchanged;
a changed one supersedes its old chunks. Every file is read and checked before anything is
stored: one bad path stores nothing. The worker indexes new chunks before its next
retrieval; this command never opens the vector index.

Exit codes: 0 done (or listed), 2 misuse (no such agent, file or document; a binary, empty
or non-UTF-8 file, an unreadable PDF), 3 the database is unreachable.
"""

from __future__ import annotations

import typer

from wakeful.cli.common import JSON, emit_json, friendly, open_store, settings

app = typer.Typer(
    help="An agent's documents (markdown, text, code), searched by retrieval.",
    no_args_is_help=True,
)

AGENT = typer.Argument(..., help="Agent name.")


@app.command("add")
@friendly
def add(
    agent: str = AGENT,
    paths: list[str] = typer.Argument(..., help="Files, folders or globs (quote a glob)."),
    json_out: bool = JSON,
) -> None:
    """Add files as the agent's documents; a changed file replaces its earlier version."""
    from wakeful.substrate.doc_chunks import read_documents

    files = read_documents(paths)  # every file checked before the store is touched
    s = settings()
    ts = open_store(s).tenant(s.tenant)
    changes = ts.add_documents(agent, files)
    if json_out:
        emit_json(
            [
                {
                    "path": c.path,
                    "version": c.version,
                    "outcome": c.outcome,
                    "chunks": c.chunks,
                    "superseded": c.superseded,
                }
                for c in changes
            ]
        )
        return
    for c in changes:
        extra = f", {c.superseded} old chunk(s) superseded" if c.superseded else ""
        typer.echo(f"{c.outcome} {c.path}  version {c.version[:12]}  {c.chunks} chunk(s){extra}")


@app.command("list")
@friendly
def list_(agent: str = AGENT, json_out: bool = JSON) -> None:
    """The agent's live documents: path, version, chunks, when added."""
    s = settings()
    ts = open_store(s).tenant(s.tenant)
    ts.get_agent(agent)  # an unknown agent is one line and exit 2
    docs = ts.documents(agent)
    if json_out:
        emit_json(
            [
                {"path": d.path, "version": d.version, "chunks": d.chunks, "added_at": d.added_at}
                for d in docs
            ]
        )
        return
    if not docs:
        typer.echo(f"agent {agent!r} has no documents")
        return
    for d in docs:
        typer.echo(
            f"{d.path}  version {d.version[:12]}  {d.chunks} chunk(s)  added {d.added_at:%Y-%m-%d}"
        )


@app.command("remove")
@friendly
def remove(
    agent: str = AGENT,
    path: str = typer.Argument(..., help="A document's path, as `docs list` shows it."),
) -> None:
    """Remove a document: its chunks are never retrieved again."""
    from pathlib import Path

    from wakeful.substrate.doc_chunks import document_path

    s = settings()
    ts = open_store(s).tenant(s.tenant)
    # The name as listed, else the path as this directory spells it.
    listed = {d.path for d in ts.documents(agent)}
    name = path if path in listed or not path.strip() else document_path(Path(path))
    gone = ts.remove_document(agent, name)
    typer.echo(f"removed {name} from {agent} ({gone} chunk(s))")
