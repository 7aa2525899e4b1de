"""A workflow's history as it really reads: every payload decoded through Wakeful's codec.

Payloads are deflated (``wakeful/z1``), so a search of the raw history finds nothing either
way; a check that a value never reached Temporal must search the decoded payloads.
"""

from __future__ import annotations

import json

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from wakeful.worker.codec import data_converter


def _payloads(message: Message, out: list[Payload]) -> None:
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items = list(value.values())
        elif field.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            if isinstance(item, Payload):
                out.append(item)
            elif isinstance(item, Message):
                _payloads(item, out)


async def decoded_history(client: Client, workflow_id: str) -> str:
    """Every payload of the workflow's history (all runs), decoded, plus the raw history."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    found: list[Payload] = []
    for history_event in history.events:
        _payloads(history_event, found)
    codec = data_converter.payload_codec
    assert codec is not None
    decoded = await codec.decode(found)
    assert decoded, "the history has no payloads: nothing was searched"
    parts = [json.dumps(history.to_json_dict())]
    for payload in decoded:
        parts.append(payload.data.decode("utf-8", "replace"))
        parts += [v.decode("utf-8", "replace") for v in payload.metadata.values()]
    return "\n".join(parts)
