"""The code layers through the public API: a work directory's code map in the window (a
signature changed between two wakes of one session is seen by the second, and an
unchanged file is not parsed again), raw code read by symbol with the file's version, and
layers' priorities and shares enforced by the compiler and named in the ledger."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.e2e.harness import RunWakes, message, running_worker
from wakeful.agents import Agent, AgentRegistry
from wakeful.code_outline import file_version
from wakeful.code_tools import READ_CODE
from wakeful.compiler.blocks import Block, BlockKind, Stability
from wakeful.compiler.ledger import Ledger
from wakeful.replay import recompile
from wakeful.substrate.code_map import CodeMap
from wakeful.substrate.sources import SourceContext
from wakeful.substrate.store import Store, TenantStore
from wakeful.testing.simulator.server import SimulatorServer
from wakeful.worker.client import wake
from wakeful.worker.serve import register_agent

GREET = '''"""Greetings."""


class Greeter:
    def greet(self, name: str) -> str:
        return f"hello {name}"


def main() -> None:
    print(Greeter().greet("world"))
'''


def small_tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "greet.py").write_text(GREET, encoding="utf-8")
    (root / "pkg" / "util.py").write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    (root / "README.md").write_text("# Tree\n", encoding="utf-8")
    return root


def window_of(ts: TenantStore, wake_id: str) -> tuple[str, Ledger]:
    """The wake's first window as sent (a replay of it gives the same bytes) and its ledger."""
    rec = min(ts.compiles(wake_id), key=lambda c: c.call_index)
    outcome = recompile(ts, rec)
    assert outcome.identical, outcome.summary()
    sent = json.loads(ts.get_blob(rec.window_hash))
    return json.dumps(sent), Ledger.model_validate_json(ts.get_blob(rec.ledger_hash))


def test_the_code_map_lists_files_symbols_and_versions_in_path_order(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "tree")
    (tree / "native.rs").write_text("fn main() {}\n", encoding="utf-8")
    code_map = CodeMap(str(tree))
    lines = code_map.text().splitlines()
    version = file_version((tree / "pkg" / "greet.py").read_bytes())
    assert lines[0] == f"Code map of {tree} (2 files, 4 symbols; version = hash of the file):"
    assert lines[1:6] == [
        f"pkg/greet.py [version {version}, 10 lines]",
        "  class Greeter  L4-6",
        "    def greet(self, name: str) -> str  L5-6",
        "  def main() -> None  L9-10",
        f"pkg/util.py [version {file_version((tree / 'pkg' / 'util.py').read_bytes())}, 2 lines]",
    ]
    assert lines[-1] == "not mapped (no outline for these languages): 1 .rs"
    assert code_map.text() == "\n".join(lines)  # the same bytes while the tree is unchanged
    assert code_map.parses == 2  # and nothing parsed again


def test_a_tree_over_the_maps_budget_names_what_it_left_out(tmp_path: Path) -> None:
    tree = tmp_path / "big"
    tree.mkdir()
    for i in range(40):
        body = "".join(f"def f{i}_{j}(a: int, b: int) -> int:\n    return a\n" for j in range(5))
        (tree / f"m{i:02}.py").write_text(body, encoding="utf-8")
    text = CodeMap(str(tree), max_tokens=400).text()
    assert len(text) <= 400 * 3
    shown = [line for line in text.splitlines() if line.startswith("m") and "[version" in line]
    assert shown and shown[0].startswith("m00.py")  # path order: the first files whole
    last = text.splitlines()[-1]
    left = 40 - len(shown)
    assert last.startswith(
        f"left out (code map budget of 400 tokens): {left} files: m{len(shown):02}.py"
    )


async def test_a_changed_signature_between_two_wakes_of_a_session_is_seen_by_the_second(
    store: Store,
    agent: Agent,
    temporal_dev: WorkflowEnvironment,
    sim: SimulatorServer,
    tmp_path: Path,
) -> None:
    tree = small_tree(tmp_path / "tree")
    code_map = CodeMap(str(tree))
    a = replace(agent, context_sources=(code_map,))
    ts = store.tenant(a.tenant)
    client = temporal_dev.client
    async with running_worker(client, store, AgentRegistry([a]), sim, uuid.uuid4().hex) as q:
        first = await wake(client, a.runtime(), message("what does greet take?"), q)
        parsed = code_map.parses
        greet = tree / "pkg" / "greet.py"
        greet.write_text(
            GREET.replace("name: str) -> str", "name: str, loud: bool = False) -> str"),
            encoding="utf-8",
        )
        second = await wake(client, a.runtime(), message("and now?"), q)
    assert second.session_id == first.session_id
    assert code_map.parses == parsed + 1  # only the changed file was parsed again

    before, _ = window_of(ts, first.wake_id)
    after, _ = window_of(ts, second.wake_id)
    assert "def greet(self, name: str) -> str" in before
    assert "loud" not in before
    assert (
        "def greet(self, name: str, loud: bool=False) -> str" in after
    )  # as ast.unparse spells it
    assert f"pkg/greet.py [version {file_version(greet.read_bytes())}" in after
    assert "def shout(text: str) -> str" in after


