"""The provider simulator, timed: ``python -m benchmarks.peers_simulator --port P``.

``wakeful bench peers`` subtracts model time from each turn's wall time. The three systems
call the model from their own workers, each through its own SDK, so the one place that
times them all alike is the model itself: this wraps the simulator's app in a middleware
that adds up, per API key (the simulator's scope), the seconds its provider routes spend
answering (from the request reaching the app to the last byte of the response handed to
the server). ``GET /_bench/model_time`` returns ``{key: {"seconds": S, "calls": N}}``.
What is left of a turn is the system's own: its worker, Temporal, the HTTP exchange and
the SDK's parsing of the reply.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from wakeful.testing.simulator.app import UVICORN_OPTIONS, create_app
from wakeful.testing.simulator.core import Simulator

__all__ = ["ModelClock", "timed_app"]

_PROVIDER_PATHS = ("/messages", "/chat/completions", "/responses")


def _api_key(scope: Scope) -> str:
    headers: dict[str, str] = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
    key = headers.get("x-api-key")
    if key:
        return key
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else ""


class ModelClock:
    """ASGI middleware: seconds spent in the provider routes, by API key."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and path == "/_bench/model_time":
            await JSONResponse(self.report())(scope, receive, send)
            return
        if scope["type"] != "http" or not path.endswith(_PROVIDER_PATHS):
            await self.app(scope, receive, send)
            return
        key = _api_key(scope)
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - start
            self.calls[key] = self.calls.get(key, 0) + 1

    def report(self) -> dict[str, Any]:
        return {k: {"seconds": v, "calls": self.calls[k]} for k, v in self.seconds.items()}


def timed_app(simulator: Simulator) -> ModelClock:
    """The simulator's app behind a :class:`ModelClock` (which answers ``/_bench/model_time``)."""
    return ModelClock(create_app(simulator))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="peers-simulator")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    uvicorn.run(timed_app(Simulator()), host="127.0.0.1", port=args.port, **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
