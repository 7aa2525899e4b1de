"""The outline of a source file: its classes, functions and methods, with signatures.

Python is read with the standard ``ast``. JavaScript, TypeScript and Go are read with
tree-sitter when the ``code`` extra is installed (``pip install 'wakeful[code]'``: the
``tree-sitter`` bindings and each language's grammar, all prebuilt wheels); without it,
or for another language, :func:`outline` returns None and callers say the file was not
mapped. The code map (``substrate.code_map``) lists outlines; the ``read_code`` tool
(``wakeful.code_tools``) reads a symbol's lines by its qualified name.

An outline is deterministic: symbols in the order they start in the file, each with its
qualified name (``Class.method``), its signature on one line (whitespace collapsed, no
body) and its lines (1-based, inclusive).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = [
    "PYTHON_SUFFIXES",
    "Symbol",
    "file_version",
    "find_symbol",
    "outline",
    "parsed_suffixes",
    "tree_sitter_languages",
]

PYTHON_SUFFIXES = frozenset({".py", ".pyi"})
# suffix -> (grammar module, the function in it giving the language)
_GRAMMARS: dict[str, tuple[str, str]] = {
    ".js": ("tree_sitter_javascript", "language"),
    ".jsx": ("tree_sitter_javascript", "language"),
    ".mjs": ("tree_sitter_javascript", "language"),
    ".cjs": ("tree_sitter_javascript", "language"),
    ".ts": ("tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
}
_SPACE = re.compile(r"\s+")


def file_version(data: bytes) -> str:
    """A file's version as the code map and ``read_code`` name it: the first 12 hex digits
    of the blake2b hash of its bytes."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()[:12]


@dataclass(frozen=True)
class Symbol:
    qualname: str  # e.g. "Greeter.greet"
    kind: str  # class | function | method | interface | type
    signature: str  # one line, without the body
    start: int  # first line, 1-based (decorators included)
    end: int  # last line, inclusive
    depth: int  # 0 for a module-level symbol


def outline(suffix: str, text: str) -> list[Symbol] | None:
    """The symbols of a file with this suffix, or None when no parser reads its language
    here. A Python file that does not parse has no symbols (an empty list)."""
    if suffix in PYTHON_SUFFIXES:
        return _python(text)
    parser = _parser(suffix)
    if parser is None:
        return None
    return _tree_sitter(parser, text)


def parsed_suffixes() -> frozenset[str]:
    """The suffixes :func:`outline` reads here: Python's, and those whose grammar is
    installed."""
    return PYTHON_SUFFIXES | {s for s in _GRAMMARS if _language(s) is not None}


def tree_sitter_languages() -> frozenset[str]:
    """Suffixes a tree-sitter grammar would read, installed or not (for the note on files
    that were not mapped)."""
    return frozenset(_GRAMMARS)


def find_symbol(symbols: list[Symbol], name: str) -> Symbol | None:
    """The symbol named ``name``: its qualified name, or failing that the only symbol whose
    last part is ``name``."""
    exact = [s for s in symbols if s.qualname == name]
    if exact:
        return exact[0]
    tail = [s for s in symbols if s.qualname.rsplit(".", 1)[-1] == name]
    return tail[0] if len(tail) == 1 else None


# --- Python ---------------------------------------------------------------------------


def _python(text: str) -> list[Symbol]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return list(_python_body(tree.body, "", 0, in_class=False))


def _python_body(
    body: list[ast.stmt], prefix: str, depth: int, *, in_class: bool
) -> Iterator[Symbol]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            bases += [ast.unparse(k) for k in node.keywords]
            signature = f"class {node.name}" + (f"({', '.join(bases)})" if bases else "")
            yield _py_symbol(node, prefix + node.name, "class", signature, depth)
            yield from _python_body(node.body, f"{prefix}{node.name}.", depth + 1, in_class=True)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            keyword = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            signature = f"{keyword} {node.name}({ast.unparse(node.args)})"
            if node.returns is not None:
                signature += f" -> {ast.unparse(node.returns)}"
            kind = "method" if in_class else "function"
            yield _py_symbol(node, prefix + node.name, kind, signature, depth)


def _py_symbol(
    node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
    qualname: str,
    kind: str,
    signature: str,
    depth: int,
) -> Symbol:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return Symbol(qualname, kind, signature, start, node.end_lineno or node.lineno, depth)


# --- tree-sitter ------------------------------------------------------------------------


def _parser(suffix: str) -> Any | None:
    """A tree-sitter parser for the suffix's language (None: not installed here); a new
    one each time, as a parser must not parse in two threads at once."""
    language = _language(suffix)
    if language is None:
        return None
    return importlib.import_module("tree_sitter").Parser(language)


@cache
def _language(suffix: str) -> Any | None:
    grammar = _GRAMMARS.get(suffix)
    if grammar is None:
        return None
    try:
        tree_sitter = importlib.import_module("tree_sitter")
        module = importlib.import_module(grammar[0])
    except ImportError:
        return None
    return tree_sitter.Language(getattr(module, grammar[1])())


# node type -> kind; a class's body holds its methods
_DEFINITIONS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "method_definition": "method",
    "interface_declaration": "interface",
    "method_declaration": "method",  # Go: func (r T) Name(...)
    "type_spec": "type",  # Go: type Name struct/interface
}
_CONTAINERS = {"class_body", "program", "export_statement", "source_file", "type_declaration"}


def _tree_sitter(parser: Any, text: str) -> list[Symbol]:
    data = text.encode("utf-8")
    tree = parser.parse(data)
    out: list[Symbol] = []
    _walk(tree.root_node, data, "", 0, out.append)
    return out


def _walk(node: Any, data: bytes, prefix: str, depth: int, add: Callable[[Symbol], None]) -> None:
    for child in node.named_children:
        kind = _DEFINITIONS.get(child.type)
        if kind is None:
            if child.type in _CONTAINERS:
                _walk(child, data, prefix, depth, add)
            continue
        name_node = child.child_by_field_name("name")
        if name_node is None:
            continue
        name = _text(data, name_node)
        owner = _go_receiver(child, data) if child.type == "method_declaration" else ""
        qualname = f"{prefix}{owner + '.' if owner else ''}{name}"
        body = child.child_by_field_name("body")
        if child.type == "type_spec":
            body = None
            kind = "interface" if _go_interface(child) else "type"
        head_end = body.start_byte if body is not None else child.end_byte
        head = data[child.start_byte : head_end].decode("utf-8", "replace")
        signature = _SPACE.sub(" ", head).strip().rstrip("{").strip()
        if child.type == "type_spec":
            signature = "type " + signature.split("{", 1)[0].strip()
        add(
            Symbol(
                qualname, kind, signature, child.start_point[0] + 1, child.end_point[0] + 1, depth
            )
        )
        if body is not None and child.type in ("class_declaration", "abstract_class_declaration"):
            _walk(body, data, f"{qualname}.", depth + 1, add)


def _text(data: bytes, node: Any) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _go_receiver(node: Any, data: bytes) -> str:
    """The type a Go method belongs to (``func (s *Server) Start()`` -> ``Server``)."""
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _text(data, receiver))
    return words[-1] if words else ""


def _go_interface(node: Any) -> bool:
    kind = node.child_by_field_name("type")
    return kind is not None and kind.type == "interface_type"
