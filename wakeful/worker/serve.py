"""Run a worker from settings: the wiring between configuration and the activities."""

from __future__ import annotations

from wakeful.activities.deps import ActivityDeps
from wakeful.agents import Agent, AgentRegistry
from wakeful.errors import ConfigError
from wakeful.providers.base import ModelProvider
from wakeful.providers.registry import build_provider
from wakeful.substrate.store import Store, TenantStore
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import connect
from wakeful.worker.settings import Settings
from wakeful.worker.stack import EmbeddedStack
from wakeful.worker.worker import build_worker


def register_agent(ts: TenantStore, agent: Agent) -> None:
    """Store the agent's spec and runtime so triggers from other processes can start it."""
    spec = agent.spec() | {"runtime": agent.runtime().model_dump(mode="json")}
    ts.upsert_agent(
        agent.name,
        model=agent.model,
        provider=agent.provider,
        instructions=agent.instructions,
        spec=spec,
    )


class ProviderCache:
    """One SDK client per provider name for the life of the worker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._built: dict[str, ModelProvider] = {}

    def __call__(self, name: str) -> ModelProvider:
        if name not in self._built:
            s = self.settings
            if name == "anthropic":
                key, url = s.anthropic_api_key, s.anthropic_base_url
            else:
                key, url = s.openai_api_key, s.openai_base_url
            if key is None:
                var = "ANTHROPIC_API_KEY" if name == "anthropic" else "OPENAI_API_KEY"
                raise ConfigError(f"no API key for provider {name!r}: set {var}")
            self._built[name] = build_provider(name, api_key=key.get_secret_value(), base_url=url)
        return self._built[name]


async def serve(settings: Settings, registry: AgentRegistry) -> None:
    ep = EmbeddedStack(settings).up()
    store = Store.connect(ep.database_url)
    for agent in registry:
        register_agent(store.tenant(agent.tenant), agent)
    deps = ActivityDeps(
        store=store, agents=registry, providers=ProviderCache(settings), counter=BpeCounter()
    )
    client = await connect(ep.temporal_address, ep.temporal_namespace)
    await build_worker(client, deps, settings.task_queue).run()
