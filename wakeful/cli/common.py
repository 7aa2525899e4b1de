"""Shared CLI plumbing: settings, endpoints on demand, one-line errors, exit codes."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer

from wakeful.errors import UserError, WakefulError
from wakeful.substrate.store import Store
from wakeful.worker.settings import Settings, load_settings
from wakeful.worker.stack import EmbeddedStack, StackEndpoints

P = ParamSpec("P")
R = TypeVar("R")

# Exit codes: 0 ok, 1 the command ran and found a difference/failure it reports,
# 2 misuse (bad config, unknown agent), 3 a runtime failure (a server is down).
EXIT_USAGE = 2
EXIT_RUNTIME = 3


def friendly(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn Wakeful's errors into one line on stderr and a meaningful exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except WakefulError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(EXIT_USAGE if isinstance(exc, UserError) else EXIT_RUNTIME) from None

    return wrapper


def settings() -> Settings:
    return load_settings()


def endpoints(s: Settings) -> StackEndpoints:
    """The configured servers; embedded ones are started (or reused) on demand."""
    return EmbeddedStack(s).up()


def open_store(s: Settings) -> Store:
    return Store.connect(endpoints(s).database_url)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def progress(message: str) -> None:
    typer.echo(message, err=True)
