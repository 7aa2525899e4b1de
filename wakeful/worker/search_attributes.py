"""Registering Wakeful's search attributes on the namespace a worker serves.

A self-hosted cluster and the dev server take them from the worker
(``OperatorService.AddSearchAttributes``); Temporal Cloud refuses that call, and they are
added there with ``tcld namespace search-attributes add`` (see the README). Either way the
worker learns whether they are there, and agent workflows tag themselves only then.
"""

from __future__ import annotations

import logging

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError

from wakeful.workflows.search import KEYS

__all__ = ["ensure_search_attributes"]

log = logging.getLogger(__name__)


async def ensure_search_attributes(client: Client) -> bool:
    """True when the client's namespace has Wakeful's search attributes (registering the
    missing ones where the server lets the worker); False, with a warning naming the fix,
    when they are missing and cannot be added from here."""
    namespace = client.namespace
    names = [key.name for key in KEYS]
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
        missing = [n for n in names if n not in listed.custom_attributes]
        if missing:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=namespace,
                    search_attributes=dict.fromkeys(
                        missing, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                    ),
                )
            )
    except RPCError as err:
        log.warning(
            "search attributes %s are not on namespace %r and cannot be added from here "
            "(%s): agents' workflows run untagged; add them as Keyword (on Temporal Cloud: "
            "tcld namespace search-attributes add) to find them by agent",
            ", ".join(names),
            namespace,
            err.message,
        )
        return False
    return True
