"""The codec server: ``temporal workflow show --detailed --codec-endpoint`` prints a real
wake's payloads as readable JSON fields, where without it they are opaque compressed bytes;
the token and the browser's cross-origin rules are enforced."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.errors import ConfigError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec_server import check_exposure, codec_app
from wakeful.workflows.agent import workflow_id

TOKEN = "s3cret-codec-token"
ASK = "Read the notes about the tangerine migration plan"


@contextlib.contextmanager
def _serving(token: str | None) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(codec_app(token=token), log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30  # a failure bound, not the thing under test
    while not server.started:
        assert time.monotonic() < deadline, "the codec server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def _temporal() -> str:
    from wakeful.worker.stack import temporal_binary

    return temporal_binary()


def _show(address: str, wf: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_temporal(), "workflow", "show", "-w", wf, "--address", address, "--detailed", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_the_temporal_cli_reads_a_real_history_through_it(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    async with worker(temporal_dev.client, store, [agent], osim) as (queue, _):
        done = await wake(
            temporal_dev.client, agent.runtime(), message(ASK, uuid.uuid4().hex), queue
        )
    assert done.status == "done"
    address = temporal_dev.client.service_client.config.target_host
    wf = workflow_id(agent.tenant, agent.name)
    plain = await asyncio.to_thread(_show, address, wf)
    assert plain.returncode == 0, plain.stderr
    assert ASK not in plain.stdout  # compressed: opaque without the codec
    assert base64.b64encode(b"wz2").decode() in plain.stdout
    with _serving(TOKEN) as url:
        decoded = await asyncio.to_thread(
            _show, address, wf, "--codec-endpoint", url, "--codec-auth", TOKEN
        )
        refused = await asyncio.to_thread(_show, address, wf, "--codec-endpoint", url)
    assert decoded.returncode == 0, decoded.stderr
    # The wake's trigger and its answer, as the fields of their JSON.
    assert f"goal.text: {ASK}" in decoded.stdout
    assert "answer: " in decoded.stdout and base64.b64encode(b"wz2").decode() not in decoded.stdout
    assert ASK not in refused.stdout  # without the token, nothing is decoded


def test_the_token_and_the_browser_origin_are_enforced() -> None:
    with _serving(TOKEN) as url:
        body = {"payloads": [{"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "e30="}]}
        assert httpx.post(f"{url}/decode", json=body).status_code == 401
        ok = httpx.post(f"{url}/decode", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json() == body  # not ours: passed through
        bad = httpx.post(f"{url}/decode", json={"nope": 1}, headers={"Authorization": TOKEN})
        assert bad.status_code == 400 and "payloads" in bad.json()["detail"]
        preflight = {
            "Origin": "http://localhost:8233",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-namespace,authorization",
        }
        allowed = httpx.options(f"{url}/decode", headers=preflight)
        assert allowed.headers.get("access-control-allow-origin") == "http://localhost:8233"
        other = httpx.options(f"{url}/decode", headers=preflight | {"Origin": "http://evil.test"})
        assert "access-control-allow-origin" not in other.headers


def test_serving_beyond_loopback_needs_a_token() -> None:
    check_exposure("127.0.0.1", None)
    check_exposure("0.0.0.0", TOKEN)
    with pytest.raises(ConfigError, match="set --token"):
        check_exposure("0.0.0.0", None)
