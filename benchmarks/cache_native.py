"""The providers' own context management, as baselines of the cache benchmark.

What a user would turn on instead of Wakeful: one request field, and the provider keeps the
context in bounds. Each is replayed here as the provider documents it, client side, under
the same caching and pricing rules as every other strategy (the simulator applies
Anthropic's prompt-caching rules to the request the provider's edit produces, priced for the
session's model):

* :class:`ClearToolUses` — Anthropic's context editing, ``clear_tool_uses_20250919``:
  once the request's input tokens exceed ``trigger`` (default 100,000), the oldest tool
  results are replaced by a placeholder, all but the ``keep`` most recent tool uses
  (default 3); ``clear_at_least`` (default none) skips a clearing that would free fewer
  tokens; ``clear_tool_inputs`` (default false) also empties the calls' inputs;
  ``exclude_tools`` are never cleared. The edit is applied by the server to each request as
  sent (the client keeps the full history), so the cached prefix is invalidated from the
  first tool result a request clears that the one before did not;
* :class:`AnthropicCompaction` — Anthropic's server-side compaction, ``compact_20260112``:
  once input tokens reach ``trigger`` (default 150,000, at least 50,000), a summarisation
  step (a model call, charged, reading the same prompt) writes a summary of the whole
  conversation; it replaces everything before it, and later requests continue from it;
* :class:`ResponsesCompaction` — OpenAI Responses ``context_management`` with
  ``compact_threshold``: once the rendered input crosses the threshold, the server compacts;
  as its compaction endpoint documents, the user's messages are kept verbatim and every
  assistant message, tool call and tool result before them is replaced by one opaque
  compaction item. OpenAI documents no default threshold; the bench uses 200,000, the value
  its examples show. Priced, like every strategy here, for the session's Anthropic model
  with Anthropic's caching rules, so that only the shape of the context differs.

**Summary size assumed.** Both compactions' summaries are the bench's one summariser
(:func:`~benchmarks.cache_transcript.summarize_events`, also used by the
summarize-over-threshold baseline and by Wakeful's consolidation): one line per step, every
``DECISION`` line verbatim. So a compaction keeps the load-bearing facts it was given —
the assumption is generous to the providers (a real summary may paraphrase them, and the
bench's check is verbatim); OpenAI's compaction item is encrypted and its real size unknown,
so it is assumed to be that same text. Each strategy's :meth:`details` reports the tokens
its summaries actually had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchmarks.cache_strategies import (
    SUMMARIZE_INSTRUCTION,
    CallContext,
    Maintenance,
    Plan,
    Strategy,
    request_body,
    request_tokens,
)
from benchmarks.cache_substrate import AGENT
from benchmarks.cache_transcript import mark_last, render_events, summarize_events
from wakeful.substrate.records import StoredEvent
from wakeful.testing.simulator.tokens import count_tokens

__all__ = [
    "CLEARED_PLACEHOLDER",
    "AnthropicCompaction",
    "ClearToolUses",
    "ResponsesCompaction",
]

# What a cleared tool result reads as; the API's exact wording is not documented, its size
# (a short sentence) is what matters here.
CLEARED_PLACEHOLDER = "[Tool result cleared to save context.]"
ANTHROPIC_COMPACTION_MIN_TRIGGER = 50_000


def _cleared(
    events: Sequence[StoredEvent], keep: int, exclude: frozenset[str], inputs: bool
) -> tuple[list[StoredEvent], set[str]]:
    """``events`` with every tool use but the ``keep`` most recent cleared (oldest first);
    the ids of the cleared calls."""
    uses = [
        e.tool_call_id
        for e in events
        if e.kind == "tool_call" and e.tool_call_id and (e.tool_name or "") not in exclude
    ]
    gone = set(uses[: max(len(uses) - keep, 0)])
    out = []
    for e in events:
        if e.tool_call_id in gone and e.kind == "tool_result":
            e = e.model_copy(update={"text": CLEARED_PLACEHOLDER})
        elif e.tool_call_id in gone and e.kind == "tool_call" and inputs:
            e = e.model_copy(update={"tool_input": {}})
        out.append(e)
    return out, gone


@dataclass
class ClearToolUses(Strategy):
    """Anthropic's ``clear_tool_uses_20250919`` edit over the full history."""

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int = 0
    clear_tool_inputs: bool = False
    exclude_tools: tuple[str, ...] = ()
    name: str = "anthropic_clear_tool_uses"
    clearings: int = 0  # requests the edit changed
    cleared_uses: int = 0  # tool uses cleared, summed over those requests
    cleared_tokens: list[int] = field(default_factory=list)  # per clearing request

    def plan(self, ctx: CallContext) -> Plan:
        events = ctx.substrate.events(AGENT)
        full = request_body(ctx.session, mark_last(render_events(events, ctx.docs)))
        size = request_tokens(full)
        if size <= self.trigger:  # the edit applies once the context exceeds the trigger
            return Plan(full)
        edited, gone = _cleared(
            events, self.keep, frozenset(self.exclude_tools), self.clear_tool_inputs
        )
        if not gone:
            return Plan(full)
        request = request_body(ctx.session, mark_last(render_events(edited, ctx.docs)))
        freed = size - request_tokens(request)
        if freed < self.clear_at_least:  # the API skips a clearing that frees too little
            return Plan(full)
        self.clearings += 1
        self.cleared_uses += len(gone)
        self.cleared_tokens.append(freed)
        return Plan(request)

    def details(self) -> dict[str, Any]:
        return {
            "edit": "clear_tool_uses_20250919",
            "trigger_input_tokens": self.trigger,
            "keep_tool_uses": self.keep,
            "clear_at_least_tokens": self.clear_at_least,
            "clear_tool_inputs": self.clear_tool_inputs,
            "exclude_tools": list(self.exclude_tools),
            "requests_cleared": self.clearings,
            "mean_tokens_cleared": (
                round(sum(self.cleared_tokens) / len(self.cleared_tokens))
                if self.cleared_tokens
                else 0
            ),
        }


