"""The console in a real browser: headless Chromium loads every page from `wakeful ui`
serving the substrate of real wakes, its scripts run without a console error, the charts
and tables are in the DOM it built, and a screenshot of each page is written to
``$WAKEFUL_UI_SCREENSHOTS`` (else a temporary folder, printed).

Chromium is driven from its command line (``--dump-dom``, ``--screenshot``), so no browser
automation package is needed. CI installs it (.ci/run); elsewhere the test is skipped,
saying so, when it is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ui.conftest import Recorded, seed_knowledge
from tests.ui.dom import Node, parse
from tests.ui.serve import serving_ui
from wakeful.compiler import Ledger
from wakeful.ui.html import url

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (CI installs it: apt-get install -y chromium)",
)

# Flags for a quiet, offline, one-shot browser: no sandbox (tests may run as root), no
# network of its own, no first-run or update work.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
# What Chromium logs for a page's console message or uncaught exception.
CONSOLE = re.compile(r":CONSOLE[:(]|Uncaught")


@dataclass(frozen=True)
class Browser:
    base: str
    profile: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        assert CHROMIUM is not None
        n = len(list(self.profile.parent.glob(f"{self.profile.name}-*")))
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}-{n}", *args],
            capture_output=True,
            text=True,
            timeout=120,  # a failure bound only
            check=False,
        )

    def dom(self, path: str, *args: str) -> tuple[Node, list[str]]:
        """The DOM after the page's scripts ran, and the page's console lines (``args``:
        more of Chromium's flags for the same load)."""
        done = self.run("--dump-dom", *args, self.base + path)
        assert done.returncode == 0, done.stderr[-2000:]
        return parse(done.stdout), [
            line for line in done.stderr.splitlines() if CONSOLE.search(line)
        ]

    def dom_and_screenshot(self, path: str, to: Path) -> tuple[Node, list[str]]:
        """:meth:`dom`, with a screenshot of the same load written to ``to`` (one browser
        start per page; no script of the console reads the window's size)."""
        loaded = self.dom(path, f"--screenshot={to}", "--window-size=1280,900")
        assert to.stat().st_size > 0, path
        return loaded

    def screenshot(self, path: str, to: Path, height: int = 900) -> None:
        done = self.run(f"--screenshot={to}", f"--window-size=1280,{height}", self.base + path)
        assert done.returncode == 0 and to.stat().st_size > 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def served(recorded: Recorded) -> Iterator[str]:
    """`wakeful ui` as a user runs it, on a free local port, over the recorded substrate."""
    with serving_ui(recorded.env) as server:
        yield server.base
    assert server.returncode == 0, server.said
    assert "wakeful ui on http://127.0.0.1" in server.said and "wakeful ui stopped" in server.said


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    named = os.environ.get("WAKEFUL_UI_SCREENSHOTS")
    folder = Path(named) if named else tmp_path_factory.mktemp("ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the console: {folder}")
    return folder


def rows(doc: Node, table_id: str) -> list[Node]:
    return doc.one("table", id=table_id).one("tbody").all("tr")


def test_the_console_errs_on_a_page_with_a_script_error(tmp_path: Path) -> None:
    """The console check below can fail: a page whose script throws is caught by it."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><p id=x>x</p><script>notDefined();</script>")
    browser = Browser(base="file://", profile=tmp_path / "profile")
    _, console = browser.dom_and_screenshot(str(page), tmp_path / "broken.png")
    assert any("Uncaught ReferenceError" in line for line in console), console


def test_every_page_loads_in_chromium_without_console_errors(
    recorded: Recorded, served: str, shots: Path, tmp_path: Path
) -> None:
    ts = recorded.ts
    first, second = recorded.wakes
    ledger_rows = {
        w.wake_id: len(
            Ledger.model_validate_json(ts.get_blob(ts.compiles(w.wake_id)[0].ledger_hash)).rows
        )
        for w in recorded.wakes
    }
    browser = Browser(base=served, profile=tmp_path / "profile")

    def check_agents(doc: Node) -> None:
        (row,) = rows(doc, "agents")
        assert row.all("a")[0].text() == recorded.agent.name

    def check_agent(doc: Node) -> None:
        assert [r.all("td")[0].text() for r in rows(doc, "wakes")] == ["#2", "#1"]

    def check_wake(doc: Node) -> None:
        assert len(doc.one("ol", id="timeline").all("li", class_="call")) == first.model_calls
        assert doc.all("div", class_="tool") and doc.one("pre", id="answer").text()

    def check_call(wake_id: str) -> Callable[[Node], None]:
        def check(doc: Node) -> None:
            assert len(doc.one("svg", id="buckets").all("rect", class_="part")) >= 2
            assert doc.one("svg", id="buckets").all("g", class_="mark")  # breakpoints drawn
            assert len(doc.one("svg", id="cache").all("rect", class_="part")) >= 1
            n = ledger_rows[wake_id]
            assert len(rows(doc, "ledger")) == n
            # Filled in by the page's own script: it ran in the browser.
            assert doc.one("span", id="ledger-count").text() == f"{n} of {n} rows"

        return check

    def check_diff(doc: Node) -> None:
        assert len(doc.one("table", id="diff").all("tr", class_="first-diff")) == 1
        assert doc.one("svg", id="buckets-a") and doc.one("svg", id="buckets-b")

    def check_cost(doc: Node) -> None:
        assert doc.one("svg", id="cost-by-day").all("rect", class_="part")
        assert doc.one("svg", id="tokens-by-day").all("rect", class_="part")
        assert len(rows(doc, "cost")) == 1

    def check_session(doc: Node) -> None:
        svg = doc.one("svg", id="session-timeline")
        calls = sum(len(ts.compiles(w.wake_id)) for w in recorded.wakes)
        assert len(svg.all("circle", class_="call")) == calls == len(rows(doc, "session-calls"))
        assert svg.all("rect", class_="ttl") and svg.all("g", class_="pacing")
        assert len(rows(doc, "pacing")) == len(recorded.wakes)

    # What the wakes wrote (handoff notes), and knowledge of every other kind and state.
    session = ts.wakes(recorded.agent.name)[0].session_id
    seed_knowledge(ts, recorded.agent.name, session)

    def check_knowledge(doc: Node) -> None:
        assert len(rows(doc, "handoffs")) == len(ts.handoffs(recorded.agent.name)) >= 2
        assert len(rows(doc, "summaries")) == 1
        assert len(rows(doc, "decisions")) == 3 and len(rows(doc, "memories")) == 2

    pages: list[tuple[str, str, Callable[[Node], None]]] = [
        ("1-agents", "/", check_agents),
        ("2-agent", url("agents", recorded.agent.name), check_agent),
        ("3-wake", url("wakes", first.wake_id), check_wake),
        ("4-call-first-wake", url("calls", first.wake_id, 0), check_call(first.wake_id)),
        ("5-call-second-wake", url("calls", second.wake_id, 0), check_call(second.wake_id)),
        ("6-diff", url("diff", a=first.wake_id, n=0, b=second.wake_id, m=0), check_diff),
        ("7-cost", "/cost", check_cost),
        ("9-session", url("sessions", recorded.agent.name, session), check_session),
        ("10-knowledge", url("knowledge", recorded.agent.name), check_knowledge),
    ]
    for name, path, check in pages:
        doc, console = browser.dom_and_screenshot(path, shots / f"{name}.png")
        assert console == [], (path, console)
        assert doc.one("h1").text().strip(), path
        check(doc)
    # The whole of a call's page: the charts, the breakpoints and the ledger below them.
    browser.screenshot(pages[4][1], shots / "8-call-second-wake-whole.png", height=2600)
    browser.screenshot(pages[7][1], shots / "9-session-whole.png", height=1700)
    browser.screenshot(pages[8][1], shots / "10-knowledge-whole.png", height=1500)
    assert {f"{n}.png" for n, _, _ in pages} <= {p.name for p in shots.glob("*.png")}
