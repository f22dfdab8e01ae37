"""NCCL debug logs (``NCCL_DEBUG=INFO``): the processes, networks and transports a job's log
shows, and its NCCL warnings, errors and timeouts (see :mod:`.grammar`, :mod:`.tables`).

The lines sit in any job log, among training output, with or without launcher prefixes, and
written by many processes at once. The reader finds the candidate lines with one search of
the whole buffer (for ``NCCL`` and the layout words; every other line is passed over without
being decoded), strips each line's launcher prefix (mpirun ``[1,3]<stderr>:``, srun ``3: ``,
torchrun ``[default3]:``, PyTorch ``[rank3]:``: the rank of the line), and reads it with the
grammar. A message of a kind it reads that another writer tore (a second prefix inside it)
is skipped and counted in one problem, never read into a value. PyTorch's watchdog lines
(``[Rank 7] Watchdog caught collective operation timeout: WorkNCCL(... OpType=ALLGATHER ...
Timeout(ms)=120000)``) are found anywhere in a line, a torn one included.
"""

from __future__ import annotations

import gc
import heapq
import mmap
import os
import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from ... import schema
from ...errors import Problem
from ...executor import Executor, Processes
from ...formats.trainlog import RE_ENGINE as _re_engine
from ...formats.trainlog.general import _count_newlines, line_cuts, re2_match
from ...names import rank_of_path
from ...numbers import NumberError, fit, note, parse_count, parse_float
from ...registry import ParseResult
from ...sources import Source
from .._units import MS_TO_S, scaled
from . import LINE_PATTERN
from .tables import NCCL_ENV, NCCL_EVENTS, NCCL_SETUP

#: what a line the reader reads holds (NCCL's other lines, ring and tree layouts, affinities,
#: per-collective COLL lines, are never decoded), as alternatives that each start with a
#: literal: google-re2 finds such a literal with memchr/memmem and runs its automaton only
#: from there, so one search per alternative costs less than one search for all of them (a
#: character-by-character automaton: about 2 ns per byte)
_ALTERNATIVES = (
    rb"NCCL(?: (?:WARN|INFO (?:NCCL version|NET/|Using network|comm |Channel [0-9/]+ : [0-9]|"
    rb"[0-9]+ coll channels|NCCL_)|TRACE NET/OFI Selected|version |error)|_[A-Z0-9_]+=)",
    rb"WorkNCCL", rb"nccl[A-Za-z]*Error", rb"communicator was aborted",
    rb"-(?:-hosts?[= ]|H |-nnodes)", rb"SLURM_(?:NNODES|JOB_NUM_NODES)=")
_CANDIDATES = b"|".join(_ALTERNATIVES)
_CANDIDATE = _re_engine.compile(_CANDIDATES)
#: google-re2's matcher of each alternative, called directly: (match, unanchored), or None
#: without google-re2
_EACH = [re2_match(_re_engine.compile(a)) for a in _ALTERNATIVES]
#: launcher prefixes at a line's start: mpirun --tag-output, srun -l, torchrun, PyTorch
_PREFIX = re.compile(r"^(?:\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>:|\s*(?P<srun>\d+):\s|"
                     r"\[default(?P<tr>\d+)\]:|\[rank(?P<pt>\d+)\]:\s?)")
#: an NCCL line (the grammar's LINE, run as the regular expression it is)
_LINE = re.compile(LINE_PATTERN)
#: another writer's text inside a message: a second NCCL prefix or a launcher tag
_TORN = re.compile(r":\d+:\d+ \[\d+\] |\[rank\d+\]:|\[\d+,\d+\]<std|\[default\d+\]:")
_WATCHDOG = re.compile(r"\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: "
                       r"WorkNCCL\((?P<work>[^)]*)\)")
_ERROR = re.compile(r"\b(?:ncclSystemError|ncclInternalError|ncclUnhandledCudaError|"
                    r"ncclRemoteError|ncclInvalidUsage|ncclInvalidArgument)\b|"
                    r"\bNCCL error\b|\bNCCL communicator was aborted\b")
