"""A small DOM over the standard library's HTML parser, to read pages back in tests (the
served HTML, and the DOM a headless browser dumps after its scripts ran)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"})


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Descendants (and self) with this tag and these attribute values; ``class_`` is
        matched as one of the classes."""
        out = []
        for n in self.walk():
            if tag is not None and n.tag != tag:
                continue
            want = {k.rstrip("_"): v for k, v in attrs.items()}
            cls = want.pop("class", None)
            if cls is not None and cls not in n.attrs.get("class", "").split():
                continue
            if all(n.attrs.get(k) == v for k, v in want.items()):
                out.append(n)
        return out

    def one(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.all(tag, **attrs)
        assert len(found) == 1, f"{len(found)} <{tag}> {attrs} in the page"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    b = _Builder()
    b.feed(html)
    b.close()
    return b.root


def parts(svg: Node) -> dict[str, float]:
    """A chart's drawn parts: name -> value (what its ``data-*`` attributes say)."""
    return {
        r.attrs["data-part"]: float(r.attrs["data-value"]) for r in svg.all("rect", class_="part")
    }
