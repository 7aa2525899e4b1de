"""The simulated provider: per-scope state, scripted replies, cache accounting.

:class:`Simulator` is transport-free - it turns (headers, JSON body) into (status, JSON
body, headers) - so its rules can be unit-tested without HTTP, and the ASGI app in
:mod:`wakeful.testing.simulator.app` is a thin shell around it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wakeful.testing.simulator import anthropic_cache, openai_cache
from wakeful.testing.simulator import wire_anthropic as wa
from wakeful.testing.simulator import wire_openai as wo
from wakeful.testing.simulator.handoff import is_handoff_request
from wakeful.testing.simulator.intents import intents_text, is_intents_request
from wakeful.testing.simulator.script import (
    Conversation,
    Script,
    SimReply,
    Step,
    planner_reply,
    reply_from_step,
)
from wakeful.testing.simulator.sse import StreamPace
from wakeful.testing.simulator.state import CacheStore, OffsetClock, SimError
from wakeful.testing.simulator.tokens import count_tokens, digest

__all__ = ["TRICKLE_HEADER", "CallRecord", "ScopeState", "SimResponse", "Simulator"]

SimResponse = tuple[int, dict[str, Any], dict[str, str]]

# Set on a reply whose script step trickles (the app sends it that way and drops the header).
TRICKLE_HEADER = "x-sim-trickle"

_DEFAULT_ERROR_TEXT = {
    400: "Invalid request.",
    401: "invalid x-api-key",
    429: "Number of requests has exceeded your rate limit. Please try again later.",
    500: "Internal server error.",
    503: "The server is overloaded. Please try again later.",
    529: "Overloaded",
}


@dataclass(frozen=True)
class CallRecord:
    """One answered call, for tests and benchmarks to inspect."""

    endpoint: str
    model: str
    at: float
    status: int
    usage: dict[str, int]


@dataclass
class ScopeState:
    anthropic: CacheStore = field(default_factory=CacheStore)
    openai: CacheStore = field(default_factory=CacheStore)
    script: Script | None = None
    cursor: int = 0
    handoff_cursor: int = 0  # handoff-note prompts walk the script's ``handoff`` steps
    counter: int = 0
    calls: list[CallRecord] = field(default_factory=list)
    trickles: int = 0  # replies sent trickling (never finished): not in ``calls``


EMBEDDING_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072}


def _embedding(text: str, dim: int) -> list[float]:
    raw = b"".join(digest(text, str(n)) for n in range((dim + 15) // 16))[:dim]
    values = [b - 127.5 for b in raw]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _api_key(headers: Mapping[str, str]) -> str | None:
    key = headers.get("x-api-key")
    if key:
        return key
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return None


class Simulator:
    """Holds every scope's caches and script cursor; thread-safe.

    ``clock`` returns seconds; it is read once per request (TTL counts from request start,
    as Anthropic documents). :meth:`advance` skips time on top of any clock.
    """

    def __init__(
        self, script: Script | None = None, clock: Callable[[], float] | None = None
    ) -> None:
        self._clock = clock or OffsetClock()
        self._offset = 0.0
        self._script = script or Script()
        self._scopes: dict[str, ScopeState] = {}
        self._lock = threading.RLock()
        # How streamed replies go out (``"stream": true``): see sse.StreamPace.
        self.pace = StreamPace()

    # -- control -------------------------------------------------------------------------

    def now(self) -> float:
        return self._clock() + self._offset

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._offset += seconds
            return self.now()

    def reset(self, scope: str | None = None) -> None:
        """Forget caches, cursors and call logs (of one scope, or of all)."""
        with self._lock:
            if scope is None:
                self._scopes.clear()
            else:
                self._scopes.pop(scope, None)

    def evict(self, scope: str) -> int:
        """Drop every cache entry of ``scope``, live or not, as a provider that lost its
        cache early would (a cache is best-effort: entries may go before their TTL); the
        script cursor and call log stay. Returns how many entries were dropped."""
        with self._lock:
            state = self._state(scope)
            dropped = 0
            for store in (state.anthropic, state.openai):
                dropped += len(store.entries)
                store.evictions += len(store.entries)
                store.entries.clear()
            return dropped

    def set_script(self, script: Script, scope: str | None = None) -> None:
        """Install a script for one scope, or as the default for all (cursors restart)."""
        with self._lock:
            if scope is None:
                self._script = script
                for state in self._scopes.values():
                    state.cursor = state.handoff_cursor = 0
            else:
                state = self._state(scope)
                state.script, state.cursor, state.handoff_cursor = script, 0, 0

    def calls(self, scope: str) -> list[CallRecord]:
        with self._lock:
            return list(self._state(scope).calls)

    def trickles(self, scope: str) -> int:
        """How many of the scope's calls were answered with a trickle (script ``trickle``)."""
        with self._lock:
            return self._state(scope).trickles

    def cached_prefix_tokens(self, scope: str, body: dict[str, Any]) -> int:
        """Tokens of the longest prefix of an Anthropic request that ``scope``'s cache holds
        live now, at any block boundary (what a request could read at best, whatever its
        breakpoints and the lookback window let it reach). Reads only: nothing is touched,
        written or evicted."""
        with self._lock:
            store = self._state(scope).anthropic
            blocks, _ = anthropic_cache.parse_request(body)
            now = self.now()
            running, acc, best = digest("model", str(body["model"])), 0, 0
            for block in blocks:
                running = digest(running, block.identity)
                acc += block.tokens
                entry = store.entries.get(running)
                if entry is not None and entry.live(now):
                    best = acc
            return best

    def evictions(self, scope: str) -> int:
        with self._lock:
            state = self._state(scope)
            return state.anthropic.evictions + state.openai.evictions

    def _state(self, scope: str) -> ScopeState:
        return self._scopes.setdefault(scope, ScopeState())

    # -- shared request path -------------------------------------------------------------

    def _begin(
        self, headers: Mapping[str, str], body: Any
    ) -> tuple[str, ScopeState, Step | None, str]:
        scope = _api_key(headers)
        if scope is None:
            raise SimError(401, "x-api-key header is required")
        state = self._state(scope)
        state.counter += 1
        script = state.script or self._script
        # A session-end note call is a side request: it takes no step of the wakes' script.
        if is_intents_request(body):  # nor does a goal's intent classification
            step = None
        elif is_handoff_request(body):
            step = script.handoff_step_at(state.handoff_cursor)
            if step is not None:
                state.handoff_cursor += 1
        else:
            step = script.step_at(state.cursor)
            if step is not None:
                state.cursor += 1
        if state.counter % 64 == 0:
            now = self.now()
            state.anthropic.sweep(now)
            state.openai.sweep(now)
        seed = digest(scope, str(state.counter)).hex()
        if step is not None and step.error is not None:
            err = step.error
            raise SimError(
                err.status,
                err.message or _DEFAULT_ERROR_TEXT.get(err.status, "Simulated error."),
                retry_after=err.retry_after,
            )
        return scope, state, step, seed

    def _reply(self, step: Step | None, view: Conversation, scope: str) -> SimReply:
        if step is not None:
            return reply_from_step(step)
        script = self._state(scope).script or self._script
        intents = intents_text(view.last_user_text)
        if intents is not None:
            return SimReply(intents)
        return planner_reply(view, echo_only=script.default == "echo")

    @staticmethod
    def _require(body: Any, *fields: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise SimError(400, "The request body is not valid JSON.")
        for name in fields:
            if body.get(name) in (None, "", []):
                raise SimError(400, f"{name}: Field required")
        return body

    # -- Anthropic -----------------------------------------------------------------------

    def anthropic_messages(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        with self._lock:
            request_id = "req_sim_" + digest(str(self.now()), repr(body)[:256]).hex()[:20]
            try:
                scope, state, step, seed = self._begin(headers, body)
                request = self._require(body, "model", "max_tokens", "messages")
                wa.validate_tool_pairing(request)
                blocks, breakpoints = anthropic_cache.parse_request(request)
                model, now = str(request["model"]), self.now()
                cache = anthropic_cache.apply_cache(
                    state.anthropic, model=model, blocks=blocks, breakpoints=breakpoints, now=now
                )
                reply = self._reply(step, wa.conversation(request), scope)
                out = wa.message_body(reply, model=model, seed=seed, cache=cache)
            except SimError as exc:
                status = exc.status
                headers_out = {"request-id": request_id}
                if exc.retry_after is not None:
                    headers_out["retry-after"] = f"{exc.retry_after:g}"
                return status, wa.error_body(status, exc.message, request_id), headers_out
            if step is not None and step.trickle:
                state.trickles += 1
                return 200, out, {"request-id": request_id, TRICKLE_HEADER: "1"}
            usage = out["usage"]
            state.calls.append(
                CallRecord(
                    "anthropic.messages",
                    model,
                    now,
                    200,
                    {
                        "input_tokens": usage["input_tokens"],
                        "output_tokens": usage["output_tokens"],
                        "cache_read_input_tokens": usage["cache_read_input_tokens"],
                        "cache_creation_5m_input_tokens": cache.cache_creation_5m,
                        "cache_creation_1h_input_tokens": cache.cache_creation_1h,
                    },
                )
            )
            return 200, out, {"request-id": request_id}

    def anthropic_count_tokens(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        with self._lock:
            if _api_key(headers) is None:
                return 401, wa.error_body(401, "x-api-key header is required", "req_sim"), {}
            try:
                request = self._require(body, "model", "messages")
                blocks, _ = anthropic_cache.parse_request(request)
            except SimError as exc:
                return exc.status, wa.error_body(exc.status, exc.message, "req_sim"), {}
            return 200, {"input_tokens": sum(b.tokens for b in blocks)}, {}

    # -- OpenAI --------------------------------------------------------------------------

    def openai_embeddings(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        """OpenAI's embeddings endpoint: one unit vector per input, made from its text alone
        (blake2b), so equal texts embed alike in every run; ``dimensions`` sets the size
        (else the model's own, as :data:`EMBEDDING_DIMS` lists it)."""
        if _api_key(headers) is None:
            return 401, wo.error_body(401, "an Authorization: Bearer header is required"), {}
        if not isinstance(body, dict) or "model" not in body or "input" not in body:
            return 400, wo.error_body(400, "model and input are required"), {}
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        dim = body.get("dimensions") or EMBEDDING_DIMS.get(str(body["model"]), 1536)
        if not (isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts)):
            return 400, wo.error_body(400, "input must be a string or a list of strings"), {}
        if not isinstance(dim, int) or dim < 1:
            return 400, wo.error_body(400, "dimensions must be a positive integer"), {}
        data = [
            {"object": "embedding", "index": n, "embedding": _embedding(text, dim)}
            for n, text in enumerate(texts)
        ]
        used = sum(count_tokens(t) for t in texts)
        return (
            200,
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": used, "total_tokens": used},
            },
            {},
        )

    def _openai(self, endpoint: str, headers: Mapping[str, str], body: Any) -> SimResponse:
        with self._lock:
            request_id = "req_sim_" + digest(str(self.now()), repr(body)[:256]).hex()[:20]
            try:
                scope, state, step, seed = self._begin(headers, body)
                chat = endpoint == "openai.chat"
                request = self._require(body, "model", "messages" if chat else "input")
                if chat:
                    wo.validate_tool_pairing(request)
                tokens = (
                    openai_cache.chat_prompt_tokens(request)
                    if chat
                    else openai_cache.responses_prompt_tokens(request)
                )
                model, now = str(request["model"]), self.now()
                cache = openai_cache.apply_cache(
                    state.openai,
                    model=model,
                    tokens=tokens,
                    prompt_cache_key=request.get("prompt_cache_key"),
                    retention=request.get("prompt_cache_retention"),
                    now=now,
                )
                view = wo.chat_conversation(request) if chat else wo.responses_conversation(request)
                reply = self._reply(step, view, scope)
                created = int(now)
                out = (
                    wo.chat_body(reply, model=model, seed=seed, created=created, cache=cache)
                    if chat
                    else wo.responses_body(
                        reply, body=request, seed=seed, created=created, cache=cache
                    )
                )
            except SimError as exc:
                status = 503 if exc.status == 529 else exc.status
                headers_out = {"x-request-id": request_id}
                if exc.retry_after is not None:
                    headers_out["retry-after"] = f"{exc.retry_after:g}"
                message = exc.message
                if exc.status == 401 and message.startswith("x-api-key"):
                    message = "You didn't provide an API key."
                return status, wo.error_body(status, message), headers_out
            if step is not None and step.trickle:
                state.trickles += 1
                return 200, out, {"x-request-id": request_id, TRICKLE_HEADER: "1"}
            output = out["usage"]["completion_tokens" if chat else "output_tokens"]
            state.calls.append(
                CallRecord(
                    endpoint,
                    model,
                    now,
                    200,
                    {
                        "input_tokens": cache.prompt_tokens - cache.cached_tokens,
                        "output_tokens": output,
                        "cache_read_input_tokens": cache.cached_tokens,
                        "cache_write_tokens": cache.cache_write_tokens,
                    },
                )
            )
            return 200, out, {"x-request-id": request_id}

    def openai_chat(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        return self._openai("openai.chat", headers, body)

    def openai_responses(self, headers: Mapping[str, str], body: Any) -> SimResponse:
        return self._openai("openai.responses", headers, body)