_BARE_VERSION = re.compile(r"^\s*NCCL version (\d+\.\d+\.\d+\S*)\s*$")
_ENV = re.compile(r"^\s*(?:export\s+|\+\+?\s+export\s+)?(NCCL_[A-Z0-9_]+)=(\S*)")
_HOSTS = re.compile(r"(?:--hosts?[= ]|-H )([\w.\-]+(?::\d+)?(?:,[\w.\-]+(?::\d+)?)+)")
_NNODES = re.compile(r"\b(SLURM_NNODES|SLURM_JOB_NUM_NODES)=(\d+)\b|(--nnodes)[= ](\d+)\b(?!:)")
#: what a launcher prefix starts with (a cheap test before the regular expression)
_PREFIX_FIRST = frozenset("[ 0123456789")
#: distinct INFO lines remembered per source (a repeat is only counted)
MAX_DONE = 200_000
#: events named one by one; more in one counted problem
MAX_NOTED = 10
MAX_MESSAGE = 300
#: not in a dict (:meth:`_Reader.repeated`)
_ABSENT: Any = object()
#: bytes of a mapped file searched at a time (see :func:`_candidates`)
WINDOW = 4 << 20
#: a file this large or larger is searched on the executor's workers (see :func:`_ranges`)
PARALLEL_BYTES = 64 << 20


@dataclass
class _Proc:
    host: str
    pid: int
    lineno: int
    device: int | None = None
    rank: int | None = None
    rank_from: str | None = None
    comm_nranks: int = -1
    nranks: int | None = None
    nodes: int | None = None
    version: str | None = None
    using_network: str | None = None
    net_using: str | None = None
    net_devices: str | None = None
    plugin: str | None = None
    provider: str | None = None
    transports: set[str] = field(default_factory=set)
    channel_net: str | None = None
    net_channels: int = 0
    gdrdma: bool = False
    coll_channels: int | None = None
    warnings: int = 0
    lines: int = 0

    def absorb(self, other: _Proc) -> None:
        """What ``other`` (the same process under a torn host name) saw, added to this."""
        self.lines += other.lines
        self.warnings += other.warnings
        self.net_channels += other.net_channels
        self.transports |= other.transports
        self.gdrdma = self.gdrdma or other.gdrdma
        self.lineno = min(self.lineno, other.lineno)
        if other.comm_nranks > self.comm_nranks:
            self.comm_nranks, self.nranks, self.nodes = (other.comm_nranks, other.nranks,
                                                         other.nodes)
        for name in ("device", "rank", "rank_from", "version", "using_network", "net_using",
                     "net_devices", "plugin", "provider", "channel_net", "coll_channels"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(other, name))

    def row(self, name: str, version: str | None) -> dict[str, Any]:
        if self.using_network:
            network, why = self.using_network, "'Using network' line"
        elif self.net_using:
            network, why = self.net_using, f"'NET/{self.net_using} : Using' line"
        elif self.channel_net:
            network, why = self.channel_net, "channel lines"
        else:
            network, why = None, None
        return {
            "source": name, "host": self.host, "pid": self.pid, "rank": self.rank,
            "rank_from": self.rank_from, "device": self.device, "nranks": self.nranks,
            "nodes": self.nodes, "version": self.version or version, "network": network,
            "network_from": why, "net_devices": self.net_devices, "plugin": self.plugin,
            "provider": self.provider,
            "transports": ",".join(sorted(self.transports)) or None,
            "net_channels": self.net_channels,
            "gdrdma": self.gdrdma if self.net_channels else None,
            "coll_channels": self.coll_channels, "warnings": self.warnings,
            "lines": self.lines, "lineno": self.lineno,
        }


def _transport(via: str) -> tuple[str, bool]:
    """``NET/IB/0/GDRDMA`` -> ("NET/IB", True); ``P2P/IPC/read`` -> ("P2P/IPC", False);
    ``SHM/direct/direct`` -> ("SHM", False); ``NET/AWS Libfabric/1`` -> ("NET/AWS Libfabric",
    False)."""
    parts = via.split("/")
    gdr = "GDRDMA" in parts[2:]
    if parts[0] in ("NET", "P2P", "COLLNET") and len(parts) > 1:
        return f"{parts[0]}/{parts[1]}", gdr
    return parts[0], gdr


def _untorn(procs: list[_Proc]) -> list[_Proc]:
    """The processes, each seen under a torn host name (its first line's prefix lost
    characters to another writer) folded into the one process of its pid whose host holds
    that name's characters in order: a torn line never adds a host or a process."""
    keep: list[_Proc] = []
    for p in procs:
        into = [q for q in procs if q is not p and q.pid == p.pid and len(q.host) > len(p.host)
                and (q.host.endswith(p.host) or _dropped_from(p.host, q.host))]
        if len(into) == 1:
            into[0].absorb(p)
        else:
            keep.append(p)
    return keep


