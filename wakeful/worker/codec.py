"""Compressed payloads: Wakeful's data converter, with a deflate codec and a preset dictionary.

Most of a wake's history is small JSON payloads — activity inputs and results, the wake
update and its answer — each a few hundred bytes of mostly the same field names. Deflate on
its own saves little on payloads that small; deflate with a *preset dictionary* of what those
payloads look like saves more than half, because the field names and the shape of a wake
reference are found in the dictionary instead of being spelled out in every payload.

* Encoding: the whole payload (metadata and data) is serialised and deflated (raw deflate,
  level 9, the dictionary below) into a payload of encoding ``wz2``; a payload that would
  not shrink is sent as it is. The encoding's name is short because every payload carries
  it (a wake writes about nine).
* Decoding: ``wz2`` payloads are inflated with :data:`DICTIONARY`, ``wakeful/z1`` ones (the
  first encoding, in histories written before ``wz2``) with :data:`DICTIONARY_Z1`; every
  other payload passes through, so histories written before the codec existed
  (``json/plain``) still decode and replay.
* A dictionary is part of the wire format: each is frozen for its encoding (a test pins
  their hashes). A better dictionary needs a new encoding name, with the old ones kept for
  decoding.

Compressed payloads are opaque to the Temporal UI and CLI; :meth:`DeflateCodec.decode` (the
data converter's codec, or a codec server built on it) turns them back into JSON.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
    PayloadCodec,
)

from wakeful.wire import COMPACT

__all__ = [
    "DICTIONARY",
    "DICTIONARY_Z1",
    "ENCODING",
    "ENCODING_Z1",
    "DeflateCodec",
    "InflatedTooLarge",
    "data_converter",
]

ENCODING = b"wz2"
ENCODING_Z1 = b"wakeful/z1"

# What a wake's payloads looked like (contracts.py as of wakeful/z1), least common first:
# deflate reaches back at most 32 KiB and codes nearer matches a little cheaper. Frozen.
_SAMPLES_Z1 = (
    '{"wakes":0,"session_number":0,"session_id":"","last_wake_at":null,"recent":[]}',
    '{"event_ids":[1]}',
    '{"ask_event_id":1}',
    '{"handoff_id":1}',
    '{"event_id":1,"result_hash":"","is_error":false,"reused":false}',
    '{"goal":{"kind":"message","text":"","intents":[],"paths":[],"task_class":null,'
    '"idempotency_key":null},"idempotency_key":"","new_session":false,"received_at":null,'
    '"next_expected_at":null}',
    '{"wake_id":"agent:1","number":1,"session_id":"agent:s0001","status":"done",'
    '"model_calls":1,"tool_calls":1,"input_tokens":1,"output_tokens":1,'
    '"cache_read_input_tokens":1,"cache_creation_input_tokens":1,"cost_usd":0.1,'
    '"handoff_id":1,"idempotency_key":"","deduplicated":false,"pacing":"continue"}',
    '{"wake":{"tenant":"default","agent":"agent","wake_id":"agent:1","session_id":'
    '"agent:s0001","workflow_id":"wakeful-agent:default:agent","number":1},"call_index":0,'
    '"output_hash":"","tool_call":{"id":"toolu_","name":"read_file"},'
    '"at":"2026-01-01T00:00:00Z"}',
    '{"output_hash":"","stop_reason":"tool_use","tool_calls":[{"id":"toolu_",'
    '"name":"read_file"}],"input_tokens":1,"output_tokens":1,'
    '"cache_creation_input_tokens":1,"cache_read_input_tokens":1,"cost_usd":0.1}',
    '{"wake":{"tenant":"default","agent":"agent","wake_id":"agent:1","session_id":'
    '"agent:s0001","workflow_id":"wakeful-agent:default:agent","number":1},"runtime":'
    '{"tenant":"default","name":"agent","provider":"anthropic","model":"claude-sonnet-4-6",'
    '"max_model_calls_per_wake":8,"max_tool_calls_per_wake":16,"max_tokens_per_wake":'
    '200000,"tools":[],"policy":"default"},"call_index":0,"window_hash":"",'
    '"at":"2026-01-01T00:00:00Z","record":true}',
    '{"step_key":"wakeful-agent:default:agent:agent:1:0:compile","window_hash":"",'
    '"stable_prefix_hash":"","input_tokens":1,"max_event_id":1,"breakpoints":[{"name":'
    '"stable","ttl":"1h","prefix_tokens":1},{"name":"rolling","ttl":"5m","prefix_tokens":1}]}',
)
# What a wake's payloads look like as wz2 began (fields at their defaults and ids that
# follow from others left out, see wakeful.wire), least common first. Frozen.
_SAMPLES = (
    # resuming an agent, opening and closing wakes and sessions, recorded tool results
    '{"wakes":0,"session_number":0,"session_id":"","last_wake_at":null,"recent":[]}',
    '{"event_ids":[1]}',
    '{"ask_event_id":1}',
    '{"handoff_id":1}',
    # a trigger (the wake update's argument)
    '{"goal":{"kind":"message","text":"","intents":[],"paths":[],"task_class":null,'
    '"idempotency_key":null},"idempotency_key":"","new_session":true,"received_at":null,'
    '"next_expected_at":null}',
    # a tool's result
    '{"event_id":1,"result_hash":"","is_error":false,"reused":false}',
    # a wake's result (the wake update's)
    '{"wake_id":"agent:1","number":1,"session_id":"agent:s0001","status":"done",'
    '"model_calls":1,"tool_calls":1,"input_tokens":0,"output_tokens":1,'
    '"cache_read_input_tokens":1,"cache_creation_input_tokens":1,"cost_usd":0.1,'
    '"handoff_id":1,"idempotency_key":"","deduplicated":true,"pacing":"continue_now",'
    '"output_by_query":true}',
    # a model call's reply: the wake's last, then one that calls tools
    '{"output_hash":"","stop_reason":"end_turn","output_tokens":1,'
    '"cache_creation_input_tokens":1,"cache_read_input_tokens":1,"cost_usd":0.01,'
    '"handoff_id":1,"answer":"","answer_chars":1}',
    '{"output_hash":"","stop_reason":"tool_use","tool_calls":[{"id":"toolu_",'
    '"name":"read_file"}],"input_tokens":1,"output_tokens":1,'
    '"cache_creation_input_tokens":1,"cache_read_input_tokens":1,"cost_usd":0.1}',
    # a model call
    '{"wake":{"tenant":"default","agent":"agent","session_id":"agent:s0001","number":1},'
    '"provider":"anthropic","call_index":0,"window_hash":"","at":"2026-01-01T00:00:00.000000Z",'
    '"record":true,"finish":true,"tool_calls":1}',
    # a compile's result
    '{"window_hash":"","input_tokens":1,"breakpoints":[{"name":"stable","ttl":"1h",'
    '"prefix_tokens":1},{"name":"history","ttl":"5m","prefix_tokens":1},{"name":"rolling",'
    '"ttl":"5m","prefix_tokens":1}],"fresh_tokens":1}',
)
# Every payload starts with its serialised metadata: {"encoding": "json/plain"}.
_PREFIX = Payload(metadata={"encoding": b"json/plain"}).SerializeToString()
DICTIONARY = "".join(_SAMPLES).encode() + _PREFIX
DICTIONARY_Z1 = "".join(_SAMPLES_Z1).encode() + _PREFIX
_DICTIONARIES = {ENCODING: DICTIONARY, ENCODING_Z1: DICTIONARY_Z1}


class InflatedTooLarge(ValueError):
    """Payloads that inflate past the codec's ``max_decoded_bytes``."""


