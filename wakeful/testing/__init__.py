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

:class:`AgentTestEnv` runs an agent end to end on it (a Temporal dev server, Postgres, a
worker): script the model, wake the agent, read its answer, calls and events.

``wakeful demo`` runs on the simulator. The benchmarks live in the repository's
``benchmarks`` package, outside the installed package.
"""

from wakeful.testing.env import AgentTestEnv, SimulatedProviders
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
    "ManualClock",
    "OffsetClock",
    "Script",
    "SimulatedProviders",
    "Simulator",
    "SimulatorServer",
    "Step",
]
