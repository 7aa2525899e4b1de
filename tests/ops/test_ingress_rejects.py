"""Every bad delivery gets the status that names its fault, and nothing reaches Temporal.

"Wakes nothing" is checked at the source: the agent's workflow was never started (no
signal, no start) and no wake row exists.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.ops import hooks
from tests.ops.hooks import event, signals, terminate
from tests.ops.ingress_setup import MakeIngress, ingress_settings
from tests.ops.webhook_secrets import OTHER_SECRET, OTHER_TENANT, SECRET
from wakeful.agents import Agent
from wakeful.substrate.store import Store

# The ingress here reads this clock, and deliveries are signed by it: whether a timestamp
# is inside the replay window never depends on how long a test took.
NOW = 1_767_225_600.0


def _now() -> float:
    return NOW


def signed(body: bytes, secrets: str | list[str] = SECRET, *, at: float = NOW) -> dict[str, str]:
    return hooks.signed(body, secrets, at=at)


async def post(
    client: httpx.AsyncClient, path: str, body: bytes, secrets: str | list[str] = SECRET, **kw: Any
) -> httpx.Response:
    return await hooks.post(client, path, body, secrets, **({"at": NOW} | kw))


@pytest.fixture
async def ingress(make_ingress: MakeIngress, agent: Agent) -> httpx.AsyncClient:
    return make_ingress(ingress_settings(agent), clock=_now)


@pytest.fixture(autouse=True)
async def nothing_woken(
    temporal_dev: WorkflowEnvironment, store: Store, agent: Agent
) -> AsyncIterator[None]:
    """After each test here: the agent's workflow was never started and it has no wake."""
    yield
    found = await signals(temporal_dev.client, agent.tenant, agent.name)
    await terminate(temporal_dev.client, agent.tenant, agent.name)
    assert found is None, f"{found} trigger(s) reached Temporal"
    assert store.tenant(agent.tenant).wakes(agent.name) == []


def _error(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error", "message"}
    text = json.dumps(body)
    for leak in (SECRET, OTHER_SECRET, "Traceback", "sqlalchemy", "postgresql", "psycopg"):
        assert leak not in text
    return str(body["error"])


async def test_missing_signature_is_401(ingress: httpx.AsyncClient, agent: Agent) -> None:
    response = await ingress.post(f"/hooks/{agent.name}", content=event())
    assert response.status_code == 401
    assert _error(response) == "missing_signature"
    assert "X-Wakeful-Signature" in response.json()["message"]


@pytest.mark.parametrize(
    "header",
    ["v1=" + "a" * 64, "t=abc,v1=" + "a" * 64, "t=1,t=2,v1=" + "a" * 64, "t=1,v1=xyz", "garbage"],
)
async def test_malformed_signature_is_401(
    ingress: httpx.AsyncClient, agent: Agent, header: str
) -> None:
    response = await ingress.post(
        f"/hooks/{agent.name}", content=event(), headers={"X-Wakeful-Signature": header}
    )
    assert response.status_code == 401
    assert _error(response) == "malformed_signature"


async def test_bad_signature_is_401(ingress: httpx.AsyncClient, agent: Agent) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", event(), "not-the-secret")
    assert response.status_code == 401
    assert _error(response) == "bad_signature"


async def test_signature_over_another_body_is_401(ingress: httpx.AsyncClient, agent: Agent) -> None:
    headers = signed(event(text="harmless"))
    response = await ingress.post(
        f"/hooks/{agent.name}", content=event(text="tampered"), headers=headers
    )
    assert response.status_code == 401
    assert _error(response) == "bad_signature"


@pytest.mark.parametrize("offset", [-301, -3600, 301, 3600])
async def test_timestamp_outside_the_replay_window_is_401(
    ingress: httpx.AsyncClient, agent: Agent, offset: int
) -> None:
    """A correctly signed but old (or future) delivery: a captured request replayed later."""
    response = await post(ingress, f"/hooks/{agent.name}", event(), at=NOW + offset)
    assert response.status_code == 401
    assert _error(response) == "stale_signature"
    assert "300 s" in response.json()["message"]


async def test_another_tenants_secret_is_403(ingress: httpx.AsyncClient, agent: Agent) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", event(), OTHER_SECRET)
    assert response.status_code == 403
    assert _error(response) == "wrong_tenant"


async def test_tenant_without_a_secret_is_401(ingress: httpx.AsyncClient, agent: Agent) -> None:
    response = await post(ingress, f"/hooks/nobody/{agent.name}", event())
    assert response.status_code == 401
    assert _error(response) == "no_secret"


async def test_oversized_body_is_413_from_content_length(
    ingress: httpx.AsyncClient, agent: Agent
) -> None:
    body = event(text="x" * 5000)  # the limit in these tests is 4096 bytes
    response = await post(ingress, f"/hooks/{agent.name}", body)
    assert response.status_code == 413
    assert _error(response) == "payload_too_large"


async def test_oversized_body_is_413_when_streamed_without_length(
    ingress: httpx.AsyncClient, agent: Agent
) -> None:
    body = event(text="x" * 5000)
    read: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1000):
            read.append(start)
            yield body[start : start + 1000]

    response = await ingress.post(f"/hooks/{agent.name}", content=chunks(), headers=signed(body))
    assert response.status_code == 413
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert _error(response) == "payload_too_large"


