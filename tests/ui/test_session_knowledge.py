"""The session and knowledge pages over real substrates: a session's calls, cache classes,
TTLs and pacing are what the ledgers and model-call rows hold (and `wakeful explain` says);
what an agent knows is what the repository's reads return, with its state."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from tests.ui.conftest import Recorded, seed_knowledge
from tests.ui.dom import Node
from tests.ui.test_app import LOCAL, cli_json, get
from wakeful.compiler import Ledger
from wakeful.compiler.cache_outcome import TTL_SECONDS
from wakeful.substrate.store import Store
from wakeful.ui import data, pages
from wakeful.ui.app import create_app
from wakeful.ui.html import url


@pytest.fixture
def client(recorded: Recorded) -> Iterator[TestClient]:
    with TestClient(create_app(recorded.ts), base_url=LOCAL) as c:
        yield c


def cells(row: Node) -> list[str]:
    return [c.text() for c in row.all("td")]


def body_rows(doc: Node, table_id: str) -> list[Node]:
    return doc.one("table", id=table_id).one("tbody").all("tr")


def test_the_session_page_is_the_sessions_calls_as_recorded(
    recorded: Recorded, client: TestClient
) -> None:
    ts, agent = recorded.ts, recorded.agent.name
    (session,) = {w.session_id for w in ts.wakes(agent)}
    # Linked from the agent page and from each wake's page.
    wakes = get(client, url("agents", agent))
    assert {r.all("td")[1].one("a").attrs["href"] for r in body_rows(wakes, "wakes")} == {
        url("sessions", agent, session)
    }
    for r in recorded.wakes:
        wake = get(client, url("wakes", r.wake_id))
        assert wake.one("a", id="session").attrs["href"] == url("sessions", agent, session)

    doc = get(client, url("sessions", agent, session))
    rows = body_rows(doc, "session-calls")
    svg = doc.one("svg", id="session-timeline")
    marks = svg.all("circle", class_="call")
    expected = []  # (wake, call place, class, read, write, uncached, cost, ttl seconds)
    for r in recorded.wakes:
        made = {c.call_index: c for c in ts.model_calls(r.wake_id)}
        for n, rec in enumerate(ts.compiles(r.wake_id)):
            said = cli_json(recorded, ["explain", agent, "--wake", str(r.number),
                                       "--call", str(n)])  # fmt: skip
            c = made[rec.call_index]
            ttls = [bp["ttl"] for bp in said["breakpoints"] if bp["ttl"]]
            expected.append((
                f"#{r.number}", str(n), said["cache_outcome"]["cache_class"],
                f"{c.cache_read_input_tokens:,}", f"{c.cache_creation_input_tokens:,}",
                f"{c.input_tokens:,}", f"${c.cost_usd:.4f}",
                TTL_SECONDS[ttls[-1]] if ttls else None,
            ))  # fmt: skip
    assert len(expected) >= 3  # two wakes, the first with a tool call
    assert [(*cells(r)[2:9],) for r in rows] == [e[:7] for e in expected]
    assert [(m.attrs["data-call"], m.attrs["data-class"]) for m in marks] == [
        (f"{e[0]}·{e[1]}", e[2]) for e in expected
    ]
    assert {"cold_start", "hit"} <= {e[2] for e in expected}
    ttl = svg.all("rect", class_="ttl")
    bands = {b.attrs["data-call"]: float(b.attrs["data-ttl"]) for b in ttl}
    assert bands == {f"{e[0]}·{e[1]}": e[7] for e in expected if e[7] is not None}
    assert bands  # the simulator's Anthropic-style windows set explicit TTLs
    # Each call's small stacked bar carries its read / write / uncached tokens.
    for e in expected:
        drawn = {
            p.attrs["data-part"]: int(p.attrs["data-value"])
            for p in svg.all("rect", class_="part", **{"data-column": f"{e[0]}·{e[1]}"})
        }
        want = dict(zip(("cache_read", "cache_write", "uncached"), e[3:6], strict=True))
        assert drawn == {k: int(v.replace(",", "")) for k, v in want.items() if v != "0"}

    # Each wake's pacing decision with the prices its first ledger recorded.
    pacing = body_rows(doc, "pacing")
    assert len(pacing) == len(recorded.wakes)
    heads = [h.text() for h in doc.one("table", id="pacing").all("th")]
    for row, r in zip(pacing, recorded.wakes, strict=True):
        first = Ledger.model_validate_json(ts.get_blob(ts.compiles(r.wake_id)[0].ledger_hash))
        recorded_prices = first.decisions["pacing.prices_usd"]
        prices = data.parse_prices(recorded_prices)
        # Read back whole: the option prices as PacingDecision.prices() wrote them.
        assert (
            " ".join(
                f"{k}={'n/a' if p.usd is None else f'{p.usd:.6f}'}"
                + ("" if p.allowed or p.usd is None else "(not allowed)")
                for k, p in prices.items()
            )
            == recorded_prices
        )
        shown = dict(zip(heads, cells(row), strict=True))
        assert shown["wake"] == f"#{r.number}" and shown["chose"] == first.decisions["pacing"]
        assert {k: shown[f"{k} ($)"] for k in prices} == {
            k: "n/a" if p.usd is None else f"{p.usd:.6f}" + ("" if p.allowed else " (not allowed)")
            for k, p in prices.items()
        }
        assert shown["why"].startswith("pacing ")
    assert len(svg.all("g", class_="pacing")) == len(recorded.wakes)
    assert body_rows(doc, "keep-warm")[0].one("td", class_="empty")  # none was sent


def test_keep_warm_calls_and_idle_pacing_are_read_from_the_next_wakes_ledger(
    recorded: Recorded,
) -> None:
    """The notes the agent workflow writes while idle (sessions.py: ``while idle at T: ...``
    and ``keep-warm call N at T: ...``) come back as priced decisions and pings at their own
    times, drawn and listed; notes from before they carried a time fall back to the wake's."""
    ts, agent = recorded.ts, recorded.agent.name
    second = recorded.wakes[1]
    wake = ts.wake_by_number(agent, second.number)
    rec = ts.compiles(second.wake_id)[0]
    ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    decided = rec.as_of - timedelta(minutes=9)
    sent = rec.as_of - timedelta(minutes=5)
    idle = (
        f"while idle at {decided.isoformat()}: pacing keep_warm: next wake expected 9m after"
        " the last cache use > "
        "session TTL 5m; keep_warm $0.001200 (2 pings); handoff $0.004000 [not allowed: "
        "the session is warm and policy.handoff_when_warm is off]"
    )
    noted = (
        ledger.with_note(idle)
        .with_note(
            f"keep-warm call 1 at {sent.isoformat()}: read 4096 cached tokens, wrote 0, $0.000410"
        )
        .with_note("keep-warm call 2: read 4096 cached tokens, wrote 0, $0.000410")
        .with_note("keep-warm skipped: the session cache had already expired")
    )
    p, k, other = data._orchestrator(wake, rec.as_of, noted)
    assert [(x.choice, x.idle) for x in p] == [(ledger.decisions["pacing"], False),
                                                ("keep_warm", True)]  # fmt: skip
    assert p[1].prices == {
        "keep_warm": data.Price(0.0012),
        "handoff": data.Price(0.004, allowed=False),
    }
    assert p[1].at == decided
    assert [(x.ping, x.read, x.wrote, x.cost_usd, x.at) for x in k] == [
        (1, 4096, 0, 0.00041, sent),
        (2, 4096, 0, 0.00041, rec.as_of),  # an older note, without its time
    ]
    k = k[:1]
    assert [n for _, n in other] == ["keep-warm skipped: the session cache had already expired"]

    view = data.session_view(ts, agent, wake.session_id)
    view = dataclasses.replace(view, pacing=[*view.pacing, *p[1:]], keep_warm=k, notes=other)
    from tests.ui.dom import parse

    doc = parse(pages.session_page(view))
    (ping,) = doc.one("svg", id="session-timeline").all("g", class_="keep-warm")
    assert "$0.000410" in ping.text()
    assert cells(body_rows(doc, "keep-warm")[0]) == ["#2", "1", "4,096", "0", "$0.000410"]
    assert "cache had already expired" in doc.text()


