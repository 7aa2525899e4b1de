"""An agent's documents: files read and checked, and cut into chunks by their structure.

A chunk is what retrieval finds and the window shows, so it follows the file's own
structure rather than a fixed size:

* **Markdown** (``.md``, ``.markdown``, ``.mdx``): one section per heading (ATX ``#`` to
  ``######``; its heading trail, ``Deploy > Rotation``, names it); within a section, each
  fenced code block is a chunk of its own and paragraphs are packed into chunks of up to
  ``target`` characters, never split inside one unless it alone is longer than ``limit``.
* **Python**: one chunk per top-level definition (``def name``, ``class Name``, with its
  decorators and docstring), and the module's other statements between them; found with
  the standard ``ast``. A file that does not parse is cut like other code.
* **Other code**: windows of ``CODE_WINDOW`` lines, named ``lines A-B``.
* **Text** (anything else that is UTF-8 text): paragraphs, packed as in markdown.
* **PDF** (with the ``pdf`` extra: pypdf): the text of each page, its paragraphs packed as
  in markdown, named ``page N``. A PDF without extractable text (a scan) is refused.

A chunk's text opens with its heading trail, so a search for the heading finds it.
:func:`read_documents` expands paths, folders and globs and refuses what is not a
document - a missing path, a binary or non-UTF-8 file, an empty one - with one line
naming the file, before anything is stored.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from wakeful.compiler.blocks import content_hash
from wakeful.errors import UserError
from wakeful.extras import require

__all__ = [
    "CODE_SUFFIXES",
    "MARKDOWN_SUFFIXES",
    "TEXT_SUFFIXES",
    "DocChunk",
    "DocumentFile",
    "chunk_document",
    "document_path",
    "read_documents",
]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
TEXT_SUFFIXES = frozenset({".txt", ".rst", ".adoc", ".org", ".text"})
CODE_SUFFIXES = frozenset(
    {
        ".py", ".pyi", ".js", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".c", ".h",
        ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".scala", ".sh", ".bash",
        ".sql", ".toml", ".yaml", ".yml", ".json", ".ini", ".cfg",
    }
)  # fmt: skip
# What a folder contributes: files of these kinds only (a folder also holds images, builds).
_FOLDER_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | CODE_SUFFIXES
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "build", "dist"})
# A file larger than this is most likely data, not a document to read from.
MAX_FILE_BYTES = 2_000_000
CODE_WINDOW = 60
_TARGET = 1_200
_LIMIT = 4_000
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)")


@dataclass(frozen=True, slots=True)
class DocChunk:
    """One chunk: the heading trail it sits under ("" for none) and its text."""

    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class DocumentFile:
    """A file read and checked: the path it is stored under, its text and version."""

    path: str
    text: str

    @property
    def version(self) -> str:
        return content_hash(self.text)

    def chunks(self) -> list[DocChunk]:
        return chunk_document(self.path, self.text)


def document_path(path: Path, cwd: Path | None = None) -> str:
    """The name a file is stored under: relative to ``cwd`` when it lies below it, else
    absolute; ``/``-separated either way, so ``docs remove`` finds it by either spelling."""
    here = (cwd or Path.cwd()).resolve()
    full = (here / path).resolve() if not path.is_absolute() else path.resolve()
    try:
        return full.relative_to(here).as_posix()
    except ValueError:
        return full.as_posix()


def read_documents(paths: Iterable[str], cwd: Path | None = None) -> list[DocumentFile]:
    """Every file ``paths`` names (files, folders walked for markdown, text and code, and
    globs), read and checked; sorted by stored path, each once. Raises :class:`UserError`
    naming the first path that is missing, matches nothing, or is not a text document."""
    here = cwd or Path.cwd()
    found: dict[str, Path] = {}
    for given in paths:
        for file in _expand(given, here):
            found.setdefault(document_path(file, here), file)
    if not found:
        raise UserError("no documents given: name files, folders or globs")
    return [DocumentFile(name, _read(found[name], name)) for name in sorted(found)]


def _expand(given: str, here: Path) -> list[Path]:
    if not given.strip():
        raise UserError("an empty path was given: name a file, a folder or a glob")
    target = Path(given) if Path(given).is_absolute() else here / given
    if glob.has_magic(given):
        matched = sorted(
            Path(p) for p in glob.glob(str(target), recursive=True) if Path(p).is_file()
        )
        if not matched:
            raise UserError(f"the glob {given!r} matches no file: check the pattern")
        return matched
    if target.is_dir():
        files = sorted(_walk(target))
        if not files:
            raise UserError(
                f"the folder {given!r} holds no markdown, text or code file: name the files"
            )
        return files
    if not target.exists():
        raise UserError(f"no such file or folder: {given!r}; give an existing path or a glob")
    if not target.is_file():
        raise UserError(f"{given!r} is not a regular file or folder")
    return [target]


def _walk(folder: Path) -> Iterable[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        for name in files:
            suffix = Path(name).suffix.lower()
            if name.startswith("."):
                continue
            # A folder's PDFs are read when they can be (the ``pdf`` extra), else left out.
            if suffix in _FOLDER_SUFFIXES or (suffix == ".pdf" and _reads_pdf()):
                yield Path(root) / name


def _reads_pdf() -> bool:
    """Whether the ``pdf`` extra is installed."""
    try:
        return importlib.util.find_spec("pypdf") is not None
    except ModuleNotFoundError:
        return False


def _read(file: Path, name: str) -> str:
    size = file.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UserError(
            f"{name} has {size:,} bytes, more than {MAX_FILE_BYTES:,}: split it, or add the "
            "parts worth reading"
        )
    data = file.read_bytes()
    if file.suffix.lower() == ".pdf":
        return _pdf_text(data, name)
    if b"\x00" in data:
        raise UserError(f"{name} is a binary file: documents are markdown, text or code")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{name} is not UTF-8 text (byte {exc.start:,} is invalid): convert it to UTF-8"
        ) from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise UserError(f"{name} is empty: there is nothing in it to add")
    return text


# Pages of a PDF's text are separated by a form feed (which text extraction never yields
# inside a page's text: it is taken out), so the chunker names each page.
_PAGE = "\f"


def _pdf_text(data: bytes, name: str) -> str:
    """The text of a PDF's pages, each after a form feed."""
    (pypdf,) = require(f"the PDF document {name}", "pypdf")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise UserError(f"{name} is an encrypted PDF: add a decrypted copy")
        pages = [(page.extract_text() or "").replace(_PAGE, "\n") for page in reader.pages]
    except UserError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        detail = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise UserError(f"{name} is not a readable PDF ({detail})") from None
    if not any(p.strip() for p in pages):
        raise UserError(f"{name} has no text to extract (a scanned PDF?): add its text instead")
    return "".join(_PAGE + p for p in pages)