async def test_a_body_under_the_limit_that_makes_an_oversized_trigger_is_413(
    make_ingress: MakeIngress, agent: Agent
) -> None:
    """The agent reads the payload indented: 60,000 numbers 31 levels deep are ~120 KB of
    body but ~2 MB of trigger, over MAX_TRIGGER_BYTES. Refused, not a 500 from the
    client's own check, and nothing is woken (see the autouse fixture)."""
    ingress = make_ingress(ingress_settings(agent, webhook_max_body_bytes=200_000), clock=_now)
    inner = "[" + ",".join("0" * 60_000) + "]"
    payload = '{"a": ' + "[" * 28 + inner + "]" * 28 + "}"
    body = ('{"id": "wide-1", "type": "deploy.failed", "payload": ' + payload + "}").encode()
    assert len(body) < 200_000
    response = await post(ingress, f"/hooks/{agent.name}", body)
    assert response.status_code == 413, response.text
    assert _error(response) == "payload_too_large"
    assert "MAX_TRIGGER_BYTES" in response.json()["message"]


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"", '{"text": "caf\xe9"}'.encode("latin-1"), b'{"a": NaN}'],
)
async def test_bad_json_is_422(ingress: httpx.AsyncClient, agent: Agent, body: bytes) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", body)
    assert response.status_code == 422
    assert _error(response) == "bad_json"


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"id": "e1", "type": "x"}, "'text', 'payload'"),
        ({"id": "e1", "type": "x", "txt": "typo"}, "txt"),
        ({"id": "e1", "type": "has space", "text": "t"}, "type"),
        ({"id": "e1", "text": "t"}, "type"),
        ({"id": "e1", "type": "x", "text": 5}, "text"),
        ({"id": "e1", "type": "x", "payload": [1]}, "payload"),
        ({"id": "e1", "type": "x", "text": None}, "text"),
        ({"type": "x", "text": "no key"}, "idempotency key"),
        ([1, 2], "JSON object"),
    ],
)
async def test_invalid_event_is_422_naming_the_field(
    ingress: httpx.AsyncClient, agent: Agent, body: object, names: str
) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", json.dumps(body).encode())
    assert response.status_code == 422
    assert _error(response) == "invalid_event"
    assert names in response.json()["message"]


@pytest.mark.parametrize(
    ("user", "names"),
    [
        ("", "user: is empty"),
        ("a" * 129, "user: is 129 characters; at most 128"),
        ("al\nice", "user: 'al\\nice' is invalid"),
        ("bob\u0007", "is invalid: use 1-128 printable characters"),
        (" bob", "is invalid"),
        (7, "user: Input should be a valid string"),
    ],
)
async def test_an_invalid_user_is_422_in_one_line(
    ingress: httpx.AsyncClient, agent: Agent, user: object, names: str
) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", event(user=user))
    assert response.status_code == 422, response.text
    assert _error(response) == "invalid_event"
    message = response.json()["message"]
    assert names in message and "\n" not in message, message


