"""MCP servers' tools in real wakes (dev server, Postgres, the provider simulator scripting the
model's tool calls, real MCP servers over stdio through the ``mcp`` SDK): a FastMCP server
defined with the tests, and the reference filesystem and "everything" servers from npm, run
with node."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import make_deps, message, serving
from wakeful import Agent, AgentRegistry, WakeResult
from wakeful.compiler.diff import diff_ledgers
from wakeful.compiler.ledger import Ledger
from wakeful.mcp_tools import McpServer
from wakeful.substrate.records import StoredEvent
from wakeful.substrate.store import Store
from wakeful.testing.simulator.script import Script
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent
from wakeful.worker.worker import build_worker

CALC = Path(__file__).with_name("mcp_calc_server.py")
NPM_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "mcp-npm"
NPM_SERVERS = ("@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-everything")


def calc(schema: str = "1") -> McpServer:
    return McpServer(
        name="calc",
        command=sys.executable,
        args=(str(CALC),),
        env={"CALC_SCHEMA": schema},
        timeout_s=20,
    )


def _agent(*servers: McpServer, tenant: str | None = None) -> Agent:
    return Agent(
        name="mcp-user",
        instructions="You use the tools you are given.",
        tenant=tenant or f"mcp-{uuid.uuid4().hex[:8]}",
        mcp_servers=servers,
    )


def _calls(*rounds: list[tuple[str, dict[str, Any]]], then: str = "Done.") -> Script:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": n, "input": i} for n, i in calls]} for calls in rounds
    ]
    return Script.parse([*steps, {"text": then}])


@asynccontextmanager
async def _worker(
    env: WorkflowEnvironment, store: Store, sim: SimulatorServer, agent: Agent, key: str
) -> AsyncIterator[tuple[str, str]]:
    """A worker serving ``agent``; its MCP sessions (and the servers it started) are closed
    when the block ends."""
    queue = f"q-{uuid.uuid4().hex[:8]}"
    deps = make_deps(store, AgentRegistry([agent]), sim, key)
    try:
        async with serving(build_worker(env.client, deps, queue)):
            yield queue, key
    finally:
        deps.mcp.close()
        await deps.providers.aclose()  # type: ignore[attr-defined]


async def _wake(
    env: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    agent: Agent,
    *scripts: Script,
) -> list[tuple[WakeResult, list[StoredEvent]]]:
    """One wake per script, one after the other, on one worker."""
    register_agent(store.tenant(agent.tenant), agent)
    out = []
    async with _worker(env, store, sim, agent, uuid.uuid4().hex) as (queue, key):
        for script in scripts:
            sim.simulator.set_script(script, scope=key)
            result = await wake(env.client, agent.runtime(), message("go"), queue)
            events = store.tenant(agent.tenant).events(agent.name, wake_id=result.wake_id)
            out.append((result, [e for e in events if e.kind == "tool_result"]))
    return out


def _windows(store: Store, agent: Agent, wake_id: str) -> list[dict[str, Any]]:
    ts = store.tenant(agent.tenant)
    return [
        json.loads(ts.get_blob(c.window_hash))
        for c in sorted(ts.compiles(wake_id), key=lambda c: c.call_index)
    ]


def _tool_names(window: dict[str, Any]) -> list[str]:
    return [t["name"] for t in window["tools"]]


async def test_a_fastmcp_servers_tools_are_the_agents_and_their_errors_reach_the_model(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    agent = _agent(calc())
    script = _calls(
        [("calc__add", {"a": 2, "b": 3}), ("calc__divide", {"a": 1, "b": 0})],
        [("calc__grow", {})],
    )
    (result, results), (again, _) = await _wake(
        temporal_dev, store, sim, agent, script, Script.parse([{"text": "ok"}])
    )

    assert (result.status, result.tool_calls, result.model_calls) == ("done", 3, 3)
    added, divided, grown = results
    assert (added.tool_name, added.text, added.is_error) == ("calc__add", "5", False)
    assert divided.is_error
    assert divided.text == "McpCallError: Error executing tool divide: float division by zero"
    assert (grown.text, grown.is_error) == ("added 'later'", False)

    windows = _windows(store, agent, result.wake_id)
    names = ["calc__add", "calc__divide", "calc__grow"]
    # The list is fetched once per wake: the tool the server added mid-wake is not sent in
    # this wake, whose windows all carry the same tools and the same stable prefix.
    assert [_tool_names(w) for w in windows] == [names] * 3
    add = windows[0]["tools"][0]
    assert add["description"] == "Add two numbers."
    assert add["input_schema"]["required"] == ["a", "b"]
    prefixes = {c.stable_prefix_hash for c in store.tenant(agent.tenant).compiles(result.wake_id)}
    assert len(prefixes) == 1

    # The next wake (same worker, same session) lists them again, and sees the new tool.
    assert _tool_names(_windows(store, agent, again.wake_id)[0]) == [*names, "calc__later"]


async def test_a_changed_schema_changes_the_stable_prefix_and_diff_names_the_tool(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer
) -> None:
    # The same agent served with the server before and after its upgrade (an agent's
    # wakes run on the worker that serves it: one worker each, one tenant each).
    ok = Script.parse([{"text": "ok"}])
    old, new = _agent(calc("1")), _agent(calc("2"))
    ((before, _),) = await _wake(temporal_dev, store, sim, old, ok)
    ((after, _),) = await _wake(temporal_dev, store, sim, new, ok)
    (a,) = store.tenant(old.tenant).compiles(before.wake_id)
    (b,) = store.tenant(new.tenant).compiles(after.wake_id)
    assert a.stable_prefix_hash != b.stable_prefix_hash
    d = diff_ledgers(
        Ledger.model_validate_json(store.tenant(old.tenant).get_blob(a.ledger_hash)),
        Ledger.model_validate_json(store.tenant(new.tenant).get_blob(b.ledger_hash)),
    )
    # As `wakeful diff` says it: the first block that differs is the tool, in the stable
    # segment, at position 0 (the tools lead the window), so no cached prefix is reusable.
    assert (d.block_id, d.segment, d.reason.value) == (
        "tool:calc__add",
        "stable",
        "content_changed",
    )
    assert not d.cache_could_hit


def test_a_server_name_or_address_given_wrongly_is_one_line() -> None:
    from wakeful.errors import UserError

    with pytest.raises(UserError, match=r"exactly one of command= .* or url="):
        McpServer(name="fs")
    with pytest.raises(UserError, match="no '__'"):
        McpServer(name="my__fs", command="node")
    with pytest.raises(UserError, match="two MCP servers are named 'fs'"):
        _agent(McpServer(name="fs", command="a"), McpServer(name="fs", url="http://x"))


# --- the reference servers from npm -------------------------------------------------------


@pytest.fixture(scope="session")
def npm_servers() -> Iterator[Path]:
    """The reference servers' package folder (installed with npm into the repository's
    .cache once); skipped, saying why, when node or npm is missing or npm cannot install."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the reference MCP servers (install nodejs)")
    modules = NPM_CACHE / "node_modules"
    if not all((modules / p / "package.json").exists() for p in NPM_SERVERS):
        done = subprocess.run(
            [npm, "install", "--prefix", str(NPM_CACHE), "--no-audit", "--no-fund", *NPM_SERVERS],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.skip(f"npm could not install the reference MCP servers: {done.stderr[-500:]}")
    yield modules


def _npm_server(modules: Path, name: str, package: str, *args: str) -> McpServer:
    meta = json.loads((modules / package / "package.json").read_text())
    bin_ = meta["bin"] if isinstance(meta["bin"], str) else next(iter(meta["bin"].values()))
    node = shutil.which("node") or "node"
    return McpServer(
        name=name, command=node, args=(str(modules / package / bin_), *args), timeout_s=30
    )


async def test_the_filesystem_reference_server_lists_and_reads_files_in_a_wake(
    temporal_dev: WorkflowEnvironment,
    store: Store,
    sim: SimulatorServer,
    npm_servers: Path,
    tmp_path: Path,
) -> None:
    root = (tmp_path / "docs").resolve()
    root.mkdir()
    (root / "notes.txt").write_text("deploy at noon\n")
    (root / "todo.md").write_text("- ship it\n")
    fs = _npm_server(npm_servers, "fs", "@modelcontextprotocol/server-filesystem", str(root))
    agent = _agent(fs)
    script = _calls(
        [("fs__list_directory", {"path": str(root)})],
        [("fs__read_text_file", {"path": str(root / "notes.txt")})],
        [("fs__read_text_file", {"path": "/etc/passwd"})],
    )
    ((result, results),) = await _wake(temporal_dev, store, sim, agent, script)

    assert (result.status, result.tool_calls) == ("done", 3)
    listed, read, refused = results
    assert not listed.is_error
    assert listed.text.splitlines() == ["[FILE] notes.txt", "[FILE] todo.md"]
    assert (read.text, read.is_error) == ("deploy at noon\n", False)
    assert refused.is_error and "outside allowed directories" in refused.text
    tools = _tool_names(_windows(store, agent, result.wake_id)[0])
    assert {"fs__list_directory", "fs__read_text_file", "fs__write_file"} <= set(tools)


async def test_the_everything_reference_servers_tools_in_a_wake(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, npm_servers: Path
) -> None:
    every = _npm_server(npm_servers, "every", "@modelcontextprotocol/server-everything", "stdio")
    agent = _agent(every)
    script = _calls(
        [("every__echo", {"message": "hello mcp"})],
        [("every__get-sum", {"a": 2, "b": 40})],
        [("every__get-tiny-image", {})],
    )
    ((result, results),) = await _wake(temporal_dev, store, sim, agent, script)

    assert (result.status, result.tool_calls) == ("done", 3)
    echo, total, image = results
    assert (echo.text, echo.is_error) == ("Echo: hello mcp", False)
    assert (total.text, total.is_error) == ("The sum of 2 and 40 is 42.", False)
    assert "[image image/png, about" in image.text and not image.is_error


async def test_a_server_that_does_not_start_parks_the_wake_with_one_line_naming_it(
    temporal_dev: WorkflowEnvironment, store: Store, sim: SimulatorServer, tmp_path: Path
) -> None:
    gone = McpServer(name="gone", command=str(tmp_path / "no-such-server"), timeout_s=5)
    ((result, _),) = await _wake(
        temporal_dev, store, sim, _agent(gone), Script.parse([{"text": "ok"}])
    )
    assert result.status == "parked"
    assert "MCP server 'gone' could not list its tools (did not start or answer:" in result.error
    assert result.error.endswith(
        "check its command or url, or drop it from the agent's mcp_servers"
    )
    assert "\n" not in result.error