def _dropped_from(short: str, host: str) -> bool:
    """True when ``short`` is ``host`` with characters taken out (a subsequence), never
    ``host`` itself."""
    if len(short) >= len(host):
        return False
    chars = iter(host)
    return all(c in chars for c in short)


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.procs: dict[tuple[str, int], _Proc] = {}
        self.events: list[dict[str, Any]] = []
        self.env: list[dict[str, Any]] = []
        self.version: str | None = None
        self.torn: list[int] = []
        #: fields that are not numbers of their column (:func:`dptrace.numbers.fit`)
        self.bad: list[Problem] = []
        #: a file whose lines end with a lone CR (old Mac; a progress bar's whole output):
        #: each CR starts a line, for the line numbers
        self.cr_lines = False
        self.timeouts: set[tuple[int, str]] = set()
        self.seen: set[tuple[str, str]] = set()
        #: lines read so far whose repeat changes nothing but a count (:meth:`repeated`;
        #: their whole text, prefix included): an INFO line's process, or None
        self.done: dict[str, _Proc | None] = {}
        #: the same for lines of one piece, by their bytes (a repeat is not even decoded)
        self.done_raw: dict[bytes, _Proc | None] = {}

    def proc(self, host: str, pid: int, lineno: int) -> _Proc:
        key = (host, pid)
        p = self.procs.get(key)
        if p is None:
            # a prefix whose start went to the end of the line before (two writers, one
            # line): the known process of this pid whose host ends the same way
            # or lost characters to another writer's line (x3006c0s25b0n0 read as
            # x3006c0sn0): the one known process of this pid whose host holds these
            # characters in order
            same = [q for (h, i), q in self.procs.items()
                    if i == pid and (h.endswith(host) or _dropped_from(host, h))]
            if len(same) == 1:
                return same[0]
            p = self.procs[key] = _Proc(host, pid, lineno)
        return p

    def repeated(self, text: str) -> bool:
        """True for a line read before whose repeat changes nothing but a count: an INFO
        line (a repeated setup: counted to its process), a line without NCCL's prefix (an
        export, a launcher's option: its setting is kept once)."""
        known = self.done.get(text, _ABSENT)
        if known is _ABSENT:
            return False
        if known is not None:
            known.lines += 1
        return True

    def line(self, text: str, lineno: int) -> None:
        """One line that is not a repeat (:meth:`repeated`)."""
        whole = text
        prefix_rank = None
        if text[:1] in _PREFIX_FIRST and (m := _PREFIX.match(text)) is not None:
            found = next(v for v in m.groupdict().values() if v is not None)
            prefix_rank = self.count(found, "launcher prefix rank", lineno,
                                     "the line is read, its rank is missing")
            text = text[m.end():]
        plain = True                # nothing but an NCCL INFO line (may be remembered)
        if "WorkNCCL" in text:
            self.watchdog(text, lineno)
            plain = False
        elif ("rror" in text or "aborted" in text) and "NCCL WARN" not in text \
                and _ERROR.search(text):
            self.event(None, prefix_rank, "ERROR", "error", text.strip(), lineno)
            plain = False
        found = _LINE.search(text)
        if found is None:
            self.other(text, lineno)
            if plain and len(self.done) < MAX_DONE:
                self.done[whole] = None   # read again, it changes nothing
            return
        if found.start() and text[:found.start()].strip():   # another writer's text first
            self.torn.append(lineno)
            return
        pid = self.count(found["pid"], "pid", lineno, "the line is skipped")
        if pid is None:
            return
        p = self.proc(found["host"], pid, lineno)
        p.lines += 1
        if p.device is None:
            p.device = self.count(found["device"], "device", lineno)
        if prefix_rank is not None and p.rank_from != "launcher prefix":
            p.rank, p.rank_from = prefix_rank, "launcher prefix"
        msg = (found["message"] or "").rstrip()
        level = found["level"]
        if level == "WARN":
            p.warnings += 1
            kind = "error" if _ERROR.search(msg) else "warn"
            self.event(p, prefix_rank, "ERROR" if kind == "error" else "WARN", kind, msg,
                       lineno)
            return
        if level != "INFO":
            return
        read = _grammar().message(msg) if _may_read(msg) else None
        if read is not None and _TORN.search(msg):
            self.torn.append(lineno)
            return
        if plain and len(self.done) < MAX_DONE:
            self.done[whole] = p
        if read is not None:
            self.apply(p, read[0], read[1], lineno)

    def apply(self, p: _Proc, kind: str, r: Any, lineno: int) -> None:
        if kind == "version":
            p.version = r["version"] + (r.get("build") or "")
            self.version = self.version or p.version
        elif kind == "net_using":
            p.net_using = r["net"]
            p.net_devices = ",".join(d.split("]", 1)[1] for d in r["devices"])
        elif kind == "using_network":
            p.using_network = r["network"]
        elif kind == "plugin_loaded":
            p.plugin = r["plugin"].strip()
        elif kind == "plugin_none":
            p.plugin = p.plugin or "none"
        elif kind == "ofi_provider":
            p.provider = r["provider"]
        elif kind == "comm":
            n = self.value(r["nranks"], "nranks", lineno, "the comm line is not read")
            rank = self.value(r["rank"], "rank", lineno)
            nodes = self.value(r.get("nodes"), "nNodes", lineno)
            self.value(r.get("local_ranks"), "localRanks", lineno)
            if n is None:
                return
            if n > p.comm_nranks:
                p.comm_nranks, p.nranks = n, n
                p.nodes = nodes
                if p.rank_from != "launcher prefix":
                    p.rank, p.rank_from = rank, "NCCL comm line" if rank is not None else None
            elif n == p.comm_nranks and nodes is not None and p.nodes is None:
                p.nodes = nodes   # 2.18+ states it in a second line of the comm
        elif kind == "channel":
            transport, gdr = _transport(r["via"])
            p.transports.add(transport)
            if transport.startswith("NET/"):
                p.net_channels += 1
                p.gdrdma = p.gdrdma or gdr
                p.channel_net = transport[4:]
        elif kind == "channels":
            p.coll_channels = self.value(r["coll"], "coll channels", lineno)
        elif kind == "set_by_env":   # NCCL ends the sentence: 'set by environment to 1.'
            value = r["value"]
            self.setting(r["name"], value[:-1] if value.endswith(".") else value, None,
                         lineno)

    def other(self, text: str, lineno: int) -> None:
        """A line without an NCCL prefix: a bare version line, an NCCL_* setting, a layout."""
        if (m := _BARE_VERSION.match(text)) is not None:
            self.version = self.version or m.group(1)
            return
        if (m := _ENV.match(text)) is not None:
            self.setting(m.group(1), m.group(2), None, lineno)
            return
        if (m := _HOSTS.search(text)) is not None:
            hosts = {h.split(":")[0] for h in m.group(1).split(",") if h}
            self.setting("--host", m.group(1), len(hosts), lineno)
            return
        if (m := _NNODES.search(text)) is not None:
            name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            self.setting(name, value, self.count(value, name, lineno, "the setting is kept, "
                                                 "its number of nodes is missing"), lineno)

    def count(self, text: str, column: str, lineno: int,
              outcome: str = "the line is read, its value is missing") -> int | None:
        """A count, rank, pid or device of a line (:func:`dptrace.numbers.parse_count`);
        None with an error naming the line when the field is not one."""
        try:
            return parse_count(text)
        except NumberError as exc:
            return self.value(exc, column, lineno, outcome)

    def number(self, text: str, column: str, lineno: int) -> float | None:
        """A finite float of a line (:func:`dptrace.numbers.parse_float`), else None."""
        try:
            return parse_float(text)
        except NumberError as exc:
            return self.value(exc, column, lineno)

    def value(self, v: Any, column: str, lineno: int,
              outcome: str = "the line is read, its value is missing") -> Any:
        """A parsed field (an int, a NumberError from the grammar, None) as its column holds
        it: counts are never negative; a bad one is None with an error (:attr:`bad`)."""
        return fit(v, column, lineno, self.name, self.bad, lo=0, outcome=outcome)

    def setting(self, name: str, value: str, nodes: int | None, lineno: int) -> None:
        """One row per setting and value of a source: every process prints its own."""
        if (name, value) in self.seen:
            return
        self.seen.add((name, value))
        self.env.append({"source": self.name, "name": name, "value": value, "nodes": nodes,
                         "lineno": lineno})

    def watchdog(self, text: str, lineno: int) -> None:
        m = _WATCHDOG.search(text)
        if m is None:
            return
        rank = self.count(m.group("rank"), "watchdog rank", lineno, "the timeout is kept, "
                          "its rank is missing")
        work = m.group("work")
        seq = re.search(r"SeqNum=(\d+)", work)
        key = (-1 if rank is None else rank, seq.group(1) if seq else work)
        if key in self.timeouts:    # the same timeout again (the watchdog's exit message)
            return
        self.timeouts.add(key)
        op = re.search(r"OpType=(\w+)", work)
        ms = re.search(r"Timeout\(ms\)=(\d+)", text[m.start():])
        self.events.append({
            "source": self.name, "host": None, "pid": None, "rank": rank, "level": "ERROR",
            "kind": "timeout", "op": op.group(1) if op else None,
            "timeout_s": scaled(self.number(ms.group(1), "Timeout(ms)", lineno), MS_TO_S)
            if ms else None,
            "message": text[m.start():].strip()[:MAX_MESSAGE], "lineno": lineno})

    def event(self, p: _Proc | None, rank: int | None, level: str, kind: str, msg: str,
              lineno: int) -> None:
        self.events.append({
            "source": self.name, "host": p.host if p else None, "pid": p.pid if p else None,
            "rank": rank, "level": level, "kind": kind, "op": None, "timeout_s": None,
            "message": msg[:MAX_MESSAGE], "lineno": lineno})