async def test_a_section_read_by_symbol_names_the_files_version(
    store: Store, agent: Agent, run_wakes: RunWakes, tmp_path: Path
) -> None:
    tree = small_tree(tmp_path / "tree")
    a = replace(agent, tools=(*agent.tools, READ_CODE), workdir=str(tree))
    ask = 'read_code {"path": "pkg/greet.py::Greeter.greet"}'
    (result,) = await run_wakes(a, message(ask))
    assert result.status == "done", result.error
    events = store.tenant(a.tenant).events(a.name, wake_id=result.wake_id)
    (read,) = [e.text for e in events if e.kind == "tool_result"]
    version = file_version((tree / "pkg" / "greet.py").read_bytes())
    head, *body = read.splitlines()
    assert head.startswith(f"pkg/greet.py::Greeter.greet lines 5-6 of 10 [version {version}, ")
    assert body == [
        "5|     def greet(self, name: str) -> str:",
        '6|         return f"hello {name}"',
    ]


@dataclass(frozen=True)
class Notes:
    """A source of one's own with a declared priority: an operator's long notes, ranked
    above the code map (importance 1)."""

    priority: int = 0
    words: int = 1000
    name: str = "notes"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        text = "Operator notes: " + " ".join(f"note{i}" for i in range(self.words))
        return [
            Block(
                id="env:notes", kind=BlockKind.TASK_FRAME, text=text, source="notes", importance=1.0
            )
        ]


# Room for the notes or the code map, not both (the window's dynamic part: about 3,000
# tokens once the instructions, tools and the ask's reserve are charged).
POLICY = """
name = "tight"
[budget]
context_limit = 6650
output_reserve = 1000
[budget.allocations]
stable = 0.35
semi_stable = 0.05
summaries = 0.05
evidence = 0.15
recent = 0.15
ask = 0.15
headroom = 0.05
"""


async def test_priorities_and_shares_are_enforced_and_named_in_the_ledger(
    store: Store, agent: Agent, run_wakes: RunWakes, tmp_path: Path
) -> None:
    tree = small_tree(tmp_path / "tree")
    for i in range(10):
        body = "".join(f"def f{i}_{j}(a: int, b: int) -> int:\n    return a\n" for j in range(5))
        (tree / "pkg" / f"m{i:02}.py").write_text(body, encoding="utf-8")
    policy = tmp_path / "tight.toml"
    policy.write_text(POLICY, encoding="utf-8")
    # The window holds the notes or the code map, not both; the notes rank first, so the
    # budget alone would keep them.
    a = replace(
        agent,
        policy=str(policy),
        context_sources=(Notes(priority=0), CodeMap(str(tree), priority=5)),
    )
    (result,) = await run_wakes(a, message("what is in the tree?"))
    assert result.status == "done", result.error
    ts = store.tenant(a.tenant)
    sent, ledger = window_of(ts, result.wake_id)
    assert "def greet(self, name: str) -> str" in sent and "note299" not in sent
    code_row, notes_row = ledger.row("env:code_map"), ledger.row("env:notes")
    assert code_row is not None and code_row.reason == "layer_priority"
    assert notes_row is not None and notes_row.position < 0
    assert (notes_row.reason, notes_row.rule) == ("layer_priority", "layers.notes.priority")
    assert ledger.decisions["layers.code_map"].startswith("priority 5, budget_share none; asked")
    assert ledger.decisions["layers.notes"].endswith("got 0 in 0; 1 gave way to higher priorities")

    # A share caps a layer whatever its priority (an agent of its own: the first one's
    # workflow stays on the queue of the worker that served it).
    capped = replace(
        a,
        name=f"{a.name}-capped",
        context_sources=(CodeMap(str(tree), priority=5, budget_share=0.001),),
    )
    register_agent(ts, capped)
    (result,) = await run_wakes(capped, message("and with a cap?"))
    sent, ledger = window_of(ts, result.wake_id)
    assert "def greet" not in sent
    row = ledger.row("env:code_map")
    assert row is not None and (row.reason, row.rule) == (
        "over_layer_share",
        "layers.code_map.budget_share",
    )
    assert ledger.decisions["layers.code_map"].startswith("priority 5, budget_share 0.001;")
    assert ledger.decisions["layers.code_map"].endswith("got 0 in 0; 1 over its share")