async def test_idempotency_header_and_body_id_must_agree(
    ingress: httpx.AsyncClient, agent: Agent
) -> None:
    response = await post(
        ingress, f"/hooks/{agent.name}", event("evt-1"), headers={"Idempotency-Key": "evt-2"}
    )
    assert response.status_code == 422
    assert "differ" in response.json()["message"]


async def test_unknown_agent_is_404(ingress: httpx.AsyncClient, agent: Agent) -> None:
    response = await post(ingress, "/hooks/no-such-agent", event())
    assert response.status_code == 404
    assert _error(response) == "unknown_agent"


async def test_unknown_agent_needs_a_valid_signature_first(
    ingress: httpx.AsyncClient, agent: Agent
) -> None:
    """Agent names are not discoverable: an unauthenticated probe learns only 401."""
    response = await post(ingress, "/hooks/no-such-agent", event(), "guess")
    assert response.status_code == 401


async def test_an_agent_of_another_tenant_is_404(ingress: httpx.AsyncClient, agent: Agent) -> None:
    """``acme`` signs correctly for its own URL, but this agent is not acme's."""
    response = await post(ingress, f"/hooks/{OTHER_TENANT}/{agent.name}", event(), OTHER_SECRET)
    assert response.status_code == 404
    assert _error(response) == "unknown_agent"


async def test_unknown_route_and_method_answer_json(ingress: httpx.AsyncClient) -> None:
    missing = await ingress.post("/nowhere", content=b"{}")
    assert (missing.status_code, _error(missing)) == (404, "not_found")
    wrong = await ingress.get("/hooks/scout")
    assert (wrong.status_code, _error(wrong)) == (405, "method_not_allowed")


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/hooks/ops:pager", "unknown_agent"),
        ("/hooks/-scout", "unknown_agent"),
        ("/hooks/" + "a" * 65, "unknown_agent"),
        ("/hooks/sc%00out", "unknown_agent"),
        ("/hooks/corp:ops/pager", "unknown_tenant"),
        ("/hooks/co%20rp/pager", "unknown_tenant"),
    ],
)
async def test_an_invalid_name_in_the_url_is_404_before_anything_else(
    ingress: httpx.AsyncClient, path: str, code: str
) -> None:
    """Names follow wakeful.names everywhere; a URL with an invalid one names no agent, so it
    is answered at once, signed or not, with one line saying what is wrong."""
    for headers in ({}, signed(event())):
        response = await ingress.post(path, content=event(), headers=headers)
        assert response.status_code == 404, response.text
        assert _error(response) == code
        message = response.json()["message"]
        assert "invalid" in message and "\n" not in message


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b"\xef\xbb\xbf" + event(), "byte order mark"),
        (event().decode().encode("utf-16"), "UTF-16"),
        (event().decode().encode("utf-16-be"), "UTF-16 or UTF-32"),
        (event().decode().encode("utf-32"), "UTF-32"),
    ],
)
async def test_a_body_that_is_not_utf8_is_422_naming_the_encoding(
    ingress: httpx.AsyncClient, agent: Agent, body: bytes, names: str
) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", body)
    assert response.status_code == 422, response.text
    assert _error(response) == "bad_json"
    assert names in response.json()["message"] and "UTF-8" in response.json()["message"]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"id": "e1", "type": "x", "text": "a\\ud800b"}', "text"),
        (b'{"id": "e1", "type": "x", "payload": {"k\\udfff": 1}}', "a key in payload"),
        (b'{"id": "e1", "type": "x", "payload": {"a": ["ok", "\\udc00"]}}', "payload.a[1]"),
    ],
)
async def test_a_lone_surrogate_is_422_naming_where(
    ingress: httpx.AsyncClient, agent: Agent, body: bytes, where: str
) -> None:
    response = await post(ingress, f"/hooks/{agent.name}", body)
    assert response.status_code == 422, response.text
    assert _error(response) == "invalid_event"
    assert response.json()["message"].startswith(f"{where} holds a lone UTF-16 surrogate")
