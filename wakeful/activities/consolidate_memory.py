"""Memory-hygiene and dreaming activities of a consolidation round.

Thin, like the others: read memories, summaries and recent ledgers; let
:mod:`wakeful.consolidation.hygiene` and :mod:`wakeful.consolidation.dream` decide; write the
decisions idempotently (step keys derived from the memories and events involved) and log them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio import activity

from wakeful.activities.consolidate import (
    ConsolidateActivities,
    agent_wide_events,
    agent_wide_memories,
    item_of,
    view_of,
)
from wakeful.activities.deps import ActivityDeps
from wakeful.compiler.blocks import content_hash
from wakeful.compiler.ledger import Ledger
from wakeful.consolidation import dream as dreaming
from wakeful.consolidation import hygiene as hy
from wakeful.consolidation.contracts import DREAM, HYGIENE, AgentIn, DreamOut, HygieneOut
from wakeful.consolidation.facts import extract_facts
from wakeful.substrate.records import MemoryRecord, SummaryRecord
from wakeful.substrate.store import TenantStore

DELTA_IMPORTANCE = 0.6


class MemoryActivities(ConsolidateActivities):
    def _last_used(self, ts: TenantStore, a: AgentIn) -> dict[int, datetime]:
        """When each memory last reached a window, from the agent's recent ledgers."""
        used: dict[int, datetime] = {}
        for rec in ts.recent_compiles(a.agent, a.policy.usage_compiles):
            ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
            for row in ledger.rows:
                if row.position >= 0 and row.block_id.startswith("memory:"):
                    mid = int(row.block_id.removeprefix("memory:"))
                    used[mid] = max(used.get(mid, rec.as_of), rec.as_of)
        return used

    def _delta(self, ts: TenantStore, a: AgentIn, d: hy.Delta, step: str) -> None:
        ts.remember(
            MemoryRecord(
                agent=a.agent,
                step_key=f"{step}:{a.agent}:{d.old_source}:{d.new_source}",
                key=f"{hy.DELTA_PREFIX}{d.kind}:{d.key}",
                text=d.render(),
                source=f"{d.old_source}->{d.new_source}",
                importance=DELTA_IMPORTANCE,
                captured_at=d.at,
            )
        )

    @activity.defn(name=HYGIENE)
    def hygiene(self, inp: AgentIn) -> HygieneOut:
        """Deltas for changed values, superseded marks in old summaries, staleness, decay."""
        ts, now, policy = self._ts(inp), inp.now, inp.policy
        history = [view_of(m) for m in agent_wide_memories(ts, inp.agent, history=True)]
        changes = hy.deltas(history, now, policy)
        for d in changes:
            self._delta(ts, inp, d, "delta")
        expired = hy.expired_deltas(history, now, policy)
        ts.retire_memories(inp.agent, expired, now)

        superseded = hy.superseded_facts(history)
        revoked = [
            (d.decision_id, d.superseded_by)
            for d in ts.all_decisions(inp.agent)
            if d.superseded_by is not None
        ]
        annotated = 0
        for s in ts.summaries(inp.agent):
            text = hy.annotate(s.text, superseded, revoked)
            if text is None:
                continue
            rec = SummaryRecord(
                agent=inp.agent,
                step_key=f"consolidate:{inp.agent}:annotate:{s.id}:{content_hash(text)[:12]}",
                level=s.level,
                span_start=s.span_start,
                span_end=s.span_end,
                text=text,
                gate={**s.gate, "annotated_from": s.id},
            )
            saved, status = ts.commit_summary(rec, at=now, child_ids=[s.id or 0])
            annotated += saved is not None and status == "accepted"
            self._log(
                ts,
                inp,
                f"annotate:{s.id}",
                action="annotate",
                status=status,
                subject=f"summary:{s.id}",
                summary_id=saved.id if saved else None,
            )

        live = [
            m
            for m in (view_of(m) for m in agent_wide_memories(ts, inp.agent, history=True))
            if m.live
        ]
        fresh = extract_facts(
            [item_of(e) for e in agent_wide_events(ts, inp.agent) if e.kind == "tool_result"]
        )
        counts = {"confirmed": 0, "changed": 0, "unknown": 0}
        for m in hy.stale(live, now, policy):
            verdict = hy.reverify(m, fresh)
            ev = verdict.evidence
            if ev is None and m.verification == "stale":
                continue  # marked before, and still no fresh evidence
            counts[verdict.outcome] += 1
            if ev is None:
                ts.mark_memories(inp.agent, [m.id], "stale")
            else:
                ts.remember(
                    MemoryRecord(
                        agent=inp.agent,
                        step_key=f"reverify:{inp.agent}:{m.id}:{ev.source_event}",
                        key=m.key,
                        text=m.text if verdict.outcome == "confirmed" else ev.sentence,
                        source=f"events:{ev.source_event}",
                        verification="verified",
                        importance=m.importance,
                        captured_at=ev.at,
                    )
                )
            self._log(
                ts,
                inp,
                f"reverify:{m.id}",
                action="reverify",
                status=verdict.outcome,
                subject=f"memory:{m.id}",
                detail={"evidence": ev.source_event if ev else None},
            )

        decayed = hy.decay(live, self._last_used(ts, inp), now, policy)
        ts.retire_memories(inp.agent, [mid for mid, _ in decayed], now)
        for mid, weight in decayed:
            self._log(
                ts,
                inp,
                f"decay:{mid}",
                action="decay",
                status="retired",
                subject=f"memory:{mid}",
                detail={"weight": weight},
            )
        return HygieneOut(
            annotated=annotated,
            deltas=len(changes),
            expired_deltas=len(expired),
            stale=counts["unknown"],
            reverified=counts["confirmed"],
            changed=counts["changed"],
            decayed=len(decayed),
        )

    @activity.defn(name=DREAM)
    def dream(self, inp: AgentIn) -> DreamOut:
        """Merge near-duplicate memories (provenance kept, loss capped); surface conflicts."""
        ts = self._ts(inp)
        live = [view_of(m) for m in agent_wide_memories(ts, inp.agent)]
        groups, conflicts = dreaming.duplicate_groups(live, inp.policy)
        merged = rejected = 0
        for group in groups:
            p = dreaming.merge(group, inp.policy)
            ids = "+".join(map(str, p.member_ids))
            if p.accepted:
                ts.remember(
                    MemoryRecord(
                        agent=inp.agent,
                        step_key=f"merge:{inp.agent}:{ids}",
                        key=p.key,
                        text=p.text,
                        source=p.source,
                        importance=p.importance,
                        captured_at=inp.now,
                    )
                )
                others = [m.id for m in group if m.key != p.key]
                ts.retire_memories(inp.agent, others, inp.now)
                merged += 1
            else:
                rejected += 1
            self._log(
                ts,
                inp,
                f"merge:{ids}",
                action="merge",
                status="accepted" if p.accepted else "rejected",
                subject=ids,
                detail={"loss": p.loss, "text": p.text},
            )
        for d in conflicts:
            self._delta(ts, inp, d, "conflict")
        return DreamOut(merged=merged, rejected=rejected, conflicts=len(conflicts))


def consolidation_activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """Every consolidation activity, bound to ``deps``, for a worker to register."""
    acts = MemoryActivities(deps)
    return [
        acts.pressure,
        acts.plan,
        acts.capture,
        acts.summarise,
        acts.commit,
        acts.hygiene,
        acts.dream,
    ]
