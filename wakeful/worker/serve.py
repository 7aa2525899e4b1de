"""Run a worker from settings: the wiring between configuration and the activities."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence

import httpx
from temporalio.worker import Worker

from wakeful.activities.deps import ActivityDeps, check_agents, load_policies, merge_policies
from wakeful.activities.intent_setting import IntentModel
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler import WindowPolicy
from wakeful.compiler.intents import ModelChoice, parse_classifier_setting
from wakeful.compiler.triggers import SKILL_PREFIX
from wakeful.errors import ConfigError, UserError
from wakeful.providers.base import ModelProvider
from wakeful.providers.pricing import price_for
from wakeful.providers.registry import PROVIDER_NAMES, build_provider
from wakeful.skills import Skill, load_skills_dir, merge_skills, skill_ref
from wakeful.substrate.embedders import Embedder
from wakeful.substrate.store import Store, TenantStore
from wakeful.substrate.vectors.base import VectorStore
from wakeful.telemetry import Telemetry, TelemetrySettings, install_telemetry
from wakeful.tokenizers import BpeCounter
from wakeful.worker.client import connect
from wakeful.worker.plugin import WakefulPlugin
from wakeful.worker.search_attributes import ensure_search_attributes
from wakeful.worker.settings import Settings
from wakeful.worker.stack import EmbeddedStack
from wakeful.worker.stack_models import StackEndpoints
from wakeful.worker.worker import deployment_config

log = logging.getLogger("wakeful.worker")


def register_agent(ts: TenantStore, agent: Agent) -> None:
    """Store the agent's spec and runtime so triggers from other processes can start it,
    and its documents (``Agent(documents=...)``: unchanged files are left as they are, a
    changed one replaces its old chunks). A document that cannot be read is one line
    naming it, and nothing of the agent's documents is stored."""
    from wakeful.substrate.doc_chunks import read_documents

    try:
        files = read_documents(agent.documents) if agent.documents else []
    except UserError as exc:
        raise ConfigError(f"agent {agent.name!r}: documents: {exc}") from None
    spec = agent.spec() | {"runtime": agent.runtime().model_dump(mode="json")}
    with ts.unit() as uow:
        uow.agents.upsert_agent(
            agent.name,
            model=agent.model,
            provider=agent.provider,
            instructions=agent.instructions,
            spec=spec,
        )
        if files:
            uow.documents.add_documents(agent.name, files)


def open_vectors(ep: StackEndpoints, settings: Settings) -> VectorStore:
    """The vector store the compile activity indexes into and retrieves from: the Qdrant
    server at ``qdrant_url``, else the Edge shard at ``qdrant_path``.

    An Edge shard belongs to one process at a time, so only processes that compile (the
    worker, the demo) open it; CLI commands that only read or append rows never do.
    """
    if ep.qdrant_url is not None:
        from wakeful.substrate.vectors.server import ServerVectorStore

        key = settings.qdrant_api_key
        return ServerVectorStore(ep.qdrant_url, api_key=key.get_secret_value() if key else None)
    from wakeful.substrate.vectors.edge import EdgeVectorStore

    return EdgeVectorStore(ep.qdrant_path or settings.qdrant_path)


def embedder_for(settings: Settings) -> Embedder | None:
    """The retrieval embedder ``WAKEFUL_EMBEDDER`` names (None: the index's default, the
    offline hashing embedder). A missing key or package stops the worker with one line."""
    from wakeful.substrate.embedders import (
        OpenAIEmbedder,
        SentenceTransformerEmbedder,
        WordLlamaEmbedder,
    )

    kind, _, model = settings.embedder.partition(":")
    if kind == "hashing":
        return None
    if kind == "openai":
        key = settings.openai_api_key
        if key is None:
            raise ConfigError(
                "WAKEFUL_EMBEDDER=openai needs an OpenAI API key: set OPENAI_API_KEY (or "
                "WAKEFUL_OPENAI_API_KEY), or use WAKEFUL_EMBEDDER=hashing"
            )
        return OpenAIEmbedder(
            model or "text-embedding-3-small",
            api_key=key.get_secret_value(),
            base_url=settings.openai_base_url,
        )
    try:
        if kind == "wordllama":
            return WordLlamaEmbedder(model) if model else WordLlamaEmbedder()
        return SentenceTransformerEmbedder(model) if model else SentenceTransformerEmbedder()
    except ConfigError as err:
        raise ConfigError(f"WAKEFUL_EMBEDDER={settings.embedder}: {err}") from None


