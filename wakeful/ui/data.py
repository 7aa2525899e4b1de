"""What the console shows, read from the substrate through the same repository calls the
command line makes (``wakeful explain``, ``diff``, ``agent show``), so both show the same
numbers: a ledger is the compile's ledger blob, usage and cost are the model-call rows, and
today's spend is :meth:`TenantStore.spend_since` from the start of the UTC day.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from wakeful.compiler import Ledger, LedgerDiff, diff_ledgers
from wakeful.compiler.cache_outcome import CacheOutcome
from wakeful.errors import StoreError
from wakeful.providers.base import ModelReply, ToolCall
from wakeful.substrate.cache_outcomes import cache_outcome_of
from wakeful.substrate.records import CompileRecord, ModelCallRecord, StoredEvent, WakeRecord
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


@dataclass(frozen=True)
class CallView:
    wake: WakeRecord
    index: int  # its place among the wake's compiles (-1 given: the last one)
    count: int  # calls in the wake
    compile: CompileRecord
    ledger: Ledger
    call: ModelCallRecord | None  # None: compiled, but the model call was not recorded
    outcome: CacheOutcome | None = None  # the cache-miss taxonomy, as `wakeful explain`


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
    return WakeView(wake=wake, steps=steps, answer=_answer(events))


def call_view(ts: TenantStore, wake_id: str, index: int) -> CallView:
    """One model call: its compile and ledger (as ``wakeful explain`` reads them) and the
    model call's recorded usage. ``index`` counts from 0; -1 is the last, as ``--call``."""
    wake = wake_record(ts, wake_id)
    compiles = ts.compiles(wake_id)
    try:
        rec = compiles[index]
    except IndexError:
        raise NotFound(f"wake {wake_id!r} has {len(compiles)} call(s), not {index}") from None
    ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    call = next((c for c in ts.model_calls(wake_id) if c.call_index == rec.call_index), None)
    outcome = cache_outcome_of(ts, wake.agent, rec)
    return CallView(wake, index % len(compiles), len(compiles), rec, ledger, call, outcome)


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
