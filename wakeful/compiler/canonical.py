"""Canonical JSON: one spelling for everything Wakeful hashes or stores as an artefact.

:func:`canonical_json` is the spelling of new artefacts: the request a compile records,
blob contents, receipts, the simulator's token counts. Key-sorted, compact, UTF-8 as is,
so the same value gives the same bytes in every process and on every machine.

:func:`recorded_json` is the spelling some hashes were first recorded in (a policy's
fingerprint, ``s2:`` snapshot hashes, a block's tool input). It is frozen: those hashes are
stored in ledgers and compile records and must keep matching what ``wakeful replay`` and
``wakeful diff`` recompute, so its output never changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["canonical_json", "recorded_json"]

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_ESCAPE: Callable[[str], str] = json.encoder.encode_basestring
_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)


def _reference(value: Any) -> str:
    return _CANONICAL.encode(value)


def _direct(value: Any) -> str:
    # What JSONEncoder.encode does for these settings, minus rebuilding its closures on
    # every call (half the cost of encoding a small value): a fresh C encoder, fresh
    # circular-reference markers, the encoder's own ``default`` (so errors are the same).
    if isinstance(value, str):
        return _ESCAPE(value)
    chunks = _C_ENCODER({}, _CANONICAL.default, _ESCAPE, None, ":", ",", True, False, True)(
        value, 0
    )
    return "".join(chunks)


def _pick() -> Callable[[Any], str]:
    sample = {"b": [1.5, None, True, -0.0, float("nan"), 10**20], "a": 'é\u2028\x00"', "c": {}}
    try:
        if _C_ENCODER is not None and _direct(sample) == _reference(sample):
            return _direct
    except Exception:
        pass
    return _reference


_encode = _pick()


def canonical_json(value: Any) -> str:
    """The one JSON spelling used for hashing and for the request artefact:
    ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``."""
    return _encode(value)


def recorded_json(value: Any, *, compact: bool = False) -> str:
    """The frozen spelling of hashes recorded before :func:`canonical_json` (key-sorted,
    ASCII-escaped; ``compact`` without spaces after separators, as block hashes use it)."""
    separators = (",", ":") if compact else None
    return json.dumps(value, sort_keys=True, separators=separators)