def open_index(deps: ActivityDeps) -> None:
    """Open the event index now, so a shard held by another process fails the start, not
    every compile."""
    try:
        deps.event_index()
    except ConfigError:
        raise
    except Exception as exc:
        if "WouldBlock" not in str(exc):
            raise
        raise ConfigError(
            f"the Qdrant Edge shard is open in another process ({exc}); stop the other "
            "worker or demo using this state directory, give this worker a shard of its own "
            "(WAKEFUL_QDRANT_PATH), or set WAKEFUL_QDRANT_URL to share a Qdrant server "
            "between processes"
        ) from exc


class ProviderCache:
    """One SDK client per provider name for the life of the worker.

    A provider is configured by its key, or by a base URL alone (the simulator, a local
    server that wants no key: a placeholder key is sent). Neither, an unknown name or a
    base URL without a host is a :class:`ConfigError` naming the variable to set.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._built: dict[str, ModelProvider] = {}

    def __call__(self, name: str) -> ModelProvider:
        if name not in self._built:
            if name not in PROVIDER_NAMES:
                build_provider(name, api_key="")  # raises, naming the valid choices
            s = self.settings
            if name == "anthropic":
                key, url, var = s.anthropic_api_key, s.anthropic_base_url, "ANTHROPIC"
            else:
                key, url, var = s.openai_api_key, s.openai_base_url, "OPENAI"
            if url is not None and not _has_host(url):
                raise ConfigError(
                    f"{var}_BASE_URL has no host: set it to http(s)://host[:port] or unset it"
                )
            if key is None and url is None:
                raise ConfigError(
                    f"no API key for provider {name!r}: set {var}_API_KEY"
                    f" (or {var}_BASE_URL for a server that needs none, e.g. the simulator)"
                )
            secret = key.get_secret_value() if key is not None else "no-key"
            self._built[name] = build_provider(name, api_key=secret, base_url=url)
        return self._built[name]

    async def aclose(self) -> None:
        """Close every SDK client built (their connection pools), once the worker is done."""
        built, self._built = self._built, {}
        for provider in built.values():
            await provider.aclose()  # type: ignore[attr-defined]


def check_trigger_skills(
    agents: Iterable[Agent],
    policies: Mapping[str, WindowPolicy],
    skills_for: Callable[[Agent], Sequence[Skill]],
) -> list[str]:
    """Refuse, before a worker polls, a policy trigger injecting a skill that no agent of
    that policy has (a misspelt name, or a skill never written): one :class:`ConfigError`
    line naming an agent, the trigger and the skill.

    A policy several agents share may inject a skill only some of them have (a trigger for
    work only they receive). Those agents are served; each without the skill is named in a
    warning returned here (and logged), and its compile fails closed, by name, if that
    trigger ever fires for it."""
    by_policy: dict[str, list[tuple[Agent, set[str]]]] = {}
    for agent in agents:
        if agent.policy in policies:
            known = {skill_ref(s.name) for s in skills_for(agent)}
            by_policy.setdefault(agent.policy, []).append((agent, known))
    warnings: list[str] = []
    for name, members in by_policy.items():
        policy = policies[name]
        for trigger in policy.triggers:
            for ref in trigger.inject:
                if not ref.startswith(SKILL_PREFIX):
                    continue
                lacking = [(a, known) for a, known in members if ref not in known]
                skill = ref.removeprefix(SKILL_PREFIX)
                if len(lacking) == len(members):
                    agent, known = lacking[0]
                    names = ", ".join(sorted(k.removeprefix(SKILL_PREFIX) for k in known))
                    raise ConfigError(
                        f"cannot serve agent {agent.name!r} of tenant {agent.tenant!r}: policy"
                        f" {policy.name!r} trigger {trigger.name!r} injects {ref!r}, but the"
                        f" agent has no skill {skill!r} (its skills: {names or 'none'}); add"
                        " it to its skills directory or remove it from the trigger"
                    )
                for agent, _ in lacking:
                    warning = (
                        f"agent {agent.name!r} of tenant {agent.tenant!r} has no skill"
                        f" {skill!r}, which policy {policy.name!r} trigger {trigger.name!r}"
                        " injects: its compile fails, naming the skill, if that trigger fires"
                    )
                    log.warning("%s", warning)
                    warnings.append(warning)
    return warnings


def check_intent_classifier(settings: Settings, providers: ProviderCache) -> ModelChoice | None:
    """The model ``WAKEFUL_INTENT_CLASSIFIER`` names (None: the rules), refused at start,
    in one line naming the setting, when no call to it could run (no key, no price)."""
    choice = parse_classifier_setting(settings.intent_classifier)
    if choice is None or choice.provider is None or choice.model is None:
        return choice  # "model": each agent's own, which check_agents has checked
    try:
        provider = providers(choice.provider)
    except ConfigError as exc:
        raise ConfigError(f"WAKEFUL_INTENT_CLASSIFIER={choice.label}: {exc}") from None
    if price_for(provider.name, choice.model) is None:
        raise ConfigError(
            f"WAKEFUL_INTENT_CLASSIFIER={choice.label}: no price for {provider.name} model"
            f" {choice.model!r}; use a priced model or add it to wakeful.providers.pricing.PRICES"
        )
    return choice


async def serve(settings: Settings, registry: AgentRegistry) -> None:
    providers = ProviderCache(settings)
    try:
        # Before anything starts: a policy file that does not validate, and an agent no
        # wake could run (an unknown policy among them), are refused here, in one line,
        # not found out by its first wake after minutes of retries.
        policies = merge_policies(
            load_policies(settings.policy_dir), registry.policies, "the agents"
        )
        check_agents(registry, providers, policies)
        intents = check_intent_classifier(settings, providers)
        skills = load_skills_dir(settings.skills_dir) if settings.skills_dir else ()
        check_trigger_skills(
            registry, policies, lambda a: merge_skills(skills, registry.agent_skills(a))
        )
        await _serve(settings, registry, providers, policies, skills, intents)
    finally:
        await providers.aclose()


async def _serve(
    settings: Settings,
    registry: AgentRegistry,
    providers: ProviderCache,
    policies: dict[str, WindowPolicy],
    skills: tuple[Skill, ...] = (),
    intents: ModelChoice | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    ep = EmbeddedStack(settings).up()
    store = Store.connect(ep.database_url)
    for agent in registry:
        register_agent(store.tenant(agent.tenant), agent)
    deps = ActivityDeps(
        store=store,
        agents=registry,
        providers=providers,
        counter=BpeCounter(),
        policies=policies,
        skills=skills,
        vectors=open_vectors(ep, settings),
        embedder=embedder_for(settings),
        telemetry=build_telemetry(settings),
        stream_model_calls=settings.stream_model_calls,
        model_attempt_timeout_s=settings.model_attempt_timeout_s,
        # The model's call runs on this loop, where the provider clients live.
        intent_classifier=(
            None
            if intents is None
            else IntentModel(intents, loop, timeout_s=settings.intent_classifier_timeout_s)
        ),
    )
    open_index(deps)
    tracing = [deps.telemetry.tracing_interceptor()] if deps.telemetry.enabled else []
    # The plugin a team adds to its own client and worker: one wiring for both.
    plugin = WakefulPlugin(
        deps,
        max_threads=settings.activity_threads,
        sandboxed=settings.workflow_sandbox,
        interceptors=tracing,
    )
    client = await connect(ep.temporal_address, ep.temporal_namespace, plugins=[plugin])
    if settings.search_attributes:
        deps.search_attributes = await ensure_search_attributes(client)
    worker = Worker(client, task_queue=settings.task_queue, deployment_config=deployment_config())
    try:
        await run_until_terminated(worker)
    finally:
        # Shut down in the reverse order of use: spans out, the vector shard flushed and
        # released, the database pool emptied (then serve closes the SDK clients).
        deps.telemetry.shutdown()
        deps.mcp.close()  # the MCP servers this worker started
        if deps.vectors is not None:
            deps.vectors.close()
        store.close()


def _has_host(url: str) -> bool:
    try:
        return bool(httpx.URL(url).host)
    except httpx.InvalidURL:
        return False


async def run_until_terminated(worker: Worker) -> None:
    """Run ``worker`` until it stops, or until SIGTERM (what ``docker stop`` and Kubernetes
    send) asks it to: then it shuts down as on Ctrl-C. Killed instead, a worker leaves each
    activity it was running to wait out its timeout — five minutes for a model call —
    before another worker may retry it; shut down, it cancels them, and they are retried
    on another worker after their retry interval (their writes are idempotent on their
    step key)."""
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[None]] = []
    loop.add_signal_handler(
        signal.SIGTERM, lambda: stopping.append(asyncio.create_task(worker.shutdown()))
    )
    try:
        await worker.run()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        await asyncio.gather(*stopping)


def build_telemetry(settings: Settings) -> Telemetry:
    """Telemetry on the process's global OpenTelemetry providers; with ``otel_exporter``
    (``OTEL_TRACES_EXPORTER``) or ``otel_metrics_exporter`` (``OTEL_METRICS_EXPORTER``)
    console or otlp, SDK providers exporting there are installed first, unless the process
    set its own (never replaced)."""
    return install_telemetry(
        TelemetrySettings(
            service_name=settings.otel_service_name,
            exporter=settings.otel_exporter,
            metrics_exporter=settings.otel_metrics_exporter,
            otlp_endpoint=settings.otel_endpoint,
            capture_content=settings.otel_capture_message_content,
        )
    )
