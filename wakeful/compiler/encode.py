"""Canonical JSON, fast: memoised string escapes, and the request spliced from its elements.

:class:`JsonMemo` spells values exactly as :func:`~wakeful.compiler.framing.canonical_json`
does (the same rules as the C encoder: sorted keys, compact separators, raw UTF-8, NaN and
Infinity spelled out), but remembers the escaped form of long strings by value. Escaping is
the costly part of encoding a window, and most of a window's text — tool output, turns,
rules, the stable prefix — is the same from one call to the next; looking a string up costs
a hash, escaping it costs a pass that builds a new string. Anything it does not handle
itself (other types, non-string keys, cycles) goes to ``canonical_json``, which then
produces the same result or the same error. The memo lives in the caller's
:class:`~wakeful.compiler.tokens.CountingCache` and is bounded.

The request's canonical JSON, spliced from the elements a renderer already encoded:

A renderer encodes every cache-order element (a tool, a system entry, a content block or a
message) once, for the prefix hashes. The request is those elements plus a little
structure, and JSON encoding is compositional (no indentation, sorted keys at every
level), so the request's canonical JSON is the structure encoded with placeholders where
the elements go, with the elements' JSON spliced in. Elements that gained a
``cache_control`` marker after they were encoded are encoded again (at most four).

Only renderers that promise this relationship (``Rendered.spliceable``) take this path;
anything unexpected — a placeholder that does not come back exactly once, a pointer that
does not resolve — falls back to encoding the whole request, so the bytes are always those
of ``canonical_json(request)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import is_
from typing import Any

from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.render.base import Rendered

_ESCAPE: Callable[[str], str] = json.encoder.encode_basestring
_LONG = 256  # shorter strings are escaped directly: a lookup would cost as much
_MAX_CHARS = 16_000_000  # the memo is cleared when it holds more than this (~100 windows)
_SLOT = re.compile(r'"\\u0000(\d+)\\u0000"')


class JsonMemo:
    """``canonical_json`` that remembers what it spelled (see module).

    Two memos keyed by value with exact types: long strings, and "flat" dicts — string
    keys, values that are strings or dicts of strings (content blocks, messages, and
    cache markers: the bulk of a window). Lists are joined from their items; everything
    else goes to the C encoder, so every spelling is the reference encoder's own.
    """

    __slots__ = ("chars", "flat", "frozen", "joined", "labelled", "strings")

    def __init__(self, max_entries: int = 0) -> None:
        self.strings: dict[str, str] = {}
        self.flat: dict[tuple[Any, ...], str] = {}
        self.joined: dict[tuple[str, ...], str] = {}
        # Labelled elements by (label, JSON of the value): the same string object as last
        # time, so that prefix hashes can resume after it (``prefix.py``).
        self.labelled: dict[tuple[str, str], str] = {}
        # Values that do not change while held (``hold``), by identity: a tool's input
        # schema, a call's arguments. Spelling one walks it; finding it costs a lookup.
        self.frozen: dict[int, tuple[Any, str]] = {}
        self.chars = 0

    def hold(self, values: Iterable[Any]) -> None:
        """Spell each of ``values`` once and find it by identity from then on. Only for
        values that never change while they live: the dicts a frozen
        :class:`~wakeful.compiler.blocks.Block` holds (its ``tool_input``), which every
        window of the block renders as they are. The memo keeps each alive, so an id is
        never another value's."""
        frozen = self.frozen
        for value in values:
            held = frozen.get(id(value))
            if held is None or held[0] is not value:
                try:
                    spelled = self._value(value)
                except Exception:
                    continue  # spelled (or refused) by the encoder when it is sent
                frozen[id(value)] = (value, spelled)
                self._room(len(spelled))

    def join(self, sep: str, parts: list[str]) -> str:
        """``sep.join(parts)``, the same string object as last time for the same parts: its
        hash is then already known, so looking up its JSON costs no pass over the text."""
        key = (sep, *parts)
        out = self.joined.get(key)
        if out is None:
            out = self.joined[key] = sep.join(parts)
            self._room(len(out))
        return out

    def dumps(self, value: Any) -> str:
        try:
            if type(value) is list and len(value) == 2 and type(value[0]) is str:
                # a labelled element, ["label", value]: the shape renderers encode most
                key = (value[0], self._value(value[1]))
                out = self.labelled.get(key)
                if out is None:
                    out = self.labelled[key] = f"[{_ESCAPE(key[0])},{key[1]}]"  # one copy
                    self._room(len(out))
                return out
            return self._value(value)
        except Exception:
            return canonical_json(value)

    def _room(self, size: int) -> None:
        self.chars += size
        if self.chars > _MAX_CHARS:
            self.strings.clear()
            self.flat.clear()
            self.joined.clear()
            self.labelled.clear()
            self.frozen.clear()
            self.chars = size

    def _value(self, value: Any) -> str:
        kind = type(value)
        if kind is str:
            if len(value) < _LONG:
                return _ESCAPE(value)
            out = self.strings.get(value)
            if out is None:
                out = self.strings[value] = _ESCAPE(value)
                self._room(2 * len(out))
            return out
        if kind is dict:
            held = self.frozen.get(id(value))
            if held is not None and held[0] is value:
                return held[1]
            key = _flat_key(value)
            if key is None:
                return self._composed(value)
            out = self.flat.get(key)
            if out is None:
                out = self.flat[key] = canonical_json(value)
                self._room(2 * len(out))
            return out
        if kind is list:
            return "[" + ",".join(map(self._value, value)) + "]"
        if value is None:
            return "null"
        if kind is bool:
            return "true" if value else "false"
        if kind is int:
            return int.__repr__(value)  # as the encoder spells an int
        return canonical_json(value)

    def _composed(self, value: dict[Any, Any]) -> str:
        """A dict the flat memo does not take (a tool's schema, a call's arguments), spelled
        from its items' spellings: canonical JSON is compositional (keys sorted at every
        level, no whitespace), so its long strings come from the memo instead of being
        escaped again. A key that is not a ``str`` goes to the encoder, which sorts and
        spells (or refuses) it as it does."""
        if not all(map(is_, map(type, value), repeat(str))):
            return canonical_json(value)
        items = [_ESCAPE(k) + ":" + self._value(value[k]) for k in sorted(value)]
        return "{" + ",".join(items) + "}"


