"""The summarisation request: one user message carrying the span, in any provider's format.

The prompt states the gate's rules, so a capable model can pass it first time; the gate
still checks every summary, whoever wrote it. Each span line is ``[label role time] text``
(``e12`` for event 12, ``s3`` for summary 3); registry entries promoted from the span are
listed with their ids, which the summary must repeat verbatim.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple

from wakeful.compiler.ledger import Ledger
from wakeful.consolidation.items import SpanItem

# The output cap, by request shape (as the compiler's renderers name it).
_MAX_OUTPUT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
HEADER = "# Consolidate history span"
SYSTEM = (
    "You maintain the long-term memory of an autonomous agent. You rewrite old stretches of "
    "its history into compact summaries it will read instead of the original. Losing a rule, "
    "an id, a number or a negation is a serious error; dropping chit-chat is the point."
)
_LEVELS = {1: "turn span", 2: "session summary", 3: "period summary"}
# In an ask continuing the agent's own request the span is in the conversation above: each
# item is listed by its label and opening only, so the ask stays small (and uncached).
_OPENING_CHARS = 200
_CONTINUED = (
    "The span's events are listed below: those shown by their opening are in the "
    "conversation above, whole; the others are given whole here. Summarise these events only."
)
_RULES = (
    "- Repeat every registry id (like LB-12, DEC-40, C-7) verbatim.",
    "- Keep every number, date and version string exactly as written.",
    '- Keep negations exactly ("do not", "never", "must not").',
    '- Keep the current value of every fact ("the X is Y"); mark replaced values as superseded.',
    "- Drop greetings, thanks and small talk. Use short bullet points.",
)


def build_prompt(
    level: int,
    items: list[SpanItem],
    registry: list[tuple[str, str]],
    superseded: Sequence[tuple[str, str, str]] = (),
    *,
    continued: bool = False,
    above: Collection[int] = (),
) -> str:
    """The user message asking for a level-``level`` summary of ``items``.

    ``registry`` lists ``(id, text)`` promoted from the span; ``superseded`` lists
    ``(subject, old value, new value)`` the substrate knows were replaced. ``continued``:
    the ask follows the agent's own conversation, so it carries the task (the system text
    of a request of its own), and lists each item the conversation holds whole (ids in
    ``above``) by its label and opening only; the others are given whole.
    """
    lines = [
        *([SYSTEM, ""] if continued else []),
        HEADER,
        f"level: {level} ({_LEVELS.get(level, 'summary')})",
        *([_CONTINUED] if continued else []),
        "Rewrite the span below as a summary. Rules:",
        *_RULES,
        "",
        "## Registry entries from this span",
        *([f"- [{i}] {text}" for i, text in registry] or ["- (none)"]),
        "",
        "## Superseded values",
        *([f"- {subject}: {old} -> {new}" for subject, old, new in superseded] or ["- (none)"]),
        "",
        "## Span",
    ]
    for item in items:
        if item.kind == "evidence":
            continue  # copies of older turns, retired with its wake but never summarised
        who = item.role or item.kind
        if item.kind == "tool_call":
            who = f"tool_call {item.tool_name}"
        elif item.kind == "tool_result":
            who = f"tool_result {item.tool_name}"
        text = item.text.strip()
        if continued and item.id in above and len(text) > _OPENING_CHARS:
            text = text[:_OPENING_CHARS].rstrip() + " ..."
        text = text.replace("\n", "\n  ")  # continuation lines are indented
        lines.append(f"[{item.label} {who} {item.at:%Y-%m-%dT%H:%MZ}] {text}")
    lines += ["", "## Summary"]
    return "\n".join(lines)


def request_body(
    provider: str, model: str, prompt: str, max_tokens: int, *, system: str = SYSTEM
) -> dict[str, Any]:
    """A provider-ready request body, shaped as the compiler's renderers shape theirs, with
    ``system`` as its system text (consolidation's by default; the handoff note and the
    intent classifier give their own)."""
    if provider == "anthropic":
        return {
            "model": model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
        }
    if provider in ("openai", "openai-chat", "openai_chat"):
        return {
            "model": model,
            "max_completion_tokens": max_tokens,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
        }
    if provider in ("openai-responses", "openai_responses"):
        return {
            "model": model,
            "max_output_tokens": max_tokens,
            "instructions": system,
            "input": [{"role": "user", "content": prompt}],
        }
    raise ValueError(
        f"no summarisation request shape for provider {provider!r};"
        " expected anthropic, openai, openai-chat or openai-responses"
    )


def continued_request(
    provider: str,
    window: dict[str, Any],
    last_reply: str,
    ask: str,
    max_tokens: int,
    count: Callable[[str], int],
) -> dict[str, Any] | None:
    """The agent's last request (``window``, as sent) continued by its reply and ``ask``
    (for a handoff note, a summary), with ``max_tokens`` as its output cap; None when the
    request has no turns to continue, or when the reply, the ask (as ``count`` counts them)
    and the cap would not fit in the output reserve the window was compiled with (its
    input filled the rest).

    Tools, system, messages and their ``cache_control`` breakpoints are kept as sent, so
    the provider reads them from cache. Anthropic keys the message cache on ``tool_choice``
    too, so it is kept unless it forces a tool call (the answer is text); OpenAI caches by
    prefix alone and is told to call no tool."""
    reserve = next((window[k] for k in _MAX_OUTPUT_KEYS if isinstance(window.get(k), int)), 0)
    if count(last_reply) + count(ask) + max_tokens > reserve:
        return None
    request = copy.deepcopy(window)
    turns_key = "messages" if isinstance(request.get("messages"), list) else "input"
    turns = request.get(turns_key)
    if not isinstance(turns, list) or not turns:
        return None
    if last_reply.strip():
        turns.append({"role": "assistant", "content": last_reply})
    turns.append({"role": "user", "content": ask})
    for key in _MAX_OUTPUT_KEYS:
        if key in request:
            request[key] = max_tokens
    choice = request.get("tool_choice")
    if provider == "anthropic":
        if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
            del request["tool_choice"]
    elif request.get("tools"):
        request["tool_choice"] = "none"
    request.pop("stream", None)
    return request


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def json_in_answer(text: str, kind: type[dict[str, Any]] | type[list[Any]]) -> Any:
    """The JSON object (``dict``) or list (``list``) a model's answer holds, fenced or
    among other words; a one-line ``str`` saying why there is none otherwise."""
    what = "object" if kind is dict else "list"
    raw = _FENCE.sub("", text.strip())
    opener, closer = ("{", "}") if kind is dict else ("[", "]")
    start, end = raw.find(opener), raw.rfind(closer)
    if start == -1 or end <= start:
        return f"the answer holds no JSON {what}"
    try:
        data = json.loads(raw[start : end + 1])
    except json.JSONDecodeError as exc:
        return f"the answer is not valid JSON ({exc.msg} at {exc.pos})"
    if not isinstance(data, kind):
        return f"the answer is not a JSON {what}"
    return data


def in_cached_prefix(
    ledger: Ledger, request: dict[str, Any], items: Sequence[SpanItem]
) -> set[int]:
    """Ids of the span items the call ``ledger`` describes sent whole in its cached prefix:
    an included block of the window (not collapsed to a note) at or before its last cache
    entry, whose text is in ``request`` verbatim (not cleared or cut). A call's arguments
    are rendered as a tool use, not as the text stored: its block's place is enough."""
    marks = [b for b in ledger.breakpoints if b.ttl != "none"]
    position = {r.block_id: r.position for r in ledger.rows if r.status == "included"}
    end = position.get(marks[-1].block_id) if marks else None
    if end is None:
        return set()
    strings = _strings(request)
    out = set()
    for item in items:
        spot = position.get(f"ev:{item.id}")
        if spot is None or not 0 <= spot <= end:
            continue
        text = item.text.strip()
        if item.kind == "tool_call" or any(text in s for s in strings):
            out.add(item.id)
    return out


