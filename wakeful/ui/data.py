"""What the console shows, read from the substrate through the same repository calls the
command line makes (``wakeful explain``, ``diff``, ``agent show``), so both show the same
numbers: a ledger is the compile's ledger blob, usage and cost are the model-call rows, and
today's spend is :meth:`TenantStore.spend_since` from the start of the UTC day.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from wakeful.compiler import Ledger, LedgerDiff, diff_ledgers
from wakeful.compiler.cache_outcome import TTL_SECONDS, CacheOutcome
from wakeful.errors import StoreError
from wakeful.providers.base import ModelReply, ToolCall
from wakeful.substrate.cache_outcomes import cache_outcome_of, ledger_of
from wakeful.substrate.records import (
    CompileRecord,
    DecisionRecord,
    HandoffRecord,
    MemoryRecord,
    ModelCallRecord,
    StoredEvent,
    SummaryRecord,
    WakeRecord,
)
from wakeful.substrate.store import TenantStore
from wakeful.tool_spec import FINAL_RESULT
from wakeful.workflows.spend import day_start


class NotFound(LookupError):
    """What a page asked for is not in the substrate (answered with 404)."""


def call_tokens(c: ModelCallRecord) -> int:
    """Every token of one call, as ``spend_since`` counts them: input of every kind, output."""
    return (
        c.input_tokens + c.output_tokens + c.cache_creation_input_tokens + c.cache_read_input_tokens
    )


@dataclass(frozen=True)
class AgentRow:
    name: str
    provider: str
    model: str
    status: str  # the last wake's status; "no wakes" when it never woke
    sessions: int
    wakes: int
    last_wake: WakeRecord | None
    spent_usd: float
    spent_tokens: int
    caps: dict[str, float | int]


@dataclass(frozen=True)
class WakeRow:
    wake: WakeRecord
    calls: list[ModelCallRecord]
    answer: str

    @property
    def tokens(self) -> int:
        return sum(call_tokens(c) for c in self.calls)

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)


@dataclass(frozen=True)
class ToolStep:
    call: ToolCall
    result: StoredEvent | None  # None: no result recorded (the wake ended or parked first)


@dataclass(frozen=True)
class CallStep:
    """One model call of a wake: its compile, the call, the reply and the tools it asked for."""

    index: int  # the call's index in the wake, as recorded
    place: int | None  # its place among the wake's compiles (the call page's address)
    compile: CompileRecord | None
    call: ModelCallRecord | None
    reply: ModelReply | None
    tools: list[ToolStep]


@dataclass(frozen=True)
class WakeView:
    wake: WakeRecord
    steps: list[CallStep]
    answer: str
    # A running wake's model call in progress: what it has streamed so far (call index,
    # text); None when no call is streaming.
    live: tuple[int, str] | None = None


@dataclass(frozen=True)
class CallView:
    wake: WakeRecord
    index: int  # its place among the wake's compiles (-1 given: the last one)
    count: int  # calls in the wake
    compile: CompileRecord
    ledger: Ledger
    call: ModelCallRecord | None  # None: compiled, but the model call was not recorded
    outcome: CacheOutcome | None = None  # the cache-miss taxonomy, as `wakeful explain`
    previous_wake_calls: int = 0  # calls compiled in the wake numbered one before (0: none)


@dataclass(frozen=True)
class DiffView:
    before: CallView
    after: CallView
    diff: LedgerDiff


@dataclass
class CostRow:
    day: date
    agent: str
    calls: int = 0
    uncached: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class CostView:
    rows: list[CostRow]  # per day (newest first), then agent
    by_day: dict[date, dict[str, float]] = field(default_factory=dict)  # day -> agent -> usd


def agents(ts: TenantStore, now: datetime | None = None) -> list[AgentRow]:
    today = day_start(now or datetime.now(UTC))
    out = []
    for row in ts.list_agents():
        wakes = ts.wakes(row["name"])
        spent = ts.spend_since(row["name"], today)
        last = wakes[-1] if wakes else None
        out.append(
            AgentRow(
                name=row["name"],
                provider=row["provider"],
                model=row["model"],
                status=last.status if last else "no wakes",
                sessions=len({w.session_id for w in wakes}),
                wakes=len(wakes),
                last_wake=last,
                spent_usd=spent.usd,
                spent_tokens=spent.tokens,
                caps=dict(row["spec"].get("spend_caps", {})),
            )
        )
    return out


@dataclass(frozen=True)
class WakePage:
    rows: list[WakeRow]  # newest first
    total: int  # the agent's wakes
    older: int | None  # the ``before`` of the next page; None on the last


def agent_wakes(
    ts: TenantStore, agent: str, *, before: int | None = None, limit: int = 50
) -> WakePage:
    """A page of the agent's wakes, newest first: ``limit`` of those numbered below
    ``before`` (all when None). Each wake's calls and answer are one read each."""
    ts.get_agent(agent)  # UnknownAgentError names it
    wakes = ts.wakes(agent)
    newest = [w for w in reversed(wakes) if before is None or w.number < before]
    page, rest = newest[:limit], newest[limit:]
    rows = [WakeRow(wake=w, calls=ts.model_calls(w.wake_id), answer=answer(ts, w)) for w in page]
    return WakePage(rows, len(wakes), page[-1].number if rest else None)