def _flat_key(value: dict[Any, Any]) -> tuple[Any, ...] | None:
    """The dict's items if its keys are ``str`` and its values ``str`` or dicts of ``str``
    (those as ``("dict", items)``, which no ``str`` can equal); else None."""
    items = tuple(value.items())
    # A loop that stops at the first other type: several times faster, on the few items
    # of a content block, than collecting the set of types.
    for k, v in items:
        if type(k) is not str or type(v) is not str:
            return _nested_key(items)
    return items


def _nested_key(items: tuple[tuple[Any, Any], ...]) -> tuple[Any, ...] | None:
    out: list[tuple[str, Any]] = []
    for k, v in items:
        if type(k) is not str:
            return None
        kind = type(v)
        if kind is str:
            out.append((k, v))
        elif kind is dict and _all_str(v):
            out.append((k, ("dict", tuple(v.items()))))
        else:
            return None
    return tuple(out)


def _all_str(value: dict[Any, Any]) -> bool:
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            return False
    return True


def encode_request(rendered: Rendered, encode: Callable[[Any], str] = canonical_json) -> str:
    """``canonical_json(rendered.request)``, without encoding the elements a second time."""
    return "".join(request_parts(rendered, encode))


def request_parts(rendered: Rendered, encode: Callable[[Any], str] = canonical_json) -> list[str]:
    """The request's canonical JSON in pieces that join to it: the structure between the
    elements, and each element's JSON (the whole request as one piece when it cannot be
    spliced). Hashed piece by piece, the request's hash resumes where the last one's
    pieces were the same (``prefix.py``)."""
    if rendered.spliceable:
        spliced = _splice(rendered, encode)
        if spliced is not None:
            return spliced
    return [encode(rendered.request)]


def _splice(rendered: Rendered, encode: Callable[[Any], str]) -> list[str] | None:
    slots = rendered.slots
    swapped = _swap(rendered.request, rendered.paths) if slots is None else _place(slots)
    if swapped is None:
        return None
    try:
        pieces = _SLOT.split(canonical_json(rendered.request))
    finally:
        for node, key, value in reversed(swapped):
            node[key] = value
    count = len(swapped)
    if len(pieces) != 2 * count + 1:
        return None
    out = [pieces[0]]
    seen = set()
    for k in range(1, len(pieces), 2):
        n = int(pieces[k])
        if n >= count or n in seen:
            return None
        seen.add(n)
        out.append(_element_json(rendered.elements[n], swapped[n][2], encode))
        out.append(pieces[k + 1])
    return out


def _element_json(element: str, value: Any, encode: Callable[[Any], str]) -> str:
    if isinstance(value, dict) and "cache_control" in value:
        return encode(value)  # marked after it was encoded
    # element is canonical_json([label, value]): '["label",' + json(value) + ']'
    cut = element.find('",')
    if not element.startswith('["') or cut < 0 or "\\" in element[:cut]:
        return encode(value)
    return element[cut + 2 : -1]


def _place(slots: list[tuple[Any, Any]]) -> list[tuple[Any, Any, Any]]:
    """Put a numbered slot at each (container, key) a renderer named."""
    swapped = []
    for n, (node, key) in enumerate(slots):
        swapped.append((node, key, node[key]))
        node[key] = f"\x00{n}\x00"
    return swapped


def _swap(request: dict[str, Any], paths: list[str]) -> list[tuple[Any, Any, Any]] | None:
    """Put a numbered slot in place of the value at each path (in place; the caller puts
    the values back). Returns (container, key, value) per path, or None if one does not
    resolve — then nothing is left swapped."""
    swapped: list[tuple[Any, Any, Any]] = []
    parent_path = None
    parent: Any = None
    for n, path in enumerate(paths):
        head, _, last = path.rpartition("/")
        if head != parent_path:
            parent = _resolve(request, head)
            parent_path = head
        key = None if parent is None or "~" in path else _key(parent, last)
        if key is None:
            for node, k, value in reversed(swapped):
                node[k] = value
            return None
        swapped.append((parent, key, parent[key]))
        parent[key] = f"\x00{n}\x00"
    return swapped


def _resolve(root: Any, pointer: str) -> Any:
    node = root
    for part in pointer.split("/")[1:] if pointer else []:
        key = _key(node, part)
        if key is None:
            return None
        node = node[key]
    return node


def _key(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        return part if part in node else None
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return int(part)
    return None
