"""Search attributes an agent workflow tags itself with, so people find it in Temporal.

``WakefulTenant``, ``WakefulAgent`` and ``WakefulSession`` (keywords): in the Temporal UI
and CLI, ``WakefulAgent = "triage"`` lists an agent's workflows, and ``WakefulSession``
says which session each one is in. A namespace must have them registered (the worker does
it where it may: ``wakeful.worker.search_attributes``); the workflow tags itself only when
its first activity reports they are there, so a namespace without them never sees an
upsert it would refuse. The tags are carried over by continue-as-new.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey

__all__ = ["AGENT", "KEYS", "SESSION", "TENANT", "tag_agent", "tag_session"]

TENANT = SearchAttributeKey.for_keyword("WakefulTenant")
AGENT = SearchAttributeKey.for_keyword("WakefulAgent")
SESSION = SearchAttributeKey.for_keyword("WakefulSession")
KEYS = (TENANT, AGENT, SESSION)


def tag_agent(tenant: str, agent: str, session: str | None) -> None:
    """Tag this workflow with its tenant and agent (and its session, when one is open)."""
    updates = [TENANT.value_set(tenant), AGENT.value_set(agent)]
    if session:
        updates.append(SESSION.value_set(session))
    workflow.upsert_search_attributes(updates)


def tag_session(session: str) -> None:
    """Say which session the agent is in, when the workflow carries Wakeful's tags."""
    if workflow.info().typed_search_attributes.get(AGENT) is not None:
        workflow.upsert_search_attributes([SESSION.value_set(session)])
