"""The console's pages: each is a function of what :mod:`wakeful.ui.data` read."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from markupsafe import Markup

from wakeful.compiler import LedgerRow
from wakeful.substrate.records import ModelCallRecord
from wakeful.ui import data
from wakeful.ui.html import legend, link, page, status, table, tokens, url, usd
from wakeful.ui.svg import (
    CLASS_COLOURS,
    Column,
    Mark,
    Part,
    TimedCall,
    TimedEvent,
    column_chart,
    session_timeline,
    stacked_bar,
)

# The order segments take in the window (and in the bucket bar); "overhead" is framing.
BUCKETS = ("stable", "semi_stable", "summaries", "recent", "evidence", "ask", "overhead")
# The bars draw the framing first: a breakpoint's prefix_tokens count it from the start of
# the window, so its mark then falls at the end of the segment it closes.
BAR_ORDER = ("overhead", *BUCKETS[:-1])


def _when(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M:%S} UTC" if at is not None else ""


def _cards(*items: tuple[str, object]) -> Markup:
    return Markup('<div class="cards">{}</div>').format(
        Markup("").join(
            Markup('<div class="card"><b>{}</b><span>{}</span></div>').format(v, k)
            for k, v in items
        )
    )


def _caps(caps: dict[str, float | int]) -> str:
    names = {
        "max_usd_per_day": "${:g}/day",
        "max_tokens_per_day": "{:,} tokens/day",
        "max_usd_per_wake": "${:g}/wake",
    }
    out = [names[k].format(v) for k, v in caps.items() if k in names]
    return ", ".join(out) or "none"


def agents_page(rows: Sequence[data.AgentRow], day: datetime) -> str:
    body = legend("wake", "session", "spent today") + table(
        ["agent", "model", "status", "sessions", "wakes", "last wake",
         f"spent today (UTC {day:%Y-%m-%d})", "tokens today", "spend cap"],
        [
            (
                link(url("agents", r.name), r.name),
                f"{r.provider}/{r.model}",
                status(r.status),
                r.sessions,
                r.wakes,
                link(url("wakes", r.last_wake.wake_id), f"#{r.last_wake.number} · "
                     f"{_when(r.last_wake.started_at)}") if r.last_wake else "",
                usd(r.spent_usd),
                tokens(r.spent_tokens),
                _caps(r.caps),
            )
            for r in rows
        ],
        table_id="agents",
        numeric=(3, 4, 6, 7),
        empty="no agents in this tenant yet; register one with `wakeful agent create`",
    )  # fmt: skip
    return page(
        "Agents", "Agents", body,
        sub="Every agent of the tenant, its last wake and what it spent today.",
    )  # fmt: skip


def agent_page(agent: str, wakes: data.WakePage) -> str:
    rows = wakes.rows
    of = "" if len(rows) == wakes.total else f" (of the {len(rows)} wakes shown)"
    body = _cards(
        ("wakes", wakes.total),
        (f"model calls{of}", sum(len(r.calls) for r in rows)),
        (f"tokens{of}", tokens(sum(r.tokens for r in rows))),
        (f"cost{of}", usd(sum(r.cost_usd for r in rows))),
    ) + legend("cache read", "cache write", "uncached") + table(
        ["wake", "session", "status", "started", "calls", "tokens", "cache read",
         "cache write", "cost", "answer"],
        [
            (
                link(url("wakes", r.wake.wake_id), f"#{r.wake.number}"),
                link(url("sessions", agent, r.wake.session_id), r.wake.session_id),
                status(r.wake.status),
                _when(r.wake.started_at),
                len(r.calls),
                tokens(r.tokens),
                tokens(sum(c.cache_read_input_tokens for c in r.calls)),
                tokens(sum(c.cache_creation_input_tokens for c in r.calls)),
                usd(r.cost_usd),
                data.preview(r.answer),
            )
            for r in rows
        ],
        table_id="wakes",
        numeric=(4, 5, 6, 7, 8),
        empty="this agent has not woken yet",
    )  # fmt: skip
    if wakes.older is not None:
        body += Markup('<p class="nav">{}</p>').format(
            link(url("agents", agent, before=wakes.older), "older wakes →")
        )
    sub = Markup(
        "Its wakes, newest first: each one is a trigger answered by one or more model calls. {}"
    ).format(
        Markup('<a id="knowledge" href="{}">What it knows →</a>').format(url("knowledge", agent))
    )
    return page(f"Agent {agent}", Markup("Agent <code>{}</code>").format(agent), body,
                sub=sub)  # fmt: skip


def wake_page(v: data.WakeView, temporal: str | None = None) -> str:
    """``temporal``: the agent workflow's page in the Temporal UI, when one is known."""
    w = v.wake
    items = []
    for s in v.steps:
        lines = []
        if s.compile is not None:
            by = ", ".join(
                f"{k} {n:,}" for k in BUCKETS if (n := s.compile.tokens_by_bucket.get(k, 0))
            )
            lines.append(_step("compile", Markup("{} input tokens ({}) · as of {}").format(
                tokens(s.compile.input_tokens), by, _when(s.compile.as_of))))  # fmt: skip
        if s.call is not None:
            c = s.call
            lines.append(_step("model", Markup(
                "{}/{} · stop <code>{}</code> · cache read {} · cache write {} · uncached {} ·"
                " output {} · {}"
            ).format(
                c.provider, c.model, c.stop_reason, tokens(c.cache_read_input_tokens),
                tokens(c.cache_creation_input_tokens), tokens(c.input_tokens),
                tokens(c.output_tokens), usd(c.cost_usd),
            )))  # fmt: skip
        if s.reply is not None and s.reply.text:
            lines.append(_step("reply", Markup("{}").format(data.preview(s.reply.text, 300))))
        for t in s.tools:
            if t.result is None:
                outcome = Markup('<span class="empty">no result recorded</span>')
            else:
                outcome = Markup('<pre class="out">{}{}</pre>').format(
                    "error: " if t.result.is_error else "", data.preview(t.result.text, 600)
                )
            lines.append(_step("tool", Markup("<code>{}</code> {}{}").format(
                t.call.name, data.preview(data.as_json(t.call.input), 200), outcome)))  # fmt: skip
        head = Markup("<h3>call {} · {}</h3>").format(
            s.index,
            link(url("calls", w.wake_id, s.place), "window and ledger")
            if s.place is not None else "no compile recorded",
        )  # fmt: skip
        items.append(Markup('<li class="call" data-call="{}">{}{}</li>').format(
            s.index, head, Markup("").join(lines)))  # fmt: skip
    calls = [s.call for s in v.steps if s.call is not None]
    body = _cards(
        ("status", status(w.status)),
        ("model calls", len(calls)),
        ("tool calls", sum(len(s.tools) for s in v.steps)),
        ("tokens", tokens(sum(data.call_tokens(c) for c in calls))),
        ("cost", usd(sum(c.cost_usd for c in calls))),
    ) + legend("stable", "semi_stable", "evidence", "recent", "cache read", "cache write")
    goal = w.goal.get("text") or data.as_json(w.goal)
    body += Markup('<h2>Ask</h2><pre class="answer" id="ask">{}{}</pre>').format(
        f"[{w.goal['kind']}] " if w.goal.get("kind") else "", goal
    )
    body += Markup("<h2>Timeline</h2>")
    body += (
        Markup('<ol class="timeline" id="timeline">{}</ol>').format(Markup("").join(items))
        if items else Markup('<p class="empty">no model call recorded for this wake</p>')
    )  # fmt: skip
    if v.live is not None:  # the model is answering now: what it has said so far
        body += Markup('<h2>Live · call {}</h2><pre class="answer" id="live">{}</pre>').format(
            v.live[0], v.live[1]
        )
    body += Markup('<h2>Answer</h2><pre class="answer" id="answer">{}</pre>').format(
        v.answer or "(no answer recorded)"
    )
    sub = Markup("{} · session {} · started {}{}{}").format(
        link(url("agents", w.agent), w.agent),
        Markup('<a id="session" href="{}"><code>{}</code></a>').format(
            url("sessions", w.agent, w.session_id), w.session_id),
        _when(w.started_at),
        f" · finished {_when(w.finished_at)}" if w.finished_at else "",
        Markup(' · <a id="temporal" href="{}">Temporal workflow</a>').format(temporal)
        if temporal else "",
    )  # fmt: skip
    # A running wake's page reads itself again every second: a live view for the price of
    # one page (the streamed pieces are in the substrate; nothing pushes).
    live = "setTimeout(function(){location.reload()},1000);" if w.status == "running" else ""
    return page(f"Wake {w.wake_id}", Markup("Wake <code>{}</code>").format(w.wake_id), body,
                sub=sub, script=live)  # fmt: skip


