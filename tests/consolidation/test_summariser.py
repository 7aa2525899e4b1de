"""The simulator's summariser answers consolidation prompts, and nothing else, like a
careful model: the gate judges it as it judges any model."""

from __future__ import annotations

import uuid

import pytest

from tests.consolidation.helpers import tool_pair, turn
from wakeful.consolidation.gate import GateInput, run_gate
from wakeful.consolidation.prompt import build_prompt, request_body
from wakeful.providers.registry import build_provider
from wakeful.testing.simulator.script import Conversation, planner_reply
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.testing.simulator.summarise import summary_text

SPAN = [
    turn(1, "Good morning! How are the dashboards today?"),
    turn(2, "Calm so far, the queue drains steadily after the peak.", role="assistant"),
    turn(3, "Never restart the ledger during month-end close. Thanks for watching it."),
    turn(4, "Understood, I will keep that in mind.", role="assistant"),
    *tool_pair(5, "c1", "2026-03-02T09:00:01Z INFO ledger latency_ms=88\nledger version is v3.2.1"),
    turn(7, "FYI, the staging database port is 5433. Have a good lunch."),
    turn(8, "The ledger runs v3.2.1 and p99 is 88 ms.", role="assistant"),
]


def test_only_consolidation_prompts_get_a_summary() -> None:
    assert summary_text("You said: hello") is None
    assert planner_reply(Conversation(last_user_text="hello")).text == "You said: hello"


def test_the_summary_keeps_what_carries_weight_and_passes_the_gate() -> None:
    prompt = build_prompt(1, SPAN, [("LB-3", "Never restart the ledger during month-end close.")])
    text = summary_text(prompt)
    assert text is not None
    lines = text.split("\n")
    assert lines[0] == "Summary (turn span) of e1..e8:"
    assert "- [LB-3] Never restart the ledger during month-end close." in lines
    assert "- FYI, the staging database port is 5433." in lines
    assert "- ledger version is v3.2.1" in lines  # a fact from the tool output
    assert not any("morning" in x or "lunch" in x or "latency_ms" in x for x in lines)
    assert len(text) < len(prompt) / 2
    assert run_gate(GateInput(items=tuple(SPAN), promoted_ids=("LB-3",)), text).passed


def test_superseded_values_are_marked_for_their_subject_only() -> None:
    span = [
        turn(1, "FYI, the staging database port is 5433. FYI, the canary database port is 5433.")
    ]
    prompt = build_prompt(1, span, [], [("staging database port", "5433", "6543")])
    text = summary_text(prompt) or ""
    assert (
        "- FYI, the staging database port is 5433. [superseded: staging database port is now 6543]"
        in text
    )
    assert "- FYI, the canary database port is 5433.\n" in text + "\n"


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai-responses"])
async def test_the_simulator_summarises_through_every_sdk(
    sim: SimulatorServer, provider: str
) -> None:
    base = sim.base_url if provider == "anthropic" else sim.openai_base_url
    client = build_provider(provider, api_key=uuid.uuid4().hex, base_url=base)
    try:
        prompt = build_prompt(1, SPAN, [])
        reply = await client.complete(request_body(provider, "claude-sonnet-4-6", prompt, 512))
    finally:
        await client.aclose()  # type: ignore[attr-defined]
    assert reply.text.startswith("Summary (turn span) of e1..e8:")
