"""Cache-TTL-aware pacing: price the ways to reach the next model call, take the cheapest.

A prompt cache is warm for a TTL after its last write or read (Anthropic: 5 min by default,
1 h with ``ttl: "1h"``, refreshed by every hit; OpenAI: in-memory retention of a few minutes,
24 h when extended). The orchestrator knows, per provider and model, when the agent's prefix
was last used and how big it is (the :class:`CacheClock`), so before each wake — and before
going idle when it knows when the next wake will come — it can price:

* ``continue_now``      — a trigger is waiting: run it in the current session (the prefix is
  read if still warm, rewritten if not);
* ``sleep_accept_miss`` — go idle until the next expected wake and pay whatever the cache
  costs then (a full rewrite if it expired meanwhile);
* ``keep_warm``         — go idle but send a minimal call before each expiry, so the next
  wake reads the prefix instead of rewriting it;
* ``handoff``           — end the session: the next call starts a fresh session whose
  prefix is the stable part plus the handoff note, not the session's transcript. Priced
  honestly (``PacingInput.price_next_session``), it also pays the evidence the next
  session's first wakes bring back of what the transcript held.

A session idle longer than ``PacingPolicy.max_idle`` ends — unless the policy says nobody
set that limit (``idle_ends_session`` off): then continuing it is priced like any cold
session (its prefix rewritten) against the handoff, and a small session goes on when that
is cheaper; the option's ``why`` says so.

Each option is priced as the prefix traffic of the next wake: its first call (read what is
warm, write what is not) plus ``expected_calls - 1`` reads. The cheapest allowed option wins;
ties go to the option that does less (the order above). Pure: the caller passes the clock,
the prices and ``now``; nothing here reads a clock or imports I/O, so workflows can call it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "OPTIONS",
    "RECENT_GAPS",
    "CacheClock",
    "CacheTtls",
    "CacheWrite",
    "PacingDecision",
    "PacingInput",
    "PacingOption",
    "PacingPolicy",
    "Rates",
    "cache_ttls",
    "decide",
    "first_call_write",
    "ttl_seconds",
]

OptionName = Literal["continue_now", "sleep_accept_miss", "keep_warm", "handoff"]
OPTIONS: tuple[OptionName, ...] = ("continue_now", "sleep_accept_miss", "keep_warm", "handoff")

# OpenAI does not publish a fixed TTL: in-memory retention keeps a prefix for "5 to 10
# minutes of inactivity, up to an hour"; pacing assumes the low end unless told otherwise.
_DEFAULT_TTL_S = {"anthropic": 300, "openai": 300}
_TTL_S = {"5m": 300, "1h": 3600, "24h": 86_400}


def ttl_seconds(provider: str, ttl: str | None) -> int:
    """Seconds of a breakpoint TTL (``"5m"``, ``"1h"``, ``"24h"``; ``None``: provider default)."""
    if ttl is None:
        return _DEFAULT_TTL_S.get(provider, 300)
    if ttl not in _TTL_S:
        raise ValueError(f"unknown cache TTL {ttl!r}; expected one of {sorted(_TTL_S)}")
    return _TTL_S[ttl]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rates(_Model):
    """USD per million tokens (the numbers of ``wakeful.providers.pricing.Price``)."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float

    def write(self, ttl_s: int) -> float:
        return self.cache_write_1h if ttl_s > 300 else self.cache_write_5m


class CacheTtls(_Model):
    """Prompt-cache TTLs pacing chose for a wake (:func:`cache_ttls`): the stable prefix's,
    and the session's (semi-stable, summaries, history, rolling). Sent with each compile.
    ``session="none"``: the call writes no session entry (:func:`first_call_write`)."""

    stable: Literal["5m", "1h"]
    session: Literal["5m", "1h", "none"]
    why: str = ""

    def without_session_writes(self) -> CacheTtls:
        """These TTLs for a call that writes only the stable entry."""
        return self.model_copy(update={"session": "none", "why": ""})


class CacheWrite(_Model):
    """Whether a wake's first call writes the session's cache entries, and why
    (:func:`first_call_write`)."""

    write: bool
    expected_reads: float | None = Field(
        None, description="Share of the latest wakes whose prefix was read again in time."
    )
    why: str


