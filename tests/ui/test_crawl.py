"""Every page of the console over a live run answers: a crawl from ``/`` through every
link it finds, against ``wakeful ui`` started as a user starts it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import cli_process_env, fresh_demo_agent, message, running_worker
from tests.ui.conftest import seed_knowledge
from tests.ui.dom import parse
from tests.ui.serve import serving_ui
from wakeful.agents import AgentRegistry
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer

CALLS = 12  # parallel tool calls in one reply: enough blocks for a bridge breakpoint


@pytest.fixture
async def live_run(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    tmp_path: Path,
    pg_url: str,
) -> dict[str, str]:
    """An agent's two wakes, the second a reply of many tool calls and the answer; with
    knowledge of every kind. Returns the command line's settings for its tenant."""
    from wakeful.worker.client import wake

    agent = fresh_demo_agent(tmp_path, store, "crawl")
    steps: list[dict[str, Any]] = [
        {"text": "The workspace is small."},
        {"tool_calls": [{"name": "list_dir", "input": {"path": "."}} for _ in range(CALLS)]},
        {"text": "Listed it twelve times."},
    ]
    key = uuid.uuid4().hex
    sim.simulator.set_script(Script.parse(steps), scope=key)
    async with running_worker(temporal_dev.client, store, AgentRegistry([agent]), sim, key) as q:
        results = [
            await wake(temporal_dev.client, agent.runtime(), message(text), q)
            for text in ("what is here?", "list the workspace")
        ]
    assert [(r.status, r.tool_calls) for r in results] == [("done", 0), ("done", CALLS)]
    ts = store.tenant(agent.tenant)
    seed_knowledge(ts, agent.name, results[0].session_id)
    return cli_process_env(pg_url, temporal_dev, tmp_path / "state", agent.tenant)


def test_every_page_a_link_reaches_answers(live_run: dict[str, str]) -> None:
    """From ``/``, every link of every page is followed once: each answers 200. (The call
    page of a wake's second call linked to a diff with the same call of the wake before,
    which had one call: 404.)"""
    with serving_ui(live_run) as server, httpx.Client(base_url=server.base) as http:
        seen: dict[str, int] = {}
        queue = ["/"]
        while queue:
            path = queue.pop(0)
            if path in seen:
                continue
            answer = http.get(path)
            seen[path] = answer.status_code
            if answer.status_code != 200 or "text/html" not in answer.headers["content-type"]:
                continue
            for node in parse(answer.text).walk():
                href = node.attrs.get("href") if node.tag == "a" else None
                if not href or href.startswith("#"):
                    continue
                to = urlsplit(urljoin(server.base + path, href))
                if f"{to.scheme}://{to.netloc}" == server.base:  # this console's own pages
                    queue.append(to.path + (f"?{to.query}" if to.query else ""))
    failed = {path: code for path, code in seen.items() if code != 200}
    assert not failed, failed
    reached = " ".join(seen)
    for kind in ("/agents/", "/wakes/", "/calls/", "/diff?", "/sessions/", "/knowledge/", "/cost"):
        assert kind in reached, (kind, sorted(seen))
    assert server.returncode == 0, server.said
