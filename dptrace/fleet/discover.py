"""Which job folders a survey reads, and what each holds (its files' fingerprints).

The rule for a root (a directory given to ``dptrace survey``): walking down from the root,
a directory is a **job folder** when it holds a file directly (hidden names, starting with
``.``, are never read, as ``dptrace report`` skips them) or when it is the directory of a
per-rank layout (``<dir>/attempt_0/3/stdout.log`` of torchrun, ``<dir>/1/rank.3/stdout``
of mpirun: :func:`dptrace.names.rank_of_path`); everything below a job folder is its. A
root that holds files itself is one job folder. Each job folder is then read as ``dptrace
report FOLDER`` reads it: one directory argument, whose inputs the ``runs`` rules split
into runs (:mod:`dptrace.runs`, :mod:`dptrace.jobs`). A root that is a file is a job folder
of its own. ``--manifest FILE`` names the job folders one per line instead of walking.

A fingerprint is each file's (path relative to the folder, size, mtime_ns); the content
hash (:func:`content_hash`: sha256 of the whole file up to :data:`WHOLE_BYTES`, else of
:data:`SAMPLES` blocks spread over it, the first and last included) is taken when the size
or mtime differ from what the cache holds.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

#: files up to this size are hashed whole; larger ones by sampled blocks
WHOLE_BYTES = 64 << 20
#: blocks hashed of a larger file, and each block's size
SAMPLES, BLOCK = 64, 1 << 20
#: a per-rank layout below a directory: torchrun's attempt_<n>, mpirun's <n>/rank.<r>
_ATTEMPT = re.compile(r"^attempt_\d+$")
_RANK_DIR = re.compile(r"^rank\.\d+$")


@dataclass(frozen=True)
class File:
    """One file of a job folder: path relative to it, size, mtime_ns."""

    rel: str
    size: int
    mtime_ns: int


def job_folders(roots: Sequence[str], *, since: dt.datetime | None = None) -> list[str]:
    """The job folders under ``roots`` (see the module's rule), in walk order, each once;
    with ``since``: only those with a file modified at or after it."""
    out: dict[str, None] = {}
    for root in roots:
        if os.path.isfile(root):
            out.setdefault(os.path.abspath(root))
            continue
        for folder in _walk(os.path.abspath(root)):
            out.setdefault(folder)
    found = list(out)
    if since is not None:
        limit = since.timestamp() * 1e9
        found = [f for f in found if any(x.mtime_ns >= limit for x in files(f))]
    return found


def from_manifest(path: str) -> list[str]:
    """The job folders a manifest file lists, one per line (blank lines and lines starting
    with ``#`` skipped; relative paths are relative to the manifest's directory)."""
    base = os.path.dirname(os.path.abspath(path))
    out = []
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            item = line.strip()
            if item and not item.startswith("#"):
                out.append(os.path.normpath(os.path.join(base, item)))
    return list(dict.fromkeys(out))


def _walk(root: str) -> Iterator[str]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    visible = [e for e in entries if not e.name.startswith(".")]
    dirs = [e for e in visible if _is_dir(e)]
    if any(not _is_dir(e) for e in visible) or _per_rank_root(dirs):
        yield root
        return
    for d in dirs:
        yield from _walk(d.path)


def _is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir()
    except OSError:
        return False


def _per_rank_root(dirs: Sequence[os.DirEntry[str]]) -> bool:
    """Whether these subdirectories are a per-rank layout's (attempt_<n>/, or <n>/rank.<r>/)."""
    for d in dirs:
        if _ATTEMPT.match(d.name):
            return True
        if d.name.isdigit():
            try:
                if any(_RANK_DIR.match(x.name) for x in os.scandir(d.path)):
                    return True
            except OSError:
                continue
    return False


def files(folder: str) -> list[File]:
    """The files a load of ``folder`` reads (hidden names skipped), sorted by path: their
    fingerprints. A folder that is a file is that one file (relative path: its name).
    One directory listing per directory and one ``stat`` per file (a warm survey's whole
    cost per folder); symbolic links to directories are not followed (as ``os.walk``)."""
    out: list[File] = []
    try:
        _files_under(folder, "", out)
    except NotADirectoryError:
        if os.path.isfile(folder):
            st = os.stat(folder)
            return [File(os.path.basename(folder), st.st_size, st.st_mtime_ns)]
        return []
    except OSError:
        return []
    return out


def _files_under(path: str, rel: str, out: list[File]) -> None:
    """Files of ``path`` (sorted by name), then those of its subdirectories (sorted), each
    with its path relative to the folder (``rel``: this directory's)."""
    with os.scandir(path) as it:
        entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    dirs = []
    for e in entries:
        if _is_dir(e):
            dirs.append(e)
            continue
        try:
            st = os.stat(e.path)
        except OSError:
            continue
        out.append(File(rel + e.name, st.st_size, st.st_mtime_ns))
    for d in dirs:
        if d.is_symlink():
            continue
        try:
            _files_under(d.path, rel + d.name + os.sep, out)
        except OSError:
            continue


def content_hash(path: str, size: int) -> str:
    """sha256 of a file's content (whole up to WHOLE_BYTES; else SAMPLES blocks of BLOCK
    bytes at evenly spaced offsets, first and last included, with the size)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            if size <= WHOLE_BYTES:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
            else:
                h.update(b"sampled:%d" % size)
                step = (size - BLOCK) / (SAMPLES - 1)
                for i in range(SAMPLES):
                    fh.seek(int(i * step))
                    h.update(fh.read(BLOCK))
    except OSError as exc:
        h.update(f"unreadable:{exc.errno}".encode())
    return h.hexdigest()


def hashes(folder: str, found: Iterable[File],
           known: dict[str, tuple[int, int, str]] | None = None) -> dict[str, str]:
    """Each file's content hash, reused from ``known`` (rel -> (size, mtime_ns, hash))
    where size and mtime are unchanged."""
    out = {}
    single = os.path.isfile(folder)
    for f in found:
        old = (known or {}).get(f.rel)
        if old is not None and old[0] == f.size and old[1] == f.mtime_ns:
            out[f.rel] = old[2]
        else:
            out[f.rel] = content_hash(folder if single else os.path.join(folder, f.rel), f.size)
    return out


def folder_key(found: Sequence[File], content: dict[str, str], versions: dict[str, str],
               core: str) -> str:
    """The cache key of a folder: sha256 of the parser versions of its formats (the core
    version when none read it) and each file's (relative path, size, content hash)."""
    h = hashlib.sha256()
    h.update(b"core\0" + core.encode() + b"\0")
    for name, version in sorted(versions.items()):
        h.update(f"format\0{name}\0{version}\0".encode())
    for f in found:
        h.update(f"file\0{f.rel}\0{f.size}\0{content.get(f.rel, '')}\0".encode(
            "utf-8", "surrogateescape"))
    return h.hexdigest()
