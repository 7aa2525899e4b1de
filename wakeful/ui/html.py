"""The page frame and small HTML helpers. Everything goes through :class:`markupsafe.Markup`:
a value put into a template with ``Markup(...).format`` is escaped unless it is Markup
already, so text from the substrate (answers, tool output, block ids) is never markup."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

# What the legend of each page may explain, in one place so every page words it alike.
TERMS: dict[str, str] = {
    "stable": "the window's first segment: instructions, tool definitions, durable facts. "
    "It changes rarely, so it is cached once and read back by later calls.",
    "semi_stable": "the segment after it: the registry of decisions and memories and the "
    "handoff note. It changes between sessions, not between calls.",
    "summaries": "consolidated summaries of older history.",
    "recent": "the current session's turns and tool traffic, newest last.",
    "evidence": "what retrieval brought back from earlier sessions for this wake.",
    "ask": "the goal of the wake (the message or event that woke the agent).",
    "overhead": "the provider's fixed framing of the request (roles, separators).",
    "cache read": "input tokens the provider served from its prompt cache (billed at a "
    "fraction of the input price).",
    "cache write": "input tokens the provider wrote to its prompt cache on this call "
    "(billed at a premium, then read cheaply by later calls).",
    "uncached": "input tokens neither read from nor written to the cache.",
    "breakpoint": "a cache marker: the window up to and including that block is one cache "
    "entry. A later call that starts with the same bytes reads it instead of paying for it.",
    "wake": "one trigger answered: the model calls the agent made and the tools it ran.",
    "session": "wakes that share their recent history (and its cache); a new session "
    "starts from the handoff note.",
    "spent today": "what the model calls of wakes started since 00:00 UTC cost, its "
    "children's included: what the spend caps count.",
    "cache class": "how a call fared in the prompt cache against the call before it: hit, "
    "cold_start (nothing before it), prefix_changed (the windows differ before a breakpoint), "
    "ttl_expired (idle past the entry's TTL), below_minimum, provider_eviction.",
    "ttl band": "how long the entry a call left stays warm (its deepest breakpoint's TTL, "
    "5m or 1h): a call inside the band can read it.",
    "pacing": "the orchestrator's choice before a wake (continue_now, sleep_accept_miss, "
    "keep_warm, handoff) and what it priced each option at.",
    "keep-warm": "a minimal call sent while idle to refresh the cache before it expires; "
    "recorded with the next wake, so drawn where that wake starts.",
    "handoff": "the note a session leaves for the next one: goal, state, next actions.",
    "decision": "a load-bearing registry entry: kept in every window until it expires or "
    "another supersedes it.",
    "memory": "a fact captured from a source event, with how well it was verified; "
    "invalidated when a later one replaces it.",
    "ledger": "every block the compiler considered for the window, included or not, with "
    "the reason and the policy rule that decided.",
}

_CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#dde1e8; --bg:#f6f7f9; --accent:#2f5d9e; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--fg); background:var(--bg); }
header.top { background:#1d2330; color:#fff; padding:10px 24px; display:flex; gap:20px;
  align-items:center; }
header.top a { color:#cfe0ff; text-decoration:none; } header.top a:hover { color:#fff; }
header.top .brand { font-weight:700; color:#fff; margin-right:12px; }
main { max-width:1280px; margin:0 auto; padding:16px 24px 48px; }
h1 { font-size:22px; margin:8px 0 4px; } h2 { font-size:17px; margin:26px 0 8px; }
.sub { color:var(--muted); margin:0 0 12px; }
a { color:var(--accent); }
table { border-collapse:collapse; width:100%; background:#fff; border:1px solid var(--line); }
th, td { padding:5px 8px; border-bottom:1px solid var(--line); text-align:left;
  vertical-align:top; }
th { background:#eef1f5; font-weight:600; position:sticky; top:0; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tbody tr:nth-child(even) { background:#fafbfc; }
tr.excluded td { color:#8a8f99; } tr.collapsed td { color:#6b5b2a; }
tr.first-diff td { background:#fff1c2; font-weight:600; }
tr.after-diff td { color:#8a8f99; }
code, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
details.legend { background:#fff; border:1px solid var(--line); border-left:4px solid var(--accent);
  padding:6px 12px; margin:8px 0 16px; }
details.legend summary { cursor:pointer; font-weight:600; color:var(--muted); }
details.legend dl { display:grid; grid-template-columns:max-content 1fr; gap:2px 14px;
  margin:8px 0 4px; }
details.legend dl.wide { grid-template-columns:max-content 1fr max-content 1fr; }
details.legend dt { font-weight:600; } details.legend dd { margin:0; color:var(--muted); }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin:8px 0 12px; }
.card { background:#fff; border:1px solid var(--line); padding:8px 14px; min-width:140px; }
.card b { display:block; font-size:18px; } .card span { color:var(--muted); font-size:12px; }
.chart { background:#fff; border:1px solid var(--line); padding:6px; display:block; }
.chart text { font:12px system-ui,sans-serif; fill:#1d2330; }
.chart text.inbar { fill:#fff; font-weight:600; paint-order:stroke; stroke:#0006;
  stroke-width:2px; }
.chart text.axis { fill:#5b6475; font-size:11px; }
.status { display:inline-block; padding:0 6px; border-radius:3px; background:#e8ebf0;
  font-size:12px; }
.status.done { background:#dcefdc; } .status.running { background:#dbe7f7; }
.status.failed, .status.model_error, .status.rejected { background:#f7dcdc; }
.status.superseded, .status.expired, .status.invalidated { background:#f3e6c8; }
.status.live { background:#dcefdc; }
.timeline { list-style:none; padding:0; margin:0; }
.timeline > li { background:#fff; border:1px solid var(--line); margin:0 0 10px; padding:8px 12px; }
.timeline .step { display:flex; gap:10px; padding:3px 0; }
.timeline .tag { flex:0 0 72px; font-weight:600; font-size:12px; text-transform:uppercase;
  color:var(--muted); }
pre.answer, pre.out { white-space:pre-wrap; background:#fff; border:1px solid var(--line);
  padding:10px 12px; margin:6px 0; max-height:420px; overflow:auto; }
pre.out { max-height:160px; font-size:12px; }
form.filter { display:flex; gap:8px; align-items:center; flex-wrap:wrap; margin:8px 0; }
form.filter input, form.filter select { padding:3px 6px; font:inherit; }
.side { display:grid; grid-template-columns:1fr 1fr; gap:16px; }
.empty { color:var(--muted); font-style:italic; }
.cls { border-left:10px solid #bab0ac; padding-left:6px; }
"""


