"""File access confined to an agent's working directory, for file tools.

Every path is opened one component at a time from the working directory, each with
``O_NOFOLLOW`` relative to the directory opened before it (``dir_fd``), so:

* no symbolic link is followed, anywhere in the path: a link is refused by name, however
  it got there, and a link swapped in between a check and an open still fails the open;
* ``..`` and absolute paths are refused before anything is opened, so what is opened is
  always beneath the working directory;
* only regular files and directories are opened: a FIFO, socket or device is refused from
  its ``lstat`` and opened, if at all, with ``O_NONBLOCK``, and the open file is checked
  again with ``fstat`` (same inode, regular), so nothing can make a tool block in ``open``;
* reads are bounded: :func:`read_text` reads only as many bytes as the characters it
  returns can need, never the whole file, and cuts at a UTF-8 character boundary;
* writes (:func:`write_text`) go to a fresh file that is renamed over the target, so a
  hard link or a link planted under the target's name never carries the write elsewhere.

Errors are :class:`FileToolError` (a :class:`~wakeful.errors.UserError`) with one line
naming the path and what was wrong; a tool that raises one gives the model that line.
"""

from __future__ import annotations

import codecs
import errno
import os
import posixpath
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from wakeful.errors import UserError

__all__ = [
    "FileToolError",
    "ReadResult",
    "WholeFile",
    "list_entries",
    "read_text",
    "read_whole",
    "write_text",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# The most bytes one UTF-8 character takes.
_UTF8_MAX = 4


class FileToolError(UserError):
    """A file tool refused a path: outside the working directory, a link, not a regular
    file or directory, or missing."""


@dataclass(frozen=True)
class ReadResult:
    text: str
    truncated: bool
    bytes_read: int


def _parts(relative: str) -> list[str]:
    """The path's components beneath the working directory; refuses what could leave it."""
    if "\x00" in relative:
        raise FileToolError(f"{relative!r} contains a NUL character")
    if posixpath.isabs(relative):
        raise FileToolError(
            f"{relative!r} is outside the agent's working directory (give a relative path)"
        )
    normal = posixpath.normpath(relative)
    if normal == ".":
        return []
    parts = normal.split("/")
    if ".." in parts:
        raise FileToolError(f"{relative!r} is outside the agent's working directory")
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link (file tools do not follow links)"
    if stat.S_ISFIFO(mode):
        return "a FIFO, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _refused(shown: str, err: OSError) -> FileToolError:
    if err.errno == errno.ENOENT:
        return FileToolError(f"{shown!r} does not exist in the agent's working directory")
    if err.errno in (errno.ELOOP, errno.EMLINK):
        return FileToolError(f"{shown!r} is a symbolic link (file tools do not follow links)")
    if err.errno == errno.ENOTDIR:
        return FileToolError(f"{shown!r} is not a directory")
    return FileToolError(f"{shown!r} cannot be opened: {err.strerror}")


def _open_checked(dir_fd: int, name: str, shown: str, *, directory: bool) -> int:
    """Open ``name`` in ``dir_fd`` if it is a directory (or a regular file), never blocking."""
    try:
        before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as err:
        raise _refused(shown, err) from None
    wanted = stat.S_ISDIR if directory else stat.S_ISREG
    if not wanted(before.st_mode):
        raise FileToolError(f"{shown!r} is {_kind(before.st_mode)}")
    try:
        fd = os.open(name, _DIR_FLAGS if directory else _READ_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        raise _refused(shown, err) from None
    after = os.fstat(fd)
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not wanted(after.st_mode):
        os.close(fd)
        raise FileToolError(f"{shown!r} changed while it was being opened; try again")
    return fd


@contextmanager
def _directory(root: str, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of the directory ``root/parts...``, opened without following links
    (``create``: missing directories are made)."""
    try:
        fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root itself may be a link
    except OSError as err:
        raise FileToolError(
            f"the working directory {root!r} cannot be opened: {err.strerror}"
        ) from None
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            if create:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as err:
                    raise _refused(shown, err) from None
            child = _open_checked(fd, name, shown, directory=True)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_file(root: str, relative: str) -> int:
    """A descriptor of the regular file ``relative`` beneath ``root`` (the caller closes it)."""
    parts = _parts(relative)
    if not parts:
        raise FileToolError(f"{relative!r} is a directory")
    with _directory(root, parts[:-1]) as dir_fd:
        return _open_checked(dir_fd, parts[-1], relative, directory=False)


def read_text(root: str, relative: str, max_chars: int) -> ReadResult:
    """Up to ``max_chars`` characters of a regular UTF-8 file beneath ``root`` (invalid
    bytes become U+FFFD). Reads at most ``4 * (max_chars + 1)`` bytes, and for ASCII text
    ``max_chars + 1``: enough to fill the result and see whether anything follows."""
    fd = _open_file(root, relative)
    try:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        chunks: list[str] = []
        have, read, eof = 0, 0, False
        while have <= max_chars:
            # Each byte yields at most one character: never ask for more than could be kept.
            want = max_chars + 1 - have
            data = os.read(fd, want)
            read += len(data)
            eof = not data
            text = decoder.decode(data, final=eof)
            chunks.append(text)
            have += len(text)
            if eof:
                break
    finally:
        os.close(fd)
    whole = "".join(chunks)
    truncated = len(whole) > max_chars
    return ReadResult(text=whole[:max_chars], truncated=truncated, bytes_read=read)


@dataclass(frozen=True)
class WholeFile:
    """A file's bytes as read, and its size and modification time (from the open file)."""

    data: bytes
    size: int
    mtime_ns: int


def read_whole(root: str, relative: str, max_bytes: int) -> WholeFile:
    """All of a regular file beneath ``root``, refused (one line) when it holds more than
    ``max_bytes``: a caller that needs the whole file (to hash it, to find a symbol in it)
    reads at most that many."""
    fd = _open_file(root, relative)
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            raise FileToolError(
                f"{relative!r} holds {st.st_size} bytes, more than {max_bytes}; read it by"
                " line range with a smaller file, or split it"
            )
        chunks: list[bytes] = []
        have = 0
        while have <= max_bytes:
            data = os.read(fd, max_bytes + 1 - have)
            if not data:
                break
            chunks.append(data)
            have += len(data)
    finally:
        os.close(fd)
    if have > max_bytes:
        raise FileToolError(f"{relative!r} grew past {max_bytes} bytes while it was read")
    return WholeFile(data=b"".join(chunks), size=st.st_size, mtime_ns=st.st_mtime_ns)


def list_entries(root: str, relative: str, max_entries: int) -> tuple[list[str], int]:
    """Sorted names in a directory beneath ``root`` (directories end with ``/``, links
    with ``@``, other special files with ``|``), at most ``max_entries`` of them, and how
    many there were in all."""
    with _directory(root, _parts(relative)) as fd, os.scandir(fd) as it:
        names: list[str] = []
        for entry in it:
            if entry.is_symlink():
                names.append(entry.name + "@")
            elif entry.is_dir(follow_symlinks=False):
                names.append(entry.name + "/")
            elif entry.is_file(follow_symlinks=False):
                names.append(entry.name)
            else:
                names.append(entry.name + "|")
    names.sort()
    return names[:max_entries], len(names)


def write_text(root: str, relative: str, text: str) -> int:
    """Write ``text`` (UTF-8) to a regular file beneath ``root``, creating its directories.
    An existing target must be a regular file with no other hard link; it is replaced by
    renaming a new file over it, which never writes through a link. Returns bytes written."""
    parts = _parts(relative)
    if not parts:
        raise FileToolError(f"{relative!r} is a directory")
    name = parts[-1]
    data = text.encode("utf-8")
    with _directory(root, parts[:-1], create=True) as dir_fd:
        try:
            existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if not stat.S_ISREG(existing.st_mode):
                raise FileToolError(f"{relative!r} is {_kind(existing.st_mode)}")
            if existing.st_nlink > 1:
                raise FileToolError(f"{relative!r} has another hard link; refusing to write it")
        temp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, _NEW_FLAGS, 0o644, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb", closefd=True) as f:
                f.write(data)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    return len(data)