def wake_record(ts: TenantStore, wake_id: str) -> WakeRecord:
    """A wake by its id (``<agent>:<number>``)."""
    agent, _, number = wake_id.rpartition(":")
    if agent and number.isdigit():
        try:
            wake = ts.wake_by_number(agent, int(number))
        except StoreError:
            pass
        else:
            if wake.wake_id == wake_id:
                return wake
    raise NotFound(f"no wake {wake_id!r} in tenant {ts.name!r}")


def answer(ts: TenantStore, wake: WakeRecord) -> str:
    """The wake's answer: the output tool's result when it returned a typed answer, else the
    last text the model replied with."""
    return _answer(ts.events(wake.agent, wake_id=wake.wake_id))


def _answer(events: list[StoredEvent]) -> str:
    replied = ""
    for e in events:
        if e.kind == "tool_result" and e.tool_name == FINAL_RESULT and not e.is_error:
            return e.text
        if e.kind == "turn" and e.role == "assistant" and e.text:
            replied = e.text
    return replied


def wake_view(ts: TenantStore, wake_id: str) -> WakeView:
    wake = wake_record(ts, wake_id)
    recorded = ts.compiles(wake_id)
    compiles = {c.call_index: c for c in recorded}
    # A call's page is addressed by its place among the wake's compiles, as `--call` is.
    place = {c.call_index: n for n, c in enumerate(recorded)}
    calls = {c.call_index: c for c in ts.model_calls(wake_id)}
    events = ts.events(wake.agent, wake_id=wake_id)
    results = {e.tool_call_id: e for e in events if e.kind == "tool_result" and e.tool_call_id}
    steps = []
    for n in sorted(compiles.keys() | calls.keys()):
        call = calls.get(n)
        reply = (
            ModelReply.model_validate_json(ts.get_blob(call.output_hash))
            if call is not None
            else None
        )
        tools = [
            ToolStep(call=tc, result=results.get(tc.id))
            for tc in (reply.tool_calls if reply else [])
        ]
        steps.append(CallStep(n, place.get(n), compiles.get(n), call, reply, tools))
    return WakeView(
        wake=wake, steps=steps, answer=_answer(events), live=_live(ts, wake, set(calls))
    )


def _live(ts: TenantStore, wake: WakeRecord, recorded: set[int]) -> tuple[int, str] | None:
    """The text a running wake's unrecorded model call has streamed so far."""
    if wake.status != "running":
        return None
    pieces = [p for p in ts.stream_since(wake.wake_id) if p.call_index not in recorded]
    if not pieces:
        return None
    index = max(p.call_index for p in pieces)
    text = "".join(str(p.data.get("text", "")) for p in pieces if p.call_index == index)
    return index, text


def call_view(ts: TenantStore, wake_id: str, index: int) -> CallView:
    """One model call: its compile and ledger (as ``wakeful explain`` reads them) and the
    model call's recorded usage. ``index`` counts from 0; -1 is the last, as ``--call``."""
    wake = wake_record(ts, wake_id)
    compiles = ts.compiles(wake_id)
    try:
        rec = compiles[index]
    except IndexError:
        raise NotFound(f"wake {wake_id!r} has {len(compiles)} call(s), not {index}") from None
    ledger = ledger_of(ts, rec)
    call = next((c for c in ts.model_calls(wake_id) if c.call_index == rec.call_index), None)
    outcome = cache_outcome_of(ts, wake.agent, rec)
    before = len(ts.compiles(f"{wake.agent}:{wake.number - 1}")) if wake.number > 1 else 0
    return CallView(wake, index % len(compiles), len(compiles), rec, ledger, call, outcome, before)


def diff_view(ts: TenantStore, before: tuple[str, int], after: tuple[str, int]) -> DiffView:
    """``wakeful diff``'s comparison: ``before`` is the earlier window."""
    a, b = call_view(ts, *before), call_view(ts, *after)
    return DiffView(a, b, diff_ledgers(a.ledger, b.ledger))


