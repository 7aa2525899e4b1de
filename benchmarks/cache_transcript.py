"""How a hand-written agent loop sends history: the baselines' side of the benchmark.

The baselines read the same substrate events as Wakeful and render them the way a careful
agent loop does: one transcript of alternating messages (tool results right after their
calls), the wake's retrieved documents appended to the user's ask, and one
``cache_control`` breakpoint on the last content block.

:func:`summarize_events` is the one summariser the benchmark uses — for the
summarise-when-over-threshold baseline's compaction and for Wakeful's consolidation alike —
so neither strategy gets a better summary than the other. It is extractive and careful:
every ``DECISION`` line is kept verbatim, everything else shrinks to one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchmarks.cache_session import Doc
from wakeful.substrate.records import StoredEvent

__all__ = [
    "TRUNCATED",
    "mark_last",
    "render_docs",
    "render_events",
    "summarize_events",
]

TRUNCATED = "[Earlier conversation truncated.]"


def render_docs(docs: Sequence[Doc]) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": f'<document id="{d.id}" title="{d.title}">\n{d.text}\n</document>'}
        for d in docs
    ]


def _content(e: StoredEvent) -> dict[str, Any]:
    if e.kind == "tool_call":
        return {
            "type": "tool_use",
            "id": e.tool_call_id,
            "name": e.tool_name,
            "input": e.tool_input,
        }
    if e.kind == "tool_result":
        out: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": e.tool_call_id,
            "content": e.text,
        }
        if e.is_error:
            out["is_error"] = True
        return out
    return {"type": "text", "text": e.text}


def render_events(
    events: Iterable[StoredEvent],
    docs: Mapping[str, Sequence[Doc]],
    *,
    lead: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Alternating messages; ``lead`` blocks (a summary) open the first user message.

    A wake's documents follow its ask (the first user turn of the wake). A transcript that
    would open with the assistant gets :data:`TRUNCATED` in front, as the API requires.
    """
    messages: list[dict[str, Any]] = []
    seen_ask: set[str] = set()
    if lead:
        messages.append({"role": "user", "content": list(lead)})
    for e in events:
        role = "assistant" if e.kind == "tool_call" else (e.role or "user")
        blocks = [_content(e)]
        if e.kind == "turn" and role == "user" and e.wake_id and e.wake_id not in seen_ask:
            seen_ask.add(e.wake_id)
            blocks += render_docs(docs.get(e.wake_id, ()))
        if not messages and role == "assistant":
            messages.append({"role": "user", "content": [{"type": "text", "text": TRUNCATED}]})
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    return messages


def mark_last(messages: list[dict[str, Any]], ttl: str = "5m") -> list[dict[str, Any]]:
    """A copy with one ``cache_control`` breakpoint on the very last content block."""
    out = [{"role": m["role"], "content": list(m["content"])} for m in messages]
    last = out[-1]["content"]
    last[-1] = {**last[-1], "cache_control": {"type": "ephemeral", "ttl": ttl}}
    return out


def _first_sentence(text: str, limit: int) -> str:
    line = " ".join(text.split())
    for stop in (". ", "\n"):
        cut = line.find(stop)
        if 0 < cut < limit:
            return line[: cut + 1]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summarize_events(events: Sequence[StoredEvent]) -> str:
    """One line per event; ``DECISION`` lines verbatim; tool output as outcome + size."""
    if not events:
        return ""
    lines = [f"Summary of events {events[0].id}-{events[-1].id}:"]
    calls = {e.tool_call_id: e for e in events if e.kind == "tool_call"}
    for e in events:
        if e.kind == "tool_call":
            continue
        if e.kind == "tool_result":
            call = calls.get(e.tool_call_id)
            target = (call.tool_input or {}).get("target", "") if call else ""
            outcome = "error" if e.is_error else "ok"
            first = _first_sentence(e.text.split("\n", 1)[0], 100)
            size = e.text.count("\n") + 1
            lines.append(f"- tool {e.tool_name}({target}) -> {outcome}: {first} [{size} lines]")
            continue
        who = "user" if e.role == "user" else "agent"
        kept = [ln for ln in e.text.splitlines() if ln.startswith("DECISION ")]
        rest = " ".join(ln for ln in e.text.splitlines() if not ln.startswith("DECISION "))
        lines.extend(f"- {who}: {ln}" for ln in kept)
        if rest.strip():
            lines.append(f"- {who}: {_first_sentence(rest, 160)}")
    return "\n".join(lines)
