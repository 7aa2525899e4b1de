"""The payload codec: compressed payloads round-trip, older payloads pass through, the
dictionary is frozen, and a wake run through Wakeful's own client stores compressed payloads."""

from __future__ import annotations

import hashlib
import uuid
import zlib

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import CompositePayloadConverter
from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import message
from tests.orchestration.helpers import wakeful_client, worker
from wakeful.agents import Agent
from wakeful.contracts import WakeResult
from wakeful.substrate.store import Store
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.codec import (
    DICTIONARY,
    DICTIONARY_Z1,
    ENCODING,
    ENCODING_Z1,
    DeflateCodec,
    data_converter,
)
from wakeful.workflows.agent import workflow_id

# Payloads of each encoding in every history decode with exactly its dictionary: change one
# only under a new encoding name (keeping the old ones for decoding).
DICTIONARY_BLAKE2 = {b"wz2": "e7fb73f504b8fe0da3f1afd9a772d275"}
DICTIONARY_Z1_BLAKE2 = "705a32d1439f0a3e1498ac53782ca810"


def _json(value: WakeResult) -> Payload:
    (payload,) = data_converter.payload_converter.to_payloads([value])
    return payload


def _result(**kw: object) -> WakeResult:
    fields: dict[str, object] = {
        "wake_id": "triage:41",
        "number": 41,
        "session_id": "triage:s0007",
        "status": "done",
        "model_calls": 2,
        "tool_calls": 1,
        "input_tokens": 812,
        "output_tokens": 95,
        "cache_read_input_tokens": 14_211,
        "cache_creation_input_tokens": 230,
        "cost_usd": 0.0071,
        "handoff_id": 77,
        "idempotency_key": "webhook:evt_8812",
        "pacing": "continue",
    }
    return WakeResult.model_validate(fields | kw)


def test_the_dictionaries_are_frozen() -> None:
    assert hashlib.blake2b(DICTIONARY, digest_size=16).hexdigest() == DICTIONARY_BLAKE2[ENCODING]
    assert hashlib.blake2b(DICTIONARY_Z1, digest_size=16).hexdigest() == DICTIONARY_Z1_BLAKE2


async def test_payloads_of_the_first_encoding_still_decode() -> None:
    """Histories written before wz2 hold wakeful/z1 payloads, deflated with the first
    dictionary: they decode as they did."""
    plain = _json(_result())
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY_Z1)
    raw = plain.SerializeToString(deterministic=True)
    old = Payload(metadata={"encoding": ENCODING_Z1}, data=deflate.compress(raw) + deflate.flush())
    assert await DeflateCodec().decode([old]) == [plain]
    (new,) = await DeflateCodec().encode([plain])
    assert new.metadata["encoding"] == b"wz2" and new.ByteSize() < old.ByteSize()


async def test_a_payload_round_trips_and_shrinks() -> None:
    codec, plain = DeflateCodec(), _json(_result())
    (packed,) = await codec.encode([plain])
    assert packed.metadata["encoding"] == ENCODING
    assert packed.ByteSize() < plain.ByteSize() * 0.6
    (back,) = await codec.decode([packed])
    assert back == plain
    assert data_converter.payload_converter.from_payloads([back], [WakeResult]) == [_result()]


async def test_encoding_is_deterministic() -> None:
    codec = DeflateCodec()
    one = await codec.encode([_json(_result())])
    two = await codec.encode([_json(_result())])
    assert one == two


async def test_payloads_written_before_the_codec_pass_through() -> None:
    codec, plain = DeflateCodec(), _json(_result())
    assert await codec.decode([plain]) == [plain]
    tiny = Payload(metadata={"encoding": b"json/plain"}, data=b"1")
    assert await codec.encode([tiny]) == [tiny]  # nothing to gain: sent as it is