def _step(tag: str, content: Markup) -> Markup:
    return Markup('<div class="step {}"><span class="tag">{}</span><div>{}</div></div>').format(
        tag, tag, content
    )


def bucket_bar(v: data.CallView) -> Markup:
    by = v.ledger.tokens_by_bucket
    names = [*BAR_ORDER, *sorted(k for k in by if k not in BAR_ORDER)]
    return stacked_bar(
        [Part(k, by[k]) for k in names if by.get(k)],
        chart_id="buckets",
        title="window tokens by segment",
        marks=[Mark(bp.prefix_tokens, bp.name) for bp in v.ledger.breakpoints],
    )


def cache_bar(c: ModelCallRecord) -> Markup:
    return stacked_bar(
        [
            Part("cache_read", c.cache_read_input_tokens, "cache read"),
            Part("cache_write", c.cache_creation_input_tokens, "cache write"),
            Part("uncached", c.input_tokens, "uncached"),
        ],
        chart_id="cache",
        title="input tokens by cache state, as the provider reported them",
    )


_FILTER_JS = """
(function () {
  var box = document.getElementById('ledger-filter');
  var rows = document.querySelectorAll('#ledger tbody tr');
  var count = document.getElementById('ledger-count');
  function apply() {
    var q = box.value.toLowerCase(), shown = 0;
    rows.forEach(function (tr) {
      var hit = tr.textContent.toLowerCase().indexOf(q) >= 0;
      tr.hidden = !hit; if (hit) { shown += 1; }
    });
    count.textContent = shown + ' of ' + rows.length + ' rows';
  }
  box.addEventListener('input', apply);
  apply();
})();
"""