def url(*parts: str | int, **query: str | int | None) -> str:
    """A path of quoted parts, with the query parameters that are set."""
    path = "/" + "/".join(quote(str(p), safe=":") for p in parts)
    q = {k: v for k, v in query.items() if v not in (None, "")}
    return path + ("?" + urlencode(q) if q else "")


def link(href: str, text: object) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, text)


def legend(*terms: str) -> Markup:
    items = Markup("").join(Markup("<dt>{}</dt><dd>{}</dd>").format(t, TERMS[t]) for t in terms)
    wide = " wide" if len(terms) > 6 else ""  # two terms a line
    return Markup(
        '<details class="legend" open><summary>Legend</summary><dl class="{}">{}</dl></details>'
    ).format(wide, items)


def status(value: str) -> Markup:
    return Markup('<span class="status {}">{}</span>').format(value.split(":")[0], value)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    table_id: str,
    numeric: Sequence[int] = (),
    row_classes: Sequence[str] | None = None,
    empty: str = "nothing recorded yet",
) -> Markup:
    """A table; ``numeric`` are the column indexes aligned right."""
    head = Markup("").join(
        Markup('<th class="num">{}</th>' if n in numeric else "<th>{}</th>").format(h)
        for n, h in enumerate(headers)
    )
    body = []
    for i, row in enumerate(rows):
        cls = row_classes[i] if row_classes is not None else ""
        cells = Markup("").join(
            Markup('<td class="num">{}</td>' if n in numeric else "<td>{}</td>").format(c)
            for n, c in enumerate(row)
        )
        body.append(Markup('<tr class="{}">{}</tr>').format(cls, cells))
    if not body:
        body.append(
            Markup('<tr><td colspan="{}" class="empty">{}</td></tr>').format(len(headers), empty)
        )
    return Markup('<table id="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>').format(
        table_id, head, Markup("").join(body)
    )


def page(title: str, heading: object, body: Markup, *, sub: object = "", script: str = "") -> str:
    """A whole page. ``script`` is an inline script of this package (never fetched)."""
    nav = Markup(
        '<header class="top"><a class="brand" href="/">wakeful</a>'
        '<a href="/">Agents</a><a href="/cost">Cost</a></header>'
    )
    sub_html = Markup('<p class="sub">{}</p>').format(sub) if sub else Markup("")
    js = Markup("<script>{}</script>").format(Markup(script)) if script else Markup("")
    return str(
        Markup(
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            # No icon to fetch: a browser would otherwise ask for /favicon.ico (a 404).
            '<link rel="icon" href="data:,">'
            "<title>{} · wakeful</title><style>{}</style></head>"
            "<body>{}<main><h1>{}</h1>{}{}</main>{}</body></html>"
        ).format(title, Markup(_CSS), nav, heading, sub_html, body, js)
    )


def usd(v: float) -> str:
    return f"${v:.4f}"


def tokens(v: int) -> str:
    return f"{v:,}"


__all__ = ["TERMS", "Markup", "escape", "legend", "link", "page", "status", "table", "url"]
