"""Token counting and the canonical serialisation the simulator bills by.

Real providers tokenize with private tokenizers; the simulator uses ``o200k_base`` (via
``bpe_openai``, available offline) over one documented serialisation so that counts are
deterministic, close to real magnitudes, and identical in every process.

Canonical serialisation of one content block:

* a ``text`` block is its ``text``;
* every other block (tool definitions, ``tool_use``, ``tool_result``, images, OpenAI tool
  calls) is ``json.dumps(block, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
  with ``cache_control`` removed first - a cache marker changes what is cached, never what
  the model reads.

A block's *identity* (what prefix hashes are built from) is the canonical JSON of the whole
block minus ``cache_control``, so two blocks with equal text but different types differ.
"""

from __future__ import annotations

import hashlib
import warnings
from functools import lru_cache
from typing import Any

from wakeful.compiler.canonical import canonical_json

__all__ = [
    "block_identity",
    "block_text",
    "count_tokens",
    "digest",
    "encode",
]

with warnings.catch_warnings():
    # bpe_openai loads its tables through a deprecated importlib.resources call; the
    # warning is the library's, not ours, and tests run with warnings as errors.
    warnings.simplefilter("ignore", DeprecationWarning)
    import bpe_openai

    _ENCODING = bpe_openai.get_encoding("o200k_base")


def _strip_cache_control(block: Any) -> Any:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def block_text(block: Any) -> str:
    """What the model reads of one block (the canonical serialisation above)."""
    if isinstance(block, str):
        return block
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        return str(block["text"])
    return canonical_json(_strip_cache_control(block))


def block_identity(block: Any) -> str:
    """The bytes a prefix hash covers for one block (cache markers excluded)."""
    return canonical_json(_strip_cache_control(block))


@lru_cache(maxsize=8192)
def _encode_cached(text: str) -> tuple[int, ...]:
    return tuple(_ENCODING.encode(text))


def encode(text: str) -> tuple[int, ...]:
    """o200k_base token ids of ``text`` (memoised: windows repeat across calls)."""
    return _encode_cached(text)


def count_tokens(text: str) -> int:
    return len(_encode_cached(text))


def digest(*parts: str | bytes) -> bytes:
    """blake2b-128 over length-prefixed parts; never Python's ``hash()``."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.digest()
