"""The summarisation request: one user message carrying the span, in any provider's format.

The prompt states the gate's rules, so a capable model can pass it first time; the gate
still checks every summary, whoever wrote it. Each span line is ``[label role time] text``
(``e12`` for event 12, ``s3`` for summary 3); registry entries promoted from the span are
listed with their ids, which the summary must repeat verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from wakeful.consolidation.items import SpanItem

HEADER = "# Consolidate history span"
SYSTEM = (
    "You maintain the long-term memory of an autonomous agent. You rewrite old stretches of "
    "its history into compact summaries it will read instead of the original. Losing a rule, "
    "an id, a number or a negation is a serious error; dropping chit-chat is the point."
)
_LEVELS = {1: "turn span", 2: "session summary", 3: "period summary"}
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
) -> str:
    """The user message asking for a level-``level`` summary of ``items``.

    ``registry`` lists ``(id, text)`` promoted from the span; ``superseded`` lists
    ``(subject, old value, new value)`` the substrate knows were replaced.
    """
    lines = [
        HEADER,
        f"level: {level} ({_LEVELS.get(level, 'summary')})",
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
        text = item.text.strip().replace("\n", "\n  ")  # continuation lines are indented
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
