"""The ingress served as ``wakeful ingress serve`` serves it: a real uvicorn on a real socket.

Slow clients are cut off by the server's read deadline, and a delivery that is refused
anyway (unsigned, stale) is answered before its body is read.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable

import pytest
import uvicorn
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.ops.hooks import event
from tests.ops.ingress_setup import ingress_settings
from tests.ops.webhook_secrets import SECRET
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.worker.ingress import create_app
from wakeful.worker.ingress_auth import signature_header
from wakeful.worker.ingress_server import server_config

NOW = 1_767_225_600
READ_TIMEOUT_S = 1.0
# Failure timeouts only: how long a test waits before it calls the server stuck.
GIVE_UP_S = 30.0


@pytest.fixture
async def address(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent
) -> AsyncIterator[tuple[str, int]]:
    async def temporal() -> Client:
        return temporal_dev.client

    settings = ingress_settings(agent, webhook_max_body_bytes=512 * 1024)
    app = create_app(settings, temporal, store, clock=lambda: float(NOW))
    server = uvicorn.Server(server_config(app, log_level="warning", read_timeout_s=READ_TIMEOUT_S))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(GIVE_UP_S):
            while not server.started:
                await asyncio.sleep(0.01)
        yield sock.getsockname()
    finally:
        server.should_exit = True
        await serving
        sock.close()


async def _closed_while_trickling(
    address: tuple[str, int], head: bytes, trickle: Callable[[int], bytes]
) -> bytes:
    """Send ``head``, then a byte at a time until the server closes the connection; what
    the server sent back. Fails if it never closes (within ``GIVE_UP_S``)."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(head)
    received = b""
    try:
        async with asyncio.timeout(GIVE_UP_S):
            for i in range(10**6):
                try:
                    writer.write(trickle(i))
                    await writer.drain()
                except ConnectionError:
                    break
                try:
                    chunk = await asyncio.wait_for(reader.read(4096), 0.1)
                except TimeoutError:
                    continue
                except ConnectionError:
                    break
                if not chunk:
                    break  # closed by the server
                received += chunk
    finally:
        writer.close()
    return received


async def test_a_client_trickling_its_headers_is_cut_off(address: tuple[str, int]) -> None:
    head = b"POST /hooks/scout HTTP/1.1\r\nHost: ingress\r\nX-Slow: "
    await _closed_while_trickling(address, head, lambda i: b"a")


async def test_a_client_trickling_a_signed_body_is_cut_off(
    address: tuple[str, int], agent: Agent
) -> None:
    body = event(text="x" * 2000)
    head = (
        f"POST /hooks/{agent.name} HTTP/1.1\r\nHost: ingress\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(body)}\r\n"
        f"X-Wakeful-Signature: {signature_header(SECRET, NOW, body)}\r\n\r\n"
    ).encode()
    received = await _closed_while_trickling(address, head, lambda i: body[i : i + 1])
    assert b"202" not in received


@pytest.mark.parametrize("signature", [None, f"t={NOW - 3600},v1={'a' * 64}"])
async def test_an_unsigned_or_stale_large_body_is_refused_before_it_is_read(
    address: tuple[str, int], agent: Agent, signature: str | None
) -> None:
    """256 KB announced, not one byte of it sent: the answer comes anyway."""
    lines = [
        f"POST /hooks/{agent.name} HTTP/1.1",
        "Host: ingress",
        "Content-Type: application/json",
        f"Content-Length: {256 * 1024}",
    ]
    if signature is not None:
        lines.append(f"X-Wakeful-Signature: {signature}")
    reader, writer = await asyncio.open_connection(*address)
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), GIVE_UP_S)
    finally:
        writer.close()
    assert status.startswith(b"HTTP/1.1 401"), status
