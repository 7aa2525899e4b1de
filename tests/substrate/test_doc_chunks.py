"""Documents cut by their structure, and files refused with one line before anything is
stored (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wakeful.errors import UserError
from wakeful.substrate.doc_chunks import (
    CODE_WINDOW,
    chunk_document,
    document_path,
    read_documents,
)

RUNBOOK = """Intro text before any heading.

# Deploys

How we ship.

## Key rotation

The deploy key rotates every Tuesday at noon.

```bash
rotate-key --service checkout
```

After the fence.

## Rollback

Run the rollback job.
"""


def test_markdown_is_cut_at_headings_and_fences_with_heading_trails() -> None:
    chunks = chunk_document("runbook.md", RUNBOOK)
    assert [(c.heading, c.text.split("\n")[-1]) for c in chunks] == [
        ("", "Intro text before any heading."),
        ("Deploys", "How we ship."),
        ("Deploys > Key rotation", "The deploy key rotates every Tuesday at noon."),
        ("Deploys > Key rotation", "```"),
        ("Deploys > Key rotation", "After the fence."),
        ("Deploys > Rollback", "Run the rollback job."),
    ]
    fence = chunks[3]
    assert fence.text == "Deploys > Key rotation\n\n```bash\nrotate-key --service checkout\n```"


def test_a_heading_inside_a_fence_is_code_and_paragraphs_pack_up_to_a_size() -> None:
    text = "# A\n\n```\n# not a heading\n```\n\n" + "\n\n".join(f"para {i} " * 40 for i in range(8))
    chunks = chunk_document("x.md", text)
    assert {c.heading for c in chunks} == {"A"}
    assert "# not a heading" in chunks[0].text
    paras = chunks[1:]
    assert 1 < len(paras) < 8  # packed, not one per paragraph nor all in one
    assert all(len(c.text) <= 1_300 for c in paras)


def test_python_is_cut_at_top_level_definitions() -> None:
    code = (
        '"""Mod."""\nimport os\n\n\n@dec\ndef rotate(key):\n    return key\n\n\n'
        "class Vault:\n    pass\n"
    )
    chunks = chunk_document("pkg/vault.py", code)
    assert [c.heading for c in chunks] == ["lines 1-4", "def rotate", "class Vault"]
    assert chunks[1].text == "def rotate\n\n@dec\ndef rotate(key):\n    return key"


def test_other_code_is_cut_in_line_windows_and_text_in_paragraphs() -> None:
    js = "\n".join(f"let v{i} = {i};" for i in range(CODE_WINDOW + 5))
    assert [c.heading for c in chunk_document("a.js", js)] == [
        f"lines 1-{CODE_WINDOW}",
        f"lines {CODE_WINDOW + 1}-{CODE_WINDOW + 5}",
    ]
    broken = "def (:\n" + js  # Python that does not parse: line windows too
    assert chunk_document("b.py", broken)[0].heading == f"lines 1-{CODE_WINDOW}"
    assert [c.heading for c in chunk_document("n.txt", "one\n\ntwo")] == [""]


def test_files_folders_and_globs_expand_to_stored_paths(tmp_path: Path) -> None:
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("# A\n\nalpha", encoding="utf-8")
    (tmp_path / "docs" / "deep" / "b.txt").write_text("beta", encoding="utf-8")
    (tmp_path / "docs" / "logo.png").write_bytes(b"\x89PNG\x00\x00")  # a folder skips it
    (tmp_path / "docs" / ".hidden").mkdir()
    (tmp_path / "docs" / ".hidden" / "c.md").write_text("secret", encoding="utf-8")
    (tmp_path / "top.py").write_text("x = 1\n", encoding="utf-8")
    found = read_documents(["docs", "*.py", "docs/a.md"], cwd=tmp_path)
    assert [f.path for f in found] == ["docs/a.md", "docs/deep/b.txt", "top.py"]
    assert found[0].version == read_documents(["docs/a.md"], cwd=tmp_path)[0].version
    outside = document_path(tmp_path / "top.py", cwd=tmp_path / "docs")
    assert outside == (tmp_path / "top.py").resolve().as_posix()


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("blob.bin", b"ab\x00cd", "blob.bin is a binary file"),
        ("latin.txt", "caf\xe9".encode("latin-1"), "latin.txt is not UTF-8 text (byte 3"),
        ("empty.md", b"", "empty.md is empty"),
        ("blank.md", b"  \n\t\n", "blank.md is empty"),
        ("paper.pdf", b"%PDF-1.7 not really", "paper.pdf is not a readable PDF"),
        ("scan.pdf", None, "scan.pdf has no text to extract (a scanned PDF?)"),
    ],
)
def test_bad_files_are_one_line_naming_them(
    tmp_path: Path, name: str, data: bytes | None, says: str
) -> None:
    (tmp_path / "good.md").write_text("# fine", encoding="utf-8")
    (tmp_path / name).write_bytes(pdf([""]) if data is None else data)
    with pytest.raises(UserError) as err:
        read_documents(["good.md", name], cwd=tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_missing_paths_and_empty_globs_are_one_line(tmp_path: Path) -> None:
    for given, says in (
        ("nope.md", "no such file or folder: 'nope.md'"),
        ("*.rst", "the glob '*.rst' matches no file"),
        ("", "an empty path was given"),
    ):
        with pytest.raises(UserError) as err:
            read_documents([given], cwd=tmp_path)
        assert says in str(err.value)
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(b"\x89PNG")
    with pytest.raises(UserError, match="holds no markdown, text or code file"):
        read_documents(["imgs"], cwd=tmp_path)


def test_odd_unicode_is_kept_as_written(tmp_path: Path) -> None:
    """A byte-order mark is dropped and CRLF read as LF; everything else valid in UTF-8
    (right-to-left text, combining marks, zero-width joiners, emoji, astral planes) is
    kept as written, in the heading too."""
    odd = "\ufeff# Ünïcödé \u202eright-to-left\u202c 🚀\r\n\r\nzero\u200dwidth e\u0301 𝔘\r\n"
    (tmp_path / "odd.md").write_bytes(odd.encode("utf-8"))
    (doc,) = read_documents(["odd.md"], cwd=tmp_path)
    (chunk,) = doc.chunks()
    assert chunk.heading == "Ünïcödé \u202eright-to-left\u202c 🚀"
    assert chunk.text.endswith("zero\u200dwidth e\u0301 𝔘")


def pdf(pages: list[str]) -> bytes:
    """A small valid PDF, one line of Helvetica text per page (an empty one: no text)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]  # the page tree is filled below
    kids = []
    for text in pages:
        body = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode() if text else b""
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(body), body))
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 "
            b"/BaseFont /Helvetica >> >> >> >>" % content
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out = b"%PDF-1.4\n"
    offsets = []
    for n, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def test_a_pdf_is_read_page_by_page(tmp_path: Path) -> None:
    (tmp_path / "manual.pdf").write_bytes(
        pdf(["Key rotation happens every Tuesday.", "", "Rollback uses the release page."])
    )
    (doc,) = read_documents(["manual.pdf"], cwd=tmp_path)
    assert [(c.heading, c.text) for c in doc.chunks()] == [
        ("page 1", "page 1\n\nKey rotation happens every Tuesday."),
        ("page 3", "page 3\n\nRollback uses the release page."),
    ]
    (tmp_path / "folder").mkdir()
    (tmp_path / "manual.pdf").rename(tmp_path / "folder" / "manual.pdf")
    assert [f.path for f in read_documents(["folder"], cwd=tmp_path)] == ["folder/manual.pdf"]