@dataclass
class _Found:
    """The candidate lines of a range: the newlines before each in the range (``before``,
    in order), which of the range's distinct lines it is (``ids``), those lines' bytes
    (``lines``, in order of first appearance: a setup line repeated a million times is
    sent and read once), and the newlines counted: ``counted`` in the range up to ``upto``
    (its last candidate's line; the rest up to the range's ``end`` is counted only when a
    later range needs this one's lines: :meth:`newlines`)."""

    before: np.ndarray
    ids: np.ndarray
    lines: list[bytes]
    counted: int
    upto: int
    end: int

    def newlines(self, buf: bytes | mmap.mmap) -> int:
        """All the newlines of the range."""
        return self.counted + _count_newlines(buf, self.upto, self.end)


def _grammar() -> Any:
    """The message grammar (:mod:`.grammar`), imported when a message it may read first
    comes (:func:`_may_read`: a log without such messages does not import pyparsing)."""
    from . import grammar
    return grammar


#: the first words of the INFO messages the grammar reads (``grammar.BY_FIRST_WORD``'s keys;
#: tests/test_nccl_grammar.py checks they agree), so that other messages are passed over
#: without importing pyparsing
GRAMMAR_FIRST_WORDS = frozenset({"NCCL", "NET/IB", "NET/Socket", "NET/Plugin", "NET/Plugin:",
                                 "Using", "NET/OFI", "comm"})


