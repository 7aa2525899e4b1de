"""The model's turns come back to the provider as the provider sent them, after the wake has
become history: per provider, through its real SDK, a worker on the Temporal dev server,
real Postgres and the simulator, which records every body it received and answered.

Wake 1: the model answers text and two tool calls, then (after the results) text. Wake 2:
its request holds wake 1 as history. The assistant turns in that request (and in wake 1's
second request, while the wake was current) are the replies the simulator sent, block for
block: the same text, the same call ids, names and arguments.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.compiler.helpers import without_cache_markers
from tests.e2e.harness import demo_scout, message, running_worker
from wakeful.agents import AgentRegistry
from wakeful.demo.agent import seed_workspace
from wakeful.substrate.store import Store
from wakeful.testing.simulator.core import SimResponse, Simulator
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

MODELS = {
    "anthropic": "claude-sonnet-4-6",
    "openai-chat": "gpt-4o-mini",
    "openai-responses": "gpt-4o-mini",
}
SCRIPT = [
    {
        "text": "Let me read both files first.",
        "tool_calls": [
            {"name": "read_file", "input": {"path": "README.md"}},
            {"name": "read_file", "input": {"path": "docs/design.md"}},
        ],
    },
    {"text": "Both files describe Lighthouse."},
    {"text": "Nothing else for now."},
]


class RecordingSimulator(Simulator):
    """The simulator, keeping each answered request body and its reply, per API key."""

    def __init__(self) -> None:
        super().__init__()
        self.traffic: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        self._guard = threading.Lock()

    def _keep(self, headers: Mapping[str, str], body: Any, answer: SimResponse) -> SimResponse:
        status, out, _ = answer
        key = headers.get("x-api-key") or headers.get("authorization", "")[len("Bearer ") :]
        if status == 200 and isinstance(body, dict):
            with self._guard:
                self.traffic[key].append((copy.deepcopy(body), copy.deepcopy(out)))
        return answer

    def anthropic_messages(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        return self._keep(headers, body, super().anthropic_messages(headers, body))

    def openai_chat(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        return self._keep(headers, body, super().openai_chat(headers, body))

    def openai_responses(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        return self._keep(headers, body, super().openai_responses(headers, body))


@pytest.fixture(scope="module")
def recording_sim() -> Iterator[SimulatorServer]:
    server = SimulatorServer()
    recorder = RecordingSimulator()
    server.simulator = recorder  # served from start(): create_app(server.simulator)
    with server:
        yield server


def _sent(provider: str, out: dict[str, Any]) -> list[Any]:
    """The reply the simulator sent, as the blocks a replay must carry."""
    if provider == "anthropic":
        return [out["content"]]
    if provider == "openai-chat":
        msg = out["choices"][0]["message"]
        return [(msg["content"], msg.get("tool_calls"))]
    blocks: list[Any] = []
    for item in out["output"]:
        if item["type"] == "message":
            blocks.append(("text", "".join(p["text"] for p in item["content"])))
        else:
            blocks.append(("call", item["call_id"], item["name"], item["arguments"]))
    return blocks


def _replayed(provider: str, body: dict[str, Any]) -> list[Any]:
    """The assistant turns of a request, as blocks comparable with :func:`_sent`."""
    if provider == "anthropic":
        return [
            without_cache_markers(m["content"])
            for m in body["messages"]
            if m["role"] == "assistant"
        ]
    if provider == "openai-chat":
        said = [m for m in body["messages"] if m["role"] == "assistant"]
        return [(m["content"], m.get("tool_calls")) for m in said]
    blocks: list[Any] = []
    for item in body["input"]:
        if item.get("type") == "function_call":
            blocks.append(("call", item["call_id"], item["name"], item["arguments"]))
        elif item.get("role") == "assistant":
            blocks.append(("text", item["content"]))
    return blocks


@pytest.mark.parametrize("provider", list(MODELS))
async def test_replayed_assistant_turns_equal_the_received_ones_after_the_wake(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    recording_sim: SimulatorServer,
    tmp_path: Path,
    provider: str,
) -> None:
    agent = demo_scout(
        seed_workspace(tmp_path / "ws"),
        f"e2e-{uuid.uuid4().hex[:10]}",
        provider=provider,
        model=MODELS[provider],
    )
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    recorder = recording_sim.simulator
    assert isinstance(recorder, RecordingSimulator)
    recorder.set_script(Script.parse(SCRIPT), scope=key)
    client, rt = temporal_dev.client, agent.runtime()
    async with running_worker(client, store, AgentRegistry([agent]), recording_sim, key) as q:
        one = await wake(client, rt, message("Please read README.md and docs/design.md."), q)
        two = await wake(client, rt, message("Thanks. Anything else?"), q)
    assert (one.model_calls, one.tool_calls, two.model_calls) == (2, 2, 1)
    assert two.session_id == one.session_id  # wake 1 is wake 2's history

    (first, r0), (second, r1), (third, _) = recorder.traffic[key]
    sent = _sent(provider, r0) + _sent(provider, r1)
    assert _replayed(provider, first) == []
    # in the wake that received it, and after that wake became history
    assert _replayed(provider, second) == _sent(provider, r0)
    assert _replayed(provider, third) == sent
    assert "README.md" in str(sent) and "docs/design.md" in str(sent)  # the calls are there
