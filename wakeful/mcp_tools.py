"""MCP servers as an agent's tools, through the official ``mcp`` SDK (its 1.x client API).

An agent lists servers (``Agent(mcp_servers=[McpServer(...)])``): a stdio command the worker
starts, or a streamable HTTP URL. Each server's tools become the agent's tools, named
``<server>__<tool>`` — always prefixed, so two servers (or a server and a local tool) never
collide, and a tool call names the server it goes to. Characters a provider does not accept
in a tool name (anything outside ``[A-Za-z0-9_-]``) become ``_``, and a name longer than 64
is cut and given a short hash; the original name is what the server is called with.

The tool list and input schemas are fetched once per wake (the first compile of the wake),
kept in the worker by wake, and merged into every window of the wake after the agent's own
tools: the stable prefix does not change mid-wake, and a schema that changed between wakes
changes the stable prefix (``wakeful diff`` names the tool's block). A compile on another
worker reads the list from the wake's first compile (its stored spec), not from the server.

The client sessions live in the worker (:class:`McpPool`): one session per server, shared by
the worker's activity threads, opened on first use on an event loop of the pool's own, and
reopened when its server process dies or its connection drops. A call runs in the tool
activity under the server's ``timeout_s`` and ``max_attempts``, heartbeating while it
waits (a call on a worker that died is retried once the heartbeats stop, not after its whole
timeout); a dropped connection is retried by Temporal on a fresh session; an error the
server returns (an unknown tool, bad arguments, a tool reporting ``isError``) is a tool error
result the model reads.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from wakeful.compiler.canonical import canonical_json
from wakeful.errors import ConfigError, UserError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult

__all__ = ["SEP", "McpPool", "McpServer", "McpTool", "result_text"]

# Between a server's name and its tool's: ``fs__read_file``.
SEP = "__"


class ServesMcp(Protocol):
    """What this module needs of an agent (``wakeful.agents.Agent``): its name, servers."""

    @property
    def name(self) -> str: ...

    @property
    def mcp_servers(self) -> tuple[McpServer, ...]: ...


_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")  # no "__", no leading/trailing "_"
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64  # the longest tool name the providers accept
# Seconds a compile spends listing one server's tools, all attempts together (the compile
# activity times out at 60 s).
LIST_BUDGET_S = 40.0
# A call heartbeats while it waits for the server, and Temporal gives a call whose
# heartbeats stop this long before it retries it on another worker: without heartbeats, a
# worker killed mid-call left the wake waiting for the call's whole timeout_s (minutes, for
# a long tool) before anything ran it again.
HEARTBEAT_S = 5.0
BEAT_EVERY_S = 1.0  # how often the waiting thread beats (the SDK throttles what it sends)

T = TypeVar("T")


@dataclass(frozen=True)
class McpServer:
    """One MCP server an agent uses: ``command`` (stdio: ``args``, ``env``, ``cwd``) or
    ``url`` (streamable HTTP: ``headers``), exactly one. ``name`` prefixes its tools
    (``<name>__<tool>``). Each call gets ``timeout_s`` and up to ``max_attempts`` attempts
    (a dropped connection is retried; an error the server reports goes to the model)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, hash=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = field(default=None, hash=False)
    timeout_s: float = 60.0
    max_attempts: int = 3

    def __post_init__(self) -> None:
        where = f"MCP server {self.name!r}"
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise UserError(
                f"{where}: its name prefixes its tools; use letters, digits, '-' and single"
                " '_' (no '__')"
            )
        if (self.command is None) == (self.url is None):
            raise UserError(f"{where}: give exactly one of command= (stdio) or url= (HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise UserError(f"{where}: url must start with http:// or https:// ({self.url!r})")
        object.__setattr__(self, "args", tuple(self.args))
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise UserError(f"{where}: max_attempts must be an integer >= 1")
        if self.max_attempts < 1:
            raise UserError(f"{where}: max_attempts must be an integer >= 1")
        if not isinstance(self.timeout_s, int | float) or not self.timeout_s > 0:
            raise UserError(f"{where}: timeout_s must be a number > 0 (got {self.timeout_s!r})")

    @property
    def heartbeat_s(self) -> float:
        """The heartbeat timeout of a call of its tools (never past the call's own)."""
        return min(HEARTBEAT_S, self.timeout_s)

    @property
    def prefix(self) -> str:
        return f"{self.name}{SEP}"

    def key(self) -> str:
        """What identifies the connection: servers described alike share one session."""
        return json.dumps(
            {
                "command": self.command,
                "args": list(self.args),
                "env": dict(self.env or {}),
                "cwd": self.cwd,
                "url": self.url,
                "headers": dict(self.headers or {}),
            },
            sort_keys=True,
        )

    def describe(self) -> dict[str, Any]:
        """For the stored spec: where the server is, never its env or headers (secrets)."""
        where = {"url": self.url} if self.url else {"command": [self.command, *self.args]}
        return {"name": self.name, **where}


@dataclass(frozen=True)
class McpTool:
    """One server tool as the agent's: its exposed ``name`` and the server's ``tool``."""

    server: McpServer
    name: str
    tool: str
    description: str
    input_schema: dict[str, Any]

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def exposed_name(server: McpServer, tool: str) -> str:
    name = server.prefix + _BAD_CHARS.sub("_", tool)
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def server_of(agent: ServesMcp, name: str) -> McpServer | None:
    """The agent's server whose tools ``name`` would be one of (None: not an MCP name)."""
    for server in agent.mcp_servers:
        if name.startswith(server.prefix):
            return server
    return None


def result_text(result: CallToolResult) -> str:
    """A tool result as the model reads it: text content as it is, other content summarised
    in a line (an image is not sent on; its size and type are)."""
    from mcp import types

    parts: list[str] = []
    for item in result.content:
        if isinstance(item, types.TextContent):
            parts.append(item.text)
        elif isinstance(item, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(item, types.ImageContent) else "audio"
            size = len(item.data) * 3 // 4
            parts.append(f"[{kind} {item.mimeType}, about {size} bytes, not shown]")
        elif isinstance(item, types.EmbeddedResource):
            res = item.resource
            if isinstance(res, types.TextResourceContents):
                parts.append(f"[resource {res.uri}]\n{res.text}")
            else:
                size = len(res.blob) * 3 // 4
                parts.append(f"[resource {res.uri} {res.mimeType or ''}, about {size} bytes]")
        elif isinstance(item, types.ResourceLink):
            parts.append(f"[resource link {item.uri} {item.name}]".rstrip())
        else:
            parts.append(f"[{getattr(item, 'type', type(item).__name__)} content]")
    if not parts and result.structuredContent is not None:
        parts.append(canonical_json(result.structuredContent))
    return "\n".join(parts)


class McpCallError(Exception):
    """The server answered the call with an error (unknown tool, bad arguments, the tool
    reporting ``isError``): a tool error result the model reads, not retried."""


class McpConnectionError(Exception):
    """The session broke (server process gone, connection dropped): the session is dropped
    and the call may be retried on a fresh one."""


class _Session:
    """One server's open session, held by a task on the pool's loop until it is closed
    (the SDK's transports are context managers that must close in the task that opened
    them)."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.session: ClientSession | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> ClientSession:
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready))
        self.session = await ready
        return self.session

    async def _hold(self, ready: asyncio.Future[ClientSession]) -> None:
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(_transport(self.server))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:  # the transport failed to open, or broke while held
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout=5)
            except BaseException:  # closing a broken session: nothing left to save
                self._task.cancel()


def _transport(server: McpServer) -> Any:
    if server.url is not None:
        from mcp.client.streamable_http import streamablehttp_client

        return _first_two(streamablehttp_client(server.url, headers=dict(server.headers or {})))
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=server.command or "",
        args=list(server.args),
        env=dict(server.env) if server.env is not None else None,
        cwd=server.cwd,
    )
    return stdio_client(params)


class _first_two:
    """streamablehttp_client yields (read, write, get_session_id); take the streams."""

    def __init__(self, cm: Any) -> None:
        self.cm = cm

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write, *_ = await self.cm.__aenter__()
        return read, write

    async def __aexit__(self, *exc: object) -> Any:
        return await self.cm.__aexit__(*exc)


class McpPool:
    """The worker's MCP client sessions (one per server, shared by all its wakes) and the
    tool lists of its recent wakes. Thread-safe: the activity threads call in; the sessions
    run on one event loop in a daemon thread of the pool's own, started on first use."""

    def __init__(self, max_wakes: int = 1024) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._wakes: OrderedDict[tuple[str, str], tuple[McpTool, ...]] = OrderedDict()
        self._max_wakes = max_wakes

    # --- the loop -------------------------------------------------------------------------

    def _run(
        self,
        coro: Coroutine[Any, Any, T],
        timeout_s: float,
        beat: Callable[[], None] | None = None,
    ) -> T:
        """Run ``coro`` on the pool's loop and wait for it at most ``timeout_s``, calling
        ``beat`` (a heartbeat) every :data:`BEAT_EVERY_S` while it waits."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="wakeful-mcp", daemon=True).start()
                self._loop = loop
                atexit.register(self.close)
            loop = self._loop
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                return future.result(max(0.0, min(left, BEAT_EVERY_S)) if beat else left)
            except TimeoutError:
                if beat is None or time.monotonic() >= deadline:
                    future.cancel()
                    raise
                beat()

    def close(self) -> None:
        """Close every session (stopping the servers this worker started) and the loop."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return
        sessions = list(self._sessions.values())
        self._sessions.clear()

        async def close_all() -> None:
            await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)

    async def _session(self, server: McpServer) -> ClientSession:
        key = server.key()
        lock = self._opening.setdefault(key, asyncio.Lock())
        async with lock:
            held = self._sessions.get(key)
            if held is not None and held.session is not None:
                return held.session
            fresh = _Session(server)
            try:
                session = await fresh.open()
            except Exception as exc:
                raise McpConnectionError(f"did not start or answer: {_why(exc)}") from None
            self._sessions[key] = fresh
            return session

    async def _drop(self, server: McpServer, session: ClientSession) -> None:
        held = self._sessions.get(server.key())
        if held is not None and held.session is session:
            del self._sessions[server.key()]
            await held.close()

    # --- listing --------------------------------------------------------------------------

    async def _list(self, server: McpServer) -> list[McpTool]:
        from mcp.types import Tool as SdkTool

        session = await self._session(server)
        try:
            listed: list[SdkTool] = []
            cursor: str | None = None
            while True:
                page = await session.list_tools(cursor=cursor)
                listed += page.tools
                cursor = page.nextCursor
                if not cursor:
                    break
        except Exception as exc:
            await self._drop(server, session)
            raise McpConnectionError(f"did not list its tools: {_why(exc)}") from None
        out: dict[str, McpTool] = {}
        for t in listed:
            name = exposed_name(server, t.name)
            if name in out:  # two server names that differ only in characters we replace
                continue
            out[name] = McpTool(server, name, t.name, t.description or "", dict(t.inputSchema))
        return list(out.values())

    def list_tools(self, server: McpServer) -> list[McpTool]:
        """The server's tools now, asked for up to ``max_attempts`` times (a dropped
        session is reopened); :class:`ConfigError` naming the server once none answered."""
        last = ""
        # Within the compile's own timeout, so a server that never answers parks the wake
        # with this line instead of timing the compile out (retried without end).
        deadline = time.monotonic() + LIST_BUDGET_S
        for _ in range(server.max_attempts):
            wait = min(server.timeout_s, deadline - time.monotonic())
            if wait <= 0:
                break
            try:
                return self._run(self._list(server), wait)
            except (McpConnectionError, TimeoutError) as exc:
                last = str(exc) or f"no answer within {wait:g} s"
        raise ConfigError(
            f"MCP server {server.name!r} could not list its tools ({last}); check its"
            " command or url, or drop it from the agent's mcp_servers"
        )

    def wake_tools(
        self,
        agent: ServesMcp,
        wake: tuple[str, str],
        stored: Callable[[], list[dict[str, Any]] | None] = lambda: None,
    ) -> list[dict[str, Any]]:
        """The agent's MCP tools for the wake ``(tenant, wake_id)``, as tool schemas: the
        same list for every call of the wake. Fetched once (or taken from ``stored``, the
        list an earlier compile of the wake used, when this worker has none)."""
        with self._lock:
            cached = self._wakes.get(wake)
            if cached is not None:
                self._wakes.move_to_end(wake)
        if cached is None:
            earlier = stored()
            if earlier is not None:
                return earlier
            cached = tuple(t for s in agent.mcp_servers for t in self.list_tools(s))
            with self._lock:
                cached = self._wakes.setdefault(wake, cached)
                while len(self._wakes) > self._max_wakes:
                    self._wakes.popitem(last=False)
        return [t.schema() for t in cached]

    # --- calling --------------------------------------------------------------------------

    def _tool_of(self, server: McpServer, name: str, wake: tuple[str, str]) -> str:
        """The server's name for the exposed ``name``: from the wake's list when this
        worker has it, else from the server's list now, else the name less its prefix."""
        with self._lock:
            known = self._wakes.get(wake, ())
        for t in known:
            if t.name == name:
                return t.tool
        stripped = name[len(server.prefix) :]
        if not _BAD_CHARS.search(stripped) and name == exposed_name(server, stripped):
            return stripped
        for t in self.list_tools(server):
            if t.name == name:
                return t.tool
        return stripped

    async def _call(
        self, server: McpServer, tool: str, args: dict[str, Any], timeout_s: float
    ) -> str:
        session = await self._session(server)
        try:
            result = await session.call_tool(tool, args, read_timeout_seconds=_td(timeout_s))
        except Exception as exc:
            from mcp.shared.exceptions import McpError
            from mcp.types import CONNECTION_CLOSED

            # The SDK answers a request timeout with code 408 (HTTP's), a lost connection
            # with CONNECTION_CLOSED; any other code is the server's answer to this call.
            if isinstance(exc, McpError) and exc.error.code not in (408, CONNECTION_CLOSED):
                raise McpCallError(exc.error.message) from None
            # A timeout, or the connection went: this session may be stuck or dead.
            await self._drop(server, session)
            raise McpConnectionError(f"the call failed: {_why(exc)}") from None
        text = result_text(result)
        if result.isError:
            raise McpCallError(text or "the tool reported an error")
        return text

    def call(
        self,
        agent: ServesMcp,
        name: str,
        args: dict[str, Any],
        wake: tuple[str, str],
        heartbeat: Callable[[], None] | None = None,
    ) -> str:
        """Call the exposed tool ``name`` of one of the agent's servers, calling
        ``heartbeat`` while it waits; raises :class:`McpCallError` (for the model) or
        :class:`McpConnectionError` (retry)."""
        server = server_of(agent, name)
        if server is None:
            raise UserError(f"agent {agent.name!r} has no MCP tool {name!r}")
        tool = self._tool_of(server, name, wake)
        # Under the tool activity's deadline (budget_s of timeout_s), so the session's own
        # timeout answers first and the session is dropped, not left with a stuck request.
        from wakeful.activities.tool_thread import budget_s

        inner = budget_s(server.timeout_s) * 0.9
        try:
            return self._run(self._call(server, tool, args, inner), server.timeout_s, heartbeat)
        except TimeoutError:
            why = f"no answer within {inner:g} s"
        except McpConnectionError as exc:
            why = str(exc)
        raise McpConnectionError(f"MCP server {server.name!r}: {why}")


def _td(seconds: float) -> Any:
    from datetime import timedelta

    return timedelta(seconds=seconds)


def _why(exc: BaseException) -> str:
    """An exception in one line; an exception group by its first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