def _may_read(msg: str) -> bool:
    """Whether :func:`.grammar.message` may read ``msg`` (else it answers None): a channel
    line, a first word it has an element for, a count (``2 coll channels``) or a variable
    set by the environment (``NCCL_...``)."""
    if msg.startswith("Channel "):
        return True
    words = msg.split(None, 1)
    if not words:
        return False
    first = words[0]
    return first in GRAMMAR_FIRST_WORDS or first[:1].isdigit() or first.startswith("NCCL_")


def _candidates(buf: bytes | mmap.mmap, lo: int, hi: int) -> _Found:
    """The lines of ``buf[lo:hi]`` (``lo`` a line start) that hold a candidate, searched in
    windows of :data:`WINDOW` bytes, each copied out of the map first (the matcher's calls
    on a bytes object cost half those on a map) and its pages then given back to the page
    cache (a multi-GB log's pages do not pile up in this process's memory)."""
    ids: list[int] = []
    before: list[int] = []
    index: dict[bytes, int] = {}
    newlines, upto, end = 0, lo, hi   # the newlines of buf[range start:upto]
    done = lo // mmap.PAGESIZE * mmap.PAGESIZE   # the mapped bytes before this are given back
    while lo < hi:
        stop = hi if hi - lo <= WINDOW else buf.find(b"\n", lo + WINDOW, hi) + 1 or hi
        chunk = buf[lo:stop]
        spans: list[int] = []
        _search(chunk, 0, len(chunk), spans)
        if spans and upto < lo:   # the windows since the last candidate
            newlines += _count_newlines(buf, upto, lo)
            upto = lo
        pos = upto - lo
        for k in range(0, len(spans), 2):
            start = spans[k]
            raw = chunk[start:spans[k + 1]]
            i = index.get(raw)
            if i is None:
                i = index[raw] = len(index)
            ids.append(i)
            newlines += chunk.count(b"\n", pos, start)
            pos = start
            before.append(newlines)
        if spans:
            upto = lo + pos
        del chunk
        if isinstance(buf, mmap.mmap):
            given = stop // mmap.PAGESIZE * mmap.PAGESIZE
            if given > done:
                buf.madvise(mmap.MADV_DONTNEED, done, given - done)
                done = given
        lo = stop
    return _Found(np.array(before, dtype=np.int64), np.array(ids, dtype=np.int64),
                  list(index), newlines, upto, end)