def test_an_unknown_session_is_a_one_line_404(recorded: Recorded, client: TestClient) -> None:
    said = get(client, url("sessions", recorded.agent.name, "scout:nope"), 404)
    assert "no session 'scout:nope'" in said.one("p", id="error").text()
    said = get(client, url("knowledge", "ghost"), 404)
    assert "no agent 'ghost'" in said.one("p", id="error").text()


def test_the_knowledge_page_lists_what_the_repository_holds(store: Store) -> None:
    ts = store.tenant(f"ui-k-{uuid.uuid4().hex[:8]}")
    agent = "keeper"
    ts.upsert_agent(agent, model="m", provider="simulator", instructions="", spec={})
    seeded = seed_knowledge(ts, agent, "keeper:s1")
    events, summary = seeded.events, seeded.summary
    with TestClient(create_app(ts), base_url=LOCAL) as client:
        assert get(client, url("agents", agent)).one("a", id="knowledge").attrs["href"] == url(
            "knowledge", agent
        )
        doc = get(client, url("knowledge", agent))
    (h,) = body_rows(doc, "handoffs")
    assert [cells(h)[n] for n in (1, 2, 4)] == ["keeper:2", "keeper:s1", "ship the report"]
    assert cells(h)[6] == "review; send"
    (s,) = body_rows(doc, "summaries")
    assert cells(s)[:5] == [str(summary.id), "1", f"{events[0].id}–{events[2].id}", "3", "live"]
    decisions = {cells(r)[0]: cells(r) for r in body_rows(doc, "decisions")}
    assert decisions["D1"][2] == str(events[0].id)
    assert decisions["D1"][5] == "superseded by D2"
    assert decisions["D2"][5] == "live" and decisions["D2"][4] == "never"
    assert decisions["D3"][5] == "expired"
    memories = [cells(r) for r in body_rows(doc, "memories")]
    assert [(m[1], m[2], m[6]) for m in memories] == [
        ("owner", "Ann owns it", "unverified"),
        ("owner", "Bo owns it", "verified"),
    ]
    assert memories[0][9].startswith("invalidated") and memories[1][9] == "live"
    assert memories[1][8] == f"#{memories[0][0]}"  # provenance: it replaced the first
    cards = {c.one("span").text(): c.one("b").text() for c in doc.all("div", class_="card")}
    assert cards == {"handoff notes": "1", "summaries live": "1", "decisions live": "1",
                     "memories live": "1"}  # fmt: skip
