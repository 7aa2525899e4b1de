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
# 2 misuse (bad config, unknown agent), 3 a runtime failure (a server is down),
# 130 interrupted (Ctrl-C).
EXIT_USAGE = 2
EXIT_RUNTIME = 3
EXIT_INTERRUPTED = 130


def friendly(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn Wakeful's errors into one line on stderr and a meaningful exit code."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except WakefulError as exc:
            typer.echo(f"error: {_one_line(str(exc))}", err=True)
            raise typer.Exit(EXIT_USAGE if isinstance(exc, UserError) else EXIT_RUNTIME) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:
            # A server that goes away mid-command: one line and exit 3, not a traceback.
            message = _unreachable(exc)
            if message is None:
                raise
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(EXIT_RUNTIME) from None

    return wrapper


def _one_line(message: str) -> str:
    """Errors are one line on stderr, even when a driver's message spans several."""
    return " ".join(message.split())


def _unreachable(exc: Exception) -> str | None:
    """What to say when ``exc`` means Postgres or Temporal cannot be reached; else None."""
    from sqlalchemy.exc import InterfaceError, OperationalError
    from temporalio.service import RPCError

    if isinstance(exc, OperationalError | InterfaceError):
        first = str(exc.orig or exc).strip().splitlines()[0] if str(exc.orig or exc) else ""
        return (
            f"the database is unreachable ({first[:160]}); start it (`wakeful stack up`) or "
            "fix WAKEFUL_DATABASE_URL"
        )
    if isinstance(exc, RPCError):
        return f"Temporal refused the call ({exc.status.name}: {exc.message[:160]})"
    if isinstance(exc, RuntimeError) and str(exc).startswith("Failed client connect"):
        return (
            "Temporal is unreachable; start it (`wakeful stack up`) or fix WAKEFUL_TEMPORAL_ADDRESS"
        )
    return None


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
