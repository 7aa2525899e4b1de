"""The console's web app: read-only pages over one tenant's substrate.

Every route is a GET that reads; nothing here writes. When the app is given a token (it must
be, to listen beyond the loopback interface) every request must carry it: as
``Authorization: Bearer <token>``, as the ``wakeful_ui_token`` cookie, or once as
``?token=<token>``, which sets that cookie so the console's links work without it.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from wakeful.errors import UnknownAgentError
from wakeful.substrate.store import TenantStore
from wakeful.ui import data, pages
from wakeful.workflows.spend import day_start

COOKIE = "wakeful_ui_token"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def create_app(ts: TenantStore, *, token: str | None = None) -> FastAPI:
    """The console over ``ts``; ``token``, when set, is required on every request."""
    app = FastAPI(title="wakeful ui", docs_url=None, redoc_url=None, openapi_url=None)

    if token:

        @app.middleware("http")
        async def require_token(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            given = _token_of(request)
            if given is None or not hmac.compare_digest(given.encode(), token.encode()):
                return HTMLResponse(
                    pages.error_page(401, "this console needs its token: open it with ?token=…"),
                    status_code=401,
                )
            response = await call_next(request)
            if request.query_params.get("token"):
                response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response

    # The repository is synchronous (SQLAlchemy): pages are built in the thread pool so a
    # slow query does not hold the event loop.
    async def render(build: Callable[[], str]) -> HTMLResponse:
        try:
            return HTMLResponse(await run_in_threadpool(build))
        except (data.NotFound, UnknownAgentError) as exc:
            return HTMLResponse(pages.error_page(404, str(exc)), status_code=404)

    @app.get("/", response_class=HTMLResponse)
    async def agents() -> HTMLResponse:
        def build() -> str:
            now = datetime.now(UTC)
            return pages.agents_page(data.agents(ts, now), day_start(now))

        return await render(build)

    @app.get("/agents/{agent:path}", response_class=HTMLResponse)
    async def agent(agent: str) -> HTMLResponse:
        return await render(lambda: pages.agent_page(agent, data.agent_wakes(ts, agent)))

    @app.get("/wakes/{wake_id:path}", response_class=HTMLResponse)
    async def wake(wake_id: str) -> HTMLResponse:
        return await render(lambda: pages.wake_page(data.wake_view(ts, wake_id)))

    @app.get("/calls/{wake_id:path}/{n}", response_class=HTMLResponse)
    async def call(
        wake_id: str, n: int, status: str = "", segment: str = "", q: str = ""
    ) -> HTMLResponse:
        return await render(
            lambda: pages.call_page(
                data.call_view(ts, wake_id, n), status_filter=status, segment_filter=segment, q=q
            )
        )

    @app.get("/diff", response_class=HTMLResponse)
    async def diff(a: str, n: int, b: str, m: int) -> HTMLResponse:
        """Call ``n`` of wake ``a`` (the earlier window) against call ``m`` of wake ``b``."""
        return await render(lambda: pages.diff_page(data.diff_view(ts, (a, n), (b, m))))

    @app.get("/cost", response_class=HTMLResponse)
    async def cost() -> HTMLResponse:
        return await render(lambda: pages.cost_page(data.cost(ts)))

    return app


def _token_of(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.query_params.get("token") or request.cookies.get(COOKIE)


def needs_token(host: str) -> bool:
    """Whether listening on ``host`` exposes the console beyond this machine."""
    return host not in LOOPBACK
