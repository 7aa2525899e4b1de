"""What the activities need, built once by the worker and passed in explicitly."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from temporalio.exceptions import ApplicationError

from wakeful.activities.intent_setting import IntentModel
from wakeful.activities.snapshot_hash import BlockHashes
from wakeful.agents import Agent, AgentRegistry
from wakeful.compiler import CountingCache, TokenCounter, WindowPolicy
from wakeful.compiler.intents import IntentClassifier
from wakeful.contracts import CacheTtls
from wakeful.errors import ConfigError, UserError
from wakeful.mcp_tools import McpPool
from wakeful.policy_files import POLICY_SUFFIXES, load_policy_and_settings
from wakeful.providers.base import ModelProvider
from wakeful.providers.pricing import price_for
from wakeful.skills import Skill, merge_skills
from wakeful.substrate.embedders import Embedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.query_sources import QuerySource
from wakeful.substrate.records import CompileRecord
from wakeful.substrate.retrieval import RetrievalConfig
from wakeful.substrate.sized_lru import SizedLRU
from wakeful.substrate.sources import ContextSource
from wakeful.substrate.store import Store
from wakeful.substrate.tail_cache import TailCache
from wakeful.substrate.vectors.base import VectorStore
from wakeful.telemetry import Telemetry
from wakeful.workflows.retries import MODEL_TIMEOUT

ProviderFactory = Callable[[str], ModelProvider]

log = logging.getLogger(__name__)


class CompileLocks:
    """One lock per agent: an agent's compiles take turns (its partition in the shared
    cache is one object that a compile brings up to date), while compiles of different
    agents run side by side."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}

    def __call__(self, tenant: str, agent: str) -> threading.Lock:
        """The lock of one agent's compiles."""
        with self._guard:
            lock = self._locks.get((tenant, agent))
            if lock is None:
                lock = self._locks[(tenant, agent)] = threading.Lock()
            return lock


def compile_record_size(rec: CompileRecord) -> int:
    """What a compile record holds, roughly: its goal's text is the part that grows."""
    return 1_000 + len(str(rec.goal.get("text", "")))


