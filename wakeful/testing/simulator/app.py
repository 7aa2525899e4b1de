"""The ASGI shell around :class:`Simulator`: provider routes plus a small control API.

Provider routes (what the official SDKs call through ``base_url``; a request with
``"stream": true`` gets its reply as the API's server-sent events, see :mod:`.sse`):

* ``POST /v1/messages`` and ``POST /v1/messages/count_tokens`` (Anthropic)
* ``POST /v1/chat/completions`` and ``POST /v1/responses`` (OpenAI; also without ``/v1``)
* ``POST /v1/embeddings`` (OpenAI: a vector made from each input's text alone)

Control routes (for a simulator running in another process):

* ``POST /_sim/reset`` ``{"scope": KEY?}`` - forget caches/cursors/calls
* ``POST /_sim/advance`` ``{"seconds": N}`` - skip time (TTL tests without sleeping)
* ``POST /_sim/script`` ``{"script": SCRIPT, "scope": KEY?}`` - install a script
* ``GET /_sim/calls?scope=KEY`` - the answered calls with their usage
* ``GET /healthz``
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from wakeful.testing.simulator import sse
from wakeful.testing.simulator.core import TRICKLE_HEADER, SimResponse, Simulator
from wakeful.testing.simulator.script import Script

__all__ = ["UVICORN_OPTIONS", "create_app"]

# How uvicorn serves the app, in a thread (SimulatorServer) or a process of its own: HTTP/1.1
# only, no websockets, no lifespan events (the app has none), warnings only. An idle
# kept-alive connection stays open 75 s, as a provider's load balancer keeps one a minute
# or more: uvicorn's default, 5 s, is the SDKs' own pool expiry, so the server would close
# connections just as the client picks them for its next request. Stopping the server
# still closes idle connections at once.
UVICORN_OPTIONS: dict[str, Any] = {
    "log_level": "warning",
    "lifespan": "off",
    "ws": "none",
    "http": "h11",
    "timeout_keep_alive": 75,
}


async def _json(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return None


def _provider_route(
    handler: Callable[[dict[str, str], Any], SimResponse],
    events: Callable[[dict[str, Any], dict[str, Any]], Iterator[sse.Event]] | None = None,
    pace: sse.StreamPace | None = None,
) -> Callable[[Request], Any]:
    """A provider endpoint; with ``events``, a request asking to stream gets its reply as
    those server-sent events (an error still comes back as one JSON body, as the APIs do)."""

    async def endpoint(request: Request) -> Response:
        body = await _json(request)
        status, payload, headers = handler(dict(request.headers), body)
        streamed = events is not None and isinstance(body, dict) and body.get("stream")
        if headers.pop(TRICKLE_HEADER, None):  # a script step that never finishes
            return StreamingResponse(
                sse.trickled(events(payload, body) if streamed and events else None),
                media_type="text/event-stream" if streamed else "application/json",
                headers=headers,
            )
        if status != 200 or not streamed or events is None:
            return JSONResponse(payload, status_code=status, headers=headers)
        return StreamingResponse(
            sse.paced(events(payload, body), pace),
            media_type="text/event-stream",
            headers=headers,
        )

    return endpoint


def _anthropic_events(reply: dict[str, Any], _: dict[str, Any]) -> Iterator[sse.Event]:
    return sse.anthropic_events(reply)


def _chat_events(reply: dict[str, Any], request: dict[str, Any]) -> Iterator[sse.Event]:
    options = request.get("stream_options")
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    return sse.chat_events(reply, include_usage=usage)


def _responses_events(reply: dict[str, Any], _: dict[str, Any]) -> Iterator[sse.Event]:
    return sse.responses_events(reply)


def create_app(simulator: Simulator) -> Starlette:
    """Build the app; the simulator instance stays reachable as ``app.state.simulator``."""

    async def reset(request: Request) -> JSONResponse:
        body = await _json(request) or {}
        simulator.reset(body.get("scope"))
        return JSONResponse({"ok": True})

    async def advance(request: Request) -> JSONResponse:
        body = await _json(request) or {}
        return JSONResponse({"now": simulator.advance(float(body.get("seconds", 0)))})

    async def script(request: Request) -> JSONResponse:
        body = await _json(request) or {}
        simulator.set_script(Script.parse(body.get("script")), body.get("scope"))
        return JSONResponse({"ok": True})

    async def calls(request: Request) -> JSONResponse:
        scope = request.query_params.get("scope", "")
        return JSONResponse({"calls": [asdict(c) for c in simulator.calls(scope)]})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    pace = simulator.pace
    messages = _provider_route(simulator.anthropic_messages, _anthropic_events, pace)
    chat = _provider_route(simulator.openai_chat, _chat_events, pace)
    responses = _provider_route(simulator.openai_responses, _responses_events, pace)
    app = Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route(
                "/v1/messages/count_tokens",
                _provider_route(simulator.anthropic_count_tokens),
                methods=["POST"],
            ),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/embeddings", _provider_route(simulator.openai_embeddings), methods=["POST"]),
            # OpenAI clients given the bare root as base_url (no /v1) still land here.
            Route("/chat/completions", chat, methods=["POST"]),
            Route("/responses", responses, methods=["POST"]),
            Route("/_sim/reset", reset, methods=["POST"]),
            Route("/_sim/advance", advance, methods=["POST"]),
            Route("/_sim/script", script, methods=["POST"]),
            Route("/_sim/calls", calls, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
        ]
    )
    app.state.simulator = simulator
    return app
