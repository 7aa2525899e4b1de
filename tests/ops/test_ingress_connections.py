"""Connection slots of a running ingress: one client's idle sockets cannot take them all.

uvicorn counts every open connection against its limit, idle or not. The attack opened the
whole limit's worth of sockets, sent nothing and reopened them as they were closed, and
every real delivery got 503. The ingress closes a client's connections over its per-client
limit as they open, and an idle connection once its headers are late. Run against uvicorn
on a real socket, with a small limit and deadline so the outcome, not the time, is checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.ops.hooks import event, post, signed, terminate
from tests.ops.ingress_setup import ingress_settings, served
from wakeful.agents import Agent
from wakeful.substrate.store import Store
from wakeful.worker.ingress import create_app

MAX_CONNECTIONS = 8
PER_CLIENT = 4
# The attacker's own loopback address: the ingress tells clients apart by address.
ATTACKER = "127.0.0.2"
# No deadline of the server's passes within a test unless the test sets it short.
NEVER_S = 3600.0
# A failure timeout only: how long a test waits before it calls the server stuck.
GIVE_UP_S = 30.0

Socket = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@asynccontextmanager
async def _ingress(
    env: WorkflowEnvironment, store: Store, agent: Agent, **config: Any
) -> AsyncIterator[str]:
    async def temporal() -> Client:
        return env.client

    app = create_app(ingress_settings(agent), temporal, store)
    async with served(app, **config) as url:
        yield url


async def _open(url: str, count: int, source: str) -> list[Socket]:
    host, port = url.removeprefix("http://").split(":")
    return [
        await asyncio.open_connection(host, int(port), local_addr=(source, 0)) for _ in range(count)
    ]


def _until_closed(sockets: list[Socket]) -> list[asyncio.Task[bytes]]:
    """One task per socket that ends when the server closes it (reading its b'')."""
    return [asyncio.create_task(reader.read()) for reader, _ in sockets]


async def test_idle_sockets_of_one_client_leave_the_slots_to_a_real_delivery(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent
) -> None:
    async with _ingress(
        temporal_dev,
        store,
        agent,
        max_connections=MAX_CONNECTIONS,
        max_connections_per_client=PER_CLIENT,
        header_timeout_s=NEVER_S,
        read_timeout_s=NEVER_S,
    ) as url:
        idle = await _open(url, MAX_CONNECTIONS, ATTACKER)  # as many as the server serves
        closing = _until_closed(idle)
        try:
            # Those over the client's limit are closed as they open; the rest stay open.
            closed: set[asyncio.Task[bytes]] = set()
            async with asyncio.timeout(GIVE_UP_S):
                while len(closed) < MAX_CONNECTIONS - PER_CLIENT:
                    done, _ = await asyncio.wait(
                        set(closing) - closed, return_when=asyncio.FIRST_COMPLETED
                    )
                    closed |= done
            assert all(t.result() == b"" for t in closed)  # closed unanswered
            assert sum(not t.done() for t in closing) == PER_CLIENT

            async with httpx.AsyncClient(base_url=url) as sender:
                delivered = await post(sender, f"/hooks/{agent.name}", event("slots-1"))
            assert delivered.status_code == 202, delivered.text
            assert sum(not t.done() for t in closing) == PER_CLIENT  # still held, still idle
        finally:
            for task in closing:
                task.cancel()
            for _, writer in idle:
                writer.close()
            await terminate(temporal_dev.client, agent.tenant, agent.name)


async def test_a_connection_that_sends_no_headers_in_time_is_closed(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent
) -> None:
    """Only the header deadline is short here: the connections close by it alone."""
    async with _ingress(
        temporal_dev, store, agent, header_timeout_s=0.2, read_timeout_s=NEVER_S
    ) as url:
        silent, trickling = await _open(url, 2, "127.0.0.1")
        trickling[1].write(f"POST /hooks/{agent.name} HTTP/1.1\r\nHost: ingress\r\n".encode())
        async with asyncio.timeout(GIVE_UP_S):
            assert await silent[0].read() == b""
            assert await trickling[0].read() == b""
        for _, writer in (silent, trickling):
            writer.close()


async def test_headers_in_time_give_the_body_the_request_deadline(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent
) -> None:
    """A delivery whose headers came in time is not cut off at the header deadline while
    its body follows: that one has the longer request deadline."""
    body = event("late-body-1")
    head = (
        f"POST /hooks/{agent.name} HTTP/1.1\r\nHost: ingress\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(body)}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in signed(body).items())
        + "\r\n"
    ).encode()
    async with _ingress(
        temporal_dev, store, agent, header_timeout_s=2.0, read_timeout_s=NEVER_S
    ) as url:
        ((reader, writer),) = await _open(url, 1, "127.0.0.1")
        writer.write(head)
        await writer.drain()
        # A connection opened after this one is closed at its header deadline, so once it
        # is, this one's header deadline has passed too.
        ((later, later_writer),) = await _open(url, 1, "127.0.0.1")
        async with asyncio.timeout(GIVE_UP_S):
            assert await later.read() == b""
            writer.write(body)
            await writer.drain()
            status = await reader.readline()
        assert status.startswith(b"HTTP/1.1 202"), status
        writer.close()
        later_writer.close()
        await terminate(temporal_dev.client, agent.tenant, agent.name)
