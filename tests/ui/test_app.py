"""The console's pages over a substrate written by real wakes: every page renders, and its
numbers are the ledger's and the model calls' — the rows `wakeful explain` and
`wakeful agent show` read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.ui.conftest import Recorded
from tests.ui.dom import Node, parse, parts
from wakeful.cli.main import app as cli
from wakeful.ui.app import create_app
from wakeful.ui.html import url
from wakeful.workflows.spend import day_start
from wakeful.workflows.state import workflow_id

LOCAL = "http://127.0.0.1"  # the console answers only to the names it is served as


@pytest.fixture
def client(recorded: Recorded) -> Iterator[TestClient]:
    with TestClient(create_app(recorded.ts), base_url=LOCAL) as c:
        yield c


def get(client: TestClient, path: str, status: int = 200) -> Node:
    r = client.get(path)
    assert r.status_code == status, (path, r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("text/html")
    return parse(r.text)


def cli_json(recorded: Recorded, args: list[str]) -> dict:  # type: ignore[type-arg]
    out = CliRunner().invoke(cli, [*args, "--json"], env=recorded.env)
    assert out.exit_code == 0, (out.stdout, out.stderr)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def pages(recorded: Recorded) -> list[str]:
    first, second = recorded.wakes
    return [
        "/",
        url("agents", recorded.agent.name),
        url("wakes", first.wake_id),
        url("calls", first.wake_id, 0),
        url("calls", second.wake_id, 0),
        url("diff", a=first.wake_id, n=0, b=second.wake_id, m=0),
        "/cost",
    ]


def test_every_page_has_a_heading_a_legend_and_no_outside_resource(
    recorded: Recorded, client: TestClient
) -> None:
    for path in pages(recorded):
        doc = get(client, path)
        assert doc.one("h1").text().strip(), path
        legend = doc.one("details", class_="legend")
        assert legend.all("dt"), path
        # Nothing is fetched from elsewhere: no external script, style sheet or image.
        for node in doc.walk():
            for attr in ("src", "href"):
                assert not node.attrs.get(attr, "").startswith(("http:", "https:", "//")), (
                    path,
                    node,
                )


def test_the_call_page_shows_the_ledger_and_usage_as_recorded(
    recorded: Recorded, client: TestClient
) -> None:
    """The bars and the table carry the numbers `wakeful explain` prints and the model-call
    rows hold: tokens per bucket, breakpoints, every ledger row, cache read/write, cost."""
    ts, agent = recorded.ts, recorded.agent.name
    for result in recorded.wakes:
        calls = ts.model_calls(result.wake_id)
        assert calls
        for n, call in enumerate(calls):
            ledger = cli_json(recorded, ["explain", agent, "--wake", str(result.number),
                                         "--call", str(n)])  # fmt: skip
            doc = get(client, url("calls", result.wake_id, n))
            buckets = doc.one("svg", id="buckets")
            assert parts(buckets) == {k: v for k, v in ledger["tokens_by_bucket"].items() if v}
            assert int(buckets.attrs["data-total"]) == ledger["input_tokens"]
            marks = {m.attrs["data-mark"]: int(m.attrs["data-at"]) for m in buckets.all("g")}
            assert marks == {bp["name"]: bp["prefix_tokens"] for bp in ledger["breakpoints"]}
            # The stable breakpoint is drawn where the stable segment ends in the bar.
            (stable,) = buckets.all("rect", class_="part", **{"data-part": "stable"})
            (mark,) = buckets.all("g", class_="mark", **{"data-mark": "stable"})
            end = float(stable.attrs["x"]) + float(stable.attrs["width"])
            assert float(mark.one("line").attrs["x1"]) == pytest.approx(end, abs=0.02)
            assert len(doc.one("table", id="breakpoints").one("tbody").all("tr")) == len(
                ledger["breakpoints"]
            )
            rows = doc.one("table", id="ledger").one("tbody").all("tr")
            assert [r.all("td")[1].text() for r in rows] == [
                r[0] for r in sorted(ledger["rows"], key=lambda r: (r[10] < 0, r[10]))
            ]
            assert parts(doc.one("svg", id="cache")) == {
                k: v
                for k, v in {
                    "cache_read": call.cache_read_input_tokens,
                    "cache_write": call.cache_creation_input_tokens,
                    "uncached": call.input_tokens,
                }.items()
                if v
            }
            cards = {c.one("span").text(): c.one("b").text() for c in doc.all("div", class_="card")}
            assert cards["cost"] == f"${call.cost_usd:.4f}"
            assert cards["output"] == f"{call.output_tokens:,}"
            # The cache outcome `wakeful explain` gives, in the same words.
            outcome = ledger["cache_outcome"]
            shown = doc.one("p", id="cache-outcome").text()
            assert shown == f"cache {outcome['cache_class']}: {outcome['detail']}"
    # The second wake read from the cache what the first one wrote: the page shows both.
    first, second = (ts.model_calls(r.wake_id)[0] for r in recorded.wakes)
    assert first.cache_creation_input_tokens > 0 and second.cache_read_input_tokens > 0


def test_agent_wake_and_cost_pages_sum_the_model_calls(
    recorded: Recorded, client: TestClient
) -> None:
    ts, agent = recorded.ts, recorded.agent.name
    calls = [c for r in recorded.wakes for c in ts.model_calls(r.wake_id)]
    shown = cli_json(recorded, ["agent", "show", agent])

    home = get(client, "/").one("table", id="agents").one("tbody").one("tr").all("td")
    assert home[0].text() == agent and home[2].text() == "done"
    assert home[3].text() == "1" and home[4].text() == "2"  # one session, two wakes
    assert home[6].text() == f"${shown['spent_today']['usd']:.4f}"
    assert home[7].text() == f"{shown['spent_today']['tokens']:,}"

    wakes = get(client, url("agents", agent)).one("table", id="wakes").one("tbody").all("tr")
    assert [w.all("td")[0].text() for w in wakes] == ["#2", "#1"]  # newest first
    for row, result in zip(wakes, reversed(recorded.wakes), strict=True):
        cells = [c.text() for c in row.all("td")]
        own = ts.model_calls(result.wake_id)
        assert cells[4] == str(len(own)) == str(result.model_calls)
        assert cells[8] == f"${sum(c.cost_usd for c in own):.4f}" == f"${result.cost_usd:.4f}"

    first = recorded.wakes[0]
    doc = get(client, url("wakes", first.wake_id))
    steps = doc.one("ol", id="timeline").all("li", class_="call")
    assert len(steps) == first.model_calls
    assert len(doc.all("div", class_="tool")) == first.tool_calls >= 1
    assert doc.one("pre", id="answer").text() == first.output
    assert doc.one("pre", id="ask").text().endswith("list_dir . please")
    assert not doc.all("a", id="temporal")  # no Temporal UI known: no link
    ui = "http://127.0.0.1:8233"
    linking = create_app(ts, temporal_ui=ui, namespace="default")
    with TestClient(linking, base_url=LOCAL) as linked:
        (to_temporal,) = get(linked, url("wakes", first.wake_id)).all("a", id="temporal")
    wid = quote(workflow_id(ts.name, agent), safe="")
    assert to_temporal.attrs["href"] == f"{ui}/namespaces/default/workflows/{wid}"

    cost = get(client, "/cost")
    (row,) = cost.one("table", id="cost").one("tbody").all("tr")
    cells = [c.text() for c in row.all("td")]
    day = day_start(min(w.started_at for w in ts.wakes(agent)))
    assert cells[:3] == [f"{day:%Y-%m-%d}", agent, str(len(calls))]
    assert cells[3:7] == [
        f"{sum(c.input_tokens for c in calls):,}",
        f"{sum(c.cache_creation_input_tokens for c in calls):,}",
        f"{sum(c.cache_read_input_tokens for c in calls):,}",
        f"{sum(c.output_tokens for c in calls):,}",
    ]
    assert cells[7] == f"${sum(c.cost_usd for c in calls):.4f}"
    assert parts(cost.one("svg", id="cost-by-day")) == pytest.approx(
        {agent: sum(c.cost_usd for c in calls)}
    )
    if day == day_start(datetime.now(UTC)):  # the same day the spend caps count
        assert cells[7] == f"${shown['spent_today']['usd']:.4f}"


def test_the_diff_page_names_what_wakeful_diff_names(
    recorded: Recorded, client: TestClient
) -> None:
    first, second = recorded.wakes
    agent = recorded.agent.name
    out = CliRunner().invoke(
        cli, ["diff", agent, "--wake", "2", "--vs", "1", "--call", "0", "--json"], env=recorded.env
    )
    assert out.exit_code == 1, (out.stdout, out.stderr)  # the windows differ
    said = json.loads(out.stdout)
    doc = get(client, url("diff", a=first.wake_id, n=0, b=second.wake_id, m=0))
    verdict = " ".join(doc.one("p", id="verdict").text().split())
    assert f"position {said['position']}" in verdict and said["block_id"] in verdict
    assert said["reason"] in verdict
    cache = doc.one("p", id="cache-verdict").text()
    assert said["cache_hit_through"] and said["cache_hit_through"] in cache
    first_diff = doc.one("table", id="diff").all("tr", class_="first-diff")
    assert len(first_diff) == 1 and first_diff[0].all("td")[0].text() == str(said["position"])
    # The later call's page links to the same comparison.
    call = get(client, url("calls", second.wake_id, 0))
    (to_diff,) = [a for a in call.all("a") if a.text() == "diff with wake #1, call 0"]
    linked = get(client, to_diff.attrs["href"]).one("p", id="verdict").text()
    assert linked == doc.one("p", id="verdict").text()


def test_the_ledger_filters_by_status_segment_and_text(
    recorded: Recorded, client: TestClient
) -> None:
    wake_id = recorded.wakes[1].wake_id
    every = get(client, url("calls", wake_id, 0)).one("table", id="ledger").one("tbody").all("tr")
    stable = get(client, url("calls", wake_id, 0, segment="stable"))
    rows = stable.one("table", id="ledger").one("tbody").all("tr")
    assert 0 < len(rows) < len(every)
    assert {r.all("td")[4].text() for r in rows} == {"stable"}
    none = get(client, url("calls", wake_id, 0, q="no-such-block-anywhere"))
    assert none.one("table", id="ledger").one("td", class_="empty")


def test_bad_addresses_are_one_line_pages(recorded: Recorded, client: TestClient) -> None:
    wake_id = recorded.wakes[0].wake_id
    for path, code, said in [
        ("/agents/ghost", 404, "no agent 'ghost'"),
        ("/wakes/ghost:1", 404, "no wake 'ghost:1'"),
        (url("calls", wake_id, 99), 404, "call(s), not 99"),
        (url("calls", wake_id, "x"), 400, "n: input should be a valid integer"),
        (url("diff", a=wake_id, n="first", b=wake_id), 400, "n: input should be a valid"),
        ("/nothing/here", 404, "Not Found"),
    ]:
        text = get(client, path, code).one("p", id="error").text()
        assert said in text and "\n" not in text, text
    # Read-only: nothing but reads is answered.
    refused = client.post("/", content=b"")
    assert refused.status_code == 405 and "only reads" in refused.text


def test_the_diff_page_without_both_wakes_asks_for_them(client: TestClient) -> None:
    form = get(client, url("diff", a="scout:1")).one("form", id="diff-form")
    assert [i.attrs["name"] for i in form.all("input")] == ["a", "n", "b", "m"]
    assert form.all("input")[0].attrs["value"] == "scout:1"


def test_the_wakes_of_an_agent_come_a_page_at_a_time(recorded: Recorded) -> None:
    from wakeful.ui import data

    first = data.agent_wakes(recorded.ts, recorded.agent.name, limit=1)
    assert [r.wake.number for r in first.rows] == [2] and first.total == 2
    assert first.older == 2
    rest = data.agent_wakes(recorded.ts, recorded.agent.name, before=first.older, limit=1)
    assert [r.wake.number for r in rest.rows] == [1] and rest.older is None


def test_a_token_is_required_on_every_request_when_set(recorded: Recorded) -> None:
    with TestClient(create_app(recorded.ts, token="s3cret"), base_url=LOCAL) as c:
        assert c.get("/").status_code == 401
        assert c.get("/cost", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/cost", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        # Given once in the address, it moves into a cookie and out of the address.
        first = c.get("/cost?token=s3cret&x=1", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/cost?x=1"
        assert "wakeful_ui_token" in first.headers["set-cookie"]
        assert c.get("/cost").status_code == 200  # the cookie carries it from there
        c.cookies.clear()
        assert c.get(url("agents", recorded.agent.name)).status_code == 401


def test_call_minus_one_is_the_last_call_as_with_explain(
    recorded: Recorded, client: TestClient
) -> None:
    first = recorded.wakes[0]
    last = get(client, url("calls", first.wake_id, -1)).one("h1").text()
    assert last == f"Call {first.model_calls - 1} of wake {first.wake_id}"
