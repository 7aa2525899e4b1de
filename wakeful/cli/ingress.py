"""``wakeful ingress serve`` (the webhook front door) and ``wakeful health`` (probes)."""

from __future__ import annotations

import asyncio
import signal
import socket
from typing import TYPE_CHECKING

import typer

from wakeful.cli.common import (
    EXIT_RUNTIME,
    JSON,
    emit_json,
    endpoints,
    friendly,
    progress,
    settings,
)
from wakeful.errors import ConfigError, StackError
from wakeful.extras import require

if TYPE_CHECKING:  # uvicorn is imported by the commands that serve (`--help` stays light)
    import uvicorn

app = typer.Typer(help="The webhook ingress: signed HTTP deliveries wake agents.")


def _bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so a busy port is a one-line error instead of a server log."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise StackError(
            f"cannot listen on {host}:{port} ({err.strerror}): choose another --port or stop "
            "what holds it"
        ) from None
    # Listening now, before the server starts, queues a client that connects as soon as the
    # address is printed instead of refusing it.
    sock.listen(2048)
    return sock


@app.command()
@friendly
def serve(
    host: str | None = typer.Option(None, help="Address to bind (default WAKEFUL_INGRESS_HOST)."),
    port: int | None = typer.Option(
        None, help="Port to bind (default WAKEFUL_INGRESS_PORT); 0 takes any free one (printed)."
    ),
    log_level: str = typer.Option("info", help="uvicorn log level."),
) -> None:
    """Serve POST /hooks/{agent} and /hooks/{tenant}/{agent}, POST /approvals/{agent} and
    /approvals/{tenant}/{agent}, /healthz and /readyz.

    Uses the configured Postgres and Temporal, or the embedded stack when no URL is set.
    """
    require("wakeful ingress serve", "fastapi", "uvicorn")
    from temporalio.client import Client

    from wakeful.substrate.store import Store
    from wakeful.worker.client import connect
    from wakeful.worker.ingress import create_app
    from wakeful.worker.ingress_approvers import Approvers
    from wakeful.worker.ingress_auth import TenantSecrets
    from wakeful.worker.ingress_server import server_config

    s = settings()
    host = host or s.ingress_host
    port = s.ingress_port if port is None else port
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a TCP port (1-65535, or 0 for any free one)")
    tenants = TenantSecrets.from_settings(s).tenants
    if not tenants:
        progress(
            "warning: no webhook secret is configured (WAKEFUL_WEBHOOK_SECRET, "
            "WAKEFUL_WEBHOOK_TENANT_SECRETS): every delivery will be refused with 401"
        )
    # Approvals need tokens of their own (`wakeful approvals token NAME`); without any, every
    # POST /approvals/... is refused with 401, which the listening line says.
    approving = Approvers.from_settings(s).tenants
    ep = endpoints(s, create=True)
    store = Store.connect(ep.database_url)

    async def client_factory() -> Client:
        return await connect(ep.temporal_address, ep.temporal_namespace)

    sock = _bind(host, port)
    port = sock.getsockname()[1]
    app_ = create_app(s, client_factory, store)
    shown = f"[{host}]" if ":" in host else host
    progress(
        f"ingress listening on http://{shown}:{port} (tenants: {', '.join(tenants) or 'none'};"
        f" approvals for: {', '.join(approving) or 'none (WAKEFUL_APPROVAL_TOKENS)'};"
        f" task queue {s.task_queue!r})"
    )
    config = server_config(  # read deadlines, connection limits
        app_,
        log_level=log_level,
        header_timeout_s=s.ingress_header_timeout_s,
        max_connections_per_client=s.ingress_max_connections_per_client,
    )
    try:
        run_server(config, sock, "ingress")
    finally:
        store.close()


def run_server(config: uvicorn.Config, sock: socket.socket, name: str) -> None:
    """Serve on ``sock`` until stopped. uvicorn shuts down gracefully on SIGINT/SIGTERM and
    then re-raises the signal; a stop that was asked for is a clean exit (0), as `docker
    stop` expects. The socket is closed either way."""
    import uvicorn

    previous = signal.signal(signal.SIGTERM, _stop_requested)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except (KeyboardInterrupt, _StopRequested):
        progress(f"{name} stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


class _StopRequested(Exception):
    pass


def _stop_requested(signum: int, frame: object) -> None:
    raise _StopRequested


def health(
    url: str | None = typer.Option(
        None, "--url", help="Check this URL answers 200 (e.g. the ingress's /readyz) instead."
    ),
    worker: bool = typer.Option(
        False, "--worker", help="Also require a worker polling WAKEFUL_TASK_QUEUE."
    ),
    json_out: bool = JSON,
) -> None:
    """Probe Postgres and Temporal (exit 0 healthy, 3 not); starts nothing."""
    friendly(_health)(url, worker, json_out)


def _health(url: str | None, worker: bool, json_out: bool) -> None:
    from wakeful.worker.ingress_probe import probe

    result = asyncio.run(probe(settings(), url=url, worker=worker))
    if json_out:
        emit_json({"ok": result.ok, "checks": result.checks})
    else:
        for name, state in result.checks.items():
            typer.echo(f"{name:<9} {state}")
    if not result.ok:
        raise typer.Exit(EXIT_RUNTIME)