def _pdf(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for n, page in enumerate(text.split(_PAGE)[1:], start=1):
        out.extend((f"page {n}", p) for p in _packed(_paragraphs(page.split("\n"))))
    return out


def chunk_document(path: str, text: str) -> list[DocChunk]:
    """The chunks of a document, by its kind (the suffix of ``path``); never empty for a
    text with anything but whitespace in it."""
    suffix = Path(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        parts = _markdown(text)
    elif suffix == ".pdf":
        parts = _pdf(text)
    elif suffix in (".py", ".pyi"):
        parts = _python(text)
    elif suffix in CODE_SUFFIXES:
        parts = _windows(text.split("\n"), 1)
    else:
        parts = [("", p) for p in _packed(_paragraphs(text.split("\n")))]
    out = []
    for heading, body in parts:
        body = body.strip("\n")
        if body.strip():
            out.append(DocChunk(heading, f"{heading}\n\n{body}" if heading else body))
    return out


def _markdown(text: str) -> list[tuple[str, str]]:
    """(heading trail, body) per chunk: sections at headings, fences whole, paragraphs
    packed."""
    out: list[tuple[str, str]] = []
    trail: list[tuple[int, str]] = []
    blocks: list[tuple[bool, list[str]]] = []  # (is a fence, its lines)
    para: list[str] = []
    fence: str | None = None

    def flush_para() -> None:
        if para:
            blocks.append((False, para.copy()))
            para.clear()

    def flush_section() -> None:
        flush_para()
        name = " > ".join(h for _, h in trail)
        texts: list[str] = []
        for is_fence, lines in blocks:
            if is_fence:
                out.extend((name, p) for p in _packed(texts))
                texts = []
                out.extend((name, p) for p in _split_long("\n".join(lines)))
            else:
                texts.append("\n".join(lines))
        out.extend((name, p) for p in _packed(texts))
        blocks.clear()

    for line in text.split("\n"):
        if fence is not None:
            para.append(line)
            if line.strip().startswith(fence):
                blocks.append((True, para.copy()))
                para.clear()
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened:
            flush_para()
            fence = opened.group(1)[0] * 3
            para.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            flush_section()
            level = len(heading.group(1))
            trail = [(lv, h) for lv, h in trail if lv < level] + [(level, heading.group(2))]
            continue
        if line.strip():
            para.append(line)
        else:
            flush_para()
    if fence is not None:  # an unclosed fence runs to the end, as markdown renders it
        blocks.append((True, para.copy()))
        para.clear()
    flush_section()
    return out


def _paragraphs(lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


def _packed(paragraphs: Sequence[str]) -> list[str]:
    """Consecutive paragraphs joined into chunks of up to ``_TARGET`` characters; one
    longer than ``_LIMIT`` is cut at lines (or, a single line, at ``_LIMIT``)."""
    out: list[str] = []
    current = ""
    for p in paragraphs:
        for piece in _split_long(p):
            if current and len(current) + 2 + len(piece) > _TARGET:
                out.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _split_long(text: str) -> list[str]:
    if len(text) <= _LIMIT:
        return [text]
    out: list[str] = []
    current = ""
    for line in text.split("\n"):
        while len(line) > _LIMIT:
            if current:
                out.append(current)
                current = ""
            out.append(line[:_LIMIT])
            line = line[_LIMIT:]
        if current and len(current) + 1 + len(line) > _LIMIT:
            out.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        out.append(current)
    return out


def _windows(lines: Sequence[str], first: int) -> list[tuple[str, str]]:
    """Fixed windows of ``CODE_WINDOW`` lines, named by their line numbers (1-based)."""
    out = []
    for start in range(0, len(lines), CODE_WINDOW):
        part = lines[start : start + CODE_WINDOW]
        end = first + start + len(part) - 1
        for piece in _split_long("\n".join(part)):
            out.append((f"lines {first + start}-{end}", piece))
    return out


def _python(text: str) -> list[tuple[str, str]]:
    """One chunk per top-level definition; the statements between them in line windows."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _windows(text.split("\n"), 1)
    lines = text.split("\n")
    out: list[tuple[str, str]] = []
    at = 0  # 0-based index of the first line not yet chunked
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        end = node.end_lineno or node.lineno
        if start > at:
            out.extend(_windows(lines[at:start], at + 1))
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        for piece in _split_long("\n".join(lines[start:end])):
            out.append((f"{kind} {node.name}", piece))
        at = end
    if at < len(lines):
        out.extend(_windows(lines[at:], at + 1))
    return [(h, b) for h, b in out if b.strip()]
