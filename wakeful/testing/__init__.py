"""What a team needs to test its agents without a real model: a loopback provider simulator.

The simulator speaks the Anthropic Messages and OpenAI Chat Completions / Responses wire
formats on a local port, so the official SDKs (and a Wakeful worker) talk to it unmodified
through their base URL; it bills prompt caching by each provider's published rules and
answers from a :class:`Script` (or, past its steps, a deterministic planner that calls a
tool the user's message names). Nothing here reaches a real provider::

    from wakeful.testing import Script, SimulatorServer

    script = Script.parse([
        {"text": "Let me look.", "tool_calls": [{"name": "read_file", "input": {"path": "a.md"}}]},
        {"text": "All done."},
    ])
    with SimulatorServer(script) as sim:
        # point the worker at it: ANTHROPIC_BASE_URL=sim.base_url, any ANTHROPIC_API_KEY
        ...

``wakeful demo`` runs on it. :class:`AgentTestEnv` runs an agent end to end on it (a
Temporal dev server, Postgres, a worker): script the model, wake the agent, read its answer,
calls and events. Without any server, :class:`MemoryStore` holds an agent's history in
memory (events, decisions, handoff notes, summaries, memories, with the Postgres store's
semantics) and :func:`compile_for` shows the window the agent's policy compiles from it::

    from wakeful.testing import MemoryStore, compile_for

    store = MemoryStore()
    store.append_events("triage", [...])  # EventIn records, as a wake writes them
    window = compile_for(agent, store, "billing deploy failed again", now=now)
    print(window.request_json)

The benchmarks live in the repository's ``benchmarks`` package, outside
the installed package. Names are imported on first use: serving the simulator over HTTP
(:class:`SimulatorServer`, :class:`AgentTestEnv`) needs the ``server`` extra, the rest does
not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wakeful.lazy import lazy_exports

if TYPE_CHECKING:
    from wakeful.testing.compile import compile_for
    from wakeful.testing.env import AgentTestEnv, SimulatedProviders, TestServers
    from wakeful.testing.memory import MemoryStore
    from wakeful.testing.servers import EmbeddedPostgres, embedded_postgres, temporal_dev_server
    from wakeful.testing.simulator import (
        CallRecord,
        ManualClock,
        OffsetClock,
        Script,
        Simulator,
        SimulatorServer,
        Step,
    )

__all__ = [
    "AgentTestEnv",
    "CallRecord",
    "EmbeddedPostgres",
    "ManualClock",
    "MemoryStore",
    "OffsetClock",
    "Script",
    "SimulatedProviders",
    "Simulator",
    "SimulatorServer",
    "Step",
    "TestServers",
    "compile_for",
    "embedded_postgres",
    "temporal_dev_server",
]

_SIMULATOR = "wakeful.testing.simulator"
_EXPORTS = {
    "AgentTestEnv": "wakeful.testing.env",
    "SimulatedProviders": "wakeful.testing.env",
    "TestServers": "wakeful.testing.env",
    "MemoryStore": "wakeful.testing.memory",
    "compile_for": "wakeful.testing.compile",
    "EmbeddedPostgres": "wakeful.testing.servers",
    "embedded_postgres": "wakeful.testing.servers",
    "temporal_dev_server": "wakeful.testing.servers",
    **dict.fromkeys(
        [
            "CallRecord",
            "ManualClock",
            "OffsetClock",
            "Script",
            "Simulator",
            "SimulatorServer",
            "Step",
        ],
        _SIMULATOR,
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
