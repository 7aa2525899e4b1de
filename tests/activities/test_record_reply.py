"""A reply is stored once, one event per block in the provider's order, and comes back out of
the substrate as the blocks it was (real Postgres; the compiler renders the snapshot).

Anthropic may answer text after a tool call; the simulator never does, so this reply is
built here, as ``AnthropicProvider.complete`` builds it from the SDK's message.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.substrate.events import tool_event, turn_event
from wakeful.activities.wake import record_reply
from wakeful.compiler import AgentProfile, Goal, GoalKind, Snapshot, WindowPolicy, compile_window
from wakeful.compiler.blocks import Block, BlockKind, Role
from wakeful.contracts import WakeRef
from wakeful.providers.base import ModelReply, ReplyBlock, ToolCall, Usage
from wakeful.substrate.sources import load_blocks
from wakeful.substrate.store import TenantStore
from wakeful.tokenizers import BpeCounter

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
SPELLED = '{"path": "notes/a.md", "limit": 5}'  # keys out of order, spaces: as sent
CALL = ToolCall(id="toolu_1", name="read_file", input=json.loads(SPELLED), arguments=SPELLED)
REPLY = ModelReply(
    text="Let me look.Then I will answer.",
    tool_calls=[CALL],
    blocks=[
        ReplyBlock(type="text", text="Let me look."),
        ReplyBlock(type="tool_use", call=CALL),
        ReplyBlock(type="text", text="Then I will answer."),
    ],
    stop_reason="tool_use",
    usage=Usage(input_tokens=10, output_tokens=9),
    model="claude-sonnet-4-6",
    provider="anthropic",
)


def _wake(ts: TenantStore) -> WakeRef:
    ts.upsert_agent("a1", model="m", provider="anthropic", instructions="be brief", spec={})
    return WakeRef(
        tenant=ts.name, agent="a1", wake_id="w1", session_id="s1", workflow_id="wf", number=1
    )


def test_a_reply_is_one_event_per_block_in_order_and_retries_find_them(
    tenant: TenantStore,
) -> None:
    wake = _wake(tenant)
    stored = record_reply(tenant, wake, 3, REPLY, T0)
    again = record_reply(tenant, wake, 3, REPLY, T0)  # a retried step
    assert [e.id for e in again] == [e.id for e in stored]
    assert [(e.kind, e.role, e.text, e.meta) for e in stored] == [
        ("turn", "assistant", "Let me look.", {"reply": "3"}),
        ("tool_call", "assistant", SPELLED, {"reply": "3"}),
        ("turn", "assistant", "Then I will answer.", {"reply": "3"}),
    ]
    assert stored[1].tool_input == CALL.input and stored[1].tool_call_id == "toolu_1"


def test_a_reply_stored_before_blocks_existed_is_recorded_as_it_was(tenant: TenantStore) -> None:
    old = REPLY.model_copy(update={"blocks": []})
    stored = record_reply(tenant, _wake(tenant), 0, old, T0)
    assert [(e.kind, e.text) for e in stored] == [
        ("turn", "Let me look.Then I will answer."),
        ("tool_call", SPELLED),
    ]


@pytest.mark.parametrize("provider", ["anthropic", "openai_responses"])
def test_the_stored_reply_renders_as_the_blocks_it_was(tenant: TenantStore, provider: str) -> None:
    wake = _wake(tenant)
    tenant.append_events(
        "a1",
        [
            turn_event("ask", "Read it.", at=T0, session_id="s1", wake_id="w1"),
        ],
    )
    record_reply(tenant, wake, 0, REPLY, T0)
    tenant.append_events(
        "a1",
        [
            tool_event(
                "tool_result",
                "result",
                "contents",
                call_id="toolu_1",
                tool="read_file",
                at=T0,
                session_id="s1",
                wake_id="w1",
            ),
        ],
    )
    blocks = load_blocks(
        tenant, "a1", max_event_id=tenant.max_event_id("a1"), as_of=T0, current_wake_id="w2"
    )
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tool = Block(
        id="tool",
        kind=BlockKind.TOOL_SCHEMA,
        text="Read.",
        source="t",
        tool_name="read_file",
        tool_input=schema,
    )
    ask = Block(
        id="ask2",
        kind=BlockKind.TURN,
        text="Thanks.",
        source="t",
        role=Role.USER,
        seq=10**9,
        wake_id="w2",
    )
    snap = Snapshot(
        agent=AgentProfile(tenant=tenant.name, name="a1", model="m", instructions="be brief"),
        as_of=T0,
        current_wake_id="w2",
        blocks=(tool, *blocks, ask),
    )
    goal = Goal(kind=GoalKind.MESSAGE, text="Thanks.")
    request = compile_window(
        snap, goal, WindowPolicy.default(), T0, counter=BpeCounter(), provider=provider
    ).request
    if provider == "anthropic":
        (said,) = [m for m in request["messages"] if m["role"] == "assistant"]
        content = [{k: v for k, v in c.items() if k != "cache_control"} for c in said["content"]]
        assert content == [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": CALL.input},
            {"type": "text", "text": "Then I will answer."},
        ]
    else:
        items = [i for i in request["input"] if i.get("role") not in ("user", "developer")]
        assert items == [
            {"role": "assistant", "content": "Let me look."},
            {
                "type": "function_call",
                "call_id": "toolu_1",
                "name": "read_file",
                "arguments": SPELLED,
            },
            {"role": "assistant", "content": "Then I will answer."},
            {"type": "function_call_output", "call_id": "toolu_1", "output": "contents"},
        ]
