"""A work directory's code map as a context layer: its files, and in each the classes,
functions and methods with their signatures and lines.

Give it to an agent with ``Agent(context_sources=(CodeMap("repo"),))``. Like
:class:`~wakeful.substrate.workdir.WorkdirState` it is read on every compile (in a thread
of its own) and stored with the compile, so a replay gives the same bytes; its block is a
task frame after the stable prefix, and its text holds no clock reading, so an unchanged
tree gives unchanged bytes.

* **What is mapped**: files beneath ``path`` (hidden folders, ``__pycache__``,
  ``node_modules`` and the like skipped; ``include`` globs narrow it), in path order. Python
  is read with ``ast``; JavaScript, TypeScript and Go with tree-sitter when the ``code``
  extra is installed (:mod:`wakeful.code_outline`). Other code files are counted in a note
  naming their suffixes, as are files over ``max_file_bytes``.
* **Each file's version**: the first 12 hex digits of the blake2b hash of its bytes. The
  ``read_code`` tool (:mod:`wakeful.code_tools`) gives the same version with what it reads,
  so a read older than the map is recognisable.
* **Cached**: a file whose size and modification time are those of the last read is not
  read again, and one whose bytes hash the same is not parsed again; an unchanged tree
  costs a directory walk and a ``stat`` per file (:attr:`CodeMap.parses` counts parses).
* **Its own budget**: ``max_tokens`` (estimated at 3 bytes a token). Files are admitted
  whole in path order while they fit; the files after the first that does not are named
  while their names fit, and the rest counted, in a last line saying what was left out.
  A declared ``priority`` / ``budget_share`` is the compiler's (``compiler.layers``).
"""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wakeful.code_outline import (
    Symbol,
    file_version,
    outline,
    parsed_suffixes,
    tree_sitter_languages,
)
from wakeful.compiler.blocks import Block, BlockKind, Stability
from wakeful.compiler.tokens import EstimatingCounter
from wakeful.errors import ConfigError
from wakeful.substrate.doc_chunks import CODE_SUFFIXES
from wakeful.substrate.sources import SourceContext

__all__ = ["CodeMap"]

# Folders no code map wants: tools' caches, dependencies, builds.
SKIPPED_DIRS = frozenset(
    {"__pycache__", "node_modules", "venv", "build", "dist", "target", "vendor", "site-packages"}
)
# Signatures are dense (punctuation, short names): about 3 bytes a token by a BPE count.
_ESTIMATE = EstimatingCounter(bytes_per_token=3)


@dataclass(frozen=True)
class _Entry:
    stat_key: tuple[int, int]  # (size, mtime_ns) when read
    version: str
    lines: int
    symbols: tuple[Symbol, ...] | None  # None: no parser for its language here


