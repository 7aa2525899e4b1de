"""A codec server: the Temporal UI and CLI read Wakeful's compressed payloads as JSON.

Wakeful's payloads are deflated (:mod:`wakeful.worker.codec`), so the Temporal UI and
``temporal workflow show`` print them as opaque ``wz2`` bytes. Both can send payloads to a
*codec server* to be decoded (Temporal's remote codec protocol): ``POST /decode`` and
``POST /encode`` take and return ``{"payloads": [...]}``, each payload in protobuf's JSON
form (base64 ``data`` and metadata values). Point the CLI at it with ``--codec-endpoint``
(``TEMPORAL_CODEC_ENDPOINT``), the UI with its "Codec Server" setting or
``TEMPORAL_CODEC_ENDPOINT`` of the UI server.

The UI calls it from the browser, so cross-origin requests are allowed from the origins
given (the embedded stack's UI by default). With a token, every request must carry it as
its ``Authorization`` header (the CLI's ``--codec-auth``), as is or as ``Bearer <token>``;
a server bound to anything but loopback refuses to start without one, since whoever
reaches it reads every payload.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from wakeful.errors import ConfigError
from wakeful.worker.codec import DeflateCodec

__all__ = ["DEFAULT_ORIGINS", "check_exposure", "codec_app"]

# Where the Temporal UI of the embedded stack (the CLI's dev server) is served.
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
MAX_BODY_BYTES = 16 * 1024 * 1024  # a batch of payloads; Temporal's own limit is 2-4 MB each
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def check_exposure(host: str, token: str | None, *, anonymous: bool = False) -> None:
    """Refuse to serve every payload's contents beyond this machine without a token, unless
    told that the address is private anyway (``anonymous``: e.g. a container whose port is
    published on the host's loopback only, for a browser that cannot send a token)."""
    if host not in _LOOPBACK and not token and not anonymous:
        raise ConfigError(
            f"the codec server would decode every payload for anyone reaching {host}: "
            "set --token (or WAKEFUL_CODEC_TOKEN), or bind 127.0.0.1 (--allow-anonymous only "
            "where the address is private)"
        )


def _authorized(header: str | None, token: str) -> bool:
    if header is None:
        return False
    given = header.removeprefix("Bearer ").strip()
    return hmac.compare_digest(given.encode(), token.encode())


def _payloads(body: Any) -> list[Payload]:
    if not isinstance(body, dict) or not isinstance(body.get("payloads"), list):
        raise HTTPException(400, 'the body must be {"payloads": [...]} (protobuf JSON payloads)')
    try:
        return list(ParseDict(body, Payloads()).payloads)
    except ParseError as err:
        raise HTTPException(400, f"a payload is not protobuf JSON: {err}") from None


def codec_app(
    codec: PayloadCodec | None = None,
    *,
    token: str | None = None,
    origins: Sequence[str] = DEFAULT_ORIGINS,
) -> FastAPI:
    """The codec server's app: ``/decode`` and ``/encode`` through ``codec`` (Wakeful's)."""
    used = codec or DeflateCodec()
    app = FastAPI(title="Wakeful codec server", docs_url=None, redoc_url=None, openapi_url=None)
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(origins),
            allow_credentials=True,
            allow_methods=["POST", "OPTIONS"],
            allow_headers=["Content-Type", "X-Namespace", "Authorization"],
        )

    async def convert(request: Request, decode: bool) -> JSONResponse:
        if token and not _authorized(request.headers.get("authorization"), token):
            raise HTTPException(401, "missing or wrong Authorization header (the codec token)")
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise HTTPException(413, f"the body is over {MAX_BODY_BYTES} bytes")
        try:
            body = await request.json()
        except ValueError:
            raise HTTPException(400, "the body is not JSON") from None
        payloads = _payloads(body)
        try:
            out = await (used.decode(payloads) if decode else used.encode(payloads))
        except Exception as err:  # a corrupt payload: say which, never a traceback
            raise HTTPException(400, f"cannot {'de' if decode else 'en'}code: {err}") from None
        return JSONResponse({"payloads": [MessageToDict(p) for p in out]})

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"ok": True})

    @app.post("/decode")
    async def decode(request: Request) -> JSONResponse:
        return await convert(request, decode=True)

    @app.post("/encode")
    async def encode(request: Request) -> JSONResponse:
        return await convert(request, decode=False)

    return app
