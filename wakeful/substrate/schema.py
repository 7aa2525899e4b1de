"""The substrate's tables, as SQLAlchemy Core.

Every table carries ``tenant`` as the first column of its key, and every repository query
filters on it: tenant isolation is structural, not a convention. Rows are appended, never
silently overwritten; "retiring" or "superseding" a row sets a timestamp or a pointer.

Idempotency: anything an activity writes carries a ``step_key`` (workflow id + step), unique
per tenant, so a retried activity finds its earlier write instead of writing twice.

The schema is migrated with Alembic (``wakeful/substrate/migrations``); this module is the
source the migrations are generated from.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _now() -> Column[object]:
    return Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now())


tenants = Table(
    "tenants",
    metadata,
    Column("tenant", Text, primary_key=True),
    _now(),
)

agents = Table(
    "agents",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("provider", Text, nullable=False),
    Column("instructions", Text, nullable=False),
    Column("spec", JSONB, nullable=False),
    Column("spec_hash", Text, nullable=False),
    _now(),
    PrimaryKeyConstraint("tenant", "name"),
    ForeignKeyConstraint(["tenant"], ["tenants.tenant"]),
)

wakes = Table(
    "wakes",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("wake_id", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("workflow_id", Text, nullable=False),
    Column("number", Integer, nullable=False),
    Column("goal", JSONB, nullable=False),
    Column("idempotency_key", Text),
    Column("status", Text, nullable=False, server_default="running"),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    # The user the wake served (wakeful.users); NULL: the agent's own wake.
    Column("user_id", Text),
    PrimaryKeyConstraint("tenant", "wake_id"),
    UniqueConstraint("tenant", "agent", "number", name="uq_wakes_agent_number"),
    ForeignKeyConstraint(["tenant", "agent"], ["agents.tenant", "agents.name"]),
    # The wake a trigger's idempotency key woke, long after the workflow forgot it.
    Index("ix_wakes_idempotency_key", "tenant", "agent", "idempotency_key", "number"),
    # An agent's wakes since a time: its spend today, read before each model call of an
    # agent with a daily cap (TenantStore.spend_since).
    Index("ix_wakes_started_at", "tenant", "agent", "started_at"),
)

events = Table(
    "events",
    metadata,
    # The identity is the global append order; per-agent order is the same order filtered.
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("session_id", Text),
    Column("wake_id", Text),
    Column("step_key", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("role", Text),
    Column("text", Text, nullable=False),
    Column("tool_call_id", Text),
    Column("tool_name", Text),
    Column("tool_input", JSONB),
    Column("is_error", Boolean, nullable=False, server_default="false"),
    Column("resolved", Boolean, nullable=False, server_default="false"),
    Column("content_hash", Text, nullable=False),
    Column("event_time", DateTime(timezone=True), nullable=False),
    Column("ingest_time", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("external_id", Text),
    Column("meta", JSONB, nullable=False, server_default="{}"),
    Column("retired_at", DateTime(timezone=True)),
    Column("retired_by", Text),
    # The agent's knowledge revision (``knowledge_revisions``) that retired the event.
    Column("retired_rev", BigInteger),
    # The user the wake that wrote it served (wakeful.users); NULL: agent-wide.
    Column("user_id", Text),
    UniqueConstraint("tenant", "step_key", name="uq_events_step_key"),
    ForeignKeyConstraint(["tenant", "agent"], ["agents.tenant", "agents.name"]),
    Index("ix_events_agent_order", "tenant", "agent", "id"),
    # A wake's events in order, and positions within a session (indexing). Both carry the
    # order column, so the plan is right even before the planner has statistics (a bulk
    # import followed at once by a compile).
    Index("ix_events_agent_wake", "tenant", "agent", "wake_id", "id"),
    Index("ix_events_session", "tenant", "agent", "session_id", "id"),
    # The agent's newest event retirement, in one index lookup: a cached snapshot tail is
    # exact while no event was retired after it was read (``tail_cache``).
    Index(
        "ix_events_retired_rev",
        "tenant",
        "agent",
        "retired_rev",
        postgresql_where=text("retired_rev IS NOT NULL"),
    ),
)

memories = Table(
    "memories",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("step_key", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("scope", Text, nullable=False, server_default="agent"),
    Column("verification", Text, nullable=False, server_default="unverified"),
    Column("importance", Float, nullable=False, server_default="0.5"),
    Column("captured_at", DateTime(timezone=True), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("supersedes", BigInteger),
    Column("invalidated_at", DateTime(timezone=True)),
    # Transaction time, in the agent's knowledge revisions: when the row was written, when
    # its validity was cut short, and its verification marks ([{"v": ..., "rev": ...}], in
    # order; ``verification`` keeps the value it was written with).
    Column("recorded_rev", BigInteger, nullable=False, server_default="0"),
    Column("invalidated_rev", BigInteger),
    Column("marks", JSONB, nullable=False, server_default="[]"),
    # The user whose wake wrote it (wakeful.users); NULL: agent-wide.
    Column("user_id", Text),
    UniqueConstraint("tenant", "step_key", name="uq_memories_step_key"),
    Index("ix_memories_key", "tenant", "agent", "key"),
)

decisions = Table(
    "decisions",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("decision_id", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("source_event", BigInteger),
    Column("expires_at", DateTime(timezone=True)),
    Column("superseded_by", Text),
    _now(),
    Column("recorded_rev", BigInteger, nullable=False, server_default="0"),
    Column("superseded_rev", BigInteger),
    # A stable name ("db.engine"): a new decision on a live key supersedes the old one.
    Column("key", Text),
    Column("rationale", Text),
    # Who wrote it: consolidation (promotion rules), tool (the model), person (the CLI/API).
    Column("source", Text, nullable=False, server_default="consolidation"),
    # Retired explicitly, or past its expiry by the compile that announced it (retired_by
    # "expired@<compile step>"): valid time and the revision that retired it.
    Column("retired_at", DateTime(timezone=True)),
    Column("retired_by", Text),
    Column("retired_rev", BigInteger),
    # A proposal: a decision the model (or consolidation) made on a key a person decided.
    # Never live; it names the person's decision it would replace (see registry_repo).
    Column("proposal_for", Text),
    # The user whose wake recorded it (wakeful.users); NULL: agent-wide. A key is one
    # decision per scope: a user's decision supersedes only that user's on the key.
    Column("user_id", Text),
    PrimaryKeyConstraint("tenant", "agent", "decision_id"),
    Index("ix_decisions_key", "tenant", "agent", "key"),
)

summaries = Table(
    "summaries",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("step_key", Text, nullable=False),
    Column("level", Integer, nullable=False),
    Column("span_start", BigInteger, nullable=False),
    Column("span_end", BigInteger, nullable=False),
    Column("text", Text, nullable=False),
    Column("gate", JSONB, nullable=False, server_default="{}"),
    Column("superseded_by", BigInteger),
    _now(),
    Column("recorded_rev", BigInteger, nullable=False, server_default="0"),
    Column("superseded_rev", BigInteger),
    UniqueConstraint("tenant", "step_key", name="uq_summaries_step_key"),
    Index("ix_summaries_agent", "tenant", "agent", "span_start"),
)

handoff_notes = Table(
    "handoff_notes",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("wake_id", Text, nullable=False),
    Column("step_key", Text, nullable=False),
    Column("body", JSONB, nullable=False),
    Column("text", Text, nullable=False),
    _now(),
    Column("recorded_rev", BigInteger, nullable=False, server_default="0"),
    # The user of the wake that wrote it (wakeful.users); NULL: agent-wide.
    Column("user_id", Text),
    UniqueConstraint("tenant", "step_key", name="uq_handoff_notes_step_key"),
    Index("ix_handoff_agent", "tenant", "agent", "id"),
)

blobs = Table(
    "blobs",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("hash", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("content", Text, nullable=False),
    _now(),
    PrimaryKeyConstraint("tenant", "hash"),
)

compiles = Table(
    "compiles",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("wake_id", Text, nullable=False),
    Column("step_key", Text, nullable=False),
    Column("call_index", Integer, nullable=False),
    Column("as_of", DateTime(timezone=True), nullable=False),
    Column("max_event_id", BigInteger, nullable=False),
    Column("goal", JSONB, nullable=False),
    Column("policy_hash", Text, nullable=False),
    Column("snapshot_hash", Text, nullable=False),
    Column("window_hash", Text, nullable=False),
    Column("ledger_hash", Text, nullable=False),
    Column("stable_prefix_hash", Text, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("tokens_by_bucket", JSONB, nullable=False),
    _now(),
    # Blob of the retrieval hits the compile used (None: no retrieval), so a replay
    # recompiles from the same evidence without asking the vector store again.
    Column("retrieval_hash", Text),
    # The agent's knowledge revision the snapshot was read at (None: compiled before
    # revisions existed), the agent spec it used (a blob) and its raw-tail length: with
    # ``max_event_id`` and ``as_of``, everything a replay needs to load the same snapshot.
    Column("revision", BigInteger),
    Column("spec_hash", Text),
    Column("recent_limit", Integer),
    # The window rendered for each failover route (``provider/model`` -> window blob).
    Column("alternates", JSONB),
    PrimaryKeyConstraint("tenant", "step_key"),
    Index("ix_compiles_wake", "tenant", "wake_id", "call_index"),
)

model_calls = Table(
    "model_calls",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("wake_id", Text, nullable=False),
    Column("step_key", Text, nullable=False),
    Column("call_index", Integer, nullable=False),
    Column("provider", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("window_hash", Text, nullable=False),
    Column("output_hash", Text, nullable=False),
    Column("stop_reason", Text, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cache_creation_input_tokens", Integer, nullable=False),
    Column("cache_read_input_tokens", Integer, nullable=False),
    Column("cache_creation_5m_input_tokens", Integer, nullable=False),
    Column("cache_creation_1h_input_tokens", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    _now(),
    # Which route served a call that did not go to the agent's own provider and model,
    # and why (the routes passed over, each with its reason). NULL: the primary served.
    Column("failover", JSONB),
    PrimaryKeyConstraint("tenant", "step_key"),
    Index("ix_model_calls_wake", "tenant", "wake_id", "call_index"),
)

# A provider and model that failed (overloaded, 5xx, timed out, unreachable) is skipped by
# the tenant's model calls until ``until`` (activity time: never read by a workflow), then
# tried again; ``reason`` is its failure.
provider_cooldowns = Table(
    "provider_cooldowns",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("route", Text, nullable=False),
    Column("until", DateTime(timezone=True), nullable=False),
    Column("reason", Text, nullable=False),
    PrimaryKeyConstraint("tenant", "route"),
)

# What consolidation did and why: drafts, gate verdicts (a rejected summary's reasons live
# here, since its raw span stays live), rollups, and every memory-hygiene action.
consolidation_log = Table(
    "consolidation_log",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("step_key", Text, nullable=False),
    Column("round_id", Text, nullable=False),
    Column("action", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("subject", Text, nullable=False),
    Column("summary_id", BigInteger),
    Column("output_hash", Text),
    Column("detail", JSONB, nullable=False, server_default="{}"),
    _now(),
    UniqueConstraint("tenant", "step_key", name="uq_consolidation_log_step_key"),
    Index("ix_consolidation_log_agent", "tenant", "agent", "id"),
)

# Each agent's knowledge revision: a counter bumped, under its row lock, by every write that
# adds or retires knowledge (memories, decisions, summaries, handoff notes, retired events).
# Rows carry the revision that wrote or retired them. The lock orders those writes, so a
# snapshot that reads the revision first and filters on it sees exactly the knowledge of
# that revision, whatever commits while it reads, and a replay reads the same again.
knowledge_revisions = Table(
    "knowledge_revisions",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("revision", BigInteger, nullable=False),
    PrimaryKeyConstraint("tenant", "agent"),
)

# How far an agent's events are indexed into a vector collection: the compile activity
# indexes what lies past the cursor before it retrieves (wakeful.substrate.indexing).
index_cursors = Table(
    "index_cursors",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("collection", Text, nullable=False),
    Column("last_event_id", BigInteger, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant", "agent", "collection"),
)

# An agent's documents, chunked by structure (wakeful.substrate.documents): one row per chunk,
# with the file's path, the heading trail it sits under and the file's version (the hash of
# its text). A changed or removed file's chunks are superseded, never deleted; the vector
# index follows ``id`` with a cursor per index identity, as it follows events.
document_chunks = Table(
    "document_chunks",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("path", Text, nullable=False),
    Column("version", Text, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("heading", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    _now(),
    Column("superseded_at", DateTime(timezone=True)),
    Index("ix_document_chunks_path", "tenant", "agent", "path", "id"),
    Index("ix_document_chunks_agent", "tenant", "agent", "id"),
    # What each index's catch-up counts and deletes (EventIndex._sweep_docs).
    Index(
        "ix_document_chunks_superseded",
        "tenant",
        "agent",
        "id",
        postgresql_where=text("superseded_at IS NOT NULL"),
    ),
)

# Webhook deliveries an ingress claimed: one row per (agent, idempotency key), won
# atomically (INSERT ... ON CONFLICT DO NOTHING), so of concurrent deliveries with one key
# exactly one event wins. Keys and events are stored as SHA-256 digests only: a sender's key
# may hold a secret. ``state``: claimed (being delivered), delivered (Temporal has it), legacy
# (accepted before claims existed, under a trigger key that carried the raw key).
webhook_claims = Table(
    "webhook_claims",
    metadata,
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("key_digest", Text, nullable=False),
    Column("event_digest", Text, nullable=False),
    Column("state", Text, nullable=False),
    _now(),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant", "agent", "key_digest"),
)

# What a model call has said so far while it streams: text pieces and tool calls, in the
# order they came (``id``), for a caller to tail (``wakeful trigger --stream``,
# ``Client.stream``) while the wake runs. Each write is announced on the ``wakeful_stream``
# channel (NOTIFY). An agent keeps the rows of its latest wake only: when a wake ends, the
# rows of the agent's earlier wakes are deleted (the stored replies are the record; these
# are a preview, kept until a late reader has surely read them).
wake_stream = Table(
    "wake_stream",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("wake_id", Text, nullable=False),
    Column("call_index", Integer, nullable=False),
    Column("kind", Text, nullable=False),
    Column("data", JSONB, nullable=False),
    _now(),
    Index("ix_wake_stream_wake", "tenant", "wake_id", "id"),
    Index("ix_wake_stream_agent", "tenant", "agent"),
)

__all__ = [
    "agents",
    "blobs",
    "compiles",
    "consolidation_log",
    "decisions",
    "document_chunks",
    "events",
    "handoff_notes",
    "index_cursors",
    "knowledge_revisions",
    "memories",
    "metadata",
    "model_calls",
    "provider_cooldowns",
    "summaries",
    "tenants",
    "wake_stream",
    "wakes",
    "webhook_claims",
]
