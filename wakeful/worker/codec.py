"""Compressed payloads: Wakeful's data converter, with a deflate codec and a preset dictionary.

Most of a wake's history is small JSON payloads — activity inputs and results, the wake
update and its answer — each a few hundred bytes of mostly the same field names. Deflate on
its own saves little on payloads that small; deflate with a *preset dictionary* of what those
payloads look like saves more than half, because the field names and the shape of a wake
reference are found in the dictionary instead of being spelled out in every payload.

* Encoding: the whole payload (metadata and data) is serialised and deflated (raw deflate,
  level 9, the dictionary below) into a payload of encoding ``wakeful/z1``; a payload that
  would not shrink is sent as it is.
* Decoding: ``wakeful/z1`` payloads are inflated; every other payload passes through, so
  histories written before the codec existed (``json/plain``) still decode and replay.
* The dictionary is part of the wire format: it is frozen for ``wakeful/z1`` (a test pins its
  hash). A better dictionary needs a new encoding name, with the old one kept for decoding.

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

__all__ = ["DICTIONARY", "ENCODING", "DeflateCodec", "data_converter"]

ENCODING = b"wakeful/z1"

# What a wake's payloads look like (contracts.py as of wakeful/z1), least common first:
# deflate reaches back at most 32 KiB and codes nearer matches a little cheaper.
_SAMPLES = (
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
# Every payload starts with its serialised metadata: {"encoding": "json/plain"}.
_PREFIX = Payload(metadata={"encoding": b"json/plain"}).SerializeToString()
DICTIONARY = "".join(_SAMPLES).encode() + _PREFIX


class DeflateCodec(PayloadCodec):
    """Raw deflate with :data:`DICTIONARY`; decodes uncompressed payloads unchanged."""

    def __init__(self, level: int = 9, min_bytes: int = 32) -> None:
        self.level, self.min_bytes = level, min_bytes

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._encode(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decode(p) for p in payloads]

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
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        inflate = zlib.decompressobj(-15, DICTIONARY)
        raw = inflate.decompress(payload.data) + inflate.flush()
        if not inflate.eof:
            raise ValueError(
                f"a {ENCODING.decode()} payload is truncated ({len(payload.data)} bytes):"
                " it was damaged in storage or transit"
            )
        return Payload.FromString(raw)


class _CompactJSON(PydanticJSONPlainPayloadConverter):
    """Pydantic JSON with :data:`~wakeful.wire.COMPACT` in the context: messages leave out
    their fields at defaults (``wakeful.wire``); decoding fills them in."""

    def to_payload(self, value: Any) -> Payload | None:
        data = to_json(value, context={COMPACT: True})
        return Payload(metadata={"encoding": self.encoding.encode()}, data=data)


class _PayloadConverter(CompositePayloadConverter):
    """Temporal's default converters, with :class:`_CompactJSON` for JSON."""

    def __init__(self) -> None:
        compact = _CompactJSON()
        super().__init__(
            *(
                compact if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )


# The pydantic converter (Wakeful's contracts are pydantic models), compact, with the codec.
data_converter: DataConverter = DataConverter(
    payload_converter_class=_PayloadConverter, payload_codec=DeflateCodec()
)