def call_page(v: data.CallView, *, status_filter: str, segment_filter: str, q: str) -> str:
    ledger, w = v.ledger, v.wake
    rows = sorted(ledger.rows, key=lambda r: (r.position < 0, r.position))
    shown = [r for r in rows if _keep(r, status_filter, segment_filter, q)]
    nav = []
    if v.index > 0:
        nav.append(link(url("calls", w.wake_id, v.index - 1), f"← call {v.index - 1}"))
        nav.append(link(url("diff", a=w.wake_id, n=v.index - 1, b=w.wake_id, m=v.index),
                        f"diff with call {v.index - 1}"))  # fmt: skip
    if v.index + 1 < v.count:
        nav.append(link(url("calls", w.wake_id, v.index + 1), f"call {v.index + 1} →"))
    if v.previous_wake_calls:  # what `wakeful diff --wake N --vs N-1 --call n` compares
        previous = f"{w.agent}:{w.number - 1}"
        n = min(v.index, v.previous_wake_calls - 1)  # a shorter wake: its last call
        nav.append(link(url("diff", a=previous, n=n, b=w.wake_id, m=v.index),
                        f"diff with wake #{w.number - 1}, call {n}"))  # fmt: skip
    body = Markup('<p class="nav">{}</p>').format(Markup(" · ").join(nav)) if nav else Markup("")
    cards: list[tuple[str, object]] = [
        ("window input tokens (compiler)", tokens(ledger.input_tokens)),
        ("usable tokens", tokens(ledger.usable_tokens)),
    ]
    c = v.call
    if c is not None:
        cards += [
            ("cache read", tokens(c.cache_read_input_tokens)),
            ("cache write", tokens(c.cache_creation_input_tokens)),
            ("uncached input", tokens(c.input_tokens)),
            ("output", tokens(c.output_tokens)),
            ("cost", usd(c.cost_usd)),
        ]
    body += _cards(*cards)
    if v.outcome is not None:  # why the cache read what it read (`wakeful explain`)
        body += Markup('<p class="outcome" id="cache-outcome"><b>cache {}</b>: {}</p>').format(
            v.outcome.cache_class.value, v.outcome.detail
        )
    body += legend("stable", "semi_stable", "summaries", "evidence", "recent", "ask",
                   "overhead", "cache read", "cache write", "uncached", "breakpoint",
                   "ledger")  # fmt: skip
    body += Markup("<h2>Window by segment</h2>") + bucket_bar(v)
    body += Markup("<h2>Input by cache state</h2>")
    body += (
        cache_bar(c) if c is not None
        else Markup('<p class="empty">the model call was not recorded</p>')
    )  # fmt: skip
    body += Markup("<h2>Breakpoints</h2>") + table(
        ["name", "last block in the cached prefix", "location", "ttl", "prefix tokens",
         "blocks since previous"],
        [
            (bp.name, Markup("<code>{}</code>").format(bp.block_id), bp.location,
             bp.ttl or "implicit", tokens(bp.prefix_tokens), bp.blocks_since_previous)
            for bp in ledger.breakpoints
        ],
        table_id="breakpoints",
        numeric=(4, 5),
        empty="no breakpoint in this window",
    )  # fmt: skip
    body += Markup("<h2>Ledger</h2>") + _filter_form(status_filter, segment_filter, q, rows)
    body += table(
        ["pos", "block", "kind", "source", "segment", "tokens", "status", "reason", "rule"],
        [
            (
                r.position if r.position >= 0 else "–",
                Markup("<code>{}</code>").format(r.block_id),
                r.kind, r.source, r.segment, tokens(r.tokens), r.status,
                r.reason + (f" — {r.detail}" if r.detail else ""),
                Markup("<code>{}</code>").format(r.rule) if r.rule else "",
            )
            for r in shown
        ],
        table_id="ledger",
        numeric=(0, 5),
        row_classes=[r.status for r in shown],
        empty="no row matches the filter",
    )  # fmt: skip
    if ledger.notes:
        body += Markup("<h2>Notes</h2><ul>{}</ul>").format(
            Markup("").join(Markup("<li>{}</li>").format(n) for n in ledger.notes)
        )
    sub = Markup("{} · {} · {}/{} · policy {} v{} · stable prefix <code>{}</code>").format(
        link(url("agents", w.agent), w.agent), link(url("wakes", w.wake_id), f"wake #{w.number}"),
        ledger.provider, ledger.model, ledger.policy_name, ledger.policy_version,
        ledger.stable_prefix_hash[:12],
    )  # fmt: skip
    return page(
        f"Call {v.index} of {w.wake_id}",
        Markup("Call {} of wake <code>{}</code>").format(v.index, w.wake_id),
        body, sub=sub, script=_FILTER_JS,
    )  # fmt: skip


