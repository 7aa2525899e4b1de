"""Shared CLI plumbing: settings, endpoints on demand, one-line errors, exit codes."""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import typer

from wakeful.cli.command import in_hints
from wakeful.errors import UserError, WakefulError

# The command line imports the substrate, the worker, Temporal and the SDKs inside the
# functions that use them: `wakeful --help` then loads none of them (tests/ops/test_cli_help.py).
if TYPE_CHECKING:
    from wakeful.substrate.store import Store
    from wakeful.worker.settings import Settings
    from wakeful.worker.stack import StackEndpoints

P = ParamSpec("P")
R = TypeVar("R")

# Options several commands take, said once.
JSON = typer.Option(False, "--json", help="Print JSON instead of text.")
INTENT = typer.Option(
    [], "--intent", help="An intent of the wake, for the policy's triggers (repeatable)."
)
PATH = typer.Option(
    [], "--path", help="A path the wake concerns, matched by trigger globs (repeatable)."
)
TASK_CLASS = typer.Option(None, "--task-class", help="The kind of task, for the policy's triggers.")

# Exit codes: 0 ok, 1 the command ran and reports a failure or a difference (a wake that
# did not end done, windows that differ), 2 misuse (bad config, unknown agent, no state
# here), 3 a runtime failure (a server is down or refused), 130 interrupted (Ctrl-C).
EXIT_FAILURE = 1
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
            typer.echo(f"error: {in_hints(one_line(str(exc)))}", err=True)
            raise typer.Exit(EXIT_USAGE if isinstance(exc, UserError) else EXIT_RUNTIME) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:
            # A server that goes away mid-command: one line and exit 3, not a traceback.
            message = _unreachable(exc)
            if message is None:
                raise
            typer.echo(f"error: {in_hints(message)}", err=True)
            raise typer.Exit(EXIT_RUNTIME) from None

    return wrapper


def run_then_exit(main: Callable[[], object]) -> NoReturn:
    """Run the command line ``main`` and end the process with its exit code, skipping the
    interpreter's finalisation.

    The Temporal SDK completes each client call from a thread of its Rust (tokio) runtime,
    which runs Python code (the event loop's ``call_soon_threadsafe``) to hand the result
    over. When the main thread gets the result, prints and returns while that thread is
    still finishing, finalisation stops the thread mid-call and the process aborts
    (``Fatal Python error: PyGILState_Release``, exit 134) with its output already printed:
    about 1 run in 10 of ``wakeful trigger`` (temporalio/sdk-python#300). The SDK has no
    call that shuts a client or its runtime down and joins those threads (and dropping the
    runtime from Python would wait for them while holding the GIL they need), so a finished
    command does what finalisation does first (join non-daemon threads, run ``atexit``
    handlers, flush output) and leaves with ``os._exit``, which stops the runtime's threads
    wherever they are.
    """
    code: int
    try:
        main()
        code = 0
    except SystemExit as done:
        code = _exit_code(done.code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except BaseException:  # what the interpreter would print before exiting 1
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what finalisation starts with
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            code = code or 1
    os._exit(code)


def _exit_code(code: object) -> int:
    """``SystemExit.code`` as the process's exit status, as the interpreter maps it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def one_line(message: str) -> str:
    """Errors are one line on stderr, even when a driver's message spans several."""
    return " ".join(message.split())


def _unreachable(exc: Exception) -> str | None:
    """What to say when ``exc`` means Postgres or Temporal cannot be reached; else None."""
    # A driver's error can only come from a driver already imported: a command that never
    # loaded one does not load it here just to rule it out.
    if "sqlalchemy" in sys.modules:
        from sqlalchemy.exc import InterfaceError, OperationalError

        if isinstance(exc, OperationalError | InterfaceError):
            first = str(exc.orig or exc).strip().splitlines()[0] if str(exc.orig or exc) else ""
            return (
                f"the database is unreachable ({first[:160]}); start it (`wakeful stack up`) or "
                "fix WAKEFUL_DATABASE_URL"
            )
    if "temporalio" in sys.modules:
        from temporalio.service import RPCError

        if isinstance(exc, RPCError):
            return f"Temporal refused the call ({exc.status.name}: {exc.message[:160]})"
    if isinstance(exc, RuntimeError) and str(exc).startswith("Failed client connect"):
        return (
            "Temporal is unreachable; start it (`wakeful stack up`) or fix WAKEFUL_TEMPORAL_ADDRESS"
        )
    return None


def settings() -> Settings:
    """The settings, with one warning on stderr per ``WAKEFUL_*`` variable that sets nothing
    (a typo, or a setting since retired, would otherwise silently leave the default in
    place)."""
    from wakeful.worker.settings import load_settings, retired_env_vars, unknown_env_vars

    for name, instead in retired_env_vars(os.environ):
        typer.echo(f"warning: {name} is not read: {instead}", err=True)
    for name, suggestion in unknown_env_vars(os.environ):
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        typer.echo(f"warning: {name} is not a Wakeful setting and is ignored{hint}", err=True)
    return load_settings()


def endpoints(s: Settings, *, create: bool = False) -> StackEndpoints:
    """The configured servers; embedded ones are started (or reused) on demand.

    Only commands that set a project up pass ``create``: the others refuse, with the fix,
    where no state directory exists, instead of starting a second, empty stack.
    """
    from wakeful.worker.stack import EmbeddedStack

    return EmbeddedStack(s).up(create=create)


def open_store(s: Settings, *, create: bool = False) -> Store:
    """The substrate; an embedded Postgres is started (or reused) on demand, and only it:
    a command that reads or writes the database does not wait for a Temporal server."""
    from wakeful.substrate.store import Store
    from wakeful.worker.stack import EmbeddedStack

    return Store.connect(EmbeddedStack(s).database_url(create=create))


def report_failure(message: str) -> NoReturn:
    """The command ran and what it reports is a failure: one line on stderr, exit 1."""
    typer.echo(f"error: {one_line(message)}", err=True)
    raise typer.Exit(EXIT_FAILURE)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def progress(message: str) -> None:
    typer.echo(message, err=True)


def load_benchmarks() -> None:
    """Make the repository's ``benchmarks`` importable: a source checkout (installed in place
    with ``pip install -e``) holds it beside ``wakeful``. Only that one: another installed
    package may share the name."""
    root = Path(__file__).resolve().parents[2]
    if (root / "benchmarks" / "__init__.py").is_file():
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        return
    raise UserError(
        "the benchmarks and the LoCoMo format's code ship with the source repository, not"
        ' the installed package: clone it, run `pip install -e ".[dev]"` there and run this'
        " command from that checkout"
    )
