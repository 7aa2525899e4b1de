"""The inspecting commands' human output over real recorded wakes: a legend, the window as
a bar by segment, the ledger and the wakes as tables, the first difference in a panel. In a
pipe it is plain text (no escape codes); in a terminal it is styled."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from tests.ui.conftest import Recorded
from wakeful.cli.terminal import LEGEND, _widths
from wakeful.compiler import Ledger

ESC = "\x1b["


def wakeful(recorded: Recorded, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user pipes it: stdout is a pipe, not a terminal."""
    env = {k: v for k, v in recorded.env.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "wakeful.cli.main", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_explain_draws_a_legend_a_segment_bar_and_the_ledger_as_plain_text_in_a_pipe(
    recorded: Recorded,
) -> None:
    ts, agent = recorded.ts, recorded.agent.name
    second = recorded.wakes[1]
    rec = ts.compiles(second.wake_id)[0]
    ledger = Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))
    (call,) = [c for c in ts.model_calls(second.wake_id) if c.call_index == rec.call_index]
    done = wakeful(recorded, "explain", agent, "--wake", str(second.number), "--call", "0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    print(out)
    assert ESC not in out
    lines = out.splitlines()
    assert lines[1] == "legend: " + LEGEND
    bar, key = lines[2], lines[3]
    assert bar.startswith("window ▕") and bar.endswith(f"▏ {ledger.input_tokens:,} tokens")
    # Every segment named beneath the bar with its tokens, in window order.
    named = [f"{k} {v:,}" for k, v in ledger.tokens_by_bucket.items() if v]
    assert all(n in key for n in named), (key, named)
    assert sorted(named, key=key.index) == [
        n for k in ("overhead", "stable", "semi_stable", "summaries", "recent", "evidence", "ask")
        for n in named if n.startswith(f"{k} ")
    ]  # fmt: skip
    assert lines[4] == (
        f"cache  c.read {call.cache_read_input_tokens:,} · c.write "
        f"{call.cache_creation_input_tokens:,} · uncached {call.input_tokens:,} · output "
        f"{call.output_tokens:,} · ${call.cost_usd:.4f}"
    )
    # The widest segment's share of the bar is its share of the window (± rounding).
    width = len(bar) - len("window ▕") - len(f"▏ {ledger.input_tokens:,} tokens")
    stable = ledger.tokens_by_bucket["stable"]
    drawn = bar.count("█") + len(f" stable {stable:,} ")
    assert abs(drawn - stable / ledger.input_tokens * width) <= 2, (bar, width)
    # The ledger: a row per block, ids in window order, then the breakpoints and outcome.
    table = "\n".join(lines[5:])
    rows = sorted(ledger.rows, key=lambda r: (r.position < 0, r.position))
    at = [table.find(r.block_id[:20]) for r in rows]
    assert -1 not in at and at == sorted(at)
    assert lines[-1].startswith("cache hit: read ")


def test_diff_prints_the_first_difference_in_a_panel(recorded: Recorded) -> None:
    agent = recorded.agent.name
    done = wakeful(recorded, "diff", agent, "--wake", "2", "--vs", "1", "--call", "0")
    assert done.returncode == 1, done.stderr  # the windows differ
    print(done.stdout)
    assert ESC not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("╭─ first difference ") and lines[-1].startswith("╰")
    said = " ".join(line.strip("│ ") for line in lines[1:-1])
    assert "position " in said and "cache could hit through '" in said


def test_agent_show_lists_the_wakes_with_a_cost_bar(recorded: Recorded) -> None:
    ts, agent = recorded.ts, recorded.agent.name
    done = wakeful(recorded, "agent", "show", agent)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    assert ESC not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[1].startswith("  spent today (UTC ")
    costs = {w.number: sum(c.cost_usd for c in ts.model_calls(w.wake_id)) for w in ts.wakes(agent)}
    top = max(costs.values())
    for number, cost in costs.items():
        (row,) = [ln for ln in lines if ln.split() and ln.split()[0] == str(number)]
        assert f"${cost:.4f}" in row
        full = row.count("█")
        assert abs(full - cost / top * 24) <= 1, row  # the bar is 24 cells at the top cost


def test_in_a_terminal_the_output_is_styled(recorded: Recorded) -> None:
    """Under a pseudo-terminal rich colours the bar and tables (so the pipe check above is
    not passing only because nothing is ever styled)."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in recorded.env.items() if k not in ("NO_COLOR", "COLUMNS")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "wakeful.cli.main", "explain", recorded.agent.name,
         "--wake", "1", "--call", "0"],
        env={**env, "TERM": "xterm-256color"}, stdout=follower, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=120) == 0
    os.close(leader)
    assert ESC in b"".join(chunks).decode()


def test_segment_widths_are_proportional_and_fill_the_bar() -> None:
    assert _widths([1421, 103, 12, 65], 100) == [89, 6, 1, 4]
    assert sum(_widths([5, 0, 995], 40)) == 40 and _widths([5, 0, 995], 40)[:2] == [1, 0]
    # Narrower than the segments (a tiny terminal): one character each, no endless loop.
    assert _widths([10, 10, 10], -5) == [1, 1, 1]
    assert _widths([0, 0], 10) == [0, 0]