def _keep(r: LedgerRow, status_filter: str, segment_filter: str, q: str) -> bool:
    if status_filter and r.status != status_filter:
        return False
    if segment_filter and r.segment != segment_filter:
        return False
    text = " ".join((r.block_id, r.kind, r.source, r.reason, r.rule, r.detail)).lower()
    return not q or q.lower() in text


def _filter_form(status_filter: str, segment_filter: str, q: str, rows: list[LedgerRow]) -> Markup:
    def select(name: str, chosen: str, values: list[str]) -> Markup:
        opts = Markup("").join(
            Markup('<option value="{}"{}>{}</option>').format(
                v, Markup(" selected") if v == chosen else "", v or "any"
            )
            for v in ["", *values]
        )
        return Markup('<label>{} <select name="{}">{}</select></label>').format(name, name, opts)

    statuses = sorted({r.status for r in rows})
    segments = [s for s in BUCKETS if any(r.segment == s for r in rows)]
    return Markup(
        '<form class="filter" method="get">{}{}'
        '<label>contains <input id="ledger-filter" name="q" value="{}" '
        'placeholder="block, kind, reason…"></label>'
        '<button type="submit">filter</button> <span id="ledger-count" class="sub"></span></form>'
    ).format(select("status", status_filter, statuses), select("segment", segment_filter, segments),
             q)  # fmt: skip


