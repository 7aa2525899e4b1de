"""The compile's output: a provider-ready request and its ledger."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wakeful.compiler.ledger import Breakpoint, Ledger


class CompiledWindow(BaseModel):
    """``request_json`` is the artefact: canonical JSON (sorted keys, compact, UTF-8), byte
    identical for equal inputs. ``request`` is the same body as a dict for convenience —
    treat it as read-only."""

    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    request: dict[str, Any]
    request_json: str
    window_hash: str = Field(description="blake2b of request_json.")
    stable_prefix_hash: str = Field(description="Hash of the stable segment as rendered.")
    semi_stable_hash: str = Field(description="Hash of the semi-stable segment as rendered.")
    prompt_cache_key: str | None = None
    input_tokens: int
    tokens_by_bucket: dict[str, int]
    breakpoints: tuple[Breakpoint, ...]
    ledger: Ledger
    evidence_text: str = Field(
        "",
        description="The evidence this call brought, as sent (one user item after the current "
        "wake's content). The compile activity records it with the wake, so later calls send "
        "it again unchanged.",
    )
    alternates: dict[str, str] = Field(
        default_factory=dict,
        exclude=True,
        description="The same window rendered for each failover route (``provider/model``"
        " -> request JSON); asked for with ``compile_window(alternates=...)``.",
    )
    evidence_blocks: tuple[str, ...] = Field(
        (), description="Ids of the blocks the evidence was made of, in window order."
    )
    evidence_hashes: tuple[str, ...] = Field(
        (),
        description="The content hash of each of those blocks as its source gave it (same "
        "order): a later compile leaves out a block only while its content is the same.",
    )
