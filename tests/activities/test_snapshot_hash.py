"""The snapshot hash a compile records, and that ``wakeful replay`` checks.

It is canonical (the same snapshot built twice, its blocks fresh objects and its dicts in
another key order, hashes the same), it changes with any block, it is the same in another
process whatever ``PYTHONHASHSEED``, and a hash recorded in the older whole-document form
is checked in that form.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

from wakeful.activities.snapshot_hash import BlockHashes, snapshot_hash
from wakeful.compiler.blocks import AgentProfile, Block, BlockKind, Role, Snapshot, content_hash

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _snapshot(schema_keys: list[str], last: str = "done") -> Snapshot:
    schema = {key: {"type": "string"} for key in schema_keys}
    blocks = [
        Block(
            id="tool:read_file",
            kind=BlockKind.TOOL_SCHEMA,
            text="Read a file.",
            source="agent:a:tools",
            tool_name="read_file",
            tool_input={"type": "object", "properties": schema},
        ),
        *(
            Block(
                id=f"ev:{i}",
                kind=BlockKind.TURN,
                text=f"turn {i}" if i < 3 else last,
                source=f"events:{i}",
                seq=i,
                role=Role.USER,
                captured_at=T0,
                meta={"b": "2", "a": "1"},
            )
            for i in range(4)
        ),
    ]
    agent = AgentProfile(tenant="t", name="a", model="m", provider="anthropic", instructions="x")
    return Snapshot(agent=agent, as_of=T0, session_id="s", blocks=tuple(blocks))


def test_the_same_snapshot_hashes_the_same_and_any_change_shows() -> None:
    one = snapshot_hash(_snapshot(["path", "limit"]))
    assert one.startswith("s2:")
    assert snapshot_hash(_snapshot(["limit", "path"])) == one  # dict order does not count
    assert snapshot_hash(_snapshot(["path", "limit"])) == one  # fresh objects, same hash
    assert snapshot_hash(_snapshot(["path", "limit"], last="changed")) != one
    assert snapshot_hash(_snapshot(["path"])) != one


def test_a_memo_of_block_hashes_gives_the_hash_without_one() -> None:
    memo = BlockHashes()
    snapshot = _snapshot(["path", "limit"])
    plain = snapshot_hash(snapshot)
    assert snapshot_hash(snapshot, memo=memo) == plain
    assert len(memo) == len(snapshot.blocks)  # remembered by block, looked up next time
    assert snapshot_hash(snapshot, memo=memo) == plain
    changed = _snapshot(["path", "limit"], last="changed")
    assert snapshot_hash(changed, memo=memo) == snapshot_hash(changed) != plain


def test_a_hash_recorded_in_the_whole_document_form_is_checked_in_that_form() -> None:
    snapshot = _snapshot(["path"])
    legacy = content_hash(json.dumps(snapshot.model_dump(mode="json"), sort_keys=True))
    assert snapshot_hash(snapshot, like=legacy) == legacy
    assert snapshot_hash(snapshot, like="s2:whatever") == snapshot_hash(snapshot)


def test_the_hash_is_the_same_in_another_process() -> None:
    code = (
        "from tests.activities.test_snapshot_hash import _snapshot\n"
        "from wakeful.activities.snapshot_hash import snapshot_hash\n"
        "print(snapshot_hash(_snapshot(['path', 'limit'])))\n"
    )
    hashes = {
        subprocess.run(
            [sys.executable, "-c", code],
            env=os.environ | {"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert hashes == {snapshot_hash(_snapshot(["path", "limit"]))}
