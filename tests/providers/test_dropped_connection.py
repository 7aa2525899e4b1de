"""A connection the server closes as a request arrives on it, before any reply (what a
kept-alive connection closed by the server while it sat in the client's pool does to the
next request sent on it), costs no retry: the provider sends the request again at once, on
a fresh connection, within the same call. One that fails again is the retryable error it
always was, after two requests, not more.

The official SDKs speak HTTP to a small TCP proxy in front of the simulator, which drops the
requests it is told to (reads each whole, then closes the connection) and forwards the
others; nothing of the SDKs or of httpx is patched.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Container
from typing import Any

import pytest

from wakeful.errors import ProviderError
from wakeful.providers.anthropic import AnthropicProvider
from wakeful.providers.base import StreamEvent, StreamingProvider
from wakeful.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from wakeful.substrate.embedders import OpenAIEmbedder
from wakeful.testing.simulator import Script, SimulatorServer


class _Every:
    def __contains__(self, request: object) -> bool:
        return True


EVERY: Container[int] = _Every()


class DroppingProxy:
    """Forwards HTTP/1.1 connections to ``upstream_port`` on 127.0.0.1, request by request;
    a request whose number (1, 2, ... over all connections) is in ``drop`` is read whole and
    its connection closed, with no reply."""

    def __init__(self, upstream_port: int, drop: Container[int]) -> None:
        self.upstream_port, self.drop = upstream_port, drop
        self.connections = 0
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def __aenter__(self) -> DroppingProxy:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        upstream: asyncio.StreamWriter | None = None
        replies: asyncio.Task[None] | None = None
        try:
            while (request := await _read_request(reader)) is not None:
                self.requests += 1
                if self.requests in self.drop:
                    return
                if upstream is None:
                    up_reader, upstream = await asyncio.open_connection(
                        "127.0.0.1", self.upstream_port
                    )
                    replies = asyncio.create_task(_pipe(up_reader, writer))
                upstream.write(request)
                await upstream.drain()
        finally:
            for stream in (upstream, writer):
                if stream is not None:
                    stream.close()
            if replies is not None:
                replies.cancel()
                await asyncio.gather(replies, return_exceptions=True)


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One request, head and body (the SDKs send a Content-Length), or None at the end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head + await reader.readexactly(length)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


def anthropic_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Is checkout healthy?"}],
    }


def chat_body() -> dict[str, Any]:
    return {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "Is it?"}]}


def responses_body() -> dict[str, Any]:
    return {"model": "gpt-4.1-mini", "input": [{"role": "user", "content": "Is it?"}]}


Make = Callable[[str, str], StreamingProvider]
PROVIDERS: list[tuple[Make, Callable[[], dict[str, Any]], str]] = [
    (lambda key, url: AnthropicProvider(key, base_url=url, timeout=10), anthropic_body, ""),
    (lambda key, url: OpenAIChatProvider(key, base_url=url, timeout=10), chat_body, "/v1"),
    (
        lambda key, url: OpenAIResponsesProvider(key, base_url=url, timeout=10),
        responses_body,
        "/v1",
    ),
]
each_provider = pytest.mark.parametrize(
    ("make", "body", "path"), PROVIDERS, ids=["anthropic", "chat", "responses"]
)
each_mode = pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])


@contextlib.asynccontextmanager
async def provider_through(
    proxy: DroppingProxy, make: Make, key: str, path: str
) -> AsyncIterator[StreamingProvider]:
    provider = make(key, f"http://127.0.0.1:{proxy.port}{path}")
    try:
        yield provider
    finally:
        await provider.aclose()  # type: ignore[attr-defined]


async def ask(provider: StreamingProvider, body: dict[str, Any], stream: bool) -> str:
    if not stream:
        return (await provider.complete(body)).text
    events: list[StreamEvent] = []
    reply = await provider.stream(body, events.append)
    assert "".join(e.text for e in events if e.kind == "text") == reply.text
    return reply.text


@each_provider
@each_mode
async def test_a_kept_alive_connection_closed_as_the_next_request_arrives_costs_no_retry(
    sim_server: SimulatorServer,
    sim_key: str,
    make: Make,
    body: Callable[[], dict[str, Any]],
    path: str,
    stream: bool,
) -> None:
    """The first call is served; the second goes out on the same pooled connection, which
    the server closes as it reads it: the call is answered all the same, by a request sent
    again on a new connection, and the simulator was asked twice in all."""
    sim_server.simulator.set_script(
        Script.parse([{"text": "Checkout is healthy."}, {"text": "Still healthy."}]), sim_key
    )
    async with (
        DroppingProxy(sim_server.port, drop={2}) as proxy,
        provider_through(proxy, make, sim_key, path) as provider,
    ):
        assert await ask(provider, body(), stream) == "Checkout is healthy."
        assert await ask(provider, body(), stream) == "Still healthy."
    assert proxy.requests == 3
    assert len(sim_server.simulator.calls(sim_key)) == 2


@each_provider
@each_mode
async def test_a_connection_dropped_twice_is_a_retryable_error_after_two_requests(
    sim_server: SimulatorServer,
    sim_key: str,
    make: Make,
    body: Callable[[], dict[str, Any]],
    path: str,
    stream: bool,
) -> None:
    async with (
        DroppingProxy(sim_server.port, drop=EVERY) as proxy,
        provider_through(proxy, make, sim_key, path) as provider,
    ):
        with pytest.raises(ProviderError) as err:
            await ask(provider, body(), stream)
    assert err.value.retryable and err.value.status is None
    assert "unreachable" in str(err.value)
    assert (proxy.connections, proxy.requests) == (2, 2)
    assert sim_server.simulator.calls(sim_key) == []


def embedder_through(proxy: DroppingProxy, key: str) -> OpenAIEmbedder:
    return OpenAIEmbedder(api_key=key, base_url=f"http://127.0.0.1:{proxy.port}/v1", timeout=10)


async def test_an_embedding_request_on_a_dropped_kept_alive_connection_is_sent_again(
    sim_server: SimulatorServer, sim_key: str
) -> None:
    """The embedder runs the SDK synchronously (in a thread here, beside the proxy's loop):
    the second request goes out on the pooled connection, which is closed as it arrives."""
    async with DroppingProxy(sim_server.port, drop={2}) as proxy:
        embedder = embedder_through(proxy, sim_key)
        first = await asyncio.to_thread(embedder.embed, ["checkout is healthy"])
        again = await asyncio.to_thread(embedder.embed, ["checkout is healthy", "db-2 is full"])
    assert first[0] == again[0]  # the same text, the same vector
    assert len(again) == 2 and len(again[1]) == embedder.dim == 1536
    assert proxy.requests == 3 and proxy.connections == 2


async def test_an_embedding_request_dropped_twice_is_a_retryable_error_after_two_requests(
    sim_server: SimulatorServer, sim_key: str
) -> None:
    async with DroppingProxy(sim_server.port, drop=EVERY) as proxy:
        embedder = embedder_through(proxy, sim_key)
        with pytest.raises(ProviderError) as err:
            await asyncio.to_thread(embedder.embed, ["checkout is healthy"])
    assert err.value.retryable and err.value.status is None
    assert (proxy.connections, proxy.requests) == (2, 2)
