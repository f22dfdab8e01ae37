"""Inputs: expanding paths, globs and directories; transparent decompression; head bytes.

A :class:`Source` is one input file. Parsers get its bytes through :meth:`Source.buffer`,
which memory-maps plain files (no copy, works for multi-GB logs) and decompresses
``.gz``/``.bz2``/``.xz`` files into memory.
"""

from __future__ import annotations

import bz2
import contextlib
import glob
import gzip
import lzma
import mmap
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from .errors import Problem

#: what sniffing reads: enough for a doc page or a log's preamble
HEAD_BYTES = 1 << 16
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)

_OPENERS: dict[str, Callable[..., IO[bytes]]] = {
    ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open,  # type: ignore[dict-item]
}


_T = TypeVar("_T")


class _memo(Generic[_T]):
    """A property computed once per instance, without the lock ``functools.cached_property``
    takes before Python 3.12 (thousands of sources, asked several times each)."""

    def __init__(self, fn: Callable[[Any], _T]) -> None:
        self.fn, self.name = fn, fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, cls: Any = None) -> _T:
        if obj is None:
            return self  # type: ignore[return-value]
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


@dataclass(frozen=True)
class Source:
    """One input file. ``name`` is the path as the user gave it (or as a glob expanded it).

    ``explicit`` is False for a file found by walking a directory or matching a glob:
    ``load`` skips such a file quietly (an ``info`` problem) when no format recognises it,
    where a file named on its own is an error.
    """

    name: str
    path: Path
    explicit: bool = field(default=True, compare=False)
    #: the whole content of a small plain file, kept by :meth:`head` for one :meth:`read_all`
    _whole: list[bytes] = field(default_factory=list, init=False, repr=False, compare=False)
    #: the size of a plain file read whole (no stat needed for :meth:`size`)
    _size: list[int] = field(default_factory=list, init=False, repr=False, compare=False)

    @_memo
    def compression(self) -> str | None:
        suffix = self.path.suffix.lower()
        return suffix[1:] if suffix in _OPENERS else None

    @_memo
    def stem_name(self) -> str:
        """File name without a compression suffix (``slurm-1.out.gz`` -> ``slurm-1.out``)."""
        name = self.path.name
        return name[: -len(self.path.suffix)] if self.compression else name

    def size(self) -> int:
        """Size on disk (as read, for a plain file already read whole)."""
        return self._size[0] if self._size else os.stat(self.path).st_size

    def open(self) -> IO[bytes]:
        """Binary stream of the (decompressed) content."""
        opener = _OPENERS.get(self.path.suffix.lower())
        return opener(self.path, "rb") if opener else open(self.path, "rb")

    def head(self, n: int = HEAD_BYTES) -> bytes:
        """The first ``n`` bytes of the decompressed content (what sniffing looks at).

        A damaged compressed file gives what precedes the damage.
        """
        if not self.compression:
            data = self._read_plain(n)
            if len(data) < n:   # the whole file: detection and parsing share this one read
                self._whole[:] = [data]
            return data
        dec = _DECOMPRESSORS[self.compression]()
        out = b""
        with open(self.path, "rb") as fh:
            while len(out) < n and (raw := fh.read(1 << 16)):
                try:
                    out += dec.decompress(raw, n - len(out))
                except (OSError, EOFError, lzma.LZMAError, zlib.error):
                    break
                if dec.eof:
                    break
        return out[:n]

    def read_all(self, problems: list[Problem] | None = None) -> bytes:
        """The whole (decompressed) content as bytes; a small plain file whose :meth:`head`
        was read is not read again. Damage to a compressed stream is reported as in
        :meth:`buffer`."""
        if self._whole:
            return self._whole.pop()
        if self.compression:
            return self._decompress(problems)
        data = self._read_plain(HEAD_BYTES)
        if len(data) < HEAD_BYTES:
            return data
        with open(self.path, "rb") as fh:
            return fh.read()

    def _read_plain(self, n: int) -> bytes:
        """Up to ``n`` bytes of a plain file, with bare system calls (no stat, no buffered
        stream: thousands of small rank files); remembers the size of a file read whole."""
        fd = os.open(self.path, _O_READ)
        try:
            data = os.read(fd, n)
            while len(data) < n and (more := os.read(fd, n - len(data))):  # short reads: rare
                data += more
        finally:
            os.close(fd)
        if len(data) < n:
            self._size[:] = [len(data)]
        return data

    def forget(self) -> None:
        """Drop the content kept by :meth:`head` (once the source is parsed)."""
        self._whole.clear()

    @contextlib.contextmanager
    def buffer(self, problems: list[Problem] | None = None) -> Iterator[bytes | mmap.mmap]:
        """The whole content as a bytes-like object: an mmap for plain files, else bytes.

        A truncated or corrupt compressed stream yields what could be decompressed up to
        the damage, and adds an error to ``problems``.
        """
        if self.compression:
            yield self._decompress(problems)
            return
        with open(self.path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                yield b""
                return
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                yield mm


    def _decompress(self, problems: list[Problem] | None) -> bytes:
        try:
            data, complete = _decompress_stream(self.path, self.compression or "")
        except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
            data, complete = b"", str(exc)
        if complete is not True and problems is not None:
            problems.append(Problem(
                self.name, f"{self.compression} stream is truncated or corrupt ({complete}); "
                f"parsed the {len(data):,} bytes decompressed before the damage",
                severity="error"))
        return data


_DECOMPRESSORS: dict[str, Callable[[], Any]] = {
    "gz": lambda: zlib.decompressobj(wbits=47),  # 47: gzip or zlib header, auto-detected
    "bz2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
}


def _decompress_stream(path: Path, kind: str) -> tuple[bytes, bool | str]:
    """Decompress every member of ``path``; keep what precedes any damage.

    Returns the data and True, or the data so far and the reason it stopped.
    """
    dec, parts = _DECOMPRESSORS[kind](), []
    with open(path, "rb") as fh:
        while raw := fh.read(1 << 20):
            while raw:
                try:
                    parts.append(dec.decompress(raw))
                except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
                    return b"".join(parts), str(exc)
                raw = dec.unused_data if dec.eof else b""
                if dec.eof and raw:
                    dec = _DECOMPRESSORS[kind]()
    return b"".join(parts), True if dec.eof else "stream ended before its end marker"


def expand(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
           ) -> tuple[list[Source], list[Problem]]:
    """Expand files, globs and directories (recursively) into sources, in a stable order.

    Returns the sources and a problem for every argument that matched nothing (an existing
    directory without files says so). A file named on its own is ``explicit``; one found in
    a directory or by a glob is not (it stays explicit when also named on its own). Hidden
    files and directories (``.name``) inside a directory are skipped.
    """
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    sources: list[Source] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for item in items:
        found = list(_expand_one(os.fspath(item)))
        if not found:
            problems.append(Problem(os.fspath(item), _nothing_in(os.fspath(item)),
                                    severity="error"))
        for src in found:
            key = os.path.abspath(src.path)  # no resolve(): a syscall per path component
            if key not in seen:
                seen[key] = len(sources)
                sources.append(src)
            elif src.explicit and not sources[seen[key]].explicit:  # also named on its own
                sources[seen[key]] = Source(src.name, src.path)
    return sources, problems


def _nothing_in(item: str) -> str:
    """Why an argument gave no file."""
    if not os.path.isdir(item):
        return "no such file, directory or glob match"
    hidden = any(n.startswith(".") for _, dirs, files in os.walk(item) for n in dirs + files)
    return ("directory has no files" + (" (only hidden ones, whose names start with '.', "
                                        "which are not read)" if hidden else ""))


def _expand_one(item: str, explicit: bool = True) -> Iterator[Source]:
    path = Path(item)
    if path.is_file():   # files first: one stat each when thousands are listed
        yield Source(item, path, explicit)
    elif path.is_dir():
        yield from _walk(path)
    elif glob.has_magic(item):
        for match in sorted(glob.glob(item, recursive=True)):
            yield from _expand_one(match, explicit=False)


def _walk(root: Path) -> Iterator[Source]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = Path(dirpath)
        for name in sorted(filenames):
            if not name.startswith("."):
                full = base / name
                yield Source(str(full), full, False)
