"""Which items of a span an agent's last request holds whole in its cached prefix, and when
continuing that request is cheaper than sending the span again."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from wakeful.compiler.ledger import Breakpoint, Ledger, LedgerRow
from wakeful.consolidation.items import SpanItem
from wakeful.consolidation.prompt import SummaryAsk, continued_summary_request, in_cached_prefix

AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
TEXTS = {
    1: "Cut over billing to Postgres 16 at 02:00 UTC. " * 20,
    2: "Staging credentials arrive with ticket OPS-311. " * 20,
    3: "ERROR: read_file failed with exit status 40",
    4: "Done: cutover checklist written.",
}


def _row(event: int, position: int, status: str = "included") -> LedgerRow:
    return LedgerRow(
        f"ev:{event}", "turn", "", "recent", status, "", "", "", 100, 0, position, 0.0, "h"
    )


def _ledger(input_tokens: int) -> Ledger:
    mark = Breakpoint(
        name="rolling",
        block_id="ev:2",
        location="/messages/2/content/0",
        ttl="5m",
        explicit=True,
        prefix_hash="p",
        prefix_tokens=300,
        blocks_since_previous=3,
    )
    rows = (_row(1, 0), _row(3, 1, "collapsed"), _row(2, 2), _row(4, 3))
    return Ledger.model_construct(breakpoints=(mark,), rows=rows, input_tokens=input_tokens)


def _window() -> dict[str, Any]:
    content = [{"type": "text", "text": TEXTS[n]} for n in (1, 2, 4)]
    return {
        "model": "m",
        "max_tokens": 8192,
        "system": [{"type": "text", "text": "You are ops."}],
        "messages": [{"role": "user", "content": content}],
    }


ITEMS = [SpanItem(id=n, kind="turn", text=t, at=AT, role="user") for n, t in TEXTS.items()]


def _count(text: str) -> int:
    return len(text) // 4


def test_only_items_sent_whole_before_the_last_entry_are_above() -> None:
    # 3 was collapsed to a note; 4 follows the last cache entry.
    assert in_cached_prefix(_ledger(400), _window(), ITEMS) == {1, 2}
    cut = _window()
    cut["messages"][0]["content"][0]["text"] = TEXTS[1][:50]  # shortened in the window
    assert in_cached_prefix(_ledger(400), cut, ITEMS) == {2}
    unwritten = _ledger(400).model_copy(
        update={"breakpoints": (_ledger(400).breakpoints[0].model_copy(update={"ttl": "none"}),)}
    )
    assert in_cached_prefix(unwritten, _window(), ITEMS) == set()


def test_the_span_is_read_from_cache_only_when_that_costs_less() -> None:
    ask = SummaryAsk(1, ITEMS, [], [], 600)
    body = continued_summary_request("anthropic", _window(), _ledger(400), "ok", ask, _count, 0.1)
    assert body is not None
    assert body["messages"][:1] == _window()["messages"]
    text = body["messages"][-1]["content"]
    assert TEXTS[1].strip() not in text and TEXTS[3] in text and TEXTS[4] in text
    # A window a hundred times the span: reading it costs more than the span alone.
    huge = continued_summary_request(
        "anthropic", _window(), _ledger(100_000), "ok", ask, _count, 0.1
    )
    assert huge is None
