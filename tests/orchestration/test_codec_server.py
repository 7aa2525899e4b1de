"""The codec server: ``temporal workflow show --detailed --codec-endpoint`` prints a real
wake's payloads as readable JSON fields, where without it they are opaque compressed bytes;
the token and the browser's cross-origin rules are enforced."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import subprocess
import threading
import time
import uuid
import zlib
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from google.protobuf.json_format import MessageToDict
from temporalio.api.common.v1 import Payload
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import worker
from wakeful.agents import Agent
from wakeful.errors import ConfigError
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import DICTIONARY, ENCODING, DeflateCodec
from wakeful.worker.codec_server import MAX_DECODED_BYTES, check_exposure, codec_app
from wakeful.workflows.agent import workflow_id

TOKEN = "s3cret-codec-token"
ASK = "Read the notes about the tangerine migration plan"


@contextlib.contextmanager
def _serving(token: str | None, **limits: int) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = codec_app(token=token, **limits)
    server = uvicorn.Server(uvicorn.Config(app, log_level="error"))
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
        # Refused (401), the command retries the codec until its deadline, then fails having
        # decoded nothing; how soon it gives up changes nothing of that (Temporal's default
        # deadline, 10 s, would be all this test's time).
        refused = await asyncio.to_thread(
            _show, address, wf, "--codec-endpoint", url, "--command-timeout", "2s"
        )
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


def _bomb(inflated: int) -> dict[str, list[dict[str, object]]]:
    """A wz2 payload of ``inflated`` zero bytes, deflated (about 1000:1), as /decode takes it."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
    chunk, packed = bytes(1 << 20), []
    for _ in range(inflated >> 20):
        packed.append(deflate.compress(chunk))
    packed.append(deflate.flush())
    data = base64.b64encode(b"".join(packed)).decode()
    return {
        "payloads": [{"metadata": {"encoding": base64.b64encode(ENCODING).decode()}, "data": data}]
    }


def test_a_deflate_bomb_is_refused_before_it_is_inflated() -> None:
    """What a page elsewhere sent a codec server running without a token: 347 kB of text/plain
    (no preflight) that inflates to 256 MiB. Not JSON by its type: 415 unread. Sent as JSON,
    it inflates past the server's limit: 413, having inflated at most that much."""
    body = json.dumps(_bomb(256 << 20)).encode()
    assert 300_000 < len(body) < 400_000
    cross_site = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    with _serving(None) as url:
        plain = httpx.post(f"{url}/decode", content=body, headers=cross_site, timeout=60)
        as_json = httpx.post(
            f"{url}/decode", content=body, headers={"Content-Type": "application/json"}, timeout=60
        )
        assert httpx.get(f"{url}/healthz").status_code == 200  # it is still there
    assert plain.status_code == 415, plain.text
    assert "application/json" in plain.json()["detail"]
    assert as_json.status_code == 413, as_json.text
    assert f"past {MAX_DECODED_BYTES} bytes" in as_json.json()["detail"]


def test_what_one_request_may_inflate_is_bounded_at_the_limit() -> None:
    """The limit is on what a request's payloads inflate to together: a batch inflating to
    exactly the limit decodes, one byte more is refused."""
    one = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"tangerine " * 5000 + b'"')
    size = len(one.SerializeToString(deterministic=True))
    packed = asyncio.run(DeflateCodec().encode([one, one]))
    assert all(p.metadata["encoding"] == ENCODING for p in packed)
    body = {"payloads": [MessageToDict(p) for p in packed]}
    with _serving(None, max_decoded_bytes=2 * size) as url:
        fits = httpx.post(f"{url}/decode", json=body)
    with _serving(None, max_decoded_bytes=2 * size - 1) as url:
        over = httpx.post(f"{url}/decode", json=body)
    assert fits.status_code == 200, fits.text
    assert [base64.b64decode(p["data"]) for p in fits.json()["payloads"]] == [one.data] * 2
    assert over.status_code == 413 and f"past {2 * size - 1} bytes" in over.json()["detail"]


def test_a_body_is_bounded_as_it_is_read() -> None:
    """Over the limit is refused whether it says so (Content-Length) or not (chunked)."""
    big = json.dumps({"payloads": [], "pad": "x" * 5000}).encode()

    def chunked() -> Iterator[bytes]:
        for at in range(0, len(big), 1000):
            yield big[at : at + 1000]

    json_type = {"Content-Type": "application/json"}
    with _serving(None, max_body_bytes=4096) as url:
        announced = httpx.post(f"{url}/decode", content=big, headers=json_type)
        streamed = httpx.post(f"{url}/decode", content=chunked(), headers=json_type)
        small = httpx.post(f"{url}/encode", json={"payloads": []})
    assert announced.status_code == 413 and "over 4096 bytes" in announced.json()["detail"]
    assert streamed.status_code == 413, streamed.text
    assert small.status_code == 200 and small.json() == {"payloads": []}


@pytest.mark.parametrize("path", ["/decode", "/encode"])
def test_json_nested_too_deep_is_a_400(path: str) -> None:
    nested = "[" * 8000 + "]" * 8000
    in_payloads = '{"payloads": ' + "[" * 8000 + "]" * 8000 + "}"
    json_type = {"Content-Type": "application/json"}
    with _serving(None) as url:
        answers = [
            httpx.post(f"{url}{path}", content=body, headers=json_type)
            for body in (nested, in_payloads)
        ]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert answer.json()["detail"]
