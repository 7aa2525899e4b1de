"""``wakeful ui``: the read-only web console over the ledger (``wakeful.ui``)."""

from __future__ import annotations

import os

import typer

from wakeful.cli.common import endpoints, friendly, progress, settings
from wakeful.errors import ConfigError
from wakeful.extras import require
from wakeful.worker import ports

TOKEN_ENV = "WAKEFUL_UI_TOKEN"


@friendly
def ui(
    host: str = typer.Option(
        "127.0.0.1", help="Address to bind; any other than the loopback needs a token."
    ),
    port: int = typer.Option(
        ports.UI_PORT, help="Port to bind; 0 takes any free one (the address is printed)."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        help=f"Required on every request (Bearer header, or ?token= once); default ${TOKEN_ENV}.",
        show_default=False,
    ),
    temporal_ui: str | None = typer.Option(
        None,
        "--temporal-ui",
        envvar="WAKEFUL_TEMPORAL_UI_URL",
        help="The Temporal Web UI's address, for links to each wake's workflow (default: "
        "the embedded stack's UI when it runs one).",
    ),
    allowed_host: list[str] = typer.Option(
        [],
        "--allowed-host",
        help="A name the console is reached by beside localhost, 127.0.0.1, [::1] and --host "
        "(repeatable; * allows any): requests addressed to any other host are refused, so a "
        "page elsewhere cannot read it by rebinding its own name to this address.",
    ),
    log_level: str = typer.Option("warning", help="uvicorn log level."),
) -> None:
    """Serve a read-only web console of the agents, wakes, windows, ledgers and cost."""
    require("wakeful ui", "fastapi", "uvicorn")
    import uvicorn

    from wakeful.cli.ingress import _bind, run_server
    from wakeful.ui.app import create_app, needs_token, served_hosts

    token = token or os.environ.get(TOKEN_ENV) or None
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a TCP port (1-65535, or 0 for any free one)")
    if needs_token(host) and not token:
        raise ConfigError(
            f"--host {host} exposes the console beyond this machine: give it a token with"
            f" --token or {TOKEN_ENV} (or keep the default --host 127.0.0.1)"
        )
    s = settings()
    from wakeful.substrate.store import Store

    # The whole stack, not the database alone: the console links to the Temporal UI.
    store = Store.connect(endpoints(s).database_url)
    if temporal_ui is None and s.temporal_address is None:
        from wakeful.worker.stack import EmbeddedStack

        temporal_ui = EmbeddedStack(s).status().temporal.ui_url
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    progress(
        f"wakeful ui on http://{shown}:{port}/ (tenant {s.tenant!r}"
        f"{'; token required' if token else ''}); Ctrl-C stops it"
    )
    config = uvicorn.Config(
        create_app(
            store.tenant(s.tenant),
            token=token,
            temporal_ui=temporal_ui,
            namespace=s.temporal_namespace,
            hosts=served_hosts(host, allowed_host),
        ),
        log_level=log_level,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
    )
    try:
        run_server(config, sock, "wakeful ui")
    finally:
        store.close()