@dataclass
class ActivityDeps:
    store: Store
    agents: AgentRegistry
    providers: ProviderFactory
    counter: TokenCounter
    policies: dict[str, WindowPolicy] = field(default_factory=dict)
    recent_limit: int = 200
    # Token counts and block facts memoised across compiles: a worker tokenises a block once.
    # Bounded (it holds texts); shared by the activity threads, one compile per agent at a
    # time (``compile_locks``).
    cache: CountingCache = field(default_factory=lambda: CountingCache(max_entries=50_000))
    compile_locks: CompileLocks = field(default_factory=lambda: CompileLocks())
    # Snapshot tails kept between compiles: a compile reads only the events appended since.
    tail_cache: TailCache = field(default_factory=TailCache)
    # Block hashes of the blocks the tail cache hands out again, for the snapshot hash.
    block_hashes: BlockHashes = field(default_factory=BlockHashes)
    # Windows this worker compiled, by hash (after their commit), so that its model calls
    # need not read them back from the substrate. Content-addressed: never stale.
    windows: SizedLRU[str, str] = field(default_factory=lambda: SizedLRU(32_000_000, len))
    # Compile records this worker committed (or found committed), by (tenant, wake id,
    # call index), so that the model call of the step need not read them back. A compile
    # record is written once per step and never changed: never stale.
    compiles: SizedLRU[tuple[str, str, int], CompileRecord] = field(
        default_factory=lambda: SizedLRU(16_000_000, compile_record_size)
    )
    # Model replies this worker stored, by (tenant, output hash), so that the tool calls
    # they ask for need not read them back. Content-addressed: never stale.
    replies: SizedLRU[tuple[str, str], str] = field(
        default_factory=lambda: SizedLRU(16_000_000, len)
    )
    # Retrieval: with a vector store, the compile activity indexes the agent's new events
    # and adds retrieved evidence to the snapshot. None: no indexing, no retrieval.
    vectors: VectorStore | None = None
    embedder: Embedder | None = None  # None: HashingEmbedder()
    retrieval: RetrievalConfig | None = None  # None: RetrievalConfig()
    retrieval_max_tokens: int = 16_000
    # The namespace has Wakeful's search attributes (``worker.search_attributes``): agent
    # workflows tag themselves with tenant, agent and session.
    search_attributes: bool = False
    # Spans and metrics of compiles, model calls and tools; records nothing by default.
    # The process's global OpenTelemetry providers: a no-op until someone sets one.
    telemetry: Telemetry = field(default_factory=Telemetry)
    # MCP client sessions (one per server) and each recent wake's MCP tool list.
    mcp: McpPool = field(default_factory=McpPool)
    # Names the intents of a goal that came without any (compiler/intents.py). None: the
    # policy's [[intents]] rules, when it has some; an IntentModel: a model picks among
    # them (activities/intent_model.py, WAKEFUL_INTENT_CLASSIFIER).
    intent_classifier: IntentClassifier | IntentModel | None = None
    # The worker's skills (WAKEFUL_SKILLS_DIR), every agent's besides its own (which win on
    # a name both have); and context sources and query sources every agent's compiles ask
    # (wakeful.skills, wakeful.substrate.sources, wakeful.substrate.query_sources).
    skills: tuple[Skill, ...] = ()
    context_sources: tuple[ContextSource, ...] = ()
    query_sources: tuple[QuerySource, ...] = ()
    # Model calls use the APIs' streaming and publish what they say as it comes (a caller
    # tails the wake: wakeful.activities.streaming); False: one reply per call, unstreamed.
    stream_model_calls: bool = True
    # Seconds one provider attempt (each route's) may take to reply in full before it is
    # abandoned as a timeout (WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S; below the model call's own
    # timeout, MODEL_TIMEOUT, so the call can still fail over or say why it failed).
    model_attempt_timeout_s: float = 240.0
    # The activities' clock for provider cool-downs (failover): a test passes its own.
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    _index: EventIndex | None = field(default=None, init=False, repr=False)
    _with_ttls: dict[str, WindowPolicy] = field(default_factory=dict, init=False, repr=False)
    _index_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        limit, call = self.model_attempt_timeout_s, MODEL_TIMEOUT.total_seconds()
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit < call:
            raise ConfigError(
                f"model_attempt_timeout_s must be seconds > 0 and < {call:g} (the model call's"
                f" own timeout), got {limit!r}"
            )
        # Policies the agents named by file path were loaded with the registry.
        self.policies = merge_policies(self.policies, self.agents.policies, "the agents")

    def policy(self, name: str, ttls: CacheTtls | None = None) -> WindowPolicy:
        """The named policy; with ``ttls``, with pacing's cache TTLs in place of its own."""
        if name == "default" and name not in self.policies:
            # Kept: a policy is frozen, and its fingerprint (hashed once) is cached on it.
            self.policies[name] = WindowPolicy.default()
        if name not in self.policies and name in self.agents.policies:
            # A policy file of an agent registered since (a child agent, say).
            self.policies[name] = self.agents.policies[name]
        check_policy(self.policies, name)
        if ttls is None:
            return self.policies[name]
        key = f"{name}\x00{ttls.stable}\x00{ttls.session}"
        if key not in self._with_ttls:
            self._with_ttls[key] = self.policies[name].with_ttls(ttls.stable, ttls.session)
        return self._with_ttls[key]

    def skills_for(self, agent: Agent) -> tuple[Skill, ...]:
        """The agent's skills: the worker's and its own directory's, by name."""
        own = self.agents.agent_skills(agent)
        if not self.skills:
            return own
        return merge_skills(self.skills, own)

    def provider(self, name: str) -> ModelProvider:
        """The provider ``name`` for an activity: a configuration error (no key, an unknown
        provider, a bad base URL) fails the activity at once, since no retry can fix it."""
        try:
            return self.providers(name)
        except UserError as exc:
            raise config_failure(exc) from exc

    def event_index(self) -> EventIndex | None:
        """The index over ``vectors``, opened on first use; None without a vector store."""
        if self.vectors is None:
            return None
        with self._index_lock:
            if self._index is None:
                from wakeful.substrate.embedders import HashingEmbedder

                self._index = EventIndex(
                    self.vectors,
                    self.embedder or HashingEmbedder(),
                    config=self.retrieval,
                    count_tokens=self.counter.count,
                )
            return self._index


