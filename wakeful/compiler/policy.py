"""Compile policy: versioned, validated configuration of budgets, ranking and triggers.

A policy is data, not code: it is written as TOML or YAML, validated by pydantic, and its
fingerprint is stored in every ledger so two compiles can tell that the policy changed.
Invalid input raises :class:`~wakeful.errors.PolicyError` naming the field path
(``budget.allocations.evidence: ...``). Parsing takes text; reading files is the caller's job,
because the compiler does no I/O.

``WindowPolicy.default()`` is the pydantic defaults; ``default_policy.toml`` beside this module
spells the same values out as a starting point (a test keeps the two equal).
"""

from __future__ import annotations

import tomllib
from functools import cached_property
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from wakeful.compiler.blocks import BlockKind, content_hash
from wakeful.compiler.canonical import recorded_json
from wakeful.errors import PolicyError

POLICY_SCHEMA_VERSION = 1
# "none": no cache entry is written at that segment's end (the mark stays a checkpoint):
# pacing's choice for a call whose session prefix nothing would read in time.
Ttl = Literal["1h", "5m", "none"]
_TTL_RANK = {"1h": 2, "5m": 1, "none": 0}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Allocations(_Model):
    """Shares of the input budget (``context_limit - output_reserve``) per bucket.

    ``stable`` and ``semi_stable`` are hard caps decided from cacheable content alone, so new
    events can never change those segments; their unused share flows to the dynamic buckets.
    ``ask`` is reserved for the current wake so that its growth does not evict history (and
    bust the cache) until it outgrows the reserve. ``headroom`` is never filled: it absorbs
    tokenizer error. Shares must sum to at most 1.
    """

    stable: float = Field(0.10, ge=0, le=1)
    semi_stable: float = Field(0.10, ge=0, le=1)
    summaries: float = Field(0.10, ge=0, le=1)
    evidence: float = Field(0.25, ge=0, le=1)
    recent: float = Field(0.25, ge=0, le=1)
    ask: float = Field(0.15, ge=0, le=1)
    headroom: float = Field(0.05, ge=0, le=1)

    @model_validator(mode="after")
    def _sum(self) -> Allocations:
        total = sum(self.model_dump().values())
        if total > 1.0 + 1e-9:
            raise ValueError(f"allocations sum to {total:.3f}; they must sum to at most 1")
        return self


class Budget(_Model):
    """The declared budget of one call."""

    context_limit: int = Field(200_000, gt=0, description="The model's context window.")
    output_reserve: int = Field(
        8_192, ge=1, description="Kept for the reply; never lent to input (max_tokens)."
    )
    allocations: Allocations = Allocations()
    scan_limit: int = Field(
        32,
        ge=1,
        description="A bucket stops looking after this many candidates in a row did not fit.",
    )
    history_quantum: float = Field(
        0.25,
        ge=0,
        le=1,
        description=(
            "When the history outgrows its share, it is cut in steps of this fraction of "
            "input_budget × allocations.recent, so that its start (and the cached prefix) "
            "stays put between steps; 0 evicts one turn at a time (best-first)."
        ),
    )

    consolidate_at: int = Field(
        60_000,
        ge=0,
        description=(
            "History tokens in a window (its recent bucket) at which the worker consolidates"
            " the agent's history after the wake, whatever its age, so that a long session"
            " does not carry its whole transcript on every call; 0 leaves it to the"
            " consolidation schedule."
        ),
    )

    def consolidates(self, history_tokens: int) -> bool:
        """Whether a window whose history takes ``history_tokens`` calls for consolidation
        after its wake (``consolidate_at``; 0 never does)."""
        return 0 < self.consolidate_at <= history_tokens

    @model_validator(mode="after")
    def _reserve(self) -> Budget:
        if self.output_reserve >= self.context_limit:
            raise ValueError("output_reserve must be smaller than context_limit")
        return self

    @property
    def input_budget(self) -> int:
        return self.context_limit - self.output_reserve


class Ranking(_Model):
    """score = recency^w_r × (importance+floor)^w_i × (relevance+floor)^w_v, in log2 space.

    Recency halves every ``half_life_events`` events of ``seq`` distance. It is measured in
    events rather than wall time so that a new event shifts every score by the same constant
    and never reorders older candidates (which would reshuffle the window and miss the cache).
    """

    recency_weight: float = Field(1.0, ge=0)
    importance_weight: float = Field(1.0, ge=0)
    relevance_weight: float = Field(1.0, ge=0)
    half_life_events: float = Field(50.0, gt=0)
    floor: float = Field(0.05, gt=0, le=1, description="Keeps a zero from zeroing the product.")


