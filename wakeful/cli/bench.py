"""``wakeful bench NAME``: benchmarks print exactly one JSON object on stdout with --json.

Progress goes to stderr. Each benchmark lives in ``wakeful.bench`` and measures the real
code path.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

from wakeful.cli.common import emit_json, friendly

app = typer.Typer(help="Benchmarks; --json prints one JSON object on stdout.", no_args_is_help=True)


def _report(result: dict[str, Any], json_out: bool) -> None:
    if json_out:
        emit_json(result)
    else:
        for key, value in result.items():
            typer.echo(f"{key}: {value}")


def _run(module: str, **kwargs: Any) -> dict[str, Any]:
    mod = importlib.import_module(f"wakeful.bench.{module}")
    result: dict[str, Any] = mod.run(**kwargs)
    return result


@app.command("compile")
@friendly
def compile_(
    json_out: bool = typer.Option(False, "--json"),
    sizes: str = typer.Option("1000,10000,100000", help="History sizes in blocks."),
) -> None:
    """Compile latency at 1k/10k/100k blocks vs LangChain trim_messages."""
    _report(_run("compile_bench", sizes=[int(x) for x in sizes.split(",")]), json_out)