class CacheClock(_Model):
    """What the orchestrator knows about one agent's prompt cache at one provider/model.

    ``stable_tokens`` (tools and system) are shared by every session of the agent;
    ``session_tokens`` is the rest of the cached prefix in the current session (task frame,
    handoff note, the session's turns); ``fresh_tokens`` estimates that rest for a fresh
    session (frame and a handoff note, no transcript).
    """

    provider: str = ""
    model: str = ""
    last_used_at: datetime | None = Field(None, description="Last call that read or wrote.")
    last_write_at: datetime | None = None
    stable_tokens: int = 0
    stable_ttl_s: int = 3600
    session_tokens: int = 0
    session_ttl_s: int = 300
    fresh_tokens: int = 0
    fresh_evidence_tokens: int = Field(
        0, description="Of fresh_tokens, the evidence each wake of a fresh session brings back."
    )
    gaps: tuple[int, ...] = Field(
        (), description="Seconds from the last cache use to each of the latest wakes."
    )
    written: tuple[int, ...] = Field(
        (), description="Cache-write tokens of each of the latest wakes."
    )
    wake_written: int = Field(0, description="Cache-write tokens of the wake under way.")
    added: tuple[int, ...] = Field(
        (),
        description="Of each of the latest wakes' cache writes, what it added: beyond "
        "rewriting the prefix that had expired before it (a longer TTL writes only this).",
    )
    wake_rewrite: int = Field(
        0, description="Tokens of the prefix the wake under way found expired (it rewrites them)."
    )
    calls: tuple[int, ...] = Field(
        (), description="Model calls of each of the latest wakes (with ``gaps``: was it read?)."
    )
    wake_calls: int = Field(0, description="Model calls of the wake under way.")
    session_written: bool = Field(
        True,
        description="False after a call that wrote no session entry (first_call_write): "
        "the session prefix is not cached, however recent the last use.",
    )

    def with_gap(self, at: datetime) -> CacheClock:
        """The clock that remembers, for a wake starting ``at``, the idle gap before it and
        what the wake before it wrote to the cache."""
        if self.last_used_at is None:
            return self
        gap = max(0, int((at - self.last_used_at).total_seconds()))
        added = max(self.wake_written - self.wake_rewrite, 0)
        # What this wake will rewrite: the parts of the prefix that expired before it.
        rewrite = (0 if self.warm("stable", at) else self.stable_tokens) + (
            0 if self.warm("session", at) else self.session_tokens
        )
        return self.model_copy(
            update={
                "gaps": (*self.gaps, gap)[-RECENT_GAPS:],
                "written": (*self.written, self.wake_written)[-RECENT_GAPS:],
                "added": (*self.added, added)[-RECENT_GAPS:],
                "calls": (*self.calls, self.wake_calls)[-RECENT_GAPS:],
                "wake_written": 0,
                "wake_rewrite": rewrite,
                "wake_calls": 0,
            }
        )

    def warm_until(self, part: Literal["stable", "session"]) -> datetime | None:
        if self.last_used_at is None:
            return None
        ttl = self.stable_ttl_s if part == "stable" else self.session_ttl_s
        return self.last_used_at + timedelta(seconds=ttl)

    def warm(self, part: Literal["stable", "session"], at: datetime) -> bool:
        if part == "session" and not self.session_written:
            return False
        until = self.warm_until(part)
        return until is not None and at < until

    def kept_for(self, provider: str, model: str) -> bool:
        """Whether the clock describes ``provider``/``model``'s cache (an unused one, any)."""
        return self.last_used_at is None or (self.provider, self.model) == (provider, model)


class PacingPolicy(_Model):
    """Which options an agent allows, and the numbers that price them."""

    adaptive_ttl: bool = Field(
        True,
        description="Choose 5m or 1h cache TTLs from the agent's recent idle gaps "
        "(cache_ttls); off: the compile policy's TTLs.",
    )
    allow_keep_warm: bool = True
    max_keep_warm_calls: int = Field(3, ge=0, description="Per idle period.")
    keep_warm_output_tokens: int = Field(1, ge=1, description="max_tokens of a keep-warm call.")
    keep_warm_margin: timedelta = Field(
        timedelta(seconds=30), description="How long before expiry a keep-warm call is sent."
    )
    allow_handoff: bool = True
    handoff_when_warm: bool = Field(
        False,
        description="Allow ending a session whose cache is still warm (the transcript's detail "
        "is worth more than its tokens, so by default a warm session continues).",
    )
    max_idle: timedelta = Field(
        timedelta(hours=1),
        description="A session idle longer than this ends (see idle_ends_session).",
    )
    idle_ends_session: bool = Field(
        True,
        description="A session idle longer than max_idle always ends. Off (the agent set no "
        "handoff_after_idle): it may continue, when continuing it (its prefix rewritten "
        "cold) is priced cheaper than a handoff.",
    )
    expected_calls: int = Field(2, ge=1, description="Model calls a wake makes.")
    handoff_wakes: int = Field(
        3,
        ge=1,
        description="Wakes of the next session a handoff is priced over: each brings back, "
        "as evidence, what the transcript held (the first also writes the fresh prefix).",
    )


