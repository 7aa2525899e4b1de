"""The console's web app: read-only pages over one tenant's substrate.

Every route is a GET that reads; nothing here writes. When the app is given a token (it must
be, to listen beyond the loopback interface) every request must carry it: as
``Authorization: Bearer <token>``, as the ``wakeful_ui_token`` cookie, or once as
``?token=<token>``, which sets that cookie so the console's links work without it.

It answers only requests addressed to it by a loopback name (``localhost``, ``127.0.0.1``,
``[::1]``) or by a host it was given: a page elsewhere that rebinds its own name to this
machine's address (DNS rebinding) reaches the console under that name, and is refused.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from wakeful.errors import UnknownAgentError
from wakeful.substrate.store import TenantStore
from wakeful.ui import data, pages
from wakeful.workflows.spend import day_start
from wakeful.workflows.state import workflow_id

COOKIE = "wakeful_ui_token"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
# Addresses that bind every interface: no name a browser could use to reach the console.
_ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})


def create_app(
    ts: TenantStore,
    *,
    token: str | None = None,
    temporal_ui: str | None = None,
    namespace: str = "default",
    hosts: Iterable[str] = (),
) -> FastAPI:
    """The console over ``ts``; ``token``, when set, is required on every request. With
    ``temporal_ui`` (the Temporal Web UI's address), a wake links to its agent's workflow.
    Requests must be addressed (their ``Host``) to a loopback name or one of ``hosts``
    (names or addresses, without a port; ``*``: any)."""
    served = LOOPBACK | {_host_name(h) for h in hosts}

    def temporal_link(agent: str) -> str | None:
        if not temporal_ui:
            return None
        wid = quote(workflow_id(ts.name, agent), safe="")
        return f"{temporal_ui.rstrip('/')}/namespaces/{quote(namespace, safe='')}/workflows/{wid}"

    app = FastAPI(title="wakeful ui", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        host = _host_name(request.headers.get("host", ""))
        if "*" not in served and host not in served:
            return HTMLResponse(
                pages.error_page(
                    400,
                    f"this console is not served as {host or 'a request without a Host'!r}: "
                    "open it at http://127.0.0.1 (or localhost), or start it with "
                    "--allowed-host NAME for the name it is reached by",
                ),
                status_code=400,
            )
        if token:
            given = _token_of(request)
            if given is None or not hmac.compare_digest(given.encode(), token.encode()):
                return HTMLResponse(
                    pages.error_page(401, "this console needs its token: open it with ?token=…"),
                    status_code=401,
                )
            if request.query_params.get("token"):
                # Into a cookie, and out of the address bar (and the browser's history).
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = _same_site(request.url.path) + ("?" + urlencode(rest) if rest else "")
                moved = RedirectResponse(target, status_code=303)
                moved.set_cookie(COOKIE, token, httponly=True, samesite="strict")
                return moved
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError) -> HTMLResponse:
        return HTMLResponse(pages.error_page(400, _one_line(exc)), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> HTMLResponse:
        said = "this console only reads" if exc.status_code == 405 else str(exc.detail)
        return HTMLResponse(
            pages.error_page(exc.status_code, said),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

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
    async def agent(agent: str, before: int | None = None) -> HTMLResponse:
        """The agent's wakes, newest first, a page at a time (``before``: a wake number)."""
        return await render(
            lambda: pages.agent_page(agent, data.agent_wakes(ts, agent, before=before))
        )

    @app.get("/wakes/{wake_id:path}", response_class=HTMLResponse)
    async def wake(wake_id: str) -> HTMLResponse:
        def build() -> str:
            view = data.wake_view(ts, wake_id)
            return pages.wake_page(view, temporal_link(view.wake.agent))

        return await render(build)

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
    async def diff(a: str = "", n: int = 0, b: str = "", m: int = 0) -> HTMLResponse:
        """Call ``n`` of wake ``a`` (the earlier window) against call ``m`` of wake ``b``;
        without both wakes, a form to choose them."""
        if not a or not b:
            return HTMLResponse(pages.diff_form(a, n, b, m))
        return await render(lambda: pages.diff_page(data.diff_view(ts, (a, n), (b, m))))

    @app.get("/sessions/{agent}/{session_id:path}", response_class=HTMLResponse)
    async def session(agent: str, session_id: str) -> HTMLResponse:
        """The session's cache timeline: its calls, their cache outcome and TTLs, pacing."""
        return await render(lambda: pages.session_page(data.session_view(ts, agent, session_id)))

    @app.get("/knowledge/{agent:path}", response_class=HTMLResponse)
    async def knowledge(agent: str) -> HTMLResponse:
        """What the agent knows: handoffs, summaries, decisions, memories, with provenance."""
        return await render(lambda: pages.knowledge_page(data.knowledge(ts, agent)))

    @app.get("/cost", response_class=HTMLResponse)
    async def cost() -> HTMLResponse:
        return await render(lambda: pages.cost_page(data.cost(ts)))

    return app


def _one_line(exc: RequestValidationError) -> str:
    """What was wrong with the address, e.g. ``n: should be an integer (got 'x')``."""
    said = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ())[1:]) or "request"
        got = f" (got {e['input']!r})" if "input" in e and e["input"] is not None else ""
        said.append(f"{where}: {str(e.get('msg', 'invalid')).lower()}{got}")
    return "; ".join(said) + "; fix the address"


def _token_of(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.query_params.get("token") or request.cookies.get(COOKIE)


def needs_token(host: str) -> bool:
    """Whether listening on ``host`` exposes the console beyond this machine."""
    return host not in LOOPBACK


def _host_name(host: str) -> str:
    """The name or address in a ``Host`` header (or a configured host), without its port:
    ``[::1]:8765`` -> ``::1``, ``Localhost.:8765`` -> ``localhost``."""
    host = host.strip().lower()
    if host.startswith("["):  # an IPv6 address, maybe with a port after the bracket
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def _same_site(path: str) -> str:
    """``path`` as a redirect that stays on this site: a path starting ``//`` (or ``/\\``,
    which browsers read alike) would be taken for another host's address."""
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=~")


def served_hosts(bound: str, allowed: Iterable[str]) -> list[str]:
    """The hosts a console bound to ``bound`` answers as, beside the loopback names: the
    address it is bound to (unless it binds every interface) and the ``allowed`` ones."""
    named = [] if bound in _ANY_ADDRESS else [bound]
    return [*named, *allowed]
