"""What the activities need, built once by the worker and passed in explicitly."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wakeful.activities.snapshot_hash import BlockHashes
from wakeful.agents import AgentRegistry
from wakeful.compiler import CountingCache, Policy, TokenCounter
from wakeful.errors import ConfigError
from wakeful.providers.base import ModelProvider
from wakeful.substrate.embedders import Embedder
from wakeful.substrate.indexing import EventIndex
from wakeful.substrate.retrieval import RetrievalConfig
from wakeful.substrate.sized_lru import SizedLRU
from wakeful.substrate.store import Store
from wakeful.substrate.tail_cache import TailCache
from wakeful.substrate.vectors.base import VectorStore
from wakeful.telemetry import Telemetry

ProviderFactory = Callable[[str], ModelProvider]


@dataclass
class ActivityDeps:
    store: Store
    agents: AgentRegistry
    providers: ProviderFactory
    counter: TokenCounter
    policies: dict[str, Policy] = field(default_factory=dict)
    recent_limit: int = 200
    # Token counts and block facts memoised across compiles: a worker tokenises a block once.
    # Bounded (it holds texts); shared by the activity threads under ``compile_lock``.
    cache: CountingCache = field(default_factory=lambda: CountingCache(max_entries=50_000))
    compile_lock: threading.Lock = field(default_factory=threading.Lock)
    # Snapshot tails kept between compiles: a compile reads only the events appended since.
    tail_cache: TailCache = field(default_factory=TailCache)
    # Block hashes of the blocks the tail cache hands out again, for the snapshot hash.
    block_hashes: BlockHashes = field(default_factory=BlockHashes)
    # Windows this worker compiled, by hash (after their commit), so that its model calls
    # need not read them back from the substrate. Content-addressed: never stale.
    windows: SizedLRU[str, str] = field(default_factory=lambda: SizedLRU(32_000_000, len))
    # Retrieval: with a vector store, the compile activity indexes the agent's new events
    # and adds retrieved evidence to the snapshot. None: no indexing, no retrieval.
    vectors: VectorStore | None = None
    embedder: Embedder | None = None  # None: HashingEmbedder()
    retrieval: RetrievalConfig | None = None  # None: RetrievalConfig()
    retrieval_max_tokens: int = 16_000
    # Spans and metrics of compiles, model calls and tools; records nothing by default.
    telemetry: Telemetry = field(default_factory=Telemetry.disabled)
    _index: EventIndex | None = field(default=None, init=False, repr=False)
    _index_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def policy(self, name: str) -> Policy:
        if name == "default" and name not in self.policies:
            # Kept: a policy is frozen, and its fingerprint (hashed once) is cached on it.
            self.policies[name] = Policy.default()
        try:
            return self.policies[name]
        except KeyError:
            known = ", ".join(sorted(self.policies)) or "default"
            raise ConfigError(f"unknown compile policy {name!r} (known: {known})") from None

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


def load_policies(directory: Path | None) -> dict[str, Policy]:
    """Policies from ``*.toml``/``*.yaml`` files; the file stem is the policy name."""
    from wakeful.compiler.policy import load_policy_file

    if directory is None or not directory.exists():
        return {}
    out: dict[str, Policy] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix in (".toml", ".yaml", ".yml"):
            out[path.stem] = load_policy_file(path.read_text(encoding="utf-8"), path.name)
    return out
