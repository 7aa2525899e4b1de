"""Payloads as they cross Temporal: a message's fields at their defaults are left out.

Every activity input and result, every trigger and wake result is written into a workflow's
history, so every field costs bytes in every wake — an answer that was not given
(``"answer":null``), a cap the agent does not have, a flag at its usual value. The data
converter (``wakeful.worker.codec``) serialises with :data:`COMPACT` in the context, and a
:class:`WireModel` then leaves out each field whose value equals its default; decoding fills
them in again. Anywhere else (``model_dump``, the CLI's ``--json``) every field is shown.

A message may also leave out fields that follow from its others (``_implied``: a wake's
id from its agent and number), filling them in again when it is decoded.

A default is therefore part of the wire format: changing one would change what histories
already written decode to on replay. Add a new field instead.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, SerializationInfo, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticUndefined

__all__ = ["COMPACT", "WireModel"]

COMPACT = "wakeful.compact"  # serialisation context key: leave default-valued fields out


class WireModel(BaseModel):
    """A message whose fields at their defaults are left out when it crosses Temporal."""

    @model_serializer(mode="wrap")
    def _without_defaults(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        data = handler(self)
        context = info.context
        if not (isinstance(context, dict) and context.get(COMPACT)) or not isinstance(data, dict):
            return data
        defaults, implied = _defaults(type(self)), self._implied()
        out = {}
        for name, value in data.items():
            if name in implied and getattr(self, name) == implied[name]:
                continue
            if name in defaults:
                default, current = defaults[name], getattr(self, name)
                # The same type too: 0 == False, and 1 == 1.0 spell differently on the wire.
                if type(current) is type(default) and current == default:
                    continue
            out[name] = value
        return out

    def _implied(self) -> dict[str, Any]:
        """Fields whose values follow from the others', by name: left out when they do. A
        subclass that says so fills them in again when it is decoded (a ``before`` model
        validator)."""
        return {}


@functools.cache
def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    """Each field's default (factories called once), for the fields that have one."""
    out = {}
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True, validated_data={})
        if default is not PydanticUndefined:
            out[name] = default
    return out