def diff_page(v: data.DiffView) -> str:
    d, a, b = v.diff, v.before, v.after
    a_in, b_in = a.ledger.included(), b.ledger.included()
    first = d.position if not d.identical and d.position is not None else None
    rows, classes = [], []
    for n in range(max(len(a_in), len(b_in))):
        ra = a_in[n] if n < len(a_in) else None
        rb = b_in[n] if n < len(b_in) else None
        rows.append((n, *_side(ra), *_side(rb)))
        classes.append(
            "" if first is None or n < first else "first-diff" if n == first else "after-diff"
        )
    if d.identical:
        verdict = Markup("<p id='verdict'><b>identical windows</b></p>")
    else:
        verdict = Markup(
            "<p id='verdict'>first difference at position <b>{}</b>: block <code>{}</code>"
            " ({}): <b>{}</b> {}</p>"
        ).format(d.position, d.block_id or "", d.segment or "", d.reason.value, d.detail)
    cache = (
        Markup("<p id='cache-verdict'>cache could hit through <b>{}</b> ({} tokens)</p>").format(
            d.cache_hit_through, tokens(d.cached_prefix_tokens)
        )
        if d.cache_could_hit
        else Markup("<p id='cache-verdict'>no cached prefix could be reused</p>")
    )
    if d.policy_changed:
        cache += Markup("<p>the policy changed between the two compiles</p>")

    def title(c: data.CallView) -> Markup:
        return link(url("calls", c.wake.wake_id, c.index), f"{c.wake.wake_id} call {c.index}")

    body = verdict + cache + legend("stable", "semi_stable", "evidence", "recent", "breakpoint")
    body += Markup('<div class="side"><div><h2>A: {}</h2>{}</div><div><h2>B: {}</h2>{}</div></div>'
                   ).format(title(a), bucket_bar_small(a, "buckets-a"), title(b),
                            bucket_bar_small(b, "buckets-b"))  # fmt: skip
    body += Markup("<h2>Included blocks, in window order</h2>") + table(
        ["pos", "A block", "A segment", "A tokens", "B block", "B segment", "B tokens"],
        rows, table_id="diff", numeric=(0, 3, 6), row_classes=classes,
    )  # fmt: skip
    return page(
        "Diff", "Diff of two windows", body,
        sub="The first block that differs between an earlier window (A) and a later one (B),"
        " as `wakeful diff` names it, and whether B could read A's cache entries.",
    )  # fmt: skip


def bucket_bar_small(v: data.CallView, chart_id: str) -> Markup:
    by = v.ledger.tokens_by_bucket
    return stacked_bar(
        [Part(k, by[k]) for k in BAR_ORDER if by.get(k)],
        chart_id=chart_id,
        title="window tokens by segment",
        marks=[Mark(bp.prefix_tokens, bp.name) for bp in v.ledger.breakpoints],
        width=620,
    )


def _side(r: LedgerRow | None) -> tuple[object, object, object]:
    if r is None:
        return ("", "", "")
    return (Markup("<code>{}</code>").format(r.block_id), r.segment, tokens(r.tokens))


def cost_page(v: data.CostView) -> str:
    days = sorted(v.by_day)
    agents = sorted({r.agent for r in v.rows})
    by_cost = column_chart(
        [Column(f"{d:%Y-%m-%d}", [Part(a, v.by_day[d].get(a, 0.0)) for a in agents]) for d in days],
        chart_id="cost-by-day",
        title="cost per UTC day, by agent",
        unit="$",
        width=620,
    )
    per_day: dict[str, list[int]] = {}
    for r in v.rows:
        t = per_day.setdefault(f"{r.day:%Y-%m-%d}", [0, 0, 0])
        t[0] += r.cache_read
        t[1] += r.cache_write
        t[2] += r.uncached
    by_cache = column_chart(
        [
            Column(day, [Part("cache_read", t[0], "cache read"),
                         Part("cache_write", t[1], "cache write"), Part("uncached", t[2])])
            for day, t in sorted(per_day.items())
        ],
        chart_id="tokens-by-day",
        title="input tokens per UTC day, by cache state",
        width=620,
    )  # fmt: skip
    total = sum(r.cost_usd for r in v.rows)
    read = sum(r.cache_read for r in v.rows)
    allin = sum(r.cache_read + r.cache_write + r.uncached for r in v.rows)
    body = _cards(
        ("cost, all days", usd(total)),
        ("model calls", sum(r.calls for r in v.rows)),
        ("input read from cache", f"{read / allin:.0%}" if allin else "–"),
    ) + legend("cache read", "cache write", "uncached")
    body += Markup(
        '<div class="side"><div><h2>Cost per day</h2>{}</div>'
        "<div><h2>Input tokens per day</h2>{}</div></div>"
    ).format(by_cost, by_cache)
    body += Markup("<h2>Per day and agent</h2>") + table(
        ["day (UTC)", "agent", "calls", "uncached input", "cache write", "cache read", "output",
         "cost"],
        [
            (f"{r.day:%Y-%m-%d}", link(url("agents", r.agent), r.agent), r.calls,
             tokens(r.uncached), tokens(r.cache_write), tokens(r.cache_read), tokens(r.output),
             usd(r.cost_usd))
            for r in v.rows
        ],
        table_id="cost",
        numeric=(2, 3, 4, 5, 6, 7),
        empty="no model call recorded yet",
    )  # fmt: skip
    return page(
        "Cost", "Cost", body,
        sub="Model calls per UTC day (the day their wake started, as the spend caps count"
        " them) and agent, with the provider's cache split.",
    )  # fmt: skip