class PacingInput(_Model):
    now: datetime
    clock: CacheClock
    rates: Rates | None = Field(None, description="None: the model has no known price.")
    policy: PacingPolicy = PacingPolicy()
    session_open: bool = True
    next_call_at: datetime | None = Field(
        None, description="None: a wake starts now. Otherwise: idle until this time."
    )
    provider: str = Field(
        "", description="Who serves the next call; empty: whoever the clock was kept for."
    )
    model: str = ""
    price_next_session: bool = Field(
        False,
        description="Price a handoff with the next session's first wakes (off: its first "
        "wake's prefix alone, as decisions in older histories were).",
    )

    @property
    def foreign(self) -> bool:
        """The clock was kept for another provider or model, whose cache this call never
        reads (a new runtime after continue-as-new or a redeploy): it is cold, however
        recent."""
        return bool(self.provider) and not self.clock.kept_for(self.provider, self.model)

    def warm(self, part: Literal["stable", "session"], at: datetime) -> bool:
        return not self.foreign and self.clock.warm(part, at)


class PacingOption(_Model):
    name: OptionName
    cost_usd: float | None = Field(description="None when the option does not apply.")
    allowed: bool
    why: str


class PacingDecision(_Model):
    at: datetime
    choice: OptionName
    options: tuple[PacingOption, ...]
    reason: str
    keep_warm_at: tuple[datetime, ...] = ()
    past_max_idle: bool = Field(
        False, description="The session was idle longer than the policy's max_idle."
    )

    def option(self, name: OptionName) -> PacingOption:
        return next(o for o in self.options if o.name == name)

    def prices(self) -> str:
        """``continue_now=0.001234 handoff=0.000456 keep_warm=n/a ...`` in option order."""
        return " ".join(
            f"{o.name}={'n/a' if o.cost_usd is None else f'{o.cost_usd:.6f}'}"
            + ("" if o.allowed or o.cost_usd is None else "(not allowed)")
            for o in self.options
        )


RECENT_GAPS = 8  # idle gaps a clock remembers


def cache_ttls(
    clock: CacheClock, rates: Rates | None = None, *, added_only: bool = True
) -> CacheTtls:
    """The TTLs that pay for an agent, from its latest idle gaps and session prefix.

    A 1 h entry costs more to write than a 5 min one (Anthropic: 2x the input price, not
    1.25x) and saves only when the next use comes after 5 minutes and within the hour;
    sooner it is read either way, later it is gone either way. With ``p`` the share of the
    latest gaps in that span, per wake:

    * 5 min entries rewrite the session prefix ``S`` after such a gap:
      ``p * (write_5m - read) * S``;
    * 1 h entries pay the premium on what a wake writes ``W``: ``(write_1h - write_5m) * W``.
      ``W`` is the mean of what the latest wakes *added* (``CacheClock.added``): a wake
      after such a gap rewrote the expired prefix too, which is the miss above, not what
      a 1 h entry would write. With ``added_only=False``, or a clock kept from before it
      knew ``added`` for every remembered wake: the mean of all they wrote, as before.

    The session's entries (semi-stable, summaries, history) take 1 h when two gaps at
    least fell in the span and the first costs twice the second, and keep it while one
    such gap is still among the latest and the first costs more; the stable prefix (tools,
    instructions: it never grows) as soon as any gap did, and keeps it. With no gap seen
    yet, 5 minutes: a burst of calls never pays the premium.
    Prices are the model's (``rates``), else Anthropic's ratios.
    """
    gaps = clock.gaps
    within = sum(1 for g in gaps if 300 < g <= 3600)
    p = within / len(gaps) if gaps else 0.0
    r = rates or Rates(
        input=1.0, output=5.0, cache_read=0.1, cache_write_5m=1.25, cache_write_1h=2.0
    )
    whole = not added_only or len(clock.added) != len(clock.written)
    wrote = clock.written if whole else clock.added
    added = sum(wrote) / len(wrote) if wrote else 0.0
    miss = p * (r.cache_write_5m - r.cache_read) * clock.session_tokens
    premium = (r.cache_write_1h - r.cache_write_5m) * added
    # The stable prefix keeps 1 h once it has it: it is rarely written, and a gap that
    # leaves the window of remembered gaps says nothing about the next one.
    kept = bool(gaps) and clock.stable_ttl_s >= 3600
    stable: Literal["5m", "1h"] = "1h" if within or kept else "5m"
    # Writes come in lumps (a history cut, a consolidation, a large tool result) that a
    # mean hides: the session takes the premium only for two such gaps at least and twice
    # the price of a miss, and keeps it while a miss still costs more than the premium
    # and such a gap is still among the latest: a lump must not flip it back to 5 min
    # just before the next gap expires everything the wake wrote.
    held = clock.session_ttl_s >= 3600 and within >= 1 and miss > premium
    session: Literal["5m", "1h"] = "1h" if (within >= 2 and miss > 2 * premium) or held else "5m"
    why = (
        f"{within} of the last {len(gaps)} idle gap(s) between 5 min and 1 h; a missed "
        f"session prefix of {clock.session_tokens} tokens vs the 1 h premium on "
        f"{added:.0f} {'written' if whole else 'added'} per wake: stable {stable}, "
        f"session {session}"
    )
    return CacheTtls(stable=stable, session=session, why=why)


