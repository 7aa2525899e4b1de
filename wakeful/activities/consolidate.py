"""Consolidation activities: thin shells that read the substrate, run the pure rules of
:mod:`wakeful.consolidation`, and write what they decided.

Every write is idempotent: summaries on a key derived from their span, memories on keys
derived from the events they came from, log entries on ``(round, step)``. A retried activity
finds its first write; two consolidations over the same history write once.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from wakeful.activities.deps import ActivityDeps
from wakeful.activities.handoff_note import cache_ttl_s
from wakeful.compiler.ledger import Ledger
from wakeful.compiler.oversize import WHOLE_TEXT_META, head_and_tail
from wakeful.consolidation import hygiene as hy
from wakeful.consolidation.contracts import (
    CAPTURE,
    COMMIT,
    PLAN,
    PRESSURE,
    SUMMARISE,
    AgentIn,
    CaptureOut,
    CommitIn,
    CommitOut,
    DraftOut,
    PlanIn,
    PlanOut,
    PressureOut,
    SpanIn,
)
from wakeful.consolidation.facts import extract_facts
from wakeful.consolidation.gate import GateInput, run_gate, summary_token_limit
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.prompt import (
    SummaryAsk,
    build_prompt,
    continued_summary_request,
    request_body,
)
from wakeful.consolidation.rules import promotions
from wakeful.consolidation.spans import (
    SessionBounds,
    Span,
    SummaryView,
    closed_sessions,
    plan_rollups,
    select_spans,
)
from wakeful.consolidation.text import contains_token, registry_ids
from wakeful.errors import ProviderError, UnknownAgentError
from wakeful.providers.base import ModelReply
from wakeful.providers.pricing import price_for
from wakeful.substrate.records import (
    ConsolidationLogRecord,
    DecisionRecord,
    MemoryRecord,
    StoredEvent,
    SummaryRecord,
)
from wakeful.substrate.store import TenantStore

HISTORY_KINDS = ("turn", "tool_call", "tool_result", "summary")


def agent_wide_events(ts: TenantStore, agent: str) -> list[StoredEvent]:
    """The agent's live events that no user's wake wrote: all that consolidation reads.
    What it writes (summaries, memories, decisions) is agent-wide, so it must not carry a
    user's words to another user's wakes (``wakeful.users``); a user's events stay raw."""
    return [e for e in ts.events(agent, include_retired=False) if e.user_id is None]


def agent_wide_memories(
    ts: TenantStore, agent: str, *, history: bool = False
) -> list[MemoryRecord]:
    """The agent's live memories (every version, with ``history``) that no user's wake
    wrote: consolidation merges, compares and annotates with these only, so what it writes
    agent-wide never carries a user's memory (``wakeful.users``)."""
    rows = ts.memory_history(agent) if history else ts.memories(agent)
    return [m for m in rows if m.user_id is None]


def last_call(ts: TenantStore, agent: str) -> tuple[dict[str, Any], Ledger, str, datetime] | None:
    """The agent's last model request as sent, its ledger, its reply's text and when its
    wake ended (just after it was sent); None when the agent's last wake with a call served
    a user (what consolidation writes is agent-wide: ``agent_wide_events``) or made none."""
    for w in reversed(ts.wakes(agent)):
        calls = ts.model_calls(w.wake_id)
        if not calls:
            continue
        if w.user_id is not None:
            return None
        call = max(calls, key=lambda c: c.call_index)
        compiles = ts.compiles(w.wake_id)
        compiled = next((c for c in compiles if c.window_hash == call.window_hash), None)
        if compiled is None:
            return None
        window: dict[str, Any] = json.loads(ts.get_blob(call.window_hash))
        ledger = Ledger.model_validate_json(ts.get_blob(compiled.ledger_hash))
        reply = ModelReply.model_validate_json(ts.get_blob(call.output_hash))
        return window, ledger, reply.text, w.finished_at or w.started_at
    return None


def item_of(e: StoredEvent) -> SpanItem:
    return SpanItem(
        id=e.id,
        kind=e.kind,
        text=e.text,
        at=e.event_time,
        role=e.role,
        session_id=e.session_id,
        wake_id=e.wake_id,
        tool_call_id=e.tool_call_id,
        tool_name=e.tool_name,
    )


def shown_item(e: StoredEvent, limit: int) -> SpanItem:
    """An event as a summary is drafted from and judged against: a turn longer than
    ``limit`` characters (the policy's ``span_max_chars``) by its head and tail, with the
    handle of its whole text (``compiler.oversize``), so that one huge webhook asks the
    summariser for no more than a full span does."""
    item = item_of(e)
    if e.kind != "turn" or len(e.text) <= limit:
        return item
    text = head_and_tail(e.text, limit, e.meta.get(WHOLE_TEXT_META))
    return item.model_copy(update={"text": text})