def cost(ts: TenantStore) -> CostView:
    """Model calls per UTC day and agent, each counted on the day its wake started (as the
    spend caps count them), with the provider's cache split."""
    table: dict[tuple[date, str], CostRow] = {}
    by_day: dict[date, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in ts.list_agents():
        for w in ts.wakes(row["name"]):
            day = day_start(w.started_at).date()
            for c in ts.model_calls(w.wake_id):
                r = table.setdefault((day, w.agent), CostRow(day, w.agent))
                r.calls += 1
                r.uncached += c.input_tokens
                r.cache_write += c.cache_creation_input_tokens
                r.cache_read += c.cache_read_input_tokens
                r.output += c.output_tokens
                r.cost_usd += c.cost_usd
                by_day[day][w.agent] += c.cost_usd
    rows = sorted(table.values(), key=lambda r: (-r.day.toordinal(), r.agent))
    return CostView(rows, {d: dict(v) for d, v in by_day.items()})


def preview(text: str, limit: int = 140) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def as_json(value: Any) -> str:
    """A compact rendering of a tool's input for a table cell."""
    import json

    return json.dumps(value, sort_keys=True, default=str)


# --- a session's cache timeline ------------------------------------------------------------

# A keep-warm call's note, as the agent workflow writes it into the next wake's ledger
# (with its time since notes carry one; older ledgers have none).
_KEEP_WARM = re.compile(
    r"^keep-warm call (\d+)(?: at (\S+))?: read (\d+) cached tokens, wrote (\d+), \$([0-9.]+)$"
)
# A pacing decision made while idle, likewise.
_IDLE = re.compile(r"^while idle(?: at (\S+))?: ")


@dataclass(frozen=True)
class SessionCall:
    """One model call of a session, placed at its compile's ``as_of``."""

    wake: WakeRecord
    place: int  # its place among the wake's compiles (the call page's address)
    compile: CompileRecord
    call: ModelCallRecord | None  # None: compiled, but no model call recorded
    outcome: CacheOutcome | None
    ttls: dict[str, str]  # breakpoint name -> its TTL ("5m", "1h"), explicit ones only

    @property
    def ttl_seconds(self) -> float | None:
        """How long the deepest cached entry stays warm after this call (the last
        breakpoint's TTL: what the next call of the session reads)."""
        if not self.ttls:
            return None
        return TTL_SECONDS.get(list(self.ttls.values())[-1])


@dataclass(frozen=True)
class Pacing:
    """A pacing decision recorded with a wake's first compile: the option taken, the
    price of each option (``None``: it did not apply) and the reason in words."""

    wake: WakeRecord
    at: datetime
    choice: str
    prices: dict[str, Price]
    reason: str
    idle: bool  # decided while idle, before the wake (else as the wake started)


@dataclass(frozen=True)
class KeepWarm:
    """A keep-warm call sent while idle, recorded in the next wake's first ledger; ``at`` is
    when it was sent (that compile's ``as_of`` for ledgers from before notes had times)."""

    wake: WakeRecord
    at: datetime
    ping: int
    read: int
    wrote: int
    cost_usd: float


@dataclass(frozen=True)
class SessionView:
    agent: str
    session_id: str
    wakes: list[WakeRecord]
    calls: list[SessionCall]  # in time order
    pacing: list[Pacing]
    keep_warm: list[KeepWarm]
    notes: list[tuple[WakeRecord, str]]  # the other orchestrator notes (e.g. skipped pings)


_PRICE = re.compile(r"([a-z_]+)=(n/a|[0-9.]+)(\(not allowed\))?")


@dataclass(frozen=True)
class Price:
    usd: float | None  # None: the option did not apply
    allowed: bool = True


def parse_prices(text: str) -> dict[str, Price]:
    """``continue_now=0.001234(not allowed) keep_warm=n/a handoff=0.000456`` as recorded by
    :meth:`PacingDecision.prices`: option -> its price and whether the policy allowed it."""
    return {
        m[1]: Price(None if m[2] == "n/a" else float(m[2]), allowed=not m[3])
        for m in _PRICE.finditer(text)
    }


def session_view(ts: TenantStore, agent: str, session_id: str) -> SessionView:
    """The session's calls with their cache outcome and TTLs, and the pacing decisions and
    keep-warm calls its wakes' ledgers carry."""
    ts.get_agent(agent)  # UnknownAgentError names it
    wakes = [w for w in ts.wakes(agent) if w.session_id == session_id]
    if not wakes:
        raise NotFound(f"no session {session_id!r} of agent {agent!r}")
    calls, pacing, warm, notes = [], [], [], []
    for w in wakes:
        made = {c.call_index: c for c in ts.model_calls(w.wake_id)}
        for place, rec in enumerate(ts.compiles(w.wake_id)):
            ledger = ledger_of(ts, rec)
            calls.append(
                SessionCall(
                    wake=w,
                    place=place,
                    compile=rec,
                    call=made.get(rec.call_index),
                    outcome=cache_outcome_of(ts, agent, rec),
                    ttls={b.name: b.ttl for b in ledger.breakpoints if b.ttl},
                )
            )
            if place == 0:
                p, k, n = _orchestrator(w, rec.as_of, ledger)
                pacing += p
                warm += k
                notes += n
    calls.sort(key=lambda c: (c.compile.as_of, c.wake.number, c.place))
    return SessionView(agent, session_id, wakes, calls, pacing, warm, notes)


def _orchestrator(
    w: WakeRecord, at: datetime, ledger: Ledger
) -> tuple[list[Pacing], list[KeepWarm], list[tuple[WakeRecord, str]]]:
    """What the orchestrator attached to a wake's first ledger: its pacing decision (the
    first note, with the prices in ``decisions``), then what happened while idle before it."""
    pacing, warm, other = [], [], []
    choice = ledger.decisions.get("pacing")
    if choice:
        pacing.append(
            Pacing(
                wake=w,
                at=at,
                choice=choice,
                prices=parse_prices(ledger.decisions.get("pacing.prices_usd", "")),
                reason=next((n for n in ledger.notes if n.startswith("pacing")), ""),
                idle=False,
            )
        )
    for note in ledger.notes:
        if m := _KEEP_WARM.match(note):
            sent = _time(m[2], at)
            warm.append(KeepWarm(w, sent, int(m[1]), int(m[3]), int(m[4]), float(m[5])))
        elif (m := _IDLE.match(note)) and note[m.end() :].startswith("pacing "):
            # Priced too, in the reason's words; the chosen option is its first word.
            said = note[m.end() :]
            decided = _time(m[1], at)
            pacing.append(
                Pacing(w, decided, said.split()[1].rstrip(":"), _prices_in(said), said, idle=True)
            )
        elif not note.startswith("pacing"):
            other.append((w, note))
    return pacing, warm, other


def _time(text: str | None, default: datetime) -> datetime:
    """A note's ISO time, or ``default`` when it has none (or none that parses)."""
    if text:
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    return default


_PRICED = re.compile(r"\b([a-z_]+) \$([0-9.]+)(?:[^;\[]*?(\[not allowed))?")


def _prices_in(reason: str) -> dict[str, Price]:
    """The ``<option> $<price>`` pairs a pacing reason names (``[not allowed: ...]`` after
    the ones the policy ruled out)."""
    return {m[1]: Price(float(m[2]), allowed=not m[3]) for m in _PRICED.finditer(reason)}


# --- what an agent knows -------------------------------------------------------------------


@dataclass(frozen=True)
class SummaryRow:
    summary: SummaryRecord
    live: bool
    retired_events: int  # raw events retired by it (``retired_by = summary:<id>``)


@dataclass(frozen=True)
class KnowledgeView:
    agent: str
    handoffs: list[HandoffRecord]  # oldest first
    summaries: list[SummaryRow]  # by span
    decisions: list[DecisionRecord]  # every registry entry, superseded and expired too
    memories: list[MemoryRecord]  # every memory written, oldest first
    now: datetime


def knowledge(ts: TenantStore, agent: str, now: datetime | None = None) -> KnowledgeView:
    ts.get_agent(agent)  # UnknownAgentError names it
    live = ts.summaries(agent)
    retired: dict[int, int] = defaultdict(int)
    for e in ts.events(agent):
        if e.retired_by and e.retired_by.startswith("summary:"):
            sid = e.retired_by.removeprefix("summary:")
            if sid.isdigit():
                retired[int(sid)] += 1
    live_ids = {s.id for s in live}
    gone = ts.summaries_by_ids(agent, [i for i in retired if i not in live_ids])
    rows = [SummaryRow(s, s.id in live_ids, retired.get(s.id or -1, 0)) for s in (*live, *gone)]
    rows.sort(key=lambda r: (r.summary.span_start, r.summary.level))
    return KnowledgeView(
        agent=agent,
        handoffs=ts.handoffs(agent),
        summaries=rows,
        decisions=ts.all_decisions(agent),
        memories=ts.memory_history(agent),
        now=now or datetime.now(UTC),
    )