MIN_WAKES_SEEN = 4  # remembered wakes before a first call may skip its session writes


def first_call_write(
    clock: CacheClock, ttls: CacheTtls, at: datetime, rates: Rates | None = None
) -> CacheWrite:
    """Whether a wake's first call, at ``at``, writes the session's cache entries.

    A wake whose session prefix has expired rewrites it (``write`` per token, 1.25x or 2x
    the input price) on its first call. That pays only if something reads it before it
    expires again: a second call of the wake, or the next wake within the session TTL.
    With ``q`` the share of the latest wakes that were read so (``CacheClock.calls`` and
    ``gaps``), per token of the prefix:

    * write: ``write + q * read`` (the reader reads it);
    * no write: ``input + q * write`` (sent as plain input; the reader writes it instead).

    The call writes no session entry when the second is cheaper, i.e.
    ``q * (write - read) < write - input`` (5 min at Anthropic's prices: ``q`` under
    about 0.22). The stable entry (tools, instructions) is written or read as always.
    A warm prefix is always read (and written on), and so is one of a clock that has seen
    fewer than :data:`MIN_WAKES_SEEN` wakes: the rule guesses from history only.
    """
    if ttls.session == "none":
        return CacheWrite(write=False, why="the session TTL is none: nothing to write")
    if clock.warm("session", at):
        return CacheWrite(write=True, why="the session prefix is warm: the first call reads it")
    ttl = _TTL_S[ttls.session]
    # calls[k] and gaps[k] are of one wake: its model calls, and the gap after it.
    gaps = clock.gaps[len(clock.gaps) - len(clock.calls) :]
    seen = list(zip(clock.calls, gaps, strict=True))
    if len(seen) < MIN_WAKES_SEEN:
        return CacheWrite(
            write=True,
            why=f"{len(seen)} wake(s) recorded, fewer than {MIN_WAKES_SEEN}: written as always",
        )
    read = sum(1 for calls, gap in seen if calls >= 2 or gap <= ttl)
    q = read / len(seen)
    r = rates or Rates(
        input=1.0, output=5.0, cache_read=0.1, cache_write_5m=1.25, cache_write_1h=2.0
    )
    w = r.write(ttl)
    tokens = clock.session_tokens
    write_usd = _per_token(w + q * r.cache_read, tokens)
    skip_usd = _per_token(r.input + q * w, tokens)
    write = write_usd <= skip_usd
    why = (
        f"{read} of the last {len(seen)} wakes were read again within {ttls.session} (a second "
        f"call, or the next wake); {tokens} session tokens written ${write_usd:.6f} vs sent "
        f"uncached ${skip_usd:.6f} expected: "
        + ("written" if write else "the first call writes no session entry")
    )
    return CacheWrite(write=write, expected_reads=round(q, 4), why=why)


def _per_token(usd_per_mtok: float, tokens: int) -> float:
    return usd_per_mtok * tokens / 1_000_000


def _fmt(td: timedelta) -> str:
    s = int(td.total_seconds())
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s"


