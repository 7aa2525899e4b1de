"""A workflow history as searchable text, with every payload decoded by the data converter's codec.

Wakeful's codec deflates payloads (``wz2``; earlier ``wakeful/z1``), so a search of the
history's JSON finds nothing that is inside a payload — activity inputs and results, update
arguments, memos. :func:`history_text` walks every message of every event, decodes each
``Payload`` it finds with the codec and returns the history's JSON (for what is not in a
payload, e.g. failure messages) followed by the decoded payloads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter

from wakeful.worker.codec import data_converter

__all__ = ["decoded_payloads", "history_text", "payloads_in"]


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every ``Payload`` in ``message``, at any depth (fields, repeated fields, map values)."""
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        kind = field.message_type
        if field.type != FieldDescriptor.TYPE_MESSAGE or kind is None:
            continue
        if kind.GetOptions().map_entry:
            if kind.fields_by_name["value"].type == FieldDescriptor.TYPE_MESSAGE:
                for item in value.values():
                    yield from payloads_in(item)
        elif field.is_repeated:
            for item in value:
                yield from payloads_in(item)
        else:
            yield from payloads_in(value)


async def decoded_payloads(
    history: WorkflowHistory, converter: DataConverter = data_converter
) -> list[Payload]:
    """Every payload of every event of ``history``, decoded by ``converter``'s codec."""
    found = [p for event in history.events for p in payloads_in(event)]
    codec = converter.payload_codec
    return list(await codec.decode(found)) if codec is not None else found


async def history_text(history: WorkflowHistory, converter: DataConverter = data_converter) -> str:
    """The history's JSON and then each decoded payload's metadata and data, one per line."""
    lines = [json.dumps(history.to_json_dict())]
    for payload in await decoded_payloads(history, converter):
        meta = {k: v.decode("utf-8", "replace") for k, v in payload.metadata.items()}
        lines.append(f"{json.dumps(meta)} {payload.data.decode('utf-8', 'replace')}")
    return "\n".join(lines)
