"""Deeply nested JSON to a running ingress: 400 with one line, on every JSON route.

Python's json parser recurses once per level, so ``[[[[...]]]]`` a few thousand levels deep
exhausts the stack; the ingress counts the depth before parsing instead of answering 500.
Sent as the attack sent it, to uvicorn on a real socket: a signed delivery, and an
approval with an approver's token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest

from tests.ops.hooks import post
from tests.ops.ingress_setup import ingress_settings
from tests.ops.webhook_secrets import APPROVER_TOKEN
from wakeful.agents import Agent
from wakeful.worker.ingress_json import MAX_JSON_DEPTH, TooDeep, check_depth

ServeIngress = Callable[..., Awaitable[httpx.AsyncClient]]

DEEP_ARRAY = ("[" * 8000 + "]" * 8000).encode()
DEEP_EVENT = (
    '{"id": "deep-1", "type": "deploy.failed", "payload": {"a": ' + "[" * 8000 + "]" * 8000 + "}}"
).encode()


def _one_line_400(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"] == "too_deep"
    assert "\n" not in answer["message"] and f"{MAX_JSON_DEPTH} levels" in answer["message"]
    return str(answer["message"])


@pytest.mark.parametrize("body", [DEEP_ARRAY, DEEP_EVENT], ids=["array", "event"])
async def test_a_deeply_nested_delivery_is_400(
    serve_ingress: ServeIngress, agent: Agent, body: bytes
) -> None:
    ingress = await serve_ingress(ingress_settings(agent, webhook_max_body_bytes=64 * 1024))
    _one_line_400(await post(ingress, f"/hooks/{agent.name}", body))


@pytest.mark.parametrize("body", [DEEP_ARRAY, b'{"call_id": ' + DEEP_ARRAY + b"}"])
async def test_a_deeply_nested_approval_is_400(
    serve_ingress: ServeIngress, agent: Agent, body: bytes
) -> None:
    ingress = await serve_ingress(ingress_settings(agent))
    headers = {"Authorization": f"Bearer {APPROVER_TOKEN}"}  # an approver's, as it must be
    _one_line_400(await ingress.post(f"/approvals/{agent.name}", content=body, headers=headers))


@pytest.mark.parametrize(
    ("text", "too_deep"),
    [
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), True),
        ('{"a": "' + "[" * 100 + '"}', False),  # brackets inside a string are text
        ('["\\"' + "[" * 100 + '"]', False),  # an escaped quote does not end the string
        ("[" + '{"a": [{"b": []}]}, ' * 200 + "0]", False),  # wide, not deep
    ],
)
def test_the_depth_is_counted_outside_strings(text: str, too_deep: bool) -> None:
    if too_deep:
        with pytest.raises(TooDeep):
            check_depth(text)
    else:
        check_depth(text)
