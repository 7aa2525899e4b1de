"""One system's worker for ``wakeful bench peers``, in a process of its own:
``python -m benchmarks.peers_worker SYSTEM --address HOST:PORT --queue Q --sim-url URL
--api-key KEY [--pg-url URL --tenant T]``.

A process per system is what makes a worker's CPU time measurable on its own (the bench
reads it from the OS). The process prints ``ready`` on stdout once its worker polls, and
stops cleanly when its stdin is closed. Each system is set up as its documentation does:

* ``wakeful``: the worker ``wakeful bench history`` runs (``build_worker`` over
  :class:`~wakeful.activities.deps.ActivityDeps`, Wakeful's data converter on the client),
  the Anthropic provider pointed at the simulator;
* ``pydantic_ai``: ``Client.connect(..., plugins=[PydanticAIPlugin()])`` and a ``Worker``
  with the workflow (:mod:`benchmarks.peers_pydantic_ai`);
* ``openai_agents``: ``Client.connect(..., plugins=[OpenAIAgentsPlugin()])`` and a
  ``Worker`` with the workflow (:mod:`benchmarks.peers_openai_agents`).

The two peers reach the simulator through the OpenAI client's own environment variables,
set here before their modules are imported. The OpenAI Agents SDK's tracing, on by
default, exports to OpenAI's servers: ``OPENAI_AGENTS_DISABLE_TRACING`` turns it off (the
bench uses no network).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from temporalio.client import Client

from wakeful.agents import Agent

__all__ = ["INSTRUCTIONS", "SYSTEMS", "wakeful_agent"]

SYSTEMS = ("wakeful", "pydantic_ai", "openai_agents")
INSTRUCTIONS = "You are a friendly companion in a long conversation. Reply briefly."


def wakeful_agent(tenant: str) -> Agent:
    """The Wakeful agent of the conversation: the defaults, the peers' instructions."""
    return Agent(name="companion", instructions=INSTRUCTIONS, tenant=tenant)


def _ready() -> None:
    print("ready", flush=True)


async def _until_stdin_closes() -> None:
    await asyncio.to_thread(sys.stdin.read)


async def _serve_wakeful(args: argparse.Namespace) -> None:
    from wakeful.activities.deps import ActivityDeps
    from wakeful.agents import AgentRegistry
    from wakeful.providers.registry import build_provider
    from wakeful.substrate.store import Store
    from wakeful.tokenizers import BpeCounter
    from wakeful.worker.codec import data_converter
    from wakeful.worker.serve import register_agent
    from wakeful.worker.worker import build_worker

    agent = wakeful_agent(args.tenant)
    store = Store.connect(args.pg_url, migrate_schema=False)
    register_agent(store.tenant(args.tenant), agent)
    provider = build_provider("anthropic", api_key=args.api_key, base_url=args.sim_url)
    deps = ActivityDeps(
        store=store,
        agents=AgentRegistry([agent]),
        providers=lambda name: provider,
        counter=BpeCounter(),
    )
    client = await Client.connect(args.address, data_converter=data_converter)
    try:
        async with build_worker(client, deps, args.queue):
            _ready()
            await _until_stdin_closes()
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
        store.close()


async def _serve_pydantic_ai(args: argparse.Namespace) -> None:
    # The model's module, imported whole before the worker runs anything: its first import
    # otherwise happens inside the first workflow task, where the sandbox can meet the openai
    # package half-initialised by a model-request activity importing it on another thread
    # ("module 'openai.types.responses' has no attribute 'response_output_text'", seen under
    # load). Importing is what the agent's first model call does anyway.
    import pydantic_ai.models.openai  # noqa: F401
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.worker import Worker

    from benchmarks.peers_pydantic_ai import PydanticAIChat

    client = await Client.connect(args.address, plugins=[PydanticAIPlugin()])
    async with Worker(client, task_queue=args.queue, workflows=[PydanticAIChat]):
        _ready()
        await _until_stdin_closes()


async def _serve_openai_agents(args: argparse.Namespace) -> None:
    from temporalio.openai_agents import OpenAIAgentsPlugin
    from temporalio.worker import Worker

    from benchmarks.peers_openai_agents import OpenAIAgentsChat

    client = await Client.connect(args.address, plugins=[OpenAIAgentsPlugin()])
    async with Worker(client, task_queue=args.queue, workflows=[OpenAIAgentsChat]):
        _ready()
        await _until_stdin_closes()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="peers-worker")
    parser.add_argument("system", choices=SYSTEMS)
    parser.add_argument("--address", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--sim-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--pg-url", default="")
    parser.add_argument("--tenant", default="")
    args = parser.parse_args(argv)
    os.environ["OPENAI_BASE_URL"] = f"{args.sim_url}/v1"
    os.environ["OPENAI_API_KEY"] = args.api_key
    os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "true"
    serve = {
        "wakeful": _serve_wakeful,
        "pydantic_ai": _serve_pydantic_ai,
        "openai_agents": _serve_openai_agents,
    }[args.system]
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
