"""Windows stored as chunks that windows share: a compile writes only what changed.

A session's windows are nearly all alike: their stable prefix by design (prompt caching
needs it byte-identical) and a history that grows at its end. Stored whole, every compile
wrote the whole window again — hundreds of kilobytes a model call, compressed by Postgres
each time: most of a compile's write time and most of the substrate's growth. Stored in
chunks, a window's row holds the hashes of its chunks (its *manifest*), and the chunks are
content-addressed blobs, so a compile writes only the chunks the previous windows lack.

Chunks end between two JSON array elements (``},{``) once they hold ``CHUNK_CHARS``
characters: windows that share a prefix share the chunks that cover it. The blob's hash is
still the hash of the whole text, and reading it gives the whole text back, checked against
that hash.
"""

from __future__ import annotations

import json

__all__ = ["CHUNK_CHARS", "CHUNK_KIND", "chunked", "is_manifest", "manifest", "split"]

CHUNK_CHARS = 16_384
CHUNK_KIND = "chunk"
_CHUNKED_KINDS = frozenset({"window"})
_MANIFEST = ":chunks"
_SEPARATOR = "},{"


def chunked(kind: str, content: str) -> bool:
    """Whether a blob of ``kind`` is stored in chunks (windows of some size)."""
    return kind in _CHUNKED_KINDS and len(content) >= 2 * CHUNK_CHARS


def split(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` in chunks of at least ``size`` characters (the last may be shorter), each
    ending between two JSON array elements; ``"".join(split(text)) == text``."""
    pieces = text.split(_SEPARATOR)
    last = len(pieces) - 1
    out: list[str] = []
    current: list[str] = []
    length = 0
    for i, piece in enumerate(pieces):
        part = piece if i == last else piece + _SEPARATOR
        current.append(part)
        length += len(part)
        if length >= size:
            out.append("".join(current))
            current, length = [], 0
    if current:
        out.append("".join(current))
    return out


def manifest(kind: str, chunk_hashes: list[str]) -> tuple[str, str]:
    """The ``(kind, content)`` of the row that stands for a chunked blob."""
    return kind + _MANIFEST, json.dumps(chunk_hashes)


def is_manifest(kind: str) -> bool:
    return kind.endswith(_MANIFEST)
