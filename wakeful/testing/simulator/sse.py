"""Streamed replies: a finished reply body cut into the server-sent events each API sends.

The simulator answers a ``"stream": true`` request with the same reply it would give
without it, as the providers stream it: Anthropic's ``message_start`` /
``content_block_*`` / ``message_delta`` / ``message_stop`` events, Chat Completions'
``chat.completion.chunk`` objects ending in ``[DONE]``, and the Responses API's
``response.*`` events ending in ``response.completed``. The official SDKs' streaming APIs
parse them unmodified, and whatever accumulates a stream gets the non-streamed body back.

Text goes out in pieces of ``CHUNK_CHARS`` characters. :class:`StreamPace` slows a stream
down: a delay between events (for a demo) and a gate, held after the first text piece until
a test opens it, so a test can see deltas arrive before the reply ends without timing it.
:func:`trickled` sends a reply that never ends (a script's ``trickle`` step): its first
events, then a keep-alive comment every :data:`TRICKLE_EVERY_S`, which every SSE parser
skips and every read timeout counts as data.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

__all__ = [
    "CHUNK_CHARS",
    "TRICKLE_EVERY_S",
    "StreamPace",
    "anthropic_events",
    "chat_events",
    "paced",
    "responses_events",
    "trickled",
]

CHUNK_CHARS = 8
TRICKLE_EVERY_S = 0.2

Event = tuple[str | None, str]  # (SSE event name or None, data)


class StreamPace:
    """How fast streamed replies go out: ``delay`` seconds between events, and, while the
    gate is held, every stream stops after its first text piece until :meth:`release`."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self._open = threading.Event()
        self._open.set()
        self.held = threading.Event()  # set once a stream waits at the closed gate

    def hold(self) -> None:
        """Close the gate: the next streams wait after their first text piece."""
        self.held.clear()
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def wait_open(self) -> None:
        if not self._open.is_set():
            self.held.set()
            self._open.wait()


def _chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]


def _event(name: str | None, data: Any) -> Event:
    return name, data if isinstance(data, str) else json.dumps(data)


def anthropic_events(body: dict[str, Any]) -> Iterator[Event]:
    """A Messages reply as its stream: the message without content first, each block
    opened, filled and closed, then the stop reason and the output tokens."""
    start = copy.deepcopy(body)
    start["content"], start["stop_reason"], start["stop_sequence"] = [], None, None
    start["usage"]["output_tokens"] = 1
    yield _event("message_start", {"type": "message_start", "message": start})
    for i, block in enumerate(body["content"]):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            pieces = [{"type": "text_delta", "text": t} for t in _chunks(block["text"])]
        else:
            opened = {**block, "input": {}}
            args = json.dumps(block["input"], ensure_ascii=False)
            pieces = [{"type": "input_json_delta", "partial_json": t} for t in _chunks(args)]
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": i, "content_block": opened},
        )
        for piece in pieces:
            yield _event(
                "content_block_delta", {"type": "content_block_delta", "index": i, "delta": piece}
            )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": i})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"]},
            "usage": {"output_tokens": body["usage"]["output_tokens"]},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def chat_events(body: dict[str, Any], *, include_usage: bool) -> Iterator[Event]:
    """A Chat Completions reply as ``chat.completion.chunk`` objects: the role, the text
    in pieces, each tool call's id and name then its arguments in pieces, the finish
    reason, the usage (asked for with ``stream_options.include_usage``), ``[DONE]``."""
    head = {k: body[k] for k in ("id", "created", "model", "service_tier", "system_fingerprint")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _event(None, {**head, "object": "chat.completion.chunk", "choices": [choice]})

    choice = body["choices"][0]
    message = choice["message"]
    yield chunk({"role": "assistant", "content": "", "refusal": None})
    if message.get("content"):
        for piece in _chunks(message["content"]):
            yield chunk({"content": piece})
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call["function"]
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": fn["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in _chunks(fn["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield _event(
            None,
            {**head, "object": "chat.completion.chunk", "choices": [], "usage": body["usage"]},
        )
    yield _event(None, "[DONE]")


def responses_events(body: dict[str, Any]) -> Iterator[Event]:
    """A Responses reply as its events: created, each output item added, its text or
    arguments in deltas, done, then ``response.completed`` carrying the whole response."""
    seq = iter(range(1_000_000))

    def ev(kind: str, **fields: Any) -> Event:
        return _event(kind, {"type": kind, "sequence_number": next(seq), **fields})

    created = {**copy.deepcopy(body), "status": "in_progress", "output": [], "usage": None}
    yield ev("response.created", response=created)
    for n, item in enumerate(body["output"]):
        if item["type"] == "message":
            yield ev(
                "response.output_item.added",
                output_index=n,
                item={**item, "status": "in_progress", "content": []},
            )
            for c, part in enumerate(item["content"]):
                for piece in _chunks(part["text"]):
                    yield ev(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=n,
                        content_index=c,
                        delta=piece,
                        logprobs=[],
                    )
                yield ev(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=n,
                    content_index=c,
                    text=part["text"],
                    logprobs=[],
                )
        else:
            yield ev(
                "response.output_item.added",
                output_index=n,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in _chunks(item["arguments"]):
                yield ev(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=n,
                    delta=piece,
                )
            yield ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=n,
                arguments=item["arguments"],
                name=item["name"],
            )
        yield ev("response.output_item.done", output_index=n, item=item)
    yield ev("response.completed", response=body)


def _is_text_piece(data: str) -> bool:
    return (
        '"text_delta"' in data
        or '"response.output_text.delta"' in data
        or ('"chat.completion.chunk"' in data and '"content": "' in data and '"role"' not in data)
    )


async def trickled(events: Iterator[Event] | None) -> AsyncIterator[bytes]:
    """A reply that never finishes: its opening events (up to the first text piece, at most
    three: never the end of a block), then keep-alive comments until the caller hangs up.
    Without ``events`` (a non-streamed reply), whitespace, which may precede a JSON body."""
    if events is not None:
        for name, data in itertools.islice(events, 3):
            head = f"event: {name}\n" if name else ""
            yield f"{head}data: {data}\n\n".encode()
            if _is_text_piece(data):
                break
    while True:
        yield b": keep-alive\n\n" if events is not None else b" "
        await asyncio.sleep(TRICKLE_EVERY_S)


async def paced(events: Iterator[Event], pace: StreamPace | None) -> AsyncIterator[bytes]:
    """The events as SSE bytes, at ``pace``: held at its gate after the first text piece."""
    first_text = True
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        yield f"{head}data: {data}\n\n".encode()
        if pace is None:
            continue
        if first_text and _is_text_piece(data):
            first_text = False
            await asyncio.to_thread(pace.wait_open)
        if pace.delay:
            await asyncio.sleep(pace.delay)