class _Pricer:
    def __init__(self, inp: PacingInput, rates: Rates) -> None:
        self.inp, self.c, self.r, self.p = inp, inp.clock, rates, inp.policy

    def stable(self, at: datetime) -> float:
        tokens = self.c.stable_tokens
        if self.inp.warm("stable", at):
            return _per_token(self.r.cache_read, tokens)
        return _per_token(self.r.write(self.c.stable_ttl_s), tokens)

    def wake(self, rest: int, rest_warm: bool, at: datetime) -> float:
        """First call (read what is warm, write the rest) plus the wake's later reads."""
        first = self.stable(at) + _per_token(
            self.r.cache_read if rest_warm else self.r.write(self.c.session_ttl_s), rest
        )
        later = (self.p.expected_calls - 1) * _per_token(
            self.r.cache_read, self.c.stable_tokens + rest
        )
        return first + later

    def handoff(self, at: datetime) -> float:
        """A new session, honestly: its first wake (the stable prefix, the fresh prefix
        written, evidence of this session among it) and its next ``handoff_wakes - 1``
        wakes, each bringing back as evidence, sent as input, what the transcript held.
        (The note's own call is not counted: a session continued ends with one too.)"""
        c, r, p = self.c, self.r, self.p
        later = (p.handoff_wakes - 1) * _per_token(r.input, c.fresh_evidence_tokens)
        return self.wake(c.fresh_tokens, False, at) + later

    def ping(self) -> float:
        read = _per_token(self.r.cache_read, self.c.stable_tokens + self.c.session_tokens)
        return read + _per_token(self.r.output, self.p.keep_warm_output_tokens)


def _keep_warm_times(clock: CacheClock, policy: PacingPolicy, until: datetime) -> list[datetime]:
    """Calls that keep the session prefix warm from its last use until ``until``."""
    assert clock.last_used_at is not None
    step = timedelta(seconds=clock.session_ttl_s) - policy.keep_warm_margin
    if step <= timedelta(0):
        return []
    gap = until - clock.last_used_at - timedelta(seconds=clock.session_ttl_s)
    count = math.floor(gap / step) + 1
    return [clock.last_used_at + step * i for i in range(1, count + 1)]


def decide(inp: PacingInput) -> PacingDecision:
    """Price every option for the next wake and choose the cheapest the policy allows."""
    now, clock, policy = inp.now, inp.clock, inp.policy
    at = inp.next_call_at or now
    idle = inp.next_call_at is not None
    # From the last cache use to the call being priced (now, or the next expected wake).
    since = at - clock.last_used_at if clock.last_used_at is not None else None
    warm_at = inp.session_open and inp.warm("session", at)
    too_idle = since is not None and since > policy.max_idle
    idle_why = f"idle {_fmt(since or _ZERO)} > max_idle {_fmt(policy.max_idle)}"
    pricer = _Pricer(inp, inp.rates) if inp.rates is not None else None

    # continue_now / sleep_accept_miss: the same session, now or at the next wake.
    same = pricer.wake(clock.session_tokens, warm_at, at) if pricer else None
    if not inp.session_open:
        cont_ok, cont_why = False, "no session is open"
    elif too_idle and (policy.idle_ends_session or pricer is None):
        # Past an unset limit too when nothing can be priced: the limit holds then.
        cont_ok, cont_why = False, idle_why
    else:
        state = "warm" if warm_at else f"cold ({_cold_why(inp)})"
        cont_ok, cont_why = True, f"session prefix {clock.session_tokens} tokens, {state}"
        if too_idle:
            # No idle limit was set: past it, the session goes on if that is cheaper.
            cont_why = f"{idle_why}, but no handoff_after_idle was set: priced; {cont_why}"
    same_session = PacingOption(
        name="sleep_accept_miss" if idle else "continue_now",
        cost_usd=same,
        allowed=cont_ok,
        why=cont_why,
    )
    if idle:
        first = [_not_applicable("continue_now", "no trigger is waiting"), same_session]
    else:
        waiting = "a trigger is waiting: nothing to sleep through"
        first = [same_session, _not_applicable("sleep_accept_miss", waiting)]

    # handoff: a fresh session, whose prefix beyond the stable part is always written.
    if not inp.session_open:
        ho_ok, ho_why = True, "no session is open: a fresh one starts"
    elif not policy.allow_handoff and not too_idle:
        ho_ok, ho_why = False, "policy.allow_handoff is off"
    elif warm_at and not policy.handoff_when_warm:
        ho_ok, ho_why = False, "the session is warm and policy.handoff_when_warm is off"
    else:
        ho_ok, ho_why = True, f"fresh prefix {clock.fresh_tokens} tokens written"
    if pricer is None:
        fresh = None
    elif inp.price_next_session:
        fresh = pricer.handoff(at)
        if ho_ok:
            ho_why += (
                f", then {clock.fresh_evidence_tokens} tokens of evidence in each of the "
                f"next {policy.handoff_wakes - 1} wake(s)"
            )
    else:
        fresh = pricer.wake(clock.fresh_tokens, False, at)
    handoff = PacingOption(name="handoff", cost_usd=fresh, allowed=ho_ok, why=ho_why)

    options = [*first, _keep_warm_option(inp, pricer, idle, cont_ok, cont_why), handoff]
    allowed = [o for o in options if o.allowed]
    if not allowed:  # cannot happen (handoff is always allowed once continuing is not)
        raise ValueError("no pacing option is allowed; check the pacing policy")
    best = min(allowed, key=lambda o: (o.cost_usd or 0.0, OPTIONS.index(o.name)))
    keep = _keep_warm_times(clock, policy, at) if best.name == "keep_warm" else []
    return PacingDecision(
        at=now,
        choice=best.name,
        options=tuple(options),
        reason=_reason(best, options, since, inp),
        keep_warm_at=tuple(keep),
        past_max_idle=too_idle and inp.session_open,
    )


