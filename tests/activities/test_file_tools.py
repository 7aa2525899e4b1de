"""The demo's file tools stay inside the working directory and never block.

Each tool is called as the tool activity calls it (``fn(args, ctx)``) on a real directory
holding the things an agent's work directory may be given: links to outside, FIFOs, hard
links, a 300 MB sparse file.
"""

from __future__ import annotations

import os
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wakeful import files
from wakeful.agents import ToolContext
from wakeful.demo.tools import list_dir, read_file, write_note
from wakeful.files import FileToolError

# A failure timeout for a call that must not block (never the thing measured).
NEVER_BLOCKS_S = 30.0


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Project\n", encoding="utf-8")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_text("precious", encoding="utf-8")
    return target


def _ctx(root: Path) -> ToolContext:
    return ToolContext(tenant="t", agent="a", wake_id="a:1", tool_call_id="c1", workdir=str(root))


def _unblock(fifo: Path) -> None:
    """Release a thread stuck opening ``fifo`` (from either end), so a failing test ends."""
    for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
        try:
            os.close(os.open(fifo, flags))
        except OSError:
            pass


def _call_without_blocking(fn: Callable[[], Any], fifo: Path) -> BaseException | Any:
    """Run ``fn`` in a thread; fail the test if it is still blocked after the failure
    timeout (then release the FIFO so the thread ends)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # returned to the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(NEVER_BLOCKS_S)
    if thread.is_alive():
        while thread.is_alive():
            _unblock(fifo)
            thread.join(0.1)
        pytest.fail(f"the tool blocked on the FIFO {fifo.name} for {NEVER_BLOCKS_S:g} s")
    return out[0]


def test_read_file_reads_a_regular_file(work: Path) -> None:
    assert read_file({"path": "README.md"}, _ctx(work)) == "# Project\n"
    assert read_file({"path": "./docs/../README.md"}, _ctx(work)) == "# Project\n"


def test_write_note_writes_under_notes(work: Path) -> None:
    assert write_note({"title": "status", "text": "all good"}, _ctx(work)).startswith(
        "wrote notes/status.md"
    )
    assert (work / "notes" / "status.md").read_text(encoding="utf-8") == "all good"
    write_note({"title": "status", "text": "better"}, _ctx(work))  # replaced, not appended
    assert (work / "notes" / "status.md").read_text(encoding="utf-8") == "better"
    assert sorted(p.name for p in (work / "notes").iterdir()) == ["status.md"]


def test_write_note_refuses_a_planted_link_and_leaves_its_target(work: Path, outside: Path) -> None:
    (work / "notes").mkdir()
    (work / "notes" / "x.md").symlink_to(outside)
    with pytest.raises(FileToolError, match="symbolic link"):
        write_note({"title": "x", "text": "overwritten"}, _ctx(work))
    assert outside.read_text(encoding="utf-8") == "precious"
    assert (work / "notes" / "x.md").is_symlink()


def test_write_note_refuses_notes_linked_outside(work: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (work / "notes").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(FileToolError, match="'notes' is a symbolic link"):
        write_note({"title": "x", "text": "escaped"}, _ctx(work))
    assert list(elsewhere.iterdir()) == []


def test_write_note_refuses_a_hard_link_to_outside(work: Path, outside: Path) -> None:
    (work / "notes").mkdir()
    os.link(outside, work / "notes" / "x.md")
    with pytest.raises(FileToolError, match="hard link"):
        write_note({"title": "x", "text": "overwritten"}, _ctx(work))
    assert outside.read_text(encoding="utf-8") == "precious"


def test_write_note_refuses_a_fifo_named_like_a_note_without_blocking(work: Path) -> None:
    (work / "notes").mkdir()
    fifo = work / "notes" / "x.md"
    os.mkfifo(fifo)
    got = _call_without_blocking(lambda: write_note({"title": "x", "text": "t"}, _ctx(work)), fifo)
    assert isinstance(got, FileToolError), got
    assert "FIFO" in str(got)


def test_read_file_refuses_a_fifo_without_blocking(work: Path) -> None:
    fifo = work / "pipe"
    os.mkfifo(fifo)
    got = _call_without_blocking(lambda: read_file({"path": "pipe"}, _ctx(work)), fifo)
    assert isinstance(got, FileToolError), got
    assert str(got) == "'pipe' is a FIFO, not a regular file"


def test_read_file_follows_no_link(work: Path, outside: Path, tmp_path: Path) -> None:
    (work / "leak.txt").symlink_to(outside)
    (work / "inner.md").symlink_to(work / "README.md")  # even one that stays inside
    (work / "up").symlink_to(tmp_path, target_is_directory=True)
    for path in ("leak.txt", "inner.md", "up/outside.txt"):
        with pytest.raises(FileToolError, match="symbolic link"):
            read_file({"path": path}, _ctx(work))
    for path in ("../outside.txt", str(outside), "docs/../../outside.txt"):
        with pytest.raises(FileToolError, match="outside the agent's working directory"):
            read_file({"path": path}, _ctx(work))


def test_read_file_refuses_directories_and_devices(work: Path) -> None:
    with pytest.raises(FileToolError, match="'docs' is a directory"):
        read_file({"path": "docs"}, _ctx(work))
    if Path("/dev/zero").exists():
        (work / "zero").symlink_to("/dev/zero")
        with pytest.raises(FileToolError, match="symbolic link"):
            read_file({"path": "zero"}, _ctx(work))


@pytest.fixture
def sparse(work: Path) -> Iterator[Path]:
    big = work / "big.log"
    with big.open("wb") as f:
        f.write(b"header line\n")
        f.truncate(300 * 1024 * 1024)  # sparse: no disk blocks, 300 MB to a reader
    yield big


def test_a_300_mb_file_costs_only_the_bytes_of_its_result(work: Path, sparse: Path) -> None:
    got = files.read_text(str(work), sparse.name, 16_000)
    assert (len(got.text), got.truncated) == (16_000, True)
    assert got.text.startswith("header line\n")
    assert got.bytes_read == 16_001  # ASCII: one byte per character, and one to see more

    tracemalloc.start()
    try:
        text = read_file({"path": sparse.name}, _ctx(work))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text.endswith("\n[truncated]") and len(text) == 16_000 + len("\n[truncated]")
    assert peak < 1024 * 1024, f"reading 16,000 characters allocated {peak:,} bytes"


def test_the_cut_falls_on_a_character_boundary(work: Path) -> None:
    (work / "wide.txt").write_text("é€𝄞" * 10_000, encoding="utf-8")
    got = files.read_text(str(work), "wide.txt", 16_000)
    assert got.text == ("é€𝄞" * 10_000)[:16_000]
    assert "\ufffd" not in got.text
    assert got.truncated and got.bytes_read <= 4 * 16_001
    (work / "short.txt").write_bytes("ok é".encode() + b"\xff")
    assert files.read_text(str(work), "short.txt", 16_000).text == "ok é\ufffd"


def test_list_dir_lists_links_and_fifos_without_following(work: Path, tmp_path: Path) -> None:
    os.mkfifo(work / "pipe")
    (work / "up").symlink_to(tmp_path, target_is_directory=True)
    assert list_dir({}, _ctx(work)).split("\n") == ["README.md", "docs/", "pipe|", "up@"]
    with pytest.raises(FileToolError, match="symbolic link"):
        list_dir({"path": "up"}, _ctx(work))
    with pytest.raises(FileToolError, match="outside"):
        list_dir({"path": ".."}, _ctx(work))
