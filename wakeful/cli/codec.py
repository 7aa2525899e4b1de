"""``wakeful codec-server``: Wakeful's payloads as JSON in the Temporal UI and CLI."""

from __future__ import annotations

import typer

from wakeful.cli.common import friendly, progress
from wakeful.errors import ConfigError
from wakeful.extras import require


@friendly
def codec_server(
    host: str = typer.Option("127.0.0.1", help="Address to bind."),
    port: int = typer.Option(8888, help="Port to bind."),
    token: str | None = typer.Option(
        None,
        envvar="WAKEFUL_CODEC_TOKEN",
        help="Require this Authorization header (the CLI's --codec-auth); needed off loopback.",
    ),
    cors_origin: list[str] = typer.Option(
        [],
        "--cors-origin",
        help="An origin whose Temporal UI may call it (repeatable); default the embedded "
        "stack's UI, http://localhost:8233.",
    ),
    allow_anonymous: bool = typer.Option(
        False,
        "--allow-anonymous",
        help="Serve without a token off loopback: only where the address is private (a "
        "container port published on the host's loopback, for the Temporal UI's browser).",
    ),
    log_level: str = typer.Option("warning", help="uvicorn log level."),
) -> None:
    """Decode Wakeful's compressed payloads for the Temporal UI and `temporal` CLI.

    Use: `temporal workflow show -w ID --detailed --codec-endpoint URL`; or the UI's.
    """
    require("wakeful codec-server", "fastapi", "uvicorn")
    import uvicorn

    from wakeful.cli.ingress import _bind, run_server
    from wakeful.worker.codec_server import DEFAULT_ORIGINS, check_exposure, codec_app

    if not 1 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a TCP port (1-65535)")
    check_exposure(host, token, anonymous=allow_anonymous)
    origins = tuple(cors_origin) or DEFAULT_ORIGINS
    sock = _bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    progress(
        f"codec server on http://{shown}:{port} (POST /decode, /encode; UI origins: "
        f"{', '.join(origins)}; token {'required' if token else 'not required'})"
    )
    config = uvicorn.Config(codec_app(token=token, origins=origins), log_level=log_level)
    run_server(config, sock, "codec server")