async def test_a_damaged_payload_is_an_error_not_garbage() -> None:
    (packed,) = await DeflateCodec().encode([_json(_result())])
    cut = Payload(metadata=dict(packed.metadata), data=packed.data[: len(packed.data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        await DeflateCodec().decode([cut])


async def test_a_wake_through_wakefuls_client_stores_compressed_payloads(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    client = await wakeful_client(temporal_dev)
    async with worker(client, store, [agent], osim) as (queue, _):
        result = await wake(client, agent.runtime(), message("list_dir .", uuid.uuid4().hex), queue)
    assert result.status == "done" and result.model_calls == 2
    history = await client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    scheduled = [e.activity_task_scheduled_event_attributes for e in history.events]
    inputs = [a.input.payloads[0] for a in scheduled if a.HasField("input")]
    assert inputs and all(p.metadata["encoding"] == ENCODING for p in inputs)


def test_fields_at_their_defaults_stay_off_the_wire_and_come_back() -> None:
    """A payload leaves out the fields at their defaults (``wakeful.wire``): an answer not
    given, caps not set, flags at their usual value. Decoding fills them in again."""
    from wakeful.contracts import CallModelOut, CompileOut

    compiled = CompileOut(window_hash="w1", stable_prefix_hash="s1", input_tokens=0, max_event_id=7)
    (payload,) = data_converter.payload_converter.to_payloads([compiled])
    assert (
        payload.data
        == b'{"window_hash":"w1","stable_prefix_hash":"s1","input_tokens":0,"max_event_id":7}'
    )
    (back,) = data_converter.payload_converter.from_payloads([payload], [CompileOut])
    assert back == compiled and back.spent_today_usd is None and back.consolidate is False
    reply = CallModelOut(output_hash="o", stop_reason="end_turn", answer="42", answer_chars=2)
    (payload,) = data_converter.payload_converter.to_payloads([reply])
    assert b'"answer":"42"' in payload.data and b"tool_calls" not in payload.data
    assert data_converter.payload_converter.from_payloads([payload], [CallModelOut]) == [reply]
    # Elsewhere every field is shown: the CLI's --json and model_dump are unchanged.
    assert "spent_today_usd" in compiled.model_dump() and '"consolidate":false' in (
        compiled.model_dump_json()
    )


def test_a_wake_ref_leaves_out_the_ids_that_follow_from_its_fields() -> None:
    """An agent's wake id (<agent>:<number>) and workflow id follow from the ref's other
    fields: the payload leaves them out and decoding fills them in; a child's workflow id
    does not follow, so it stays."""
    from wakeful.contracts import WakeRef

    ref = WakeRef(
        tenant="acme",
        agent="triage",
        wake_id="triage:41",
        session_id="triage:s0007",
        workflow_id=workflow_id("acme", "triage"),
        number=41,
    )
    (payload,) = data_converter.payload_converter.to_payloads([ref])
    assert (
        payload.data
        == b'{"tenant":"acme","agent":"triage","session_id":"triage:s0007","number":41}'
    )
    assert data_converter.payload_converter.from_payloads([payload], [WakeRef]) == [ref]
    child = ref.model_copy(update={"workflow_id": "wakeful-child:acme:triage"})
    (payload,) = data_converter.payload_converter.to_payloads([child])
    assert b"wakeful-child:acme:triage" in payload.data and b"wake_id" not in payload.data
    assert data_converter.payload_converter.from_payloads([payload], [WakeRef]) == [child]
    assert "workflow_id" in ref.model_dump()  # elsewhere every field is shown


async def test_a_wakes_history_holds_only_what_the_workflow_reads(
    temporal_dev: WorkflowEnvironment, store: Store, osim: SimulatorServer, agent: Agent
) -> None:
    """The compile's result leaves out the stable prefix hash and the event horizon (the
    workflow never reads them; the compile record has them), and a model call's input the
    ids that follow from its wake's other fields."""
    client = await wakeful_client(temporal_dev)
    async with worker(client, store, [agent], osim) as (queue, _):
        result = await wake(client, agent.runtime(), message("list_dir .", uuid.uuid4().hex), queue)
    assert result.status == "done"
    history = await client.get_workflow_handle(
        workflow_id(agent.tenant, agent.name)
    ).fetch_history()
    markers = [
        p
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        for key, v in e.marker_recorded_event_attributes.details.items()
        if key == "result"
        for p in v.payloads
    ]
    inputs = [
        p
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        for p in e.activity_task_scheduled_event_attributes.input.payloads
    ]
    texts = [p.data for p in await DeflateCodec().decode([*markers, *inputs])]
    compiles = [t for t in texts if b'"window_hash"' in t and b'"breakpoints"' in t]
    calls = [t for t in texts if b'"window_hash"' in t and b'"wake"' in t]
    assert compiles and calls
    assert not any(b"stable_prefix_hash" in t or b"max_event_id" in t for t in compiles)
    assert not any(b'"workflow_id"' in t or b'"wake_id"' in t for t in calls)


def test_every_payload_converter_shares_one_json_converter() -> None:
    # The SDK builds a payload converter per workflow activation and activity task: they
    # share the JSON converter (and its cache of type adapters) instead of each building one.
    first = data_converter.payload_converter_class()
    second = data_converter.payload_converter_class()
    assert isinstance(first, CompositePayloadConverter)
    assert isinstance(second, CompositePayloadConverter)
    assert first.converters[b"json/plain"] is second.converters[b"json/plain"]
    # ... and it is still Wakeful's compact one: fields at their defaults stay off the wire.
    (payload,) = second.to_payloads([_result()])
    assert b"deduplicated" not in payload.data
    assert first.from_payloads([payload], [WakeResult]) == [_result()]