def diff_form(a: str, n: int, b: str, m: int) -> str:
    """The diff page without both wakes: a form to name them."""

    def field(name: str, value: object, hint: str) -> Markup:
        return Markup('<label>{} <input name="{}" value="{}" placeholder="{}"></label>').format(
            name, name, value, hint
        )

    body = legend("stable", "semi_stable", "evidence", "recent", "breakpoint") + Markup(
        '<form class="filter" id="diff-form" method="get">{}{}{}{}'
        '<button type="submit">compare</button></form>'
    ).format(
        field("a", a, "earlier wake, e.g. scout:4"), field("n", n, "call"),
        field("b", b, "later wake, e.g. scout:5"), field("m", m, "call"),
    )  # fmt: skip
    return page(
        "Diff", "Diff of two windows", body,
        sub="Name two calls: wake a's call n (the earlier window) and wake b's call m.",
    )  # fmt: skip


def error_page(code: int, message: str) -> str:
    return page(f"{code}", f"{code}", Markup('<p id="error">{}</p>').format(message))


def _outcome_class(c: data.SessionCall) -> str:
    if c.outcome is not None:
        return c.outcome.cache_class.value
    return "unknown" if c.call is None else "unclassified"


def session_page(v: data.SessionView) -> str:
    """A session's calls on a time axis with the cache class each met, the TTL each left
    warm, the pacing decisions (with their prices) and keep-warm calls between them."""
    start = min([c.compile.as_of for c in v.calls] + [w.started_at for w in v.wakes])

    def since(at: datetime) -> float:
        return (at - start).total_seconds()

    def key(c: data.SessionCall) -> str:
        return f"#{c.wake.number}·{c.place}"

    timed = [
        TimedCall(
            key=key(c),
            at=since(c.compile.as_of),
            cache_class=_outcome_class(c),
            read=c.call.cache_read_input_tokens if c.call else 0,
            write=c.call.cache_creation_input_tokens if c.call else 0,
            uncached=c.call.input_tokens if c.call else 0,
            ttl=c.ttl_seconds,
            tip=f"wake #{c.wake.number} call {c.place} at {_when(c.compile.as_of)}: "
            + (c.outcome.line() if c.outcome else "no model call recorded"),
        )
        for c in v.calls
    ]
    events = [
        TimedEvent(
            "pacing", since(p.at), p.choice,
            f"{'while idle before' if p.idle else 'as it started,'} wake #{p.wake.number}: "
            f"{p.choice} · {_prices(p.prices)}",
        )
        for p in v.pacing
    ] + [
        TimedEvent(
            "keep-warm", since(k.at), f"ping {k.ping}",
            f"keep-warm call {k.ping} before wake #{k.wake.number}: read {k.read:,},"
            f" wrote {k.wrote:,}, ${k.cost_usd:.6f}",
        )
        for k in v.keep_warm
    ]  # fmt: skip
    made = [c.call for c in v.calls if c.call is not None]
    classes: dict[str, int] = {}
    for c in v.calls:
        classes[_outcome_class(c)] = classes.get(_outcome_class(c), 0) + 1
    body = _cards(
        ("wakes", len(v.wakes)),
        ("model calls", len(made)),
        ("cache read", tokens(sum(c.cache_read_input_tokens for c in made))),
        ("cache write", tokens(sum(c.cache_creation_input_tokens for c in made))),
        ("cost", usd(sum(c.cost_usd for c in made) + sum(k.cost_usd for k in v.keep_warm))),
        ("cache outcomes", ", ".join(f"{k} {n}" for k, n in classes.items()) or "–"),
    ) + legend("cache class", "ttl band", "pacing", "keep-warm", "cache read", "cache write",
               "uncached")  # fmt: skip
    body += Markup("<h2>Timeline</h2>") + session_timeline(
        timed, events, chart_id="session-timeline",
        title=f"the session's model calls from {_when(start)}, by cache outcome",
    )  # fmt: skip
    body += Markup("<h2>Calls</h2>") + table(
        ["time (UTC)", "since start", "wake", "call", "cache class", "read", "write",
         "uncached", "cost", "TTLs"],
        [
            (
                f"{c.compile.as_of:%H:%M:%S}", f"+{_span(since(c.compile.as_of))}",
                link(url("wakes", c.wake.wake_id), f"#{c.wake.number}"),
                link(url("calls", c.wake.wake_id, c.place), c.place),
                Markup('<span class="cls" style="border-color:{}">{}</span>').format(
                    CLASS_COLOURS.get(_outcome_class(c), CLASS_COLOURS["unknown"]),
                    _outcome_class(c)),
                tokens(c.call.cache_read_input_tokens) if c.call else "–",
                tokens(c.call.cache_creation_input_tokens) if c.call else "–",
                tokens(c.call.input_tokens) if c.call else "–",
                usd(c.call.cost_usd) if c.call else "–",
                ", ".join(f"{k} {t}" for k, t in c.ttls.items()) or "implicit",
            )
            for c in v.calls
        ],
        table_id="session-calls",
        numeric=(5, 6, 7, 8),
        empty="no model call recorded in this session",
    )  # fmt: skip
    options = list(dict.fromkeys(o for p in v.pacing for o in p.prices))
    body += Markup("<h2>Pacing decisions</h2>") + table(
        ["wake", "when", "chose", *(f"{o} ($)" for o in options), "why"],
        [
            (
                link(url("wakes", p.wake.wake_id), f"#{p.wake.number}"),
                "while idle before it" if p.idle else "as it started",
                Markup("<b>{}</b>").format(p.choice),
                *(_price(p.prices.get(o, None), o == p.choice) for o in options),
                p.reason,
            )
            for p in v.pacing
        ],
        table_id="pacing",
        numeric=tuple(range(3, 3 + len(options))),
        empty="no pacing decision recorded",
    )  # fmt: skip
    body += Markup("<h2>Keep-warm calls</h2>") + table(
        ["before wake", "ping", "cache read", "cache write", "cost"],
        [
            (link(url("wakes", k.wake.wake_id), f"#{k.wake.number}"), k.ping, tokens(k.read),
             tokens(k.wrote), f"${k.cost_usd:.6f}")
            for k in v.keep_warm
        ],
        table_id="keep-warm",
        numeric=(1, 2, 3, 4),
        empty="no keep-warm call was sent in this session",
    )  # fmt: skip
    if v.notes:
        body += Markup("<h2>Other notes</h2><ul>{}</ul>").format(
            Markup("").join(Markup("<li>wake #{}: {}</li>").format(w.number, n) for w, n in v.notes)
        )
    sub = Markup("{} · session <code>{}</code> · from {}").format(
        link(url("agents", v.agent), v.agent), v.session_id, _when(start)
    )
    return page(
        f"Session {v.session_id}", Markup("Session <code>{}</code>").format(v.session_id),
        body, sub=sub,
    )  # fmt: skip


