"""Property-based fuzzing of the ingress: whatever arrives, the answer is never a 5xx.

Requests mix valid and invalid parts — paths, bodies (random bytes, random JSON, valid and
near-valid events, deep nesting), signatures (none, garbage, wrong secret, other tenant,
stale, valid), idempotency headers and methods — against the real Postgres and Temporal.
Every answer must be a 2xx or 4xx with a JSON body, and an error body must never echo a
secret or a stack trace.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections import Counter
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from tests.ops.hooks import terminate
from tests.ops.ingress_setup import MakeIngress, ingress_settings
from tests.ops.webhook_secrets import OTHER_SECRET, SECRET
from wakeful.agents import Agent, AgentRegistry
from wakeful.idempotency import trigger_key
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.ingress import create_app
from wakeful.worker.ingress_auth import signature_header
from wakeful.worker.ingress_events import EVENT_SCHEMA, EventError, parse_event
from wakeful.worker.ingress_receipts import event_digest
from wakeful.worker.serve import register_agent

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_key = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12)
_events = st.fixed_dictionaries(
    {"type": st.sampled_from(["deploy.failed", "x", "bad type", ""])},
    optional={
        "id": _key | st.text(max_size=5),
        "text": st.text(max_size=200),
        "payload": st.dictionaries(st.text(max_size=6), _json, max_size=3),
        "new_session": st.booleans() | st.integers(),
        "extra": _json,
        "user": st.text(max_size=6) | st.integers() | st.text(min_size=120, max_size=140),
    },
)


_valid_events = st.fixed_dictionaries(
    {
        "type": st.from_regex(r"\A[a-z][a-z0-9_.:/-]{0,20}\Z"),
        "id": st.sampled_from(["evt-1", "evt-2", "evt-3"]) | _key,
    },
    optional={
        "text": st.text(max_size=100),
        "payload": st.dictionaries(st.text(max_size=6), _json, max_size=3),
        "new_session": st.booleans(),
        "user": st.from_regex(r"\A[a-z0-9][a-z0-9 @._-]{0,40}[a-z0-9]\Z"),
    },
).filter(lambda e: "text" in e or "payload" in e)


def _nested(depth: int) -> bytes:
    return (
        '{"type": "x", "id": "deep", "payload": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    ).encode()


_bodies = st.one_of(
    _valid_events.map(lambda v: json.dumps(v).encode()),
    _valid_events.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=300),
    _json.map(lambda v: json.dumps(v).encode()),
    _events.map(lambda v: json.dumps(v).encode()),
    st.integers(30, 3000).map(_nested),
    st.just(b"x" * 5000),
)
_header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80)


@st.composite
def deliveries(draw: st.DrawFn, agent: str) -> dict[str, Any]:
    body = draw(_bodies)
    now = int(time.time())
    signing = draw(
        st.sampled_from(
            ["valid"] * 6 + ["none", "garbage", "wrong", "other_tenant", "stale", "rotated"]
        )
    )
    headers: dict[str, str] = {}
    if signing == "garbage":
        headers["X-Wakeful-Signature"] = draw(_header_text)
    elif signing != "none":
        secrets = {"valid": [SECRET], "wrong": ["nope"], "other_tenant": [OTHER_SECRET]}.get(
            signing, ["old-secret", SECRET]
        )
        t = now - 10_000 if signing == "stale" else now
        headers["X-Wakeful-Signature"] = signature_header(secrets, t, body)
    if draw(st.booleans()):
        headers["Idempotency-Key"] = draw(_key | _header_text)
    segment = st.sampled_from([agent] * 6 + ["ghost", "..", "%00", "a" * 300]) | st.text(
        st.characters(min_codepoint=0x30, max_codepoint=0x7A), min_size=1, max_size=10
    )
    shape = draw(st.sampled_from(["agent", "agent", "agent", "tenant", "other"]))
    if shape == "agent":
        path = f"/hooks/{draw(segment)}"
    elif shape == "tenant":
        path = f"/hooks/{draw(segment)}/{draw(segment)}"
    else:
        path = draw(st.sampled_from(["/", "/hooks", "/hooks/", "/healthz", "/readyz", "/x/y"]))
    method = draw(st.sampled_from(["POST"] * 8 + ["GET", "PUT"]))
    return {"method": method, "url": path, "content": body, "headers": headers}


@pytest.fixture
async def fuzz_target(
    temporal_dev: WorkflowEnvironment, agent: Agent, make_ingress: MakeIngress
) -> Any:
    ingress = make_ingress(ingress_settings(agent, task_queue=f"fuzz-{uuid.uuid4().hex[:8]}"))
    yield ingress
    await terminate(temporal_dev.client, agent.tenant, agent.name)


_LEAKS = re.compile(
    r"Traceback|File \"|sqlalchemy|psycopg|" + re.escape(SECRET) + "|" + re.escape(OTHER_SECRET)
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_fuzzed_requests_never_get_a_5xx(
    fuzz_target: httpx.AsyncClient, agent: Agent, data: st.DataObject
) -> None:
    request = data.draw(deliveries(agent.name))
    response = await fuzz_target.request(**request)
    event(f"status {response.status_code}")
    assert response.status_code < 500, (request, response.status_code, response.text)
    body = response.json()
    if response.status_code >= 400:
        assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str)
        assert not _LEAKS.search(response.text), response.text


_validator = jsonschema.Draft202012Validator(EVENT_SCHEMA)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_valid_events, _events, st.dictionaries(st.text(max_size=8), _json, max_size=5)))
def test_the_published_schema_and_the_validator_agree(candidate: dict[str, Any]) -> None:
    """EVENT_SCHEMA is the contract senders read; the ingress must accept exactly that."""
    # Python's re (which jsonschema uses) lets `$` match before a final newline, ECMA-262
    # (what JSON Schema specifies, and what the ingress implements) does not.
    fields = ("id", "type", "user")
    strings = [v for v in (candidate.get(f) for f in fields) if isinstance(v, str)]
    if any(s.endswith("\n") for s in strings):
        return
    by_schema = _validator.is_valid(candidate)
    event(f"valid={by_schema}")
    try:
        parse_event(json.dumps(candidate).encode())
        by_ingress = True
    except EventError:
        by_ingress = False
    assert by_schema == by_ingress, (candidate, list(_validator.iter_errors(candidate)))


# --- the live stack -------------------------------------------------------------------------
#
# Deliveries drawn by hypothesis go through the ingress app to the real Postgres and Temporal
# dev server, with a worker serving two agents on the provider simulator. Each example sends
# a few deliveries at once (often several under one key, with the same or another body).
# Then: no answer was a 5xx; a probe trigger to each agent wakes it (nothing stalled); and
# every accepted delivery woke its agent exactly once, with every duplicate the same event.

_NOW = 1_767_225_600
_KEYS = [f"k{i}" for i in range(6)]
_odd_text = st.one_of(
    st.text(max_size=40),
    st.text(max_size=40),
    st.text(max_size=40),
    st.lists(
        st.sampled_from(["\x00", "\ud800", "\udfff", "\ufeff", "é", "😀", "\u202e", "a", " "]),
        max_size=8,
    ).map("".join),
)
_live_events = st.fixed_dictionaries(
    {"type": st.sampled_from(["deploy.failed", "ticket.opened"]), "text": _odd_text},
    optional={
        "payload": st.dictionaries(_odd_text, _odd_text | st.integers(), max_size=2),
        "new_session": st.booleans(),
    },
)


@st.composite
def _live_delivery(draw: st.DrawFn, agents: list[str], key: str) -> dict[str, Any]:
    body_doc = draw(_live_events)
    raw = json.dumps(body_doc).encode()  # lone surrogates travel as \ud800 escapes
    raw = draw(
        st.sampled_from(["utf-8"] * 8 + ["bom", "utf-16"]).map(
            lambda how: {"bom": b"\xef\xbb\xbf" + raw, "utf-16": raw.decode().encode("utf-16")}.get(
                how, raw
            )
        )
    )
    name = draw(st.sampled_from([*agents * 6, "ghost", "bad:name", "x" * 70, "a%00b"]))
    signing = draw(st.sampled_from(["valid"] * 8 + ["none", "stale", "garbage"]))
    headers = {"Idempotency-Key": key}
    if signing == "valid":
        headers["X-Wakeful-Signature"] = signature_header(SECRET, _NOW, raw)
    elif signing == "stale":
        headers["X-Wakeful-Signature"] = signature_header(SECRET, _NOW - 3600, raw)
    elif signing == "garbage":
        headers["X-Wakeful-Signature"] = draw(_header_text)
    return {"agent": name, "body": raw, "headers": headers}


@st.composite
def _live_batch(draw: st.DrawFn, agents: list[str]) -> list[dict[str, Any]]:
    key = draw(st.sampled_from(_KEYS) | _key)
    same_key = draw(st.lists(_live_delivery(agents, key), min_size=1, max_size=4))
    others = draw(
        st.lists(st.sampled_from(_KEYS).flatmap(lambda k: _live_delivery(agents, k)), max_size=2)
    )
    return same_key + others


async def test_fuzzed_deliveries_on_the_live_stack_never_stall_or_lose_an_event(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent
) -> None:
    other = Agent(
        name="pager", instructions="Answer briefly.", workdir=agent.workdir, tenant=agent.tenant
    )
    register_agent(store.tenant(agent.tenant), other)
    agents = [agent, other]
    names = [a.name for a in agents]
    client = temporal_dev.client
    loop = asyncio.get_running_loop()
    accepted: dict[tuple[str, str], str] = {}  # (agent, key) -> the accepted event's digest
    duplicates: list[tuple[str, str, str]] = []
    statuses: Counter[int] = Counter()

    async def temporal() -> Client:
        return client

    async with running_worker(client, store, AgentRegistry(agents), sim, uuid.uuid4().hex) as q:
        app = create_app(
            ingress_settings(agent, task_queue=q), temporal, store, clock=lambda: float(_NOW)
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ingress") as ingress:

            async def send(batch: list[dict[str, Any]]) -> list[httpx.Response]:
                return await asyncio.gather(
                    *(
                        ingress.post(
                            f"/hooks/{d['agent']}", content=d["body"], headers=d["headers"]
                        )
                        for d in batch
                    )
                )

            @settings(
                max_examples=60,
                derandomize=True,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(st.data())
            def fuzz(data: st.DataObject) -> None:
                batch = data.draw(_live_batch(names))
                answers = asyncio.run_coroutine_threadsafe(send(batch), loop).result(120)
                for delivery, answer in zip(batch, answers, strict=True):
                    statuses[answer.status_code] += 1
                    assert answer.status_code < 500, (delivery, answer.text)
                    if answer.status_code in (200, 202):
                        key = delivery["headers"]["Idempotency-Key"]
                        digest = event_digest(parse_event(delivery["body"]))
                        where = (delivery["agent"], key)
                        if answer.status_code == 202:
                            assert where not in accepted, f"{where} accepted twice"
                            accepted[where] = digest
                        else:
                            duplicates.append((*where, digest))

            await asyncio.to_thread(fuzz)
            # Nothing stalled: a probe to each agent wakes it, after everything before it.
            for a in agents:
                probe = message(f"probe {a.name}")
                result = await asyncio.wait_for(wake(client, a.runtime(), probe, q), 180)
                assert result.status == "done", (a.name, result)

    assert statuses[202] >= 5 and statuses[409] + statuses[200] >= 1, statuses
    ts = store.tenant(agent.tenant)
    for name in names:
        keys = [w.idempotency_key for w in ts.wakes(name)]
        assert len(keys) == len(set(keys)), f"{name} woke twice for one key"
        woken = set(keys)
        for (target, key), _ in accepted.items():
            if target == name:
                assert trigger_key("webhook", key) in woken, f"accepted {key!r} never woke {name}"
    for target, key, digest in duplicates:
        assert accepted.get((target, key)) == digest, f"duplicate {key!r} was another event"