class Eviction(_Model):
    """Thresholds and switches of the eviction passes."""

    @model_validator(mode="after")
    def _keep_below_threshold(self) -> Eviction:
        at, keep = self.clear_tool_output_at, self.clear_tool_output_keep
        if at and keep >= at:
            raise ValueError(
                f"eviction.clear_tool_output_keep ({keep}) must be below"
                f" clear_tool_output_at ({at}), or set clear_tool_output_at = 0"
            )
        return self

    collapse_resolved: bool = Field(
        True, description="Replace resolved tool output (outside the current wake) by a note."
    )
    note_chars: int = Field(160, ge=20, description="Longest collapsed-output note.")
    clear_tool_output_at: int = Field(
        40_000,
        ge=0,
        description=(
            "History tokens (before the current wake) at which the tool output of earlier"
            " wakes is cleared to a one-line note; 0 never clears"
            " (compiler/clearing.py)."
        ),
    )
    clear_tool_output_keep: int = Field(
        4_000,
        ge=0,
        description="The newest history tokens whose tool output is never cleared.",
    )
    resolve_repeated_calls: bool = Field(
        False,
        description=(
            "Collapse a tool result to a note once the model made the same call (tool and"
            " arguments) again; off by default: each repeat rewrites the cache from the earlier"
            " result, and agents repeat calls often (compiler/live_output.py)."
        ),
    )
    resolve_after_asks: int = Field(
        0,
        ge=0,
        description=(
            "A tool result this many asks back is taken as acted on and collapsed to a note;"
            " 0 never (each new ask would rewrite the cache from an older result: clearing"
            " in steps is the cheaper default; compiler/live_output.py)."
        ),
    )

    evict_resolved_errors: bool = Field(
        False,
        description=(
            "Collapse a failed tool result to a note once the model made the same call (tool"
            " and arguments) again and it succeeded: the failure is resolved"
            " (compiler/live_output.py); off by default, like the other settling rules."
        ),
    )
    tool_output_max_tokens: int = Field(
        0,
        ge=0,
        description=(
            "A tool result of an earlier wake larger than this many tokens is collapsed to a"
            " note (its call kept, so the model can call it again); 0 never"
            " (compiler/live_output.py)."
        ),
    )

    @model_serializer(mode="wrap")
    def _drop_settling_when_off(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Off (the default), these dump as policies did before they existed: fingerprints
        # stay what their ledgers recorded.
        data: dict[str, Any] = handler(self)
        for off in (
            "resolve_repeated_calls",
            "resolve_after_asks",
            "evict_resolved_errors",
            "tool_output_max_tokens",
        ):
            if not data.get(off):
                data.pop(off, None)
        return data

    min_relevance: dict[BlockKind, float] = Field(
        default_factory=dict,
        description="Evidence of these kinds below this relevance is excluded outright.",
    )


class Retrieval(_Model):
    """How much evidence retrieval brings a wake (``substrate.indexing.retrieve_into``).

    A wake's evidence is recorded with it and stays in the window with the wake, read from
    the prompt cache on every later call: what it brings should follow what is relevant,
    not fill a share of the window.
    """

    max_tokens: int = Field(
        500,
        ge=0,
        description="Most tokens of evidence one wake brings (calibrated on the dev "
        "conversations, benchmarks/evidence_calibration.py: past this, a question's "
        "evidence finds its answer too rarely to pay for its tokens).",
    )
    min_score: float = Field(
        0.3,
        ge=0,
        le=1,
        description="A hit scoring below this share of the best match is left out (the turns "
        "around a hit that is brought may still come with it).",
    )
    min_overlap: float = Field(
        0.0,
        ge=0,
        le=1,
        description="A hit a question brings shares at least this share of the question's "
        "content words (compiler.admission); its neighbours follow it.",
    )
    statement_max_tokens: int = Field(
        250,
        ge=0,
        description="Most tokens of evidence an ask that asks nothing (no question) brings.",
    )
    statement_min_overlap: float = Field(
        0.5,
        ge=0,
        le=1,
        description="A hit a statement brings shares at least this share of its content words.",
    )
    keep_for_calls: int = Field(
        10,
        ge=0,
        description="Later calls an ended wake's evidence would be read by if it were kept: "
        "it is carried into later wakes only while reading it that often costs less than "
        "rewriting what followed it in its wake (compiler.evidence); 0 carries it always.",
    )


class Staleness(_Model):
    """What happens to a block past ``stale_after`` (or older than ``max_age_hours``)."""

    mode: Literal["exclude", "flag"] = Field(
        "exclude", description='flag: keep, mark stale="true", evict first.'
    )
    max_age_hours: dict[BlockKind, float] = Field(default_factory=dict)


class Cache(_Model):
    """Prompt-cache breakpoint TTLs. Entries must not lengthen along the prompt (1h first);
    ``"none"`` writes no entry there (the segment is sent as plain input)."""

    stable_ttl: Ttl = "1h"
    semi_stable_ttl: Ttl = "5m"
    summaries_ttl: Ttl = "5m"
    rolling_ttl: Ttl = "5m"
    lookback_blocks: int = Field(
        20, ge=1, description="How far back the provider looks for an earlier cache entry."
    )

    def with_ttls(self, stable: Ttl, session: Ttl) -> Cache:
        """These TTLs for the stable entry and for every later one (the session's)."""
        return self.model_copy(
            update={
                "stable_ttl": stable,
                "semi_stable_ttl": session,
                "summaries_ttl": session,
                "rolling_ttl": session,
            }
        )

    @model_validator(mode="after")
    def _ordered(self) -> Cache:
        ttls = [self.stable_ttl, self.semi_stable_ttl, self.summaries_ttl, self.rolling_ttl]
        ranks = [_TTL_RANK[t] for t in ttls]
        if ranks != sorted(ranks, reverse=True):
            raise ValueError("ttls must not increase along the prompt (1h entries before 5m)")
        return self


class TriggerRule(_Model):
    """When the goal matches, inject (or suppress) rule and skill blocks.

    ``inject`` and ``suppress`` name snapshot blocks by id or supersession key. A block named
    by any trigger's ``inject`` is gated: it enters only when a firing trigger injects it.
    When firing triggers disagree about a block, the highest ``precedence`` decides (ties:
    name order). ``rules`` are inline rule texts added to the semi-stable segment.
    """

    name: str = Field(min_length=1)
    precedence: int = 0
    paths: tuple[str, ...] = Field((), description="fnmatch globs against goal.paths.")
    intents: tuple[str, ...] = ()
    task_classes: tuple[str, ...] = ()
    inject: tuple[str, ...] = ()
    suppress: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()

    # --- knobs: what a firing trigger changes for this compile (compiler/knobs.py) ---------
    # Unset (None), a knob leaves the policy as it is. When several firing triggers set one,
    # the first in precedence order decides. The ledger names each knob that acted.
    budget_tokens: int | None = Field(
        None,
        gt=0,
        description="The window's input budget (context_limit - output_reserve) for this "
        "goal, when it is below the policy's: a narrow task gets a narrow window.",
    )
    tool_output_max_tokens: int | None = Field(
        None,
        gt=0,
        description="Tool results of earlier wakes over this many tokens are collapsed to a "
        "note (eviction.tool_output_max_tokens).",
    )
    freshness: dict[BlockKind, float] | None = Field(
        None,
        description="Hours after which blocks of these kinds are stale for this goal "
        "(staleness.max_age_hours, this trigger's value winning per kind).",
    )
    evict_resolved_errors: bool | None = Field(
        None,
        description="Collapse failed tool results that a later, equal call made good "
        "(eviction.evict_resolved_errors).",
    )
    action: Literal["handoff", "compact"] | None = Field(
        None,
        description="After the wake: 'handoff' ends the session with a handoff note, "
        "'compact' consolidates the agent's history.",
    )

    @model_validator(mode="after")
    def _has_condition(self) -> TriggerRule:
        if not (self.paths or self.intents or self.task_classes):
            raise ValueError("a trigger needs at least one of paths, intents, task_classes")
        for kind, hours in (self.freshness or {}).items():
            if hours <= 0:
                raise ValueError(f"freshness.{kind.value} must be a positive number of hours")
        return self

    @model_serializer(mode="wrap")
    def _drop_unset_knobs(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A trigger without knobs dumps (and fingerprints) as triggers did before them.
        data: dict[str, Any] = handler(self)
        for knob in KNOBS:
            if data.get(knob) is None:
                data.pop(knob, None)
        return data


# The per-trigger knobs, in the order the ledger names them.
KNOBS = ("budget_tokens", "tool_output_max_tokens", "freshness", "evict_resolved_errors", "action")


class IntentRule(_Model):
    """An intent the rules classifier (``compiler/intents.py``) gives a goal that arrived
    without intents: when any of ``patterns`` occurs in the goal's text as a whole word or
    phrase, case-insensitively."""

    name: str = Field(min_length=1)
    patterns: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _patterns(self) -> IntentRule:
        if any(not p.strip() for p in self.patterns):
            raise ValueError("patterns must not be empty or blank")
        return self


class ModelRoute(_Model):
    """A provider (the renderers' names or their aliases) and a model of it."""

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.model}"


class Failover(_Model):
    """Where a model call goes when its provider fails: the fallbacks, in order, each sent
    a window the compiler rendered for it. A provider that is overloaded (529, 503), fails
    (any 5xx), times out or cannot be reached, on attempt ``after_attempts`` of the call or
    later, is skipped for ``cooldown_s`` (by every agent of the tenant), then tried again."""

    fallbacks: tuple[ModelRoute, ...] = ()
    after_attempts: int = Field(
        1, ge=1, description="The attempt of a call from which a failure goes to the next."
    )
    cooldown_s: float = Field(
        300.0, gt=0, description="Seconds a failed provider is skipped before it is tried again."
    )


class WindowPolicy(_Model):
    """Everything a compile is allowed to decide by, in one versioned document."""

    version: int = Field(POLICY_SCHEMA_VERSION, description="Window policy schema version.")
    name: str = "default"
    budget: Budget = Budget()
    ranking: Ranking = Ranking()
    eviction: Eviction = Eviction()
    staleness: Staleness = Staleness()
    retrieval: Retrieval = Retrieval()
    cache: Cache = Cache()
    triggers: tuple[TriggerRule, ...] = ()
    intents: tuple[IntentRule, ...] = Field(
        (),
        description="Rules that classify a goal that came without intents, so that the "
        "triggers listing those intents fire (in the order given; every match counts).",
    )
    failover: Failover = Field(
        Failover(),
        description="Fallback providers and models for the model call, and when to use them.",
    )

    @model_serializer(mode="wrap")
    def _drop_no_intents(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A policy without intent rules (or failover) dumps (and so fingerprints and stores)
        # as it did before they existed: its ledgers keep the fingerprint they always had.
        data: dict[str, Any] = handler(self)
        if not data.get("intents"):
            data.pop("intents", None)
        if self.failover == Failover():
            data.pop("failover", None)
        return data

    @model_validator(mode="after")
    def _check(self) -> WindowPolicy:
        if self.version != POLICY_SCHEMA_VERSION:
            raise ValueError(
                f"unsupported policy version {self.version}; "
                f"this build reads version {POLICY_SCHEMA_VERSION}"
            )
        names = [t.name for t in self.triggers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"trigger names must be unique: {', '.join(dupes)}")
        intents = [i.name for i in self.intents]
        dupes = sorted({n for n in intents if intents.count(n) > 1})
        if dupes:
            raise ValueError(f"intent names must be unique: {', '.join(dupes)}")
        return self

    @classmethod
    def default(cls) -> WindowPolicy:
        return cls()

    def with_ttls(self, stable: Ttl, session: Ttl) -> WindowPolicy:
        """This policy with other cache TTLs (pacing's choice; see ``Cache.with_ttls``),
        validated afresh: its fingerprint is its own."""
        if (self.cache.stable_ttl, self.cache.rolling_ttl) == (stable, session) and (
            self.cache.semi_stable_ttl == self.cache.summaries_ttl == session
        ):
            return self
        data = self.model_dump()
        data["cache"] = self.cache.with_ttls(stable, session).model_dump()
        return WindowPolicy.model_validate(data)

    @cached_property
    def fingerprint(self) -> str:
        """Stable hash of the policy's content, recorded in every ledger (computed once:
        the policy is frozen)."""
        return content_hash(recorded_json(self.model_dump(mode="json")))


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "<policy>"


def policy_from_data(data: Any) -> WindowPolicy:
    """Validate parsed data; PolicyError names every failing field path."""
    if not isinstance(data, dict):
        raise PolicyError(f"<policy>: expected a table/mapping, got {type(data).__name__}")
    try:
        return WindowPolicy.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_field_path(err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise PolicyError("invalid policy: " + "; ".join(problems)) from None


def load_policy(text: str, fmt: Literal["toml", "yaml", "yml"] | None = None) -> WindowPolicy:
    """Parse a policy from TOML or YAML text (``fmt=None`` tries TOML, then YAML)."""
    if fmt in ("yaml", "yml"):
        return policy_from_data(_yaml(text))
    try:
        return policy_from_data(tomllib.loads(text))
    except tomllib.TOMLDecodeError as toml_error:
        if fmt == "toml":
            raise PolicyError(f"<policy>: not valid TOML: {toml_error}") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            data = None
        if not isinstance(data, dict):
            raise PolicyError(
                f"<policy>: neither valid TOML ({toml_error}) nor a YAML mapping"
            ) from None
        return policy_from_data(data)


def load_policy_file(text: str, filename: str) -> WindowPolicy:
    """Parse already-read policy text, choosing the format from ``filename``'s suffix."""
    lowered = filename.lower()
    if lowered.endswith((".yaml", ".yml")):
        return load_policy(text, "yaml")
    if lowered.endswith(".toml"):
        return load_policy(text, "toml")
    return load_policy(text)


def _yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"<policy>: not valid YAML: {exc}") from None