@dataclass
class _Compaction(Strategy):
    """A summary replaces the history once the request passes a threshold (shared parts)."""

    threshold: int
    cut: int = 0  # events with id <= cut are compacted
    summary: str = ""
    summary_tokens: list[int] = field(default_factory=list)  # per compaction

    def _lead(self, ctx: CallContext) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _fires(self, tokens: int) -> bool:
        raise NotImplementedError

    def _compact(self, events: Sequence[StoredEvent]) -> bool:
        """Fold ``events`` into the compacted state; whether there was anything to fold."""
        raise NotImplementedError

    def _request(self, ctx: CallContext, events: Sequence[StoredEvent]) -> dict[str, Any]:
        lead = self._lead(ctx)
        return request_body(ctx.session, mark_last(render_events(events, ctx.docs, lead=lead)))

    def plan(self, ctx: CallContext) -> Plan:
        events = [e for e in ctx.substrate.events(AGENT) if e.id > self.cut]
        request = self._request(ctx, events)
        if not events or not self._fires(request_tokens(request)):
            return Plan(request)
        # The summarisation step reads the prompt as sent (its prefix is cached like the
        # turn's) and writes the summary; the turn then continues from the compacted state.
        step = request_body(ctx.session, render_events(events, ctx.docs, lead=self._lead(ctx)))
        step["messages"][-1]["content"].append({"type": "text", "text": SUMMARIZE_INSTRUCTION})
        step["messages"] = mark_last(step["messages"])
        if not self._compact(events):
            return Plan(request)
        self.cut = events[-1].id
        self.summary_tokens.append(count_tokens(self.summary))
        return Plan(self._request(ctx, ()), (Maintenance("compaction", step, self.summary),))

    def details(self) -> dict[str, Any]:
        return {
            "compactions": len(self.summary_tokens),
            "summary_assumed": "the bench's extractive summary: one line per step, "
            "DECISION lines verbatim",
            "summary_tokens": self.summary_tokens,
        }


@dataclass
class AnthropicCompaction(_Compaction):
    """Anthropic's ``compact_20260112``: the summary of everything replaces it all."""

    threshold: int = 150_000
    name: str = "anthropic_compaction"
    minimum: ClassVar[int] = ANTHROPIC_COMPACTION_MIN_TRIGGER  # the API refuses less

    def __post_init__(self) -> None:
        if self.threshold < self.minimum:
            raise ValueError(f"compact_20260112 trigger must be at least {self.minimum}")

    def _fires(self, tokens: int) -> bool:
        return tokens >= self.threshold  # "when input tokens reach the trigger"

    def _lead(self, ctx: CallContext) -> list[dict[str, Any]]:
        if not self.summary:
            return []
        return [{"type": "text", "text": f"<summary>\n{self.summary}\n</summary>"}]

    def _compact(self, events: Sequence[StoredEvent]) -> bool:
        added = summarize_events(events)
        self.summary = f"{self.summary}\n{added}" if self.summary else added
        return True

    def details(self) -> dict[str, Any]:
        return {"edit": "compact_20260112", "trigger_input_tokens": self.threshold} | (
            super().details()
        )


@dataclass
class ResponsesCompaction(_Compaction):
    """OpenAI Responses ``compact_threshold``: the user's messages stay verbatim, the rest
    becomes one compaction item after them."""

    threshold: int = 200_000
    name: str = "openai_compaction"
    users: list[StoredEvent] = field(default_factory=list)  # compacted user messages

    def _fires(self, tokens: int) -> bool:
        return tokens > self.threshold  # "when the rendered token count crosses it"

    def _lead(self, ctx: CallContext) -> list[dict[str, Any]]:
        if not self.summary:
            return []
        kept = render_events(self.users, ctx.docs)
        blocks = [b for m in kept for b in m["content"]]
        return [*blocks, {"type": "text", "text": f"<compaction>\n{self.summary}\n</compaction>"}]

    def _compact(self, events: Sequence[StoredEvent]) -> bool:
        rest = [e for e in events if not (e.kind == "turn" and e.role == "user")]
        if not rest:
            return False  # only user messages since the last compaction: nothing to replace
        self.users.extend(e for e in events if e.kind == "turn" and e.role == "user")
        added = summarize_events(rest)
        self.summary = f"{self.summary}\n{added}" if self.summary else added
        return True

    def details(self) -> dict[str, Any]:
        return {
            "context_management": "compaction",
            "compact_threshold_tokens": self.threshold,
        } | super().details()
