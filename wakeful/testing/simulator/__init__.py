"""A loopback provider simulator that speaks the Anthropic and OpenAI wire formats.

The official SDKs talk to it unmodified through ``base_url``; it applies each provider's
published prompt-caching rules (see :mod:`.anthropic_cache` and :mod:`.openai_cache`),
reports usage with the providers' own field names, and answers from a script
(:mod:`.script`) so runs are deterministic. Nothing here ever reaches a real provider.

    with SimulatorServer(Script.parse([{"text": "hi"}]), clock=ManualClock()) as sim:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=sim.base_url)

Names are imported on first use (PEP 562): scripts and the in-process :class:`Simulator`
need no HTTP server, while :class:`SimulatorServer` needs the ``server`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wakeful.lazy import lazy_exports

if TYPE_CHECKING:
    from wakeful.testing.simulator.app import create_app
    from wakeful.testing.simulator.core import CallRecord, Simulator
    from wakeful.testing.simulator.script import Script, Step
    from wakeful.testing.simulator.server import SimulatorServer
    from wakeful.testing.simulator.state import ManualClock, OffsetClock

_EXPORTS = {
    "CallRecord": "core",
    "ManualClock": "state",
    "OffsetClock": "state",
    "Script": "script",
    "Simulator": "core",
    "SimulatorServer": "server",
    "Step": "script",
    "create_app": "app",
}

__all__ = [
    "CallRecord",
    "ManualClock",
    "OffsetClock",
    "Script",
    "Simulator",
    "SimulatorServer",
    "Step",
    "create_app",
]


__getattr__, __dir__ = lazy_exports(
    __name__, {name: f"{__name__}.{module}" for name, module in _EXPORTS.items()}
)
