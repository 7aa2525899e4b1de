"""Promotion of a session's stated constraints into the registry when the session ends.

Consolidation promotes what its rules find (:func:`wakeful.consolidation.rules.promotions`)
only when it rounds history up, which may be days after a person said "never deploy on
Fridays". A session's end is the natural moment to make such a rule load-bearing: the next
session starts from the handoff note and the registry, not from the transcript. The same
rules run here over the ending session's live turns, with the same ids (``LB-<event>``,
``DEC-<event>``), so whichever of the two promotes a sentence first writes it and the other
finds it there; revocations in those turns retire what they name, as consolidation's do.
"""

from __future__ import annotations

from wakeful.activities.consolidate import item_of
from wakeful.consolidation.policy import ConsolidationPolicy
from wakeful.consolidation.rules import promotions
from wakeful.substrate.records import DecisionRecord
from wakeful.substrate.store import TenantStore

__all__ = ["promote_session"]


def promote_session(
    ts: TenantStore, agent: str, session_id: str, policy: ConsolidationPolicy | None = None
) -> tuple[list[str], list[str]]:
    """Register the session's promotions; returns (ids registered now, ids revoked now).

    Idempotent: ids already in the registry (this activity's earlier attempt, or a
    consolidation round) are not written again, and a revocation applies once."""
    policy = policy or ConsolidationPolicy()
    items = [
        item_of(e)
        for e in ts.events(agent, include_retired=False)
        # A user's words never become agent-wide decisions (``wakeful.users``).
        if e.session_id == session_id and e.kind == "turn" and e.user_id is None
    ]
    promoted, revocations = promotions(items, policy)
    known = {d.decision_id: d for d in ts.all_decisions(agent)}
    fresh = [p for p in promoted if p.decision_id not in known]  # ids are never reused
    for p in fresh:
        ts.register_decision(
            DecisionRecord(
                decision_id=p.decision_id,
                agent=agent,
                text=p.text,
                source_event=p.source_event,
                expires_at=p.expires_at,
            )
        )
        known[p.decision_id] = DecisionRecord(decision_id=p.decision_id, agent=agent, text="")
    revoked = []
    for r in revocations:
        entry = known.get(r.decision_id)
        if (
            entry is not None
            and entry.superseded_by is None
            and entry.retired_at is None
            and r.by != r.decision_id
        ):
            ts.supersede_decision(agent, r.decision_id, r.by)
            revoked.append(r.decision_id)
    return [p.decision_id for p in fresh], revoked