def view_of(m: MemoryRecord) -> hy.MemoryView:
    return hy.MemoryView.model_validate(m.model_dump(exclude={"agent", "step_key", "scope"}))


class ConsolidateActivities:
    def __init__(self, deps: ActivityDeps) -> None:
        self.deps = deps

    def _ts(self, a: AgentIn) -> TenantStore:
        return self.deps.store.tenant(a.tenant)

    def _log(
        self,
        ts: TenantStore,
        a: AgentIn,
        step: str,
        *,
        action: str,
        status: str,
        subject: str,
        summary_id: int | None = None,
        output_hash: str | None = None,
        detail: dict[str, object] | None = None,
    ) -> None:
        ts.log_consolidation(
            ConsolidationLogRecord(
                agent=a.agent,
                step_key=f"{a.round_id}:{step}",
                round_id=a.round_id,
                action=action,
                status=status,
                subject=subject,
                summary_id=summary_id,
                output_hash=output_hash,
                detail=detail or {},
            )
        )

    def _items(self, ts: TenantStore, a: AgentIn, span: Span) -> list[SpanItem]:
        if span.source == "events":
            limit = a.policy.span_max_chars
            return [shown_item(e, limit) for e in ts.events_by_ids(a.agent, span.ids)]
        kids = {s.id: s for s in ts.summaries_by_ids(a.agent, span.ids)}
        return [
            SpanItem(id=i, kind="summary", text=kids[i].text, at=kids[i].created_at or a.now)
            for i in span.ids
            if i in kids
        ]

    def _summary_room(self, a: AgentIn) -> int | None:
        """The most tokens a summary may take in the agent's window (its policy's budget);
        None for an agent this worker does not serve (no window to fit it to)."""
        try:
            agent = self.deps.agents.get(a.tenant, a.agent)
        except UnknownAgentError:
            return None
        return summary_token_limit(self.deps.policy(agent.policy).budget)

    # --- triggers -------------------------------------------------------------------------

    @activity.defn(name=PRESSURE)
    def pressure(self, inp: AgentIn) -> PressureOut:
        """Did the agent's latest compile have to evict history to fit its budget?"""
        ts = self._ts(inp)
        latest = ts.recent_compiles(inp.agent, 1)
        if not latest:
            return PressureOut(pressured=False)
        ledger = Ledger.model_validate_json(ts.get_blob(latest[0].ledger_hash))
        out = [r for r in ledger.rows if r.status == "excluded"]
        rows = sum(1 for r in out if r.reason == "pressure")
        evicted = sum(r.tokens for r in out if r.reason == "budget" and r.kind in HISTORY_KINDS)
        return PressureOut(
            pressured=rows > 0 or evicted >= inp.policy.pressure_tokens,
            compile_step=latest[0].step_key,
            evicted_tokens=evicted,
            pressure_rows=rows,
        )

    # --- planning and promotion -------------------------------------------------------------

    @activity.defn(name=PLAN)
    def plan(self, inp: PlanIn) -> PlanOut:
        a = inp.agent
        ts = self._ts(a)
        live_wakes = [w for w in ts.wakes(a.agent) if w.status == "running"]
        running = frozenset(w.wake_id for w in live_wakes)
        bounds = [SessionBounds.model_validate(b) for b in ts.session_bounds(a.agent)]
        closed = closed_sessions(
            bounds, frozenset(w.session_id for w in live_wakes), a.now, a.policy
        )
        if inp.level == 1:
            live = [item_of(e) for e in agent_wide_events(ts, a.agent)]
            spans = select_spans(
                live, running_wakes=running, closed=closed, now=a.now, policy=a.policy
            )
            return PlanOut(spans=tuple(spans))
        if inp.level == 3:  # a period takes whole sessions only: none with raw events left
            raw = {e.session_id for e in agent_wide_events(ts, a.agent)}
            closed = frozenset(closed - raw)
        summaries = ts.summaries(a.agent)
        ends = {s.span_start for s in summaries} | {s.span_end for s in summaries}
        events = {e.id: e for e in ts.events_by_ids(a.agent, sorted(ends))}
        views = [
            SummaryView(
                id=s.id or 0,
                level=s.level,
                span_start=s.span_start,
                span_end=s.span_end,
                session_id=events[s.span_start].session_id if s.span_start in events else None,
                end_at=events[s.span_end].event_time if s.span_end in events else a.now,
            )
            for s in summaries
        ]
        spans = plan_rollups(views, level=inp.level, closed=closed, now=a.now, policy=a.policy)
        return PlanOut(spans=tuple(spans))

    @activity.defn(name=CAPTURE)
    def capture(self, inp: AgentIn) -> CaptureOut:
        """Promote constraints, decisions and facts of all live history into the registry
        and memories — before any of it can be retired."""
        ts = self._ts(inp)
        items = [item_of(e) for e in agent_wide_events(ts, inp.agent)]
        promoted, revocations = promotions(items, inp.policy)
        before = {d.decision_id for d in ts.all_decisions(inp.agent)}
        promoted = [p for p in promoted if p.decision_id not in before]  # ids are never reused
        for p in promoted:
            ts.register_decision(
                DecisionRecord(
                    decision_id=p.decision_id,
                    agent=inp.agent,
                    text=p.text,
                    source_event=p.source_event,
                    expires_at=p.expires_at,
                )
            )
        known = {d.decision_id: d for d in ts.all_decisions(inp.agent)}
        revoked = []
        for r in revocations:
            entry = known.get(r.decision_id)
            if entry is not None and entry.superseded_by is None and r.by != r.decision_id:
                ts.supersede_decision(inp.agent, r.decision_id, r.by)
                revoked.append(r.decision_id)
        newest = {m.key: m.captured_at for m in agent_wide_memories(ts, inp.agent)}
        written = {m.step_key for m in ts.memory_history(inp.agent)}
        by_id = {i.id: i for i in items}
        facts = 0
        for f in extract_facts(items):
            step = f"fact:{inp.agent}:{f.source_event}:{f.key}"
            if step in written or (f.key in newest and newest[f.key] > f.at):
                continue  # captured before; or older than the memory it would supersede
            source = by_id[f.source_event]
            ts.remember(
                MemoryRecord(
                    agent=inp.agent,
                    step_key=step,
                    key=f.key,
                    text=f.sentence,
                    source=f"events:{f.source_event}",
                    verification="verified" if source.kind == "tool_result" else "unverified",
                    importance=0.6 if source.from_user else 0.5,
                    captured_at=f.at,
                )
            )
            newest[f.key] = f.at
            facts += 1
        return CaptureOut(
            promoted=tuple(p.decision_id for p in promoted), revoked=tuple(revoked), facts=facts
        )

    # --- summaries ----------------------------------------------------------------------------

    @activity.defn(name=SUMMARISE)
    async def summarise(self, inp: SpanIn) -> DraftOut:
        """Ask the model for a summary of one span; the reply is stored, its hash returned.

        The substrate's reads and writes run in a thread: an ``async`` activity runs on the
        worker's event loop, which a blocking database call would hold for everyone."""
        a, span = inp.agent, inp.span
        ts = self._ts(a)
        reused, body = await asyncio.to_thread(self._draft_request, ts, inp)
        if reused is not None:
            return reused
        try:
            reply = await self.deps.provider(inp.provider).complete(body)
        except ProviderError as exc:
            raise ApplicationError(
                f"{inp.provider} summary of span {span.key} for agent {a.agent} failed: {exc}",
                type="ProviderError",
                non_retryable=not exc.retryable,
                next_retry_delay=timedelta(seconds=exc.retry_after) if exc.retry_after else None,
            ) from exc
        return await asyncio.to_thread(self._store_draft, ts, inp, reply)

    def _draft_request(
        self, ts: TenantStore, inp: SpanIn
    ) -> tuple[DraftOut | None, dict[str, Any]]:
        """The stored draft of an earlier attempt, or the request that asks for one."""
        a, span = inp.agent, inp.span
        done = ts.logged(f"{a.round_id}:draft:{span.key}")
        if done is not None and done.output_hash:
            return DraftOut(output_hash=done.output_hash, reused=True), {}
        items = self._items(ts, a, span)
        text = "\n".join(i.text for i in items)
        entries = ts.all_decisions(a.agent)
        if span.source == "events":
            ids = set(span.ids)
            cited = [d for d in entries if d.source_event in ids]
        else:
            mentioned = set(registry_ids(text))
            cited = [d for d in entries if d.decision_id in mentioned]
        registry = [
            (
                d.decision_id + (f" superseded by {d.superseded_by}" if d.superseded_by else ""),
                d.text,
            )
            for d in cited
        ]
        history = [view_of(m) for m in agent_wide_memories(ts, a.agent, history=True)]
        superseded = [
            (f.subject, f.old, f.new)
            for f in hy.superseded_facts(history)
            if contains_token(text, f.old)
        ]
        if span.source == "events":
            continued = self._continued(ts, inp, items, registry, superseded)
            if continued is not None:
                return None, continued
        prompt = build_prompt(span.level, items, registry, superseded)
        return None, request_body(inp.provider, inp.model, prompt, a.policy.summary_max_tokens)

    def _continued(
        self,
        ts: TenantStore,
        inp: SpanIn,
        items: list[SpanItem],
        registry: list[tuple[str, str]],
        superseded: list[tuple[str, str, str]],
    ) -> dict[str, Any] | None:
        """The agent's last request continued by the ask for this span's summary, as the
        handoff note's is, when that request is likely still cached and holds enough of
        the span for its read to cost less than the span sent again
        (:func:`~wakeful.consolidation.prompt.continued_summary_request`); None otherwise
        (the span in the prompt, as always)."""
        last = last_call(ts, inp.agent.agent)
        if last is None:
            return None
        window, ledger, reply, sent_at = last
        if window.get("model") != inp.model:  # another model has no cache of that prefix
            return None
        if (inp.agent.now - sent_at).total_seconds() > cache_ttl_s(inp.provider, window):
            return None
        price = price_for(inp.provider, inp.model)
        share = price.cache_read / price.input if price is not None and price.input else 1.0
        ask = SummaryAsk(
            inp.span.level, items, registry, superseded, inp.agent.policy.summary_max_tokens
        )
        return continued_summary_request(
            inp.provider, window, ledger, reply, ask, self.deps.counter.count, share
        )

    def _store_draft(self, ts: TenantStore, inp: SpanIn, reply: ModelReply) -> DraftOut:
        a, span = inp.agent, inp.span
        digest = ts.put_blob("summary_draft", reply.text)
        self._log(
            ts,
            a,
            f"draft:{span.key}",
            action="draft",
            status="drafted",
            subject=span.key,
            output_hash=digest,
            detail={"model": reply.model, "usage": reply.usage.model_dump()},
        )
        return DraftOut(output_hash=digest, reused=False)

    @activity.defn(name=COMMIT)
    def commit(self, inp: CommitIn) -> CommitOut:
        """Gate a draft; on a pass, store it and retire exactly the history it replaces."""
        a, span = inp.agent, inp.span
        ts = self._ts(a)
        step = f"gate:{span.key}"
        done = ts.logged(f"{a.round_id}:{step}")
        if done is not None:
            return CommitOut(
                status=done.status,
                summary_id=done.summary_id,
                reasons=tuple(done.detail.get("reasons", ())),
            )
        summary = ts.get_blob(inp.output_hash)
        items = self._items(ts, a, span)
        decisions = {d.decision_id: d for d in ts.all_decisions(a.agent)}
        promoted: list[str] = []
        reasons: list[str] = []
        if span.source == "events":
            promoted = [p.decision_id for p in promotions(items, a.policy)[0]]
            missing = [i for i in promoted if i not in decisions]
            if missing:  # fail closed: never retire history whose rules are not in the registry
                reasons.append(f"promotion: not in the registry yet: {', '.join(missing)}")
        live = {d.decision_id: d.text for d in ts.live_decisions(a.agent, a.now)}
        replaced = hy.superseded_facts(
            [view_of(m) for m in agent_wide_memories(ts, a.agent, history=True)]
        )
        gate = run_gate(
            GateInput(
                items=tuple(items),
                promoted_ids=tuple(promoted),
                registry=live,
                superseded_values=tuple(f.old for f in replaced),
                current_values=tuple(f.new for f in replaced),
                window_tokens=self._summary_room(a),
            ),
            summary,
            count=self.deps.counter.count,
        )
        reasons += gate.reasons
        status: str = "rejected"
        summary_id = None
        if not reasons:
            kids = ts.summaries_by_ids(a.agent, span.ids) if span.source == "summaries" else []
            rec = SummaryRecord(
                agent=a.agent,
                step_key=f"consolidate:{a.agent}:{span.key}",
                level=span.level,
                span_start=min([s.span_start for s in kids] or list(span.ids)),
                span_end=max([s.span_end for s in kids] or list(span.ids)),
                text=summary,
                gate=gate.model_dump(mode="json"),
            )
            events = span.ids if span.source == "events" else ()
            children = span.ids if span.source == "summaries" else ()
            saved, status = ts.commit_summary(rec, at=a.now, event_ids=events, child_ids=children)
            if saved is None:
                reasons.append(status)
                status = "raced"
            else:
                summary_id = saved.id
        self._log(
            ts,
            a,
            step,
            action="summary" if span.level == 1 else "rollup",
            status=status,
            subject=span.key,
            summary_id=summary_id,
            output_hash=inp.output_hash,
            detail={
                "reasons": reasons,
                "gate": gate.model_dump(mode="json"),
                "ids": list(span.ids),
            },
        )
        return CommitOut(status=status, summary_id=summary_id, reasons=tuple(reasons))