def _search_re2(buf: bytes | mmap.mmap, lo: int, hi: int, found: list[int]) -> None:
    """:func:`_search` with google-re2's matcher called directly (a match object per hit
    from its Python wrapper cost as much as the search), one search per alternative of
    :data:`_ALTERNATIVES`; the lines found by several are merged in order."""
    each: list[list[int]] = []
    for entry in _EACH:
        assert entry is not None
        match, anchor = entry
        spans: list[int] = []
        at = lo
        while at < hi:
            start, end = match(anchor, buf, at, hi)[0]
            if start < 0:
                break
            start = buf.rfind(b"\n", lo, start) + 1 or lo
            end = buf.find(b"\n", end, hi)
            end = hi if end < 0 else end
            spans += (start, end)
            at = end + 1
        if spans:
            each.append(spans)
    if len(each) == 1:
        found += each[0]
    elif each:
        ends = {start: end for spans in each
                for start, end in zip(spans[::2], spans[1::2], strict=True)}
        for start in sorted(ends):
            found += (start, ends[start])


def _search_re(buf: bytes | mmap.mmap, lo: int, hi: int, found: list[int]) -> None:
    """:func:`_search` without google-re2: each match, then its line's bounds."""
    last = -1
    for m in _CANDIDATE.finditer(buf, lo, hi):
        start = buf.rfind(b"\n", lo, m.start()) + 1 or lo
        if start != last:
            end = buf.find(b"\n", m.end(), hi)
            found += (start, hi if end < 0 else end)
            last = start


#: (start, end) of the lines holding a candidate in ``buf[lo:hi]``, added to ``found``
_search = _search_re2 if None not in _EACH else _search_re


def _ranges(buf: bytes | mmap.mmap, executor: Executor | None = None,
            path: str | None = None) -> list[_Found]:
    """The candidate lines of ``buf`` (searched in place: a mapped file is not copied), by
    range, in order. A file of :data:`PARALLEL_BYTES` or more is searched in ranges on
    ``executor``'s workers when it has several (the search is most of the time on a large
    log; the lines found are read here, in order). Each range is a :class:`_Piece` any
    executor can run: a forked worker inherits ``buf``, any other maps the file at ``path``
    (None: content that exists in this process only, searched here unless the executor
    forks)."""
    n = len(buf)
    if n < PARALLEL_BYTES or executor is None or executor.workers < 2 or (
            path is None and not isinstance(executor, Processes)):
        return [_candidates(buf, 0, n)]
    global _FORKED
    _FORKED = (buf, path)
    try:
        pieces = [_Piece(path, lo, hi) for lo, hi in pairwise(line_cuts(buf, executor.workers))]
        return list(executor.map(_candidates_piece, pieces))
    finally:
        _FORKED = None


#: the buffer being searched in ranges, and its path: what a piece run in this process or
#: in a worker forked from it reads (:func:`_candidates_piece`)
_FORKED: tuple[Any, str | None] | None = None


@dataclass(frozen=True)
class _Piece:
    """A range of a file to search, self-contained (picklable): its ``path`` (None: only
    a process that inherits the buffer can search it) and bounds."""

    path: str | None
    start: int
    end: int


def _candidates_piece(piece: _Piece) -> _Found:
    """:func:`_candidates` of a piece: in the buffer this process holds for it (the
    parent, a forked worker), else in its file mapped here (a spawned or remote worker)."""
    held = _FORKED
    if held is not None and held[1] == piece.path:
        return _candidates(held[0], piece.start, piece.end)
    if piece.path is None:
        raise RuntimeError("a piece of content that exists only in the process that read it, "
                           "run in another process")
    with open(piece.path, "rb") as fh, \
            mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return _candidates(mm, piece.start, piece.end)