def continued_summary_request(
    provider: str,
    window: dict[str, Any],
    ledger: Ledger,
    last_reply: str,
    ask: SummaryAsk,
    count: Callable[[str], int],
    read_share: float,
) -> dict[str, Any] | None:
    """The summary of a span asked as the agent's last request (``window``, compiled with
    ``ledger``) continued: its tools, system and messages are then a cache read (at
    ``read_share`` of the input price), the ask lists the items the cached prefix holds
    whole by their openings and gives the others whole. None when the prefix holds none
    of them, or when reading the whole window costs more than sending the span in a
    request of its own (the window is much larger than the span), or when the answer
    would not fit (``continued_request``)."""
    above = in_cached_prefix(ledger, window, ask.items)
    if not above:
        return None
    text = build_prompt(
        ask.level, ask.items, ask.registry, ask.superseded, continued=True, above=above
    )
    alone = count(build_prompt(ask.level, ask.items, ask.registry, ask.superseded))
    continued = read_share * ledger.input_tokens + count(text) + count(last_reply)
    if continued >= alone:
        return None
    return continued_request(provider, window, last_reply, text, ask.max_tokens, count)


class SummaryAsk(NamedTuple):
    """What a summary request asks: the span's items at ``level``, with the registry
    entries and superseded values it must keep, and the answer's cap."""

    level: int
    items: list[SpanItem]
    registry: list[tuple[str, str]]
    superseded: list[tuple[str, str, str]]
    max_tokens: int


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
