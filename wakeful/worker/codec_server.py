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

Whatever reaches it is bounded: only JSON bodies are taken (``application/json``, so a
page elsewhere cannot post one without the browser asking first, which the origins above
answer), of at most :data:`MAX_BODY_BYTES`, counted as they are read, and one request
inflates at most :data:`MAX_DECODED_BYTES`; a body it cannot take is a 4xx with one line
saying why, never a 500.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from wakeful.errors import ConfigError
from wakeful.worker.codec import DeflateCodec, InflatedTooLarge

__all__ = ["DEFAULT_ORIGINS", "MAX_BODY_BYTES", "MAX_DECODED_BYTES", "check_exposure", "codec_app"]

# Where the Temporal UI of the embedded stack (the CLI's dev server) is served.
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
MAX_BODY_BYTES = 16 * 1024 * 1024  # a batch of payloads; Temporal's own limit is 2-4 MB each
# What one request's payloads may inflate to, together: deflate reaches ~1000:1, so a body
# within MAX_BODY_BYTES could otherwise take gigabytes.
MAX_DECODED_BYTES = 16 * 1024 * 1024
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
    except (ParseError, RecursionError) as err:
        raise HTTPException(400, f"a payload is not protobuf JSON: {err}") from None


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def _json_body(request: Request, limit: int) -> Any:
    """The request's JSON body: refused (415) unless it says it is JSON, (413) as soon as
    it is known to exceed ``limit`` bytes (announced, or counted as it arrives), (400) when
    it does not parse, nesting too deep included."""
    if not _is_json(request.headers.get("content-type")):
        raise HTTPException(415, "the body must be JSON, sent with Content-Type: application/json")
    declared = request.headers.get("content-length", "")
    if declared.strip().isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the body is over {limit} bytes; send fewer payloads at a time")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(
                413, f"the body is over {limit} bytes; send fewer payloads at a time"
            )
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except RecursionError:
        raise HTTPException(400, "the body is JSON nested too deep") from None
    except ValueError:
        raise HTTPException(400, "the body is not JSON") from None


def codec_app(
    codec: PayloadCodec | None = None,
    *,
    token: str | None = None,
    origins: Sequence[str] = DEFAULT_ORIGINS,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_decoded_bytes: int = MAX_DECODED_BYTES,
) -> FastAPI:
    """The codec server's app: ``/decode`` and ``/encode`` through ``codec`` (Wakeful's,
    inflating at most ``max_decoded_bytes`` a request); bodies of ``max_body_bytes`` at most."""
    used = codec or DeflateCodec(max_decoded_bytes=max_decoded_bytes)
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
        payloads = _payloads(await _json_body(request, max_body_bytes))
        try:
            out = await (used.decode(payloads) if decode else used.encode(payloads))
        except InflatedTooLarge as err:
            raise HTTPException(413, str(err)) from None
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
