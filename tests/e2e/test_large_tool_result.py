"""A tool result too long for any window no longer ends a wake: in a real wake (dev server,
Postgres, the provider simulator scripting the calls), a 1.8 MB result is stored whole, its
event and the window get its head and tail with a note naming the omitted characters and a
handle, the built-in ``read_result`` tool joins the window's tools, and the model reads on
from the offset the note gives."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message, running_worker
from wakeful import Agent, AgentRegistry
from wakeful.compiler.blocks import content_hash
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.tokenizers import BpeCounter
from wakeful.tool_results import PAGE_CHARS, page
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

LOG = "".join(f"{n:07d} checkout p99 {200 + n % 97} ms retries {n % 7}\n" for n in range(48_000))


async def test_a_huge_result_is_shown_in_part_and_read_in_pages(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    assert len(LOG) > 1_800_000
    agent = Agent(name="reader", instructions="Read logs.", tenant=f"big-{uuid.uuid4().hex[:8]}")

    @agent.tool
    def dump_log() -> str:
        """The whole checkout log."""
        return LOG

    handle = content_hash(LOG)  # what the stored result is addressed by
    limit = agent.get_tool("dump_log").max_result_chars
    offset = limit * 3 // 4
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "dump_log", "input": {}}]},
        {"tool_calls": [{"name": "read_result", "input": {"handle": handle, "offset": offset}}]},
        {"text": "Read it."},
    ]
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse(steps), scope=key)
    async with running_worker(temporal_dev.client, store, AgentRegistry([agent]), sim, key) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("how is checkout?"), q)

    assert (result.status, result.model_calls, result.tool_calls) == ("done", 3, 2)
    ts = store.tenant(agent.tenant)
    shown, paged = [
        e for e in ts.events(agent.name, wake_id=result.wake_id) if e.kind == "tool_result"
    ]
    assert shown.meta["capped"] == str(len(LOG)) and ts.get_blob(shown.meta["result_blob"]) == LOG
    assert len(shown.text) < limit + 200 and LOG.startswith(shown.text[:offset])
    assert f'read_result(handle="{handle}", offset={offset})' in shown.text
    assert shown.text.endswith(LOG[-(limit // 4) :])
    assert not paged.is_error and paged.text == page(LOG, offset)
    assert len(paged.text) < PAGE_CHARS + 100
    compiles = ts.compiles(result.wake_id)
    tools = [[t["name"] for t in json.loads(ts.get_blob(c.window_hash))["tools"]] for c in compiles]
    assert tools == [["dump_log"], ["dump_log", "read_result"], ["dump_log", "read_result"]]
    assert max(c.input_tokens for c in compiles) < 30_000  # the window never held the log


async def test_a_huge_result_fits_a_small_window_and_is_paged_within_it(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    """The cap follows the agent's window, in its tokens: in a 7k-token context a result cut
    to 40,000 characters (~15k tokens) could not fit beside the wake, whose results are never
    evicted, and parked it with a BudgetError; the result and each page of it now take a
    share of the window, and the wake reads on and ends ``done``."""
    small = tmp_path / "small.toml"
    small.write_text('name = "small-7k"\n[budget]\ncontext_limit = 7000\noutput_reserve = 1000\n')
    agent = Agent(
        name="reader",
        instructions="Read logs.",
        tenant=f"small-{uuid.uuid4().hex[:8]}",
        policy=str(small),
    )

    @agent.tool
    def dump_log() -> str:
        """The whole checkout log."""
        return LOG

    counter = BpeCounter()
    cap = 6_000 // 4  # a quarter of the input budget (context_limit - output_reserve)
    handle, offset = content_hash(LOG), 100_000
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "dump_log", "input": {}}]},
        {"tool_calls": [{"name": "read_result", "input": {"handle": handle, "offset": offset}}]},
        {"text": "Read it."},
    ]
    register_agent(store.tenant(agent.tenant), agent)
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse(steps), scope=key)
    async with running_worker(temporal_dev.client, store, AgentRegistry([agent]), sim, key) as q:
        result = await wake(temporal_dev.client, agent.runtime(), message("how is checkout?"), q)

    assert (result.status, result.error, result.model_calls) == ("done", "", 3)
    ts = store.tenant(agent.tenant)
    shown, paged = [
        e for e in ts.events(agent.name, wake_id=result.wake_id) if e.kind == "tool_result"
    ]
    assert shown.meta["capped"] == str(len(LOG)) and counter.count(shown.text) <= cap
    head, note, tail = re.split(r"\n\n(\[\.\.\. .*\])\n\n", shown.text)
    assert LOG.startswith(head) and LOG.endswith(tail) and len(tail) > 0
    assert f'read_result(handle="{handle}", offset={len(head)})' in note
    assert not paged.is_error and counter.count(paged.text) <= cap
    assert LOG[offset:].startswith(paged.text.split("\n\n[characters")[0])
    assert max(c.input_tokens for c in ts.compiles(result.wake_id)) <= 6_000


async def test_read_result_reads_only_the_calling_agents_own_results(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    """A handle is a blob's hash, and a tenant's blobs hold every agent's windows: another
    agent's window hash (its system prompt and transcript) or another agent's tool result is
    "no such result", never its content."""
    tenant = f"peek-{uuid.uuid4().hex[:8]}"
    secret = "The vault code is 4471; never tell anyone."
    owner = Agent(name="owner", instructions=secret, tenant=tenant)

    @owner.tool
    def dump_log() -> str:
        """The whole checkout log."""
        return LOG

    peeker = Agent(name="peeker", instructions="Read what you are given.", tenant=tenant)
    ts = store.tenant(tenant)
    for a in (owner, peeker):
        register_agent(ts, a)
    key = uuid.uuid4().hex
    sim.simulator.set_script(
        Script.parse([{"tool_calls": [{"name": "dump_log", "input": {}}]}, {"text": "Noted."}]),
        scope=key,
    )
    registry = AgentRegistry([owner, peeker])
    async with running_worker(temporal_dev.client, store, registry, sim, key) as q:
        first = await wake(temporal_dev.client, owner.runtime(), message("dump it"), q)
        window = ts.compiles(first.wake_id)[0].window_hash
        assert secret in ts.get_blob(window)  # the blob is there, in the same tenant
        theirs = content_hash(LOG)
        sim.simulator.set_script(
            Script.parse(
                [
                    {
                        "tool_calls": [
                            {"name": "read_result", "input": {"handle": window}},
                            {"name": "read_result", "input": {"handle": theirs, "offset": 0}},
                        ]
                    },
                    {"text": "Nothing there."},
                ]
            ),
            scope=key,
        )
        second = await wake(temporal_dev.client, peeker.runtime(), message("peek"), q)

    assert (first.status, second.status, second.tool_calls) == ("done", "done", 2)
    results = [e for e in ts.events(peeker.name) if e.kind == "tool_result"]
    assert [(e.is_error, e.text.split(":")[:2]) for e in results] == [
        (True, ["read_result", " no such result"])
    ] * 2
    assert all(window in e.text or theirs in e.text for e in results)
    assert not any(secret in e.text or LOG[:100] in e.text for e in results)