def check_policy(policies: Mapping[str, WindowPolicy], name: str) -> None:
    """:class:`ConfigError` unless ``name`` is ``default`` or one of ``policies``."""
    if name != "default" and name not in policies:
        known = ", ".join(sorted({"default", *policies}))
        raise ConfigError(f"unknown compile policy {name!r} (known: {known})")


def config_failure(exc: UserError) -> ApplicationError:
    """``exc`` as an activity must raise it: non-retryable, so the step fails on its first
    attempt with this one line instead of being retried for minutes."""
    return ApplicationError(" ".join(str(exc).split()), type=type(exc).__name__, non_retryable=True)


def check_agents(
    agents: Iterable[Agent], providers: ProviderFactory, policies: Mapping[str, WindowPolicy]
) -> None:
    """Refuse, before a worker polls, to serve an agent that no wake could run: a provider
    without a key (and no base URL), unknown or with a bad base URL; a model with no price
    (its cost is recorded with every reply); an unknown compile policy. Budgets are checked
    when the :class:`Agent` is built. One :class:`ConfigError` naming the agent and the fix."""
    for agent in agents:
        try:
            check_policy(policies, agent.policy)
            policy = policies.get(agent.policy)
            fallbacks = agent.fallbacks or tuple(
                (r.provider, r.model) for r in (policy.failover.fallbacks if policy else ())
            )
            # The agent's own route, and each fallback's: every one may serve a call.
            for name, model in ((agent.provider, agent.model), *fallbacks):
                provider = providers(name)
                if price_for(provider.name, model) is None:
                    raise ConfigError(
                        f"no price for {provider.name} model {model!r}; use a priced model"
                        " or add it to wakeful.providers.pricing.PRICES"
                    )
        except UserError as exc:
            raise ConfigError(
                f"cannot serve agent {agent.name!r} of tenant {agent.tenant!r}: {exc}"
            ) from None


def load_policies(directory: Path | None) -> dict[str, WindowPolicy]:
    """The compile policies of ``directory``'s ``*.toml``/``*.yaml``/``*.yml`` files (None:
    none). A policy's name is its ``name`` field, or else the file's stem. A directory that
    is missing, a file that does not parse or validate, or two files of one name raise
    :class:`ConfigError` in one line naming the file (and the field)."""
    if directory is None:
        return {}
    if not directory.is_dir():
        raise ConfigError(
            f"policy directory {str(directory)!r} does not exist or is not a directory;"
            " set WAKEFUL_POLICY_DIR to a directory of *.toml policy files, or unset it"
        )
    out: dict[str, WindowPolicy] = {}
    where: dict[str, Path] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix.lower() not in POLICY_SUFFIXES or not path.is_file():
            continue
        policy, settings = load_policy_and_settings(path)
        if settings is not None:  # read with the agent only when it names the file
            log.warning(
                "policy file %s holds runtime settings ([consolidation], [pacing], [handoff],"
                " [redaction]); they apply to an agent that names the file by path"
                " (Agent(policy=%r)), not to one that names policy %r",
                path,
                str(path),
                policy.name,
            )
        if policy.name in out:
            raise ConfigError(
                f"policy files {where[policy.name]} and {path} both define policy"
                f" {policy.name!r}; rename one (its name field or its file)"
            )
        out[policy.name], where[policy.name] = policy, path
    return out


def merge_policies(
    ours: Mapping[str, WindowPolicy], theirs: Mapping[str, WindowPolicy], source: str
) -> dict[str, WindowPolicy]:
    """Both sets of policies; one name with two different policies is a ConfigError."""
    merged = dict(ours)
    for name, policy in theirs.items():
        known = merged.setdefault(name, policy)
        if known.fingerprint != policy.fingerprint:
            raise ConfigError(
                f"two different compile policies are named {name!r} (one from {source});"
                " give one of them another name"
            )
    return merged