def _prices(prices: dict[str, data.Price]) -> str:
    return " ".join(f"{k} {_price_text(v)}" for k, v in prices.items())


def _price_text(p: data.Price | None) -> str:
    if p is None or p.usd is None:
        return "n/a"
    return f"{p.usd:.6f}" + ("" if p.allowed else " (not allowed)")


def _price(p: data.Price | None, chosen: bool) -> object:
    return Markup("<b>{}</b>").format(_price_text(p)) if chosen else _price_text(p)


def _span(seconds: float) -> str:
    s = round(seconds)
    return f"{s}s" if s < 60 else f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s / 3600:.1f}h"


def _state(*flags: tuple[bool, str]) -> Markup:
    said = [name for on, name in flags if on]
    return status(" ".join(said) if said else "live")


def knowledge_page(v: data.KnowledgeView) -> str:
    """Handoff notes, summaries, registry decisions and memories: each with where it came
    from and whether it still holds."""
    body = _cards(
        ("handoff notes", len(v.handoffs)),
        ("summaries live", sum(1 for s in v.summaries if s.live)),
        ("decisions live", sum(1 for d in v.decisions if d.status(v.now) == "live")),
        ("memories live", sum(1 for m in v.memories if m.invalidated_at is None)),
    ) + legend("handoff", "summaries", "decision", "memory", "session")  # fmt: skip
    body += Markup("<h2>Handoff notes</h2>") + table(
        ["#", "wake", "session", "created", "goal", "current state", "next actions"],
        [
            (
                h.id,
                link(url("wakes", h.wake_id), h.wake_id),
                link(url("sessions", v.agent, h.session_id), h.session_id),
                _when(h.created_at),
                data.preview(h.body.goal),
                data.preview(h.body.current_state, 200),
                "; ".join(h.body.next_actions),
            )
            for h in v.handoffs
        ],
        table_id="handoffs",
        numeric=(0,),
        empty="no handoff note written yet",
    )  # fmt: skip
    body += Markup("<h2>Summaries</h2>") + table(
        ["#", "level", "events", "retired events", "state", "created", "text"],
        [
            (
                s.summary.id, s.summary.level, f"{s.summary.span_start}–{s.summary.span_end}",
                s.retired_events,
                _state((not s.live, "superseded"),
                       (s.summary.superseded_by is not None,
                        f"by:{s.summary.superseded_by}")),
                _when(s.summary.created_at), data.preview(s.summary.text, 240),
            )
            for s in v.summaries
        ],
        table_id="summaries",
        numeric=(0, 1, 3),
        empty="no summary yet: consolidation has not run over this agent's history",
    )  # fmt: skip
    body += Markup("<h2>Decisions (the registry)</h2>") + table(
        ["id", "text", "source event", "created", "expires", "state"],
        [
            (
                Markup("<code>{}</code>").format(d.decision_id), d.text,
                d.source_event if d.source_event is not None else "–",
                _when(d.created_at), _when(d.expires_at) or "never",
                _state((d.superseded_by is not None, f"superseded by {d.superseded_by}"),
                       (d.status(v.now) == "proposed", f"proposed over {d.proposal_for}"),
                       (d.status(v.now) == "retired", f"retired by {d.retired_by}"),
                       (_expired(d.expires_at, v.now), "expired")),
            )
            for d in v.decisions
        ],
        table_id="decisions",
        empty="no decision registered",
    )  # fmt: skip
    body += Markup("<h2>Memories</h2>") + table(
        ["#", "key", "text", "source", "scope", "captured", "verification", "importance",
         "supersedes", "state"],
        [
            (
                m.id, Markup("<code>{}</code>").format(m.key), data.preview(m.text, 240),
                m.source, m.scope, _when(m.captured_at), m.verification,
                f"{m.importance:.2f}", f"#{m.supersedes}" if m.supersedes is not None else "",
                _state((m.invalidated_at is not None, f"invalidated {_when(m.invalidated_at)}")),
            )
            for m in v.memories
        ],
        table_id="memories",
        numeric=(0, 7),
        empty="no memory captured",
    )  # fmt: skip
    return page(
        f"Knowledge of {v.agent}", Markup("What <code>{}</code> knows").format(v.agent), body,
        sub=Markup("{} · handoff notes, summaries, decisions and memories, with where each"
                   " came from and whether it still holds (as of {})").format(
            link(url("agents", v.agent), v.agent), _when(v.now)),
    )  # fmt: skip


def _expired(at: datetime | None, now: datetime) -> bool:
    return at is not None and at <= now