class _Cache:
    """What the last walk read of each file, and the text it made."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files: dict[str, _Entry] = {}
        self.parses = 0
        self.last: tuple[object, str] | None = None  # (what it was made of, the text)


@dataclass(frozen=True)
class CodeMap:
    """The code map of the work directory ``path`` (see the module's docstring)."""

    path: str = "."
    include: Sequence[str] = ()  # globs of relative paths (empty: every code file)
    max_tokens: int = 2_000
    max_file_bytes: int = 1_000_000
    name: str = "code_map"
    stability: Stability = Stability.DYNAMIC
    substrate: bool = False
    priority: int | None = None
    budget_share: float | None = None
    _cache: _Cache = field(default_factory=_Cache, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", tuple(self.include))
        if self.max_tokens < 50:
            raise ConfigError(f"CodeMap {self.path!r}: max_tokens must be at least 50")

    @property
    def parses(self) -> int:
        """Files parsed so far (an unchanged file is parsed once)."""
        return self._cache.parses

    def blocks(self, ctx: SourceContext) -> Sequence[Block]:
        return [
            Block(
                id="env:code_map",
                kind=BlockKind.TASK_FRAME,
                text=self.text(),
                source=f"code_map:{self.path}",
            )
        ]

    def text(self) -> str:
        root = Path(self.path)
        head = f"Code map of {self.path}"
        if not root.is_dir():
            return head + ": missing"
        with self._cache.lock:
            return self._text(root, head)

    def _text(self, root: Path, head: str) -> str:
        cache = self._cache
        readable = parsed_suffixes()
        seen: dict[str, _Entry] = {}
        unparsed: dict[str, int] = {}
        too_big: list[str] = []
        for rel in self._walk(root):
            suffix = os.path.splitext(rel)[1].lower()
            try:
                st = (root / rel).stat()
            except OSError:
                continue
            if st.st_size > self.max_file_bytes:
                too_big.append(rel)
                continue
            if suffix not in readable:
                if suffix in CODE_SUFFIXES or suffix in tree_sitter_languages():
                    unparsed[suffix] = unparsed.get(suffix, 0) + 1
                continue
            entry = self._entry(root, rel, suffix, (st.st_size, st.st_mtime_ns))
            if entry is not None:
                seen[rel] = entry
        cache.files = seen
        key = (
            tuple((rel, e.version) for rel, e in sorted(seen.items())),
            repr((sorted(unparsed.items()), too_big, readable)),
        )
        if cache.last is not None and cache.last[0] == key:
            return cache.last[1]
        text = self._render(head, seen, unparsed, too_big)
        cache.last = (key, text)
        return text

    def _walk(self, root: Path) -> list[str]:
        """Relative paths of the regular files beneath ``root``, sorted; no link followed."""
        out: list[str] = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            base = Path(folder).relative_to(root)
            for name in files:
                if name.startswith("."):
                    continue
                rel = (base / name).as_posix()
                if (root / rel).is_symlink():
                    continue
                if self.include and not any(fnmatch.fnmatch(rel, g) for g in self.include):
                    continue
                out.append(rel)
        return sorted(out)

    def _entry(self, root: Path, rel: str, suffix: str, stat_key: tuple[int, int]) -> _Entry | None:
        cache = self._cache
        known = cache.files.get(rel)
        if known is not None and known.stat_key == stat_key:
            return known
        try:
            data = (root / rel).read_bytes()
        except OSError:
            return None
        version = file_version(data)
        if known is not None and known.version == version:
            return _Entry(stat_key, version, known.lines, known.symbols)
        text = data.decode("utf-8", "replace")
        symbols = outline(suffix, text)
        cache.parses += 1
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return _Entry(stat_key, version, lines, None if symbols is None else tuple(symbols))

    def _render(
        self,
        head: str,
        files: dict[str, _Entry],
        unparsed: dict[str, int],
        too_big: list[str],
    ) -> str:
        symbols = sum(len(e.symbols or ()) for e in files.values())
        lines = [f"{head} ({len(files)} files, {symbols} symbols; version = hash of the file):"]
        budget = self.max_tokens - _ESTIMATE.count(lines[0]) - 40  # room for the last line
        left_out: list[str] = []
        for rel in sorted(files):
            entry = files[rel]
            part = [f"{rel} [version {entry.version}, {entry.lines} lines]"]
            part += [
                f"{'  ' * (s.depth + 1)}{s.signature}  L{s.start}-{s.end}"
                for s in entry.symbols or ()
            ]
            cost = _ESTIMATE.count("\n".join(part)) + 1
            if left_out or cost > budget:
                left_out.append(rel)
                continue
            budget -= cost
            lines += part
        grammars = tree_sitter_languages()
        for wanted, why in (
            (True, "no parser installed here: pip install 'wakeful[code]'"),
            (False, "no outline for these languages"),
        ):
            kinds = [f"{n} {s}" for s, n in sorted(unparsed.items()) if (s in grammars) is wanted]
            if kinds:
                lines.append(f"not mapped ({why}): {', '.join(kinds)}")
        if too_big:
            lines.append(f"not mapped (over {self.max_file_bytes} bytes): {', '.join(too_big)}")
        if left_out:
            named: list[str] = []
            for rel in left_out:
                cost = _ESTIMATE.count(rel) + 1
                if cost > budget:
                    break
                budget -= cost
                named.append(rel)
            rest = len(left_out) - len(named)
            tail = f" and {rest} more" if rest else ""
            lines.append(
                f"left out (code map budget of {self.max_tokens} tokens):"
                f" {len(left_out)} files: {', '.join(named)}{tail}"
            )
        return "\n".join(lines)
