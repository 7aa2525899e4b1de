"""Sessions of an agent workflow: when one ends, what is written, and keeping a cache warm.

A session is a run of wakes that share a warm prompt cache; it is a cache key, not memory.
It ends — ``end_session`` writes a handoff note saying why: the model's summary of the
session when it passes the checks of :mod:`wakeful.activities.handoff_note` (its cost is the
agent's spend), else one built from the session's wake notes — on an explicit ``/handoff``
message, after ``session_idle`` without a wake (a timer, so the note is written when the
agent goes quiet, not when it next wakes), when a wake spends its budget, when pacing
prices a fresh session cheaper, or on stop. The next wake
opens a new session, which compiles from that note and the substrate, not from a replayed
transcript.

The idle timer always ends a session when the agent or its policy set the idle limit
(``handoff_after_idle``). Unset (the default hour), the timer asks pacing first: a session
whose prefix costs less to rewrite cold than a handoff (the fresh prefix and the evidence
the next session's first wakes would bring back of it) stays open, the idle note and the
next wake's ledger say why, and the next wake prices it again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from wakeful.agents import AgentRuntime
    from wakeful.contracts import (
        END_SESSION,
        KEEP_WARM,
        RESUME_AGENT,
        EndSessionIn,
        EndSessionOut,
        KeepWarmIn,
        KeepWarmOut,
        ResumeAgentIn,
        ResumeAgentOut,
        Trigger,
        WakeResult,
    )
    from wakeful.workflows import retries as p
    from wakeful.workflows.cache import rates_for
    from wakeful.workflows.cycle import act, failure, store
    from wakeful.workflows.pacing import PacingDecision, PacingInput, PacingPolicy, decide
    from wakeful.workflows.search import tag_agent, tag_session
    from wakeful.workflows.state import AgentState

__all__ = ["HANDOFF_PRICE", "IDLE_PRICED", "Sessions"]

# Patch id: pacing prices a handoff with the evidence the next session's first wakes bring
# (``PacingInput.price_next_session``); histories recorded before it decide as they did.
HANDOFF_PRICE = "handoff-price-1"
# Patch id: past an idle limit nobody set, a session continues when pacing prices that
# cheaper than a handoff (the idle timer does not end it); asked only past the limit.
IDLE_PRICED = "idle-priced-1"


class Sessions:
    def __init__(self, state: AgentState, rt: AgentRuntime) -> None:
        self.state, self.rt = state, rt

    async def resume(self) -> None:
        """A workflow started afresh (e.g. after a stop) continues the agent's numbering."""
        got = await store(
            RESUME_AGENT, ResumeAgentIn(tenant=self.rt.tenant, agent=self.rt.name), ResumeAgentOut
        )
        s = self.state
        s.wakes, s.session_number = got.wakes, got.session_number
        s.session_id, s.last_wake_at = got.session_id, got.last_wake_at
        # Answers given before run() began (a refused or cancelled trigger) are kept.
        s.results = [*got.recent, *s.results]
        # Older wakes' keys were not recovered: they are looked up when a trigger repeats one.
        s.forgotten = s.forgotten or got.wakes > len(got.recent)
        # A trigger delivered with the start may repeat one the earlier run already woke for.
        done = {r.idempotency_key for r in s.results}
        s.pending = [t for t in s.pending if t.idempotency_key not in done]
        # The cache clock of the earlier run is unknown: start a new session.
        s.session_closed = bool(got.session_id)
        s.resumed = True
        if got.search_attributes:
            rt = self.rt
            tag_agent(rt.tenant, rt.name, f"{rt.name}:{s.session_id}" if s.session_id else None)

    # --- choosing and ending sessions -----------------------------------------------------

    def idle_policy(self, policy: PacingPolicy, at: datetime, limit_set: bool) -> PacingPolicy:
        """The policy of a decision at ``at``: past an idle limit nobody set, continuing the
        session is priced against a handoff (``idle_ends_session`` off), not forbidden."""
        used = self.state.clock.last_used_at
        past = self.state.session_open and used is not None and at - used > policy.max_idle
        if not past or limit_set or not policy.idle_ends_session:
            return policy
        if not workflow.patched(IDLE_PRICED):
            return policy
        return policy.model_copy(update={"idle_ends_session": False})

    async def choose(self, trigger: Trigger, decision: PacingDecision) -> str:
        """Continue the session or open a new one; returns the ledger's ``session`` entry."""
        s = self.state
        if s.session_open and not trigger.new_session and decision.choice != "handoff":
            if decision.past_max_idle:
                return (
                    f"continued {s.session_id} (idle past session_idle, which no "
                    "handoff_after_idle set: continuing it priced cheaper than a handoff)"
                )
            return f"continued {s.session_id}"
        if not s.session_open:
            why = "no session was open"
        elif trigger.new_session:
            why = "the trigger asked for a new session"
        else:
            why = "pacing chose a handoff"
        await self.end(why)
        s.session_number += 1
        s.session_id = f"s{s.session_number:04d}"
        tag_session(f"{self.rt.name}:{s.session_id}")
        s.session_closed = False
        s.keep_warm_at = []
        # Until the first call reports usage, a fresh session's cached rest is its frame.
        s.clock = s.clock.model_copy(update={"session_tokens": s.clock.fresh_tokens})
        return f"new {s.session_id} ({why})"

    async def end(self, reason: str) -> int:
        """Close the open session with a handoff note; returns the note's id (0: none open)."""
        s = self.state
        if not s.session_open:
            return 0
        s.session_closed, s.keep_warm_at = True, []
        if s.last_wake is None:
            return 0
        done = await store(
            END_SESSION,
            EndSessionIn(wake=s.last_wake, reason=reason, at=workflow.now()),
            EndSessionOut,
            # It may ask the model for the note (which gives up before this, for the template).
            start_to_close=p.KEEP_WARM_TIMEOUT,
        )
        # The note call is the agent's spend, like a keep-warm call; the next wake's ledger
        # says which note was written and why.
        s.cost_usd += done.cost_usd
        s.idle_notes.append(
            f"session {s.session_id} note: {done.note} ({done.note_reason})"
            + (f", ${done.cost_usd:.6f}" if done.cost_usd else "")
        )
        return done.handoff_id

    async def handoff_command(self, trigger: Trigger) -> WakeResult:
        """``/handoff [why]``: end the session now, without a model call."""
        words = trigger.goal.text.split(maxsplit=1)
        reason = "explicit /handoff" + (f": {words[1]}" if len(words) > 1 else "")
        session = self.state.session_id
        handoff_id = await self.end(reason)
        return WakeResult.without_calls(
            trigger.idempotency_key,
            "handoff" if handoff_id else "handoff: no open session",
            wake_id=self.state.last_wake.wake_id if self.state.last_wake else "",
            session_id=f"{self.rt.name}:{session}" if session else "",
            handoff_id=handoff_id,
        )

    # --- while idle ----------------------------------------------------------------------

    async def plan_idle(self, next_at: datetime, policy: PacingPolicy, limit_set: bool) -> None:
        """The next wake is expected at ``next_at``: sleep, keep warm, or hand off now."""
        s = self.state
        now = workflow.now()
        decision = decide(
            PacingInput(
                now=now,
                clock=s.clock,
                rates=rates_for(self.rt.provider, self.rt.model),
                policy=self.idle_policy(policy, next_at, limit_set),
                session_open=s.session_open,
                next_call_at=next_at,
                provider=self.rt.provider,
                model=self.rt.model,
                price_next_session=workflow.patched(HANDOFF_PRICE),
            )
        )
        s.pacing = decision
        # The time goes in the note: it is read back (the console's cache timeline) with the
        # next wake's ledger, whose own time is that wake's.
        s.idle_notes.append(f"while idle at {now.isoformat()}: {decision.reason}")
        if decision.choice == "keep_warm":
            s.keep_warm_at = list(decision.keep_warm_at)
        elif decision.choice == "handoff":
            await self.end(f"pacing: {decision.reason}")

    def next_timer(self, idle: timedelta) -> datetime | None:
        s = self.state
        times = list(s.keep_warm_at[:1])
        # An idle period whose timer kept the session open has no second idle timer.
        if s.session_open and s.last_wake_at is not None and s.idle_kept_at != s.last_wake_at:
            times.append(s.last_wake_at + idle)
        return min(times) if times else None

    async def on_timer(self, idle: timedelta, policy: PacingPolicy, limit_set: bool) -> None:
        """A keep-warm call or the idle timer is due. ``policy`` and ``limit_set`` (whether
        the idle limit was set) decide whether an idle session is priced before it ends."""
        s, now = self.state, workflow.now()
        if s.keep_warm_at and s.keep_warm_at[0] <= now:
            s.keep_warm_at.pop(0)
            await self._keep_warm(now)
        elif (
            s.session_open
            and s.last_wake_at is not None
            and s.idle_kept_at != s.last_wake_at
            and s.last_wake_at + idle <= now
        ):
            why = f"idle: no wake for {now - s.last_wake_at} (session_idle {idle})"
            if not limit_set and workflow.patched(IDLE_PRICED):
                if self._idle_continues(now, idle, policy):
                    return
                why += ", a handoff priced cheaper than continuing"
            await self.end(why)

    def _idle_continues(self, now: datetime, idle: timedelta, policy: PacingPolicy) -> bool:
        """Past an idle limit nobody set: whether pacing prices continuing the session (its
        prefix rewritten by the next wake) cheaper than a handoff now."""
        s = self.state
        decision = decide(
            PacingInput(
                now=now,
                clock=s.clock,
                rates=rates_for(self.rt.provider, self.rt.model),
                policy=policy.model_copy(update={"max_idle": idle, "idle_ends_session": False}),
                session_open=True,
                provider=self.rt.provider,
                model=self.rt.model,
                price_next_session=workflow.patched(HANDOFF_PRICE),
            )
        )
        s.pacing = decision
        if decision.choice == "handoff":
            s.idle_notes.append(f"idle timer at {now.isoformat()}: {decision.reason}")
            return False
        s.idle_kept_at = s.last_wake_at
        s.idle_notes.append(
            f"idle timer at {now.isoformat()}: session {s.session_id} continued past "
            f"session_idle {idle} (no handoff_after_idle set): {decision.reason}"
        )
        return True

    async def _keep_warm(self, now: datetime) -> None:
        s = self.state
        warm = s.clock.kept_for(self.rt.provider, self.rt.model) and s.clock.warm("session", now)
        if s.last_wake is None or not s.last_window_hash or not warm:
            s.idle_notes.append("keep-warm skipped: the session cache had already expired")
            s.keep_warm_at = []
            return
        s.keep_warm_sent += 1
        try:
            out = await act(
                KEEP_WARM,
                KeepWarmIn(
                    wake=s.last_wake,
                    runtime=self.rt,
                    window_hash=s.last_window_hash,
                    ping=s.keep_warm_sent,
                ),
                KeepWarmOut,
                start_to_close=p.KEEP_WARM_TIMEOUT,
                retry=p.KEEP_WARM_RETRY,
            )
        except ActivityError as err:
            s.idle_notes.append(f"keep-warm call failed ({failure(err)}); the cache may miss")
            s.keep_warm_at = []
            return
        s.cost_usd += out.cost_usd
        if out.cache_read_input_tokens or out.cache_creation_input_tokens:
            s.clock = s.clock.model_copy(update={"last_used_at": now})
        s.idle_notes.append(
            f"keep-warm call {s.keep_warm_sent} at {now.isoformat()}:"
            f" read {out.cache_read_input_tokens} cached"
            f" tokens, wrote {out.cache_creation_input_tokens}, ${out.cost_usd:.6f}"
        )