def _read(r: _Reader, found: _Found, first: int) -> None:
    """Read a range's candidate lines in file order (``first``: the range's first line
    number). Only the lines that can change something are read: each distinct line's first
    occurrence, and every occurrence of a line that is read each time (a warning: an event
    per line). The other occurrences repeat a line that changes nothing but a count when
    read again (:meth:`_Reader.repeated`): they are counted, all at once."""
    ids, before = found.ids, found.before.tolist()
    counts = np.bincount(ids, minlength=len(found.lines)).tolist()
    by_line = np.argsort(ids, kind="stable")   # each line's occurrences, in order
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64).tolist()
    firsts = by_line[starts].tolist() if len(by_line) else []
    pending: list[tuple[int, int]] = []   # (position, line) of lines read each time
    for i, at in enumerate(firsts):
        while pending and pending[0][0] < at:
            p, j = heapq.heappop(pending)
            _read_line(r, found.lines[j], first + before[p])
        raw = found.lines[i]
        known = r.done_raw.get(raw, _ABSENT)
        rest = counts[i]
        if known is _ABSENT:
            _read_line(r, raw, first + before[at])
            rest -= 1
            known = r.done_raw.get(raw, _ABSENT)
            if known is _ABSENT:   # read each time: its later occurrences in order
                for p in by_line[starts[i] + 1:starts[i] + counts[i]].tolist():
                    heapq.heappush(pending, (p, i))
                continue
        if known is not None and rest:
            known.lines += rest
    while pending:
        p, j = heapq.heappop(pending)
        _read_line(r, found.lines[j], first + before[p])


def _read_line(r: _Reader, raw: bytes, lineno: int) -> None:
    """One line (its ``\\r`` pieces one by one; in a file of CR-only line ends, each piece
    is a line of its own: :attr:`_Reader.cr_lines`)."""
    pieces = raw.split(b"\r")
    text = ""
    for k, piece in enumerate(pieces):
        if piece:
            text = piece.decode("utf-8", "replace")
            if not r.repeated(text):
                r.line(text, lineno + k if r.cr_lines else lineno)
    if len(pieces) == 1 and text in r.done:
        r.done_raw[raw] = r.done[text]


def parse(source: Source, *, executor: Executor | None = None) -> ParseResult:
    """Parse one source's NCCL lines into ``nccl_setup``, ``nccl_events`` and ``nccl_env``.
    ``executor``: the loader's; a large log is searched on its workers (:func:`_ranges`)."""
    problems: list[Problem] = []
    name = source.name
    r = _Reader(name)
    with source.buffer(problems) as buf:
        r.cr_lines = buf.find(b"\n") < 0 and buf.find(b"\r") >= 0
        collecting = gc.isenabled()
        gc.disable()   # millions of short-lived lines and no cycles: no collections on the way
        try:
            first = 1
            ranges = _ranges(buf, executor,
                             os.fsdecode(source.path) if source.plain else None)
            for k, found in enumerate(ranges):
                _read(r, found, first)
                if any(len(later.ids) for later in ranges[k + 1:]):  # its line numbers
                    first += found.newlines(buf)
        finally:
            if collecting:
                gc.enable()
    file_rank = rank_of_path(name)
    procs = _untorn(list(r.procs.values()))
    if file_rank is not None and len({p.host for p in procs}) <= 1:
        for p in procs:
            if p.rank is None and len(procs) == 1:
                p.rank, p.rank_from = file_rank[0], "file name"
    if r.torn:
        problems.append(Problem(
            name, f"{len(r.torn)} NCCL line(s) torn by another writer (another process's "
            f"text inside the message; lines {', '.join(map(str, r.torn[:MAX_NOTED]))}"
            f"{', ...' if len(r.torn) > MAX_NOTED else ''}): skipped", r.torn[0], "error"))
    note(r.bad, name, problems)
    setup = [p.row(name, r.version) for p in procs]
    tables = {
        "nccl_setup": schema.from_rows(setup, NCCL_SETUP),
        "nccl_events": schema.from_rows(r.events, NCCL_EVENTS),
        "nccl_env": schema.from_rows(r.env, NCCL_ENV),
    }
    variant = f"NCCL {r.version}" if r.version else "NCCL (version not printed)"
    return ParseResult(tables, problems, variant)