class DeflateCodec(PayloadCodec):
    """Raw deflate with :data:`DICTIONARY` (``wz2``); decodes ``wakeful/z1`` payloads too,
    and uncompressed payloads unchanged.

    ``max_decoded_bytes`` bounds what one :meth:`decode` call inflates, all its payloads
    together (None: no bound, as for the worker's own history): a few hundred kilobytes of
    deflated zeros inflate to gigabytes, so a server decoding what others send sets it."""

    def __init__(
        self, level: int = 9, min_bytes: int = 32, max_decoded_bytes: int | None = None
    ) -> None:
        self.level, self.min_bytes = level, min_bytes
        self.max_decoded_bytes = max_decoded_bytes

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._encode(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if self.max_decoded_bytes is None:
            return [self._decode(p) for p in payloads]
        left, out = self.max_decoded_bytes, []
        for p in payloads:
            decoded, inflated = self._inflate(p, left)
            left -= inflated
            out.append(decoded)
        return out

    def _encode(self, payload: Payload) -> Payload:
        raw = payload.SerializeToString(deterministic=True)
        if len(raw) < self.min_bytes:
            return payload
        deflate = zlib.compressobj(
            self.level, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY
        )
        packed = deflate.compress(raw) + deflate.flush()
        if len(packed) + len(ENCODING) + 14 >= len(raw):  # metadata framing: no gain
            return payload
        return Payload(metadata={"encoding": ENCODING}, data=packed)

    def _decode(self, payload: Payload) -> Payload:
        return self._inflate(payload, None)[0]

    def _inflate(self, payload: Payload, limit: int | None) -> tuple[Payload, int]:
        """The payload decoded, and how many bytes it inflated to; past ``limit`` (None:
        no limit) bytes it stops inflating and raises :class:`InflatedTooLarge`."""
        encoding = payload.metadata.get("encoding", b"")
        dictionary = _DICTIONARIES.get(encoding)
        if dictionary is None:
            return payload, 0
        inflate = zlib.decompressobj(-15, dictionary)
        if limit is None:
            raw = inflate.decompress(payload.data) + inflate.flush()
        else:
            # One byte past the limit says it is exceeded; what is left is never inflated
            # (flush() would inflate the unconsumed rest).
            raw = inflate.decompress(payload.data, limit + 1)
            if len(raw) > limit or inflate.unconsumed_tail:
                raise InflatedTooLarge(
                    f"the payloads inflate past {self.max_decoded_bytes} bytes; decode fewer "
                    "at a time"
                )
            raw += inflate.flush()
        if not inflate.eof:
            raise ValueError(
                f"a {encoding.decode()} payload is truncated ({len(payload.data)} bytes):"
                " it was damaged in storage or transit"
            )
        return Payload.FromString(raw), len(raw)


class _CompactJSON(PydanticJSONPlainPayloadConverter):
    """Pydantic JSON with :data:`~wakeful.wire.COMPACT` in the context: messages leave out
    their fields at defaults (``wakeful.wire``); decoding fills them in."""

    def to_payload(self, value: Any) -> Payload | None:
        data = to_json(value, context={COMPACT: True})
        return Payload(metadata={"encoding": self.encoding.encode()}, data=data)


# The SDK builds a payload converter for every data converter it makes, one per workflow
# activation and per activity task: each gets these same instances, as Temporal's default
# converters are shared, instead of a JSON converter of its own with its serializer and an
# empty cache of pydantic type adapters (thread-safe: a functools.lru_cache).
_CONVERTERS = tuple(
    _CompactJSON() if isinstance(c, JSONPlainPayloadConverter) else c
    for c in DefaultPayloadConverter.default_encoding_payload_converters
)


class _PayloadConverter(CompositePayloadConverter):
    """Temporal's default converters, with :class:`_CompactJSON` for JSON."""

    def __init__(self) -> None:
        super().__init__(*_CONVERTERS)


# The pydantic converter (Wakeful's contracts are pydantic models), compact, with the codec.
data_converter: DataConverter = DataConverter(
    payload_converter_class=_PayloadConverter, payload_codec=DeflateCodec()
)
