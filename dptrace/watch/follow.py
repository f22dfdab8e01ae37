"""Following growing inputs: per file an offset, the line still being written held back, new
files of a watched folder joining, truncation and rotation restarting a file with a note.

Polls with ``os.stat`` (no inotify: on Lustre and GPFS the writer is a compute node and the
login node's inotify never fires). Each pass (:meth:`Follower.poll`) lists the inputs again
(:func:`dptrace.sources.expand`, the same files ``dptrace report`` would read), stats each
file, reads the bytes appended since the last pass, and feeds the complete lines (up to the
last newline) to the file's incremental readers (:mod:`.pieces`). The bytes after the last
newline are held: at a snapshot, the part of that line up to its last ``\\r`` (tqdm
updates already redrawn) is read as if the file ended there, never a number cut mid-way.

A file of another format (an mpiP report, a profiler trace: written at exit) is read whole,
by its ordinary reader, when it has stopped growing for one pass, and again if it changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem
from ..registry import ParseResult
from ..sources import HEAD_BYTES, Source
from .pieces import INCREMENTAL, NcclState, TrainlogState, state_for

#: bytes of a file read and fed at a time (a file far behind is read in pieces this large)
MAX_READ = 64 << 20
#: a file is detected again while its head is not whole, and when a companion format's
#: marker (:attr:`dptrace.registry.Spec.deep`: ``NCCL INFO``) first appears in the lines
#: appended (the loader looks for it through the whole of a plain log)


@dataclass
class Tail:
    """One followed file."""

    src: Source
    ino: int = -1
    dev: int = -1
    #: bytes fed to the readers: complete lines
    offset: int = 0
    #: bytes read after ``offset``, without a newline yet
    pending: bytes = b""
    size: int = 0
    mtime: float = 0.0
    formats: tuple[str, ...] | None = None
    states: dict[str, TrainlogState | NcclState] = field(default_factory=dict)
    #: a file of a format read whole: (size, mtime) read and its results
    whole: tuple[tuple[int, float], list[tuple[str, ParseResult]]] | None = None
    first_seen: float = 0.0
    last_growth: float = 0.0
    #: seconds between the passes that found the file grown (its printing rhythm)
    gaps: list[float] = field(default_factory=list)
    #: the launcher whose prefixes start the head's lines (runs.launcher_in), once the head
    #: is complete
    launcher: tuple[str | None] | None = None
    #: the file's formats are to be detected again (a companion's marker was appended)
    redetect: bool = False
    #: the companions' markers seen in appended lines (each makes one detection again)
    markers: set[bytes] = field(default_factory=set)
    #: who printed training rows in the file, by launcher prefix ("" without one): [rows,
    #: time of the pass that found the last ones, seconds between such passes]
    printed: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.src.name

    @property
    def read_bytes(self) -> int:
        """Bytes of the file the snapshot stands for: complete lines, and the line being
        written up to its last ``\\r``."""
        return self.offset + held_upto(self.pending)


def held_upto(pending: bytes) -> int:
    """How much of the line being written is complete tqdm updates (up to its last ``\\r``)."""
    return pending.rfind(b"\r") + 1


class Follower:
    """The inputs of one watch: files and folders, followed pass after pass."""

    def __init__(self, paths: Sequence[str], *, engine: str = "auto",
                 clock: Any = time.monotonic) -> None:
        self.paths = [os.fspath(p) for p in paths]
        self.engine = engine
        self.clock = clock
        self.tails: dict[str, Tail] = {}
        #: what happened to the inputs (restarts, files joining), newest last
        self.notes: list[str] = []
        self.expand_problems: list[Problem] = []
        #: the inputs as ``dptrace.load`` groups them (runs.Argument per argument, and the
        #: argument of each source), and the files in the order it reads them
        self.arguments: list[Any] = []
        self.origins: list[int] = []
        self.order: list[str] = []
        self.bytes_fed = 0
        #: the time of the current pass
        self.now = 0.0

    # --- one pass ------------------------------------------------------------------------

    def poll(self) -> int:
        """One pass over the inputs; the bytes read."""
        now = self.now = self.clock()
        from ..api import expand_arguments

        sources, problems, self.arguments, self.origins = expand_arguments(self.paths)
        self.expand_problems = problems
        self.order = [os.fspath(src.path) for src in sources]
        before = self.bytes_fed
        seen = set()
        for src in sources:
            key = os.fspath(src.path)
            seen.add(key)
            tail = self.tails.get(key)
            if tail is None:
                tail = self.tails[key] = Tail(src, first_seen=now, last_growth=now)
                if len(self.tails) > 1 and any(t.first_seen < now for t in self.tails.values()):
                    self.notes.append(f"{src.name}: new file, joined the run")
            else:
                tail.src = src
            if src.unreadable is None:
                self._pass(tail, now)
        for key in [k for k in self.tails if k not in seen]:
            self.notes.append(f"{self.tails[key].name}: removed; its rows so far are kept")
        return self.bytes_fed - before

    def _pass(self, tail: Tail, now: float) -> None:
        try:
            st = os.stat(tail.src.path)
        except OSError:
            return
        if tail.ino >= 0 and (st.st_ino != tail.ino or st.st_dev != tail.dev):
            self._restart(tail, "replaced by a new file (rotated: its inode changed)")
        elif st.st_size < tail.offset + len(tail.pending):
            self._restart(tail, f"truncated ({tail.offset + len(tail.pending):,} -> "
                                f"{st.st_size:,} bytes)")
        tail.ino, tail.dev = st.st_ino, st.st_dev
        grown = st.st_size != tail.size or st.st_mtime != tail.mtime
        if grown:
            if tail.size and st.st_size > tail.size:
                tail.gaps.append(now - tail.last_growth)
                del tail.gaps[:-50]
            tail.last_growth = now
        tail.size, tail.mtime = st.st_size, st.st_mtime
        if tail.formats is None or tail.redetect or (grown and tail.offset < HEAD_BYTES):
            tail.redetect = False
            self._detect(tail)
        if not tail.formats:
            return
        if tail.src.plain and any(f in INCREMENTAL for f in tail.formats):
            self._read_appended(tail, st.st_size)
        if not grown:
            self._read_whole(tail)

    def _restart(self, tail: Tail, why: str) -> None:
        self.notes.append(f"{tail.name}: {why}; read again from its start")
        tail.offset, tail.pending, tail.size, tail.mtime = 0, b"", 0, 0.0
        tail.states.clear()
        tail.whole = None
        tail.formats = None

    def _detect(self, tail: Tail) -> None:
        from .. import registry
        from ..errors import UnknownFormatError

        try:
            head = tail.src.head()
            if not head.strip():
                return
            found = tuple(p.name for p in registry.detect_all(tail.src, head))
        except (UnknownFormatError, OSError):
            return
        finally:
            tail.src.forget()
        if found == tail.formats:
            return
        tail.formats = found
        for fmt in found:   # a format that joins late reads the lines fed so far first
            if fmt in INCREMENTAL and fmt not in tail.states and tail.src.plain:
                state = tail.states[fmt] = state_for(fmt, tail.name, self.engine,
                                                     os.fspath(tail.src.path))
                for chunk in _chunks(tail.src.path, 0, tail.offset):
                    state.feed(chunk)
        for fmt in [f for f in tail.states if f not in found]:
            del tail.states[fmt]

    def _read_appended(self, tail: Tail, size: int) -> None:
        """Read the bytes appended since the last pass (a file far behind, a watch begun on
        a long log, in pieces of :data:`MAX_READ`: memory stays bounded) and feed the
        complete lines; the rest is held."""
        start = tail.offset + len(tail.pending)
        if size <= start:
            return
        with open(tail.src.path, "rb") as fh:
            fh.seek(start)
            while start < size:
                data = fh.read(min(size - start, MAX_READ))
                if not data:
                    break
                start += len(data)
                self.bytes_fed += len(data)
                self._feed(tail, tail.pending + data)

    def _feed(self, tail: Tail, data: bytes) -> None:
        cut = data.rfind(b"\n") + 1
        complete, tail.pending = data[:cut], data[cut:]
        if not complete:
            return
        for state in tail.states.values():
            _printed(tail, state.feed(complete), self.now)
        found = {m for m in _deep_markers(tail.formats or ()) if m not in tail.markers
                 and m in complete}
        if found:   # each marker once: a mention the loader would not read is not re-asked
            tail.markers |= found
            tail.redetect = True
        tail.offset += len(complete)

    def _read_whole(self, tail: Tail) -> None:
        """A file of a format not read incrementally, read whole once it stopped growing."""
        from .. import registry

        others = [f for f in tail.formats or () if f not in INCREMENTAL or not tail.src.plain]
        key = (tail.size, tail.mtime)
        if not others or (tail.whole is not None and tail.whole[0] == key):
            return
        out = []
        for fmt in others:
            try:
                result = registry.get(fmt).parse(tail.src)
            except Exception as exc:   # noqa: BLE001 - a reader's crash must not stop a watch
                result = ParseResult(problems=[Problem(tail.name, f"parser failed: {exc}",
                                                       severity="error")], variant="failed")
            out.append((fmt, result))
        tail.src.forget()
        tail.whole = (key, out)
        self.bytes_fed += tail.size

    # --- what a snapshot reads ------------------------------------------------------------

    def results(self, tail: Tail, final: bool = False,
                ) -> list[tuple[str, ParseResult]] | None:
        """Each format's tables of ``tail`` so far, in the order detection gave them; None
        when its format is not known yet (a file still empty or unrecognised). ``final``:
        the line still held is read as the file's end (as the ordinary report reads a file
        that does not end with a newline), not only up to its last ``\\r``."""
        if not tail.formats:
            return None
        whole = dict(tail.whole[1]) if tail.whole is not None else {}
        held = tail.pending if final else tail.pending[:held_upto(tail.pending)]
        out = []
        for fmt in tail.formats:
            if fmt in tail.states:
                out.append((fmt, tail.states[fmt].result(held)))
            elif fmt in whole:
                out.append((fmt, whole[fmt]))
        return out or None


    def reduced_results(self, tail: Tail, final: bool = False) -> Any:
        """:meth:`results` with a training log's tables reduced to the rows a refresh's job
        figure reads (:meth:`.pieces.TrainlogState.reduced`), as (results, the log's
        throughput fold or None, the rows per table :meth:`results` would give of the
        reduced formats); False when a training log of ``tail`` cannot be reduced."""
        if not tail.formats:
            return None, None, {}
        whole = dict(tail.whole[1]) if tail.whole is not None else {}
        held = tail.pending if final else tail.pending[:held_upto(tail.pending)]
        out, fold, full = [], None, {}
        for fmt in tail.formats:
            state = tail.states.get(fmt)
            if state is not None and hasattr(state, "reduced"):
                got = state.reduced(held)
                if got is None:
                    return False
                res, fold, full = got
                out.append((fmt, res))
            elif state is not None:
                out.append((fmt, state.result(held)))
            elif fmt in whole:
                out.append((fmt, whole[fmt]))
        return (out or None), fold, full


#: gaps between printings remembered per printer
MAX_GAPS = 50


def _printed(tail: Tail, rows: dict[str, int], now: float) -> None:
    """Note the rows each printer of ``tail`` printed in this pass (its rhythm)."""
    for who, n in rows.items():
        seen = tail.printed.get(who)
        if seen is None:
            tail.printed[who] = [n, now, []]
        else:
            if now > seen[1]:
                seen[2].append(now - seen[1])
                del seen[2][:-MAX_GAPS]
            seen[0], seen[1] = seen[0] + n, now


def _deep_markers(formats: tuple[str, ...]) -> list[bytes]:
    """The markers of the companion formats a file is not read with yet."""
    from .. import registry

    return [p.spec.deep for name, p in registry.parsers().items()
            if p.spec.deep and name not in formats]


def _chunks(path: Any, start: int, end: int, size: int = 16 << 20) -> Any:
    """The bytes ``[start, end)`` of a file in pieces of whole lines."""
    with open(path, "rb") as fh:
        fh.seek(start)
        left, carry = end - start, b""
        while left > 0:
            data = carry + fh.read(min(size, left))
            left -= len(data) - len(carry)
            cut = data.rfind(b"\n") + 1 if left > 0 else len(data)
            carry = data[cut:]
            if cut:
                yield data[:cut]
        if carry:
            yield carry
