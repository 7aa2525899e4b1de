"""``wakeful bench NAME``: benchmarks print exactly one JSON object on stdout with --json.

Progress goes to stderr. Each benchmark lives in the repository's ``benchmarks`` package and
measures the real code path. The benchmarks (and their datasets' code) are not part of the
installed package: they run from a source checkout, found next to the ``wakeful`` package
it holds.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

from wakeful.cli.common import JSON, emit_json, friendly, load_benchmarks

app = typer.Typer(help="Benchmarks; --json prints one JSON object on stdout.", no_args_is_help=True)


def _report(result: dict[str, Any], json_out: bool) -> None:
    if json_out:
        emit_json(result)
    else:
        for key, value in result.items():
            typer.echo(f"{key}: {value}")


def _run(module: str, **kwargs: Any) -> dict[str, Any]:
    load_benchmarks()
    mod = importlib.import_module(f"benchmarks.{module}")
    result: dict[str, Any] = mod.run(**kwargs)
    return result


@app.command("compile")
@friendly
def compile_(
    json_out: bool = JSON,
    sizes: str = typer.Option("1000,10000,100000", help="History sizes in blocks."),
) -> None:
    """Compile latency at 1k/10k/100k blocks vs LangChain trim_messages."""
    _report(_run("compile_bench", sizes=[int(x) for x in sizes.split(",")]), json_out)


@app.command("cli")
@friendly
def cli(
    json_out: bool = JSON,
    runs: int = typer.Option(10, help="Runs of each measurement; medians are reported."),
) -> None:
    """Command-line start-up: wall and CPU time of `wakeful --help`, import of the CLI."""
    _report(_run("cli_bench", runs=runs), json_out)


@app.command("consolidation")
@friendly
def consolidation(
    json_out: bool = JSON,
    turns: int = typer.Option(500, help="Turns of the synthetic session."),
    seed: int = typer.Option(11, help="Seed of the synthetic session."),
) -> None:
    """Consolidation: live constraints kept, superseded facts shown, compression, lossy gate."""
    _report(_run("consolidation_bench", turns=turns, seed=seed), json_out)


@app.command("cache")
@friendly
def cache(
    json_out: bool = JSON,
    split: str = typer.Option(
        "holdout", help="LoCoMo split the shapes are built from: dev|holdout."
    ),
    shape: list[str] = typer.Option(
        [], "--shape", help="Only this shape (repeatable); all shapes by default."
    ),
    dataset: str = typer.Option(
        "../shared/bench/locomo-dev.json", help="The LoCoMo file the shapes are built from."
    ),
    turns: int = typer.Option(200, help="Model calls in the synthetic shape."),
    seed: int = typer.Option(11, help="Seed of every shape."),
    variants: bool = typer.Option(True, help="Also run Wakeful's what-if variants (synthetic)."),
) -> None:
    """Prompt-cache economics over many session shapes: Wakeful vs the baselines."""
    _report(
        _run(
            "cache_bench",
            turns=turns,
            seed=seed,
            split=split,
            shapes=shape,
            dataset=dataset,
            variants=variants,
        ),
        json_out,
    )


@app.command("fleet")
@friendly
def fleet(
    json_out: bool = JSON,
    agents: int = typer.Option(32, help="Agents woken at once."),
    latency: float = typer.Option(1.0, help="Seconds added to every model call."),
    threads: str = typer.Option("8,32", help="Each worker's activity threads, one run each."),
    workers: str = typer.Option("1", help="Worker processes on the queue, one run each."),
    sandbox: bool = typer.Option(
        True, help="Workflows in Temporal's sandbox (--no-sandbox: WAKEFUL_WORKFLOW_SANDBOX=false)."
    ),
) -> None:
    """Many agents woken at once: wall time and wake latency by workers and their threads."""
    runs = tuple(int(x) for x in threads.split(",") if x.strip())
    fleets = tuple(int(x) for x in workers.split(",") if x.strip())
    _report(
        _run(
            "fleet_bench",
            agents=agents,
            latency_s=latency,
            threads=runs,
            workers=fleets,
            sandboxed=sandbox,
        ),
        json_out,
    )


@app.command("history")
@friendly
def history(
    json_out: bool = JSON,
    wakes: int = typer.Option(50, help="Wakes in the session."),
) -> None:
    """Workflow history bytes per wake and wake-cycle overhead (dev server + Postgres)."""
    _report(_run("history_bench", wakes=wakes), json_out)


@app.command("peers")
@friendly
def peers(
    json_out: bool = JSON,
    turns: int = typer.Option(50, help="Turns of the conversation."),
    dataset: str = typer.Option(
        "../shared/bench/locomo-dev.json", help="The LoCoMo file the messages are built from."
    ),
) -> None:
    """Temporal footprint of one conversation: Wakeful vs pydantic-ai and OpenAI Agents."""
    _report(_run("peers_bench", turns=turns, dataset=dataset), json_out)


@app.command("recall")
@friendly
def recall(
    json_out: bool = JSON,
    dataset: str = typer.Option(
        "../shared/bench/locomo-dev.json", help="A LoCoMo-format conversation file."
    ),
    budget: str = typer.Option("1000,2000,4000,8000", help="Window input budgets in tokens."),
    limit: int | None = typer.Option(None, help="Only the first N conversations."),
    conversations: str = typer.Option(
        "", help="Only these conversations: sample ids, comma-separated (e.g. conv-26,conv-41)."
    ),
    embedder: str = typer.Option(
        "hashing", help="The retrieval embedder, as WAKEFUL_EMBEDDER names it (e.g. wordllama)."
    ),
    folds: bool = typer.Option(
        False,
        "--folds",
        help="Also score leave-one-conversation-out: retrieval settings chosen on the other "
        "conversations score the one left out (mean and worst fold, per category).",
    ),
) -> None:
    """Evidence recall: gold turns that reach the compiled window, vs BM25 and recency."""
    budgets = [int(x) for x in budget.split(",") if x.strip()]
    _report(
        _run(
            "recall_bench",
            dataset=dataset,
            budgets=budgets,
            limit=limit,
            embedder=embedder,
            folds=folds,
            conversations=[c.strip() for c in conversations.split(",") if c.strip()],
        ),
        json_out,
    )


@app.command("substrate")
@friendly
def substrate(
    json_out: bool = JSON,
    events: int = typer.Option(100_000, help="Events (and chunks) of the large agent."),
) -> None:
    """Substrate speed: append events/s, snapshot load p50, retrieval p50 on Qdrant Edge."""
    _report(_run("substrate_bench", events=events), json_out)