_ZERO = timedelta(0)


def _s(seconds: int) -> timedelta:
    return timedelta(seconds=seconds)


def _cold_why(inp: PacingInput) -> str:
    c = inp.clock
    if inp.foreign:
        return f"the clock was kept for {c.provider}/{c.model}, not {inp.provider}/{inp.model}"
    return f"session TTL {_fmt(_s(c.session_ttl_s))}"


def _not_applicable(name: OptionName, why: str) -> PacingOption:
    return PacingOption(name=name, cost_usd=None, allowed=False, why=why)


def _keep_warm_option(
    inp: PacingInput, pricer: _Pricer | None, idle: bool, cont_ok: bool, cont_why: str
) -> PacingOption:
    clock, policy = inp.clock, inp.policy
    if inp.next_call_at is None or not idle:
        return _not_applicable("keep_warm", "keep-warm calls happen while idle; a wake starts now")
    if not cont_ok:
        return _not_applicable("keep_warm", cont_why)
    if not inp.warm("session", inp.now):
        why = f" ({_cold_why(inp)})" if inp.foreign else ""
        return _not_applicable("keep_warm", f"the session cache is already cold{why}")
    if inp.warm("session", inp.next_call_at):
        return _not_applicable("keep_warm", "the cache is still warm at the next wake")
    pings = _keep_warm_times(clock, policy, inp.next_call_at)
    price = None
    if pricer is not None:
        price = len(pings) * pricer.ping() + pricer.wake(
            clock.session_tokens, True, inp.next_call_at
        )
    if not policy.allow_keep_warm:
        return PacingOption(
            name="keep_warm", cost_usd=price, allowed=False, why="policy.allow_keep_warm is off"
        )
    if not pings or len(pings) > policy.max_keep_warm_calls:
        return PacingOption(
            name="keep_warm",
            cost_usd=price,
            allowed=False,
            why=f"needs {len(pings)} calls > max_keep_warm_calls {policy.max_keep_warm_calls}",
        )
    return PacingOption(
        name="keep_warm",
        cost_usd=price,
        allowed=True,
        why=f"{len(pings)} keep-warm call(s) before the next wake",
    )


def _reason(
    best: PacingOption, options: list[PacingOption], since: timedelta | None, inp: PacingInput
) -> str:
    clock = inp.clock
    head = f"pacing {best.name}"
    ttl = timedelta(seconds=clock.session_ttl_s)
    if since is None:
        head += ": no cache use recorded yet"
    else:
        rel = ">" if since > ttl else "<="
        gap = (
            f"idle {_fmt(since)}"
            if inp.next_call_at is None
            else f"next wake expected {_fmt(since)}"
        )
        head += f": {gap} after the last cache use {rel} session TTL {_fmt(ttl)}"
    if inp.foreign:
        head += f", but {_cold_why(inp)}"
    if inp.rates is None:
        who = f"{inp.provider}/{inp.model}" if inp.foreign else f"{clock.provider}/{clock.model}"
        return head + f" ({who} has no known price; {best.why})"
    others = [o for o in options if o.cost_usd is not None and o is not best]
    parts = [f"{best.name} ${best.cost_usd:.6f} ({best.why})"]
    parts += [
        f"{o.name} ${o.cost_usd:.6f}" + ("" if o.allowed else f" [not allowed: {o.why}]")
        for o in others
    ]
    return head + "; " + "; ".join(parts)
