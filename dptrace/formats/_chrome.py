"""Streaming reader of the Chrome trace-event container: a JSON array of event objects.

Horovod timelines are such arrays, and so are PyTorch profiler traces (their events under
``traceEvents``). The framing varies (see :mod:`dptrace.formats.horovod.read`): one event
per line or thousands per line, a closing ``]`` or none, a trailing ``,``, a record torn
by a killed job. So a file is never handed to a JSON parser whole. It is read in blocks of
:data:`BLOCK` bytes; each block is cut after its last complete event, wrapped in ``[`` ``]``
and handed to the format's decoder (:class:`BlockScanner`'s hooks; Horovod's decodes with
msgspec into structs that name only the fields it uses). The garbage collector is paused
meanwhile (:func:`paused_gc`).

Where a block is cut (issue 29): at its last ``},``, and a cut is kept only when the block
decodes up to it, which proves it a record boundary (the block starts at one). A ``},`` can
also stand inside a record: in a string (Kineto's kernel names: ``{lambda(float)#1}, at::``)
or closing a nested object. When the decoder says the block ends early (truncated, or at the
cut), the cut is moved to the last record that ends in the block by the JSON's structure
(:func:`last_record_end`: strings skipped, braces counted from the block's start). So a
record straddling two blocks, wherever it is cut, is read whole from the next block.

A block that does not decode is retried after replacing invalid UTF-8 and then record
by record, so one bad record costs only itself; the problems name the byte offset and
line; a last record that does not decode is kept for the next block (it may be cut by the
block's end) and judged there. A record nested deeper than the decoder reads (about 1,000
levels: msgspec raises RecursionError) is one such record, and its problem says so.

A record longer than :data:`MAX_RECORD` (64 MiB: a name or args of that size is damage, no
writer makes one) is skipped whole, with an error naming its byte offset and line: once the
bytes waiting for a record's end pass the cap, they are dropped and the rest of the record
is passed over by the JSON's structure (:class:`_Skip`: strings skipped, brackets counted),
holding one block at a time. So a file with a 1 GiB name is read in linear time and
:data:`MAX_RECORD` + :data:`BLOCK` of buffer.

Plain files of :data:`PARALLEL_BYTES` or more are split into byte ranges at event
boundaries (checked as above) and decoded by the loader's executor when it has several
workers (:func:`decode_file`, :mod:`dptrace.executor`).

This module knows the container only: what an event holds, and which events a format
keeps, is the format's (a subclass of :class:`BlockScanner` and its output, a
:class:`Sink`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import lzma
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Protocol, TypeVar

import msgspec

from ..errors import Problem
from ..executor import Executor, resolve

#: bytes read per block (the decoded structs of one block live at a time); read when a
#: scanner starts, so tests may shrink it
BLOCK = 16 << 20
#: bytes asked of the input per read
READ = 1 << 20
#: the longest record read (its block kept growing while it is waited for): a record
#: longer than this is skipped with an error naming its offset (read when a scanner starts)
MAX_RECORD = 64 << 20
#: plain files at least this large are decoded in byte ranges when the executor has
#: several workers
PARALLEL_BYTES = 96 << 20
#: size of the byte ranges a large file is cut into (see range_count)
RANGE_BYTES = 64 << 20
#: problems reported one by one before the rest are only counted
MAX_PROBLEMS = 20
_RECORD_END = re.compile(rb"\}\s*,?\s*(?=\{)")
#: what a failed decoding raises (RecursionError: nested deeper than msgspec decodes)
DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
#: what a problem says of a record nested too deep
TOO_DEEP = "nested deeper than the decoder reads (about 1,000 levels)"
#: one JSON structural character outside strings, with the bytes before it (strings
#: skipped whole). The bytes before it are taken in a lookahead, which Python never backtracks
#: into (an atomic group that Python 3.10 can write; 3.11's possessive '*+' it cannot), so a
#: string left open by the block's end fails at once
_STRUCTURE = re.compile(
    rb'(?=((?:[^"{}\[\]]+|"[^"\\]*(?:\\[\s\S][^"\\]*)*")*))\1[{}\[\]]')
_COMMA = re.compile(rb"\s*,")
#: where msgspec says a syntax error is
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")
_SYNTAX_CHECK = msgspec.json.Decoder()


def last_record_end(data: bytes | bytearray, start: int, end: int) -> int | None:
    """The index of the ``,`` after the last record that ends in ``data[start:end]``, by the
    JSON's structure: ``data[start]`` is at a record boundary inside the array (outside any
    string, at the array's depth); strings are skipped whole and braces and brackets
    counted, so a ``},`` in a string or closing a nested object is no boundary. None when
    no record ends there. Stops at a string still open at ``end`` (the last, cut record)
    and at the array's ``]``."""
    depth = 0
    pos = start
    found = None
    match = _STRUCTURE.match
    while True:
        m = match(data, pos, end)
        if m is None:
            return found
        pos = m.end()
        c = data[pos - 1]
        if c == 0x7B or c == 0x5B:          # { [
            depth += 1
        elif depth > 1:
            depth -= 1
        elif depth == 1 and c == 0x7D:      # a record's closing }
            depth = 0
            comma = _COMMA.match(data, pos, end)
            if comma is not None:
                found = comma.end() - 1
        else:                               # the array's ] (or a stray one)
            return found


#: the bytes of a string up to its closing quote (or a backslash cut by the data's end)
_IN_STRING = re.compile(rb'[^"\\]*(?:\\[\s\S][^"\\]*)*')   # (unrolled: no nested repeat)
#: bytes outside strings up to the next structural character
_OUTSIDE = re.compile(rb'[^"{}\[\]]*')
_SEPARATOR = re.compile(rb"\s*,?")
_BLANKS = re.compile(rb"\s*")


class _Skip:
    """Passes over one record by the JSON's structure, fed piece by piece (nothing kept):
    strings skipped whole (escapes across pieces too), brackets counted from the record's
    start; :meth:`feed` says where the record ends. Linear, at the speed of ``re``."""

    def __init__(self, start: int, line: int) -> None:
        self.start, self.line = start, line     # where the record starts (byte, line)
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.seen = 0                           # bytes of the record passed over

    def feed(self, data: bytes | bytearray, pos: int, end: int) -> int | None:
        """The index after the record's closing brace in ``data[pos:end]``, or None when
        the record goes on past ``end``."""
        begin = pos
        while pos < end:
            if self.escaped:
                self.escaped = False
                pos += 1
            elif self.in_string:
                q = data.find(b'"', pos, end)
                if data.find(b"\\", pos, end if q < 0 else q) < 0:   # no escape: memchr
                    pos = end if q < 0 else q
                else:
                    pos = _IN_STRING.match(data, pos, end).end()  # type: ignore[union-attr]
                if pos < end:
                    self.in_string = data[pos] != 0x22     # a '"' closes it; else a '\'
                    self.escaped = self.in_string          # a cut after it: it escapes the next
                    pos += 1
            else:
                pos = _OUTSIDE.match(data, pos, end).end()  # type: ignore[union-attr]
                if pos < end:
                    c = data[pos]
                    pos += 1
                    if c == 0x22:
                        self.in_string = True
                    elif c == 0x7B or c == 0x5B:      # { [
                        self.depth += 1
                    else:
                        self.depth -= 1
                        if self.depth <= 0:
                            self.seen += pos - begin
                            return pos
        self.seen += pos - begin
        return None


def quote_parity(data: bytes | bytearray, start: int, end: int, lead: int = 0) -> int:
    """1 when ``data[start:end]`` holds an odd number of unescaped ``"`` (one after an odd
    run of backslashes is escaped), else 0: whether a string opens or closes across it.
    ``lead``: backslashes just before ``data[0]`` (the end of what was cut off before it)."""
    n = data.count(b'"', start, end)
    i = data.find(b'\\"', max(start - 1, 0), end)
    while i >= 0:
        k = i
        while k >= 0 and data[k] == 0x5C:
            k -= 1
        if (i - k + (lead if k < 0 else 0)) & 1:
            n -= 1
        i = data.find(b'\\"', i + 2, end)
    if lead & 1 and start == 0 < end and data[0] == 0x22:     # \ cut off, then "
        n -= 1
    return n & 1


def _may_be_cut(exc: Exception, cut: int) -> bool:
    """Whether a block's failure may come from where it was cut (its ``]`` at ``cut``):
    a syntax error that says the input ended early or names the cut's byte (one before it
    is a malformed record; a value of the wrong type, bad UTF-8 are the records')."""
    if type(exc) is not msgspec.DecodeError:
        return False
    m = _ERROR_BYTE.search(str(exc))
    return m is None or int(m.group(1)) >= cut


def _complete(record: bytes) -> bool:
    """Whether one record is whole JSON (of whatever types)."""
    try:
        _SYNTAX_CHECK.decode(record)
    except DECODE_ERRORS:
        return False
    return True


@dataclass
class Range:
    """A byte range of the input: ``first`` holds the opening '[', ``last`` the end.
    ``seed``: what the format learnt from the file's first records (its decoder's
    vocabulary), for a range decoded in another process."""

    start: int
    end: int | None
    first: bool
    last: bool
    seed: Any = None


class Sink(Protocol):
    """What the container reader updates in the format's output."""

    newlines: int
    closed: bool        # the array ends with ']'
    torn: bool          # the last record was cut
    bad_records: int

    def problem(self, source: str, message: str, line: int | None,
                severity: str = "error") -> None: ...


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The garbage collector off meanwhile: bulk decoding makes many objects and no cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class BlockScanner:
    """Reads blocks, cuts them after the last complete event, decodes, tracks position.

    The buffer always starts with ``[``; the ``,`` after the last complete event is
    overwritten with ``]`` and the prefix is decoded in place (no copy of the block).
    A format subclasses it and fills in the hooks :meth:`decode_block`, :meth:`decode_list`,
    :meth:`validated` and :meth:`add_records` (and :meth:`decoded_block`,
    :meth:`record_decoded` if it checks more).
    """

    def __init__(self, fh: IO[bytes], source: str, rng: Range, out: Sink) -> None:
        self.fh, self.source, self.rng, self.out = fh, source, rng, out
        self.block = BLOCK
        self.cap = MAX_RECORD         # the longest record read (see _over_cap)
        self.sep_pending = False      # a ',' after a record read alone is still to drop
        self.pos = rng.start          # absolute offset of buf[1]
        self.left = None if rng.end is None else rng.end - rng.start

    # -- the format's hooks -----------------------------------------------------------------

    def decode_block(self, data: Any) -> None:
        """Decode and keep the events of ``data`` (``[`` ... ``]``, a memoryview of the
        block); raise one of :data:`DECODE_ERRORS` (keeping nothing) when it does not decode."""
        raise NotImplementedError

    def decode_list(self, data: bytes) -> None:
        """As :meth:`decode_block`, for bytes off the hot path (a retry, the last piece)."""
        self.decode_block(data)

    def decoded_block(self, buf: bytearray, cut: int) -> None:
        """Called after ``buf[1:cut]`` decoded whole (its ``},`` end records)."""

    def validated(self, piece: bytes, start: int, record: bytes) -> Any:
        """The event of one record (``piece[start:]`` starts with it); raise one of
        :data:`DECODE_ERRORS` when it is malformed."""
        raise NotImplementedError

    def record_decoded(self, record: bytes, event: Any) -> None:
        """Called for each record read one by one that gave an event."""

    def add_records(self, events: list[Any]) -> None:
        """Keep the events of records read one by one."""
        raise NotImplementedError

    # -- the container ----------------------------------------------------------------------

    def run(self) -> None:
        buf = bytearray(b"[")
        first = self.rng.first
        skip: _Skip | None = None
        for chunk in self._chunks():
            if first:
                chunk = self._skip_opening(chunk)
                first = not chunk
            if skip is not None:                # inside a record over the cap: pass it
                end = skip.feed(chunk, 0, len(chunk))
                self._consume(chunk, 0, len(chunk) if end is None else end)
                if end is None:
                    continue
                self._too_long(skip, cut=False)
                skip, self.sep_pending, chunk = None, True, chunk[end:]
            buf += chunk
            if self.sep_pending:
                buf = self._drop_separator(buf)
            if len(buf) > self.cap + 1:
                buf, skip = self._over_cap(buf)
                if skip is not None:
                    continue
            i = buf.rfind(b"},")
            if i > 0:
                buf = self._decode_prefix(buf, i + 1)
            elif len(buf) > 2 * max(self.block, READ):  # no separator: record by record
                buf = self._records_prefix(buf)
        if skip is not None:
            self._too_long(skip, cut=True)
            return
        self._tail(bytes(buf[1:]))

    def _over_cap(self, buf: bytearray) -> tuple[bytearray, _Skip | None]:
        """A buffer past :data:`MAX_RECORD` (it starts at a record boundary): its records
        up to the cap read one by one, a record longer than the cap skipped; a record that
        goes on past the buffer is passed over from here on (the :class:`_Skip` returned;
        the buffer dropped). Each step consumes a record: linear in the buffer."""
        while len(buf) > self.cap + 1:
            ws = _BLANKS.match(buf, 1).end() - 1  # type: ignore[union-attr]
            skip = _Skip(self.pos + ws, self.out.newlines + buf.count(b"\n", 1, 1 + ws) + 1)
            end = skip.feed(buf, 1 + ws, len(buf))
            if end is None:
                self._consume(buf, 1)
                return bytearray(b"["), skip
            if end - 1 - ws > self.cap:
                self._too_long(skip, cut=False)
            else:
                self._decode_records(bytes(buf[1:end]), final=False)
            self._consume(buf, 1, end)
            buf = self._drop_separator(bytearray(b"[") + buf[end:])
        return buf, None

    def _drop_separator(self, buf: bytearray) -> bytearray:
        """``buf`` without the ``,`` that follows a record read or skipped alone;
        :attr:`sep_pending` stays set while ``buf`` holds only blanks (the ``,`` may come
        in the next block)."""
        m = _SEPARATOR.match(buf, 1)
        assert m is not None
        self.sep_pending = m.end() == len(buf) and buf[m.end() - 1:m.end()] != b","
        if self.sep_pending:
            return buf
        self._consume(buf, 1, m.end())
        return bytearray(b"[") + buf[m.end():]

    def _too_long(self, skip: _Skip, cut: bool) -> None:
        """The problem of a record skipped for its length (``cut``: the file ends in it)."""
        out = self.out
        cap = f"{self.cap / (1 << 20):g} MiB"
        if cut:
            out.torn = True
            out.problem(self.source, f"the file ends inside a record at byte {skip.start:,} "
                        f"that is longer than {cap} ({skip.seen:,} bytes so far; the most a "
                        "record may hold): skipped; the events before it were kept",
                        skip.line)
            return
        out.bad_records += 1
        if out.bad_records <= MAX_PROBLEMS:
            out.problem(self.source, f"skipped a record at byte {skip.start:,}: it is "
                        f"{skip.seen:,} bytes long, longer than {cap} (the most a record may "
                        "hold; a name or args that long is damage)", skip.line)

    def _chunks(self) -> Iterator[bytes]:
        read = getattr(self.fh, "read1", self.fh.read) if self.left is None else self.fh.read
        parts: list[bytes] = []
        size = 0
        block = self.block
        while self.left is None or self.left > 0:
            want = min(READ, block) if self.left is None else min(block, self.left)
            piece = self._read(read, want)
            if not piece:
                break
            if self.left is not None:
                self.left -= len(piece)
            parts.append(piece)
            size += len(piece)
            if size >= block or self.left is not None:
                yield b"".join(parts)
                parts, size = [], 0
        if parts:
            yield b"".join(parts)

    def _read(self, read: Callable[[int], bytes], want: int) -> bytes:
        """One read; a damaged compressed stream ends the input with a problem."""
        try:
            return read(want)
        except (EOFError, OSError, ValueError, lzma.LZMAError, zlib.error) as exc:
            self.out.problem(self.source, f"compressed stream is truncated or corrupt ({exc}); "
                             "parsed what was decompressed before the damage", None)
            self.left = 0
            return b""

    def _skip_opening(self, data: bytes) -> bytes:
        """Drop a BOM, leading whitespace and the array's '['."""
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        body = body.lstrip()
        if body[:1] == b"[":
            body = body[1:]
            extra, first = 0, 0
            while body.lstrip()[:1] == b"[":     # records start with '{': a repeated '['
                body = body.lstrip()
                first = first or len(data) - len(body)
                body, extra = body[1:], extra + 1
            if extra:
                self.out.problem(self.source, f"{extra} extra '[' at the start of the array: "
                                 "ignored", data.count(b"\n", 0, first) + 1, "warning")
        self._consume(data[:len(data) - len(body)])
        return body

    def _consume(self, part: bytes | bytearray, start: int = 0, end: int | None = None) -> None:
        end = len(part) if end is None else end
        self.pos += end - start
        self.out.newlines += part.count(b"\n", start, end)

    def _decode_prefix(self, buf: bytearray, cut: int) -> bytearray:
        """Decode the events before ``buf[cut]`` (a ',' after a '}'), keep the rest.

        The cut holds when the block decodes up to it; when the decoder says the block ended
        early, the cut is moved to the last record boundary by the JSON's structure (see
        the module's docstring). A block that still does not decode is read record by
        record, its last record (maybe cut) kept for the next block."""
        error = self._try_block(buf, cut)
        if error is None:
            return self._keep_after(buf, cut)
        if _may_be_cut(error, cut):
            true = last_record_end(buf, 1, cut)
            if true is None and len(buf) <= max(2 * self.block, MAX_RECORD):
                return buf                    # one record so far: wait for its end
            if true is not None and true != cut:
                if self._try_block(buf, true) is None:
                    return self._keep_after(buf, true)
                cut = true
        left = self._decode_slow(bytes(buf[1:cut]), carry=True)
        if left == cut - 1:
            return buf
        if not left:                          # all read: the ',' at the cut goes too
            return self._keep_after(buf, cut)
        self._consume(buf, 1, cut - left)
        return bytearray(b"[") + buf[cut - left:]

    def _try_block(self, buf: bytearray, cut: int) -> Exception | None:
        """Decode ``buf[1:cut]`` as one block (``buf[cut]`` made ']' meanwhile); None when
        it decoded (and its events were kept), else what it raised (nothing kept)."""
        buf[cut] = 0x5D  # ']'
        view = memoryview(buf)[:cut + 1]
        try:
            self.decode_block(view)
        except DECODE_ERRORS as exc:
            return exc
        finally:
            view.release()
            buf[cut] = 0x2C  # ','
        self.decoded_block(buf, cut)
        return None

    def _keep_after(self, buf: bytearray, cut: int) -> bytearray:
        """``buf[1:cut + 1]`` read: the buffer of what follows."""
        self._consume(buf, 1, cut + 1)
        return bytearray(b"[") + buf[cut + 1:]

    def _records_prefix(self, buf: bytearray) -> bytearray:
        """Decode the complete records in ``buf`` one by one; keep the rest."""
        data = bytes(buf[1:])
        ends = [m.start() + 1 for m in _RECORD_END.finditer(data)]
        if not ends:
            return buf
        self._decode_records(data[:ends[-1]], final=False)
        self._consume(data, 0, ends[-1])
        return bytearray(b"[") + data[ends[-1]:]

    def line(self, offset_in: bytes, upto: int) -> int:
        """The line of ``offset_in[upto]``, ``offset_in`` starting at the current position."""
        return self.out.newlines + offset_in.count(b"\n", 0, upto) + 1

    def _decode(self, piece: bytes) -> None:
        try:
            self.decode_list(b"[" + piece + b"]")
        except DECODE_ERRORS:
            self._decode_slow(piece)

    def _decode_slow(self, piece: bytes, carry: bool = False) -> int:
        """After a failed block: replace invalid UTF-8 and retry, then go record by record.
        With ``carry``, a last record that is not whole JSON (and shorter than
        :data:`MAX_RECORD`) is left unread: it may be cut by the block's end. Returns the
        bytes left at the end."""
        left = 0
        if carry:
            start = self._last_start(piece)
            if len(piece) - start < MAX_RECORD and not _complete(piece[start:].rstrip()):
                left = len(piece) - start
                piece = piece[:start]
        if not piece.strip():
            return left
        piece = self._fix_utf8(piece)
        try:
            self.decode_list(b"[" + piece + b"]")
        except DECODE_ERRORS:
            self._decode_records(piece, final=False)
        return left

    @staticmethod
    def _last_start(piece: bytes) -> int:
        """Where the last record of ``piece`` starts, as :meth:`_decode_records` splits it."""
        start = 0
        for m in _RECORD_END.finditer(piece):
            start = m.end()
        return start

    def _fix_utf8(self, piece: bytes) -> bytes:
        try:
            piece.decode("utf-8")
            return piece
        except UnicodeDecodeError as exc:
            self.out.problem(
                self.source, f"invalid UTF-8 at byte {self.pos + exc.start:,}: replaced by "
                "U+FFFD (a tensor name with non-UTF-8 bytes?)", self.line(piece, exc.start),
                "warning")
            return piece.decode("utf-8", "replace").encode("utf-8")

    def _decode_records(self, piece: bytes, final: bool) -> None:
        """Slow path: split at record boundaries, keep the records that decode."""
        good: list[Any] = []
        starts = [0] + [m.end() for m in _RECORD_END.finditer(piece)]
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(piece)
            record = piece[start:end].rstrip().rstrip(b",")
            if not record.strip():
                continue
            ev = self._record(piece, start, record, final and k == len(starts) - 1)
            if ev is not None:
                self.record_decoded(record, ev)
                good.append(ev)
        self.add_records(good)

    def _record(self, piece: bytes, start: int, record: bytes, last: bool) -> Any:
        """The event of one record, or None (reported). Stray bytes around an intact record
        (a flipped separator, a control character) cost only themselves."""
        try:
            return self.validated(piece, start, record)
        except DECODE_ERRORS as exc:
            error: Exception = exc
        lo, hi = record.find(b"{"), record.rfind(b"}") + 1
        stray = len(record[:lo].strip()) + len(record[hi:].strip()) if 0 <= lo < hi else 0
        if stray:
            with contextlib.suppress(*DECODE_ERRORS):
                ev = self.validated(piece, start + lo, record[lo:hi])
                self.out.problem(self.source, f"ignored {stray} stray byte(s) around the "
                                 f"record at byte {self.pos + start + lo:,}",
                                 self.line(piece, start + lo), "warning")
                return ev
        torn = last and (not record.endswith(b"}") or "truncated" in str(error))
        self._bad_record(piece, start, error, torn)
        return None

    def _bad_record(self, piece: bytes, start: int, exc: Exception, torn: bool) -> None:
        out = self.out
        where = f"byte {self.pos + start:,}"
        line = self.line(piece, start)
        if torn:
            out.torn = True
            out.problem(self.source, f"the file ends inside a record at {where}: the job was "
                        "probably killed while writing the timeline; the events before it "
                        "were kept", line)
            return
        out.bad_records += 1
        if out.bad_records <= MAX_PROBLEMS:
            if isinstance(exc, RecursionError):
                out.problem(self.source, f"skipped a record at {where}: it is {TOO_DEEP}",
                            line)
                return
            why = str(exc)
            if "`$.pid`" in why and ("<=" in why or ">=" in why):
                why = "its pid does not fit a 64-bit integer"
            out.problem(self.source, f"skipped a malformed record at {where}: {why}", line)

    def _tail(self, carry: bytes) -> None:
        """The bytes after the last separator: the end of the array or a last record."""
        if not self.rng.last:
            if carry.strip():
                self._decode(carry)
            return
        body = carry.rstrip()
        if body.endswith(b"]"):
            self.out.closed = True
            body = body[:-1].rstrip()
            extra = 0
            while body.endswith(b"]"):          # records end with '}': a repeated ']'
                body, extra = body[:-1].rstrip(), extra + 1
            if extra:
                self.out.problem(self.source, f"{extra} extra ']' after the end of the "
                                 "array: ignored", self.line(carry, len(carry.rstrip()) - 1),
                                 "warning")
        body = body.rstrip(b",").rstrip()
        if not body:
            return
        try:
            self.decode_list(b"[" + body + b"]")
        except DECODE_ERRORS:
            self._decode_last(self._fix_utf8(body))

    def _decode_last(self, body: bytes) -> None:
        """The array's last records, which did not decode together: those before the last
        record boundary by the JSON's structure, then the last record alone (torn when the
        file ends inside it, whatever ``},`` its strings hold)."""
        end = last_record_end(b"[" + body, 1, len(body) + 1)
        if end is None:
            starts = [0] + [m.end() for m in _RECORD_END.finditer(body)] + [len(body)]
            if any(_complete(body[i:j].rstrip().rstrip(b","))
                   for i, j in zip(starts, starts[1:], strict=False)):
                self._decode_records(body, final=True)
                return
            end = 0                           # a '}' '{' in a string: one record
        else:
            head = body[:end - 1]
            if head.strip():
                try:
                    self.decode_list(b"[" + head + b"]")
                except DECODE_ERRORS:
                    self._decode_records(head, final=False)
        rest = body[end:]
        start = end + len(rest) - len(rest.lstrip())
        record = rest.strip()
        if record:
            ev = self._record(body, start, record, True)
            if ev is not None:
                self.record_decoded(record, ev)
                self.add_records([ev])


# -- whole files, in parallel when large --------------------------------------------------------

T = TypeVar("T")
#: decodes the events of one range of an open file (positioned at its start)
StreamFn = Callable[[IO[bytes], str, Range], T]


def split_ranges(path: str, size: int, parts: int,
                 seed_of: Callable[[bytes], Any] | None = None) -> list[Range]:
    """Cut ``path`` into up to ``parts`` byte ranges, each starting just after a ``},``;
    they carry ``seed_of(the file's first MB)`` (what the format learns from its first
    records)."""
    cuts = [0]
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
        seed = seed_of(head) if seed_of is not None else None
        for k in range(1, parts):
            fh.seek(max(size * k // parts, cuts[-1]))
            window = fh.read(1 << 20)
            i = _range_start(window)
            if i is None:
                continue
            cut = fh.tell() - len(window) + i
            if cut < size:
                cuts.append(cut)
    cuts.append(size)
    n = len(cuts) - 1
    return [Range(cuts[k], cuts[k + 1], k == 0, k == n - 1, seed) for k in range(n)]


#: a candidate start of a range: just after a '},' before a '{'
_RANGE_START = re.compile(rb"\},(?=\s*\{)")


def _range_start(window: bytes, tries: int = 64) -> int | None:
    """Where a range may start in ``window`` (bytes from the middle of a file): after the
    first ``},`` from which the window reads as whole records (by :func:`last_record_end`,
    then checked by decoding them). A ``},`` in a string or a nested object gives
    no such reading."""
    for k, m in enumerate(_RANGE_START.finditer(window)):
        if k >= tries:
            break
        start = m.end()
        end = last_record_end(b"[" + window[start:], 1, len(window) - start + 1)
        if end is None:
            continue
        try:
            _SYNTAX_CHECK.decode(b"[" + window[start:start + end - 1] + b"]")
        except DECODE_ERRORS:
            continue
        return start
    return None


def _decode_range(stream: StreamFn[T], args: tuple[str, str, Range]) -> T:
    path, source, rng = args
    with open(path, "rb") as fh:
        fh.seek(rng.start)
        return stream(fh, source, rng)


def range_count(size: int, workers: int) -> int:
    """How many byte ranges a plain file is decoded in by ``workers``: 1 below
    :data:`PARALLEL_BYTES` or with one worker, else about :data:`RANGE_BYTES` each and at
    least 4 per worker, so that a worker slowed down by other processes on the machine
    takes fewer of them."""
    if size < PARALLEL_BYTES or workers < 2:
        return 1
    return max(4 * workers, -(-size // RANGE_BYTES))


def decode_file(path: str, source: str, size: int, stream: StreamFn[T],
                opener: Callable[[], IO[bytes]] | None = None,
                seed_of: Callable[[bytes], Any] | None = None,
                executor: Executor | None = None) -> list[T]:
    """Decode a whole input with ``stream`` into one result per range, in file order.

    ``opener`` (a decompressing stream) forces one sequential pass; a plain file of
    :data:`PARALLEL_BYTES` or more is cut into :func:`range_count` ranges (see
    :func:`split_ranges` for ``seed_of``), decoded by ``executor`` (default:
    :func:`dptrace.executor.resolve`).
    """
    executor = executor if executor is not None else resolve()
    if opener is not None:
        with opener() as fh:
            return [stream(fh, source, Range(0, None, True, True))]
    parts = range_count(size, executor.workers)
    ranges = (split_ranges(path, size, parts, seed_of) if parts > 1
              else [Range(0, size, True, True)])
    jobs = [(path, source, r) for r in ranges]
    if len(jobs) == 1:
        return [_decode_range(stream, jobs[0])]
    return list(executor.map(functools.partial(_decode_range, stream), jobs))


def shift_problems(problems: list[Problem], lines: int) -> list[Problem]:
    """``problems`` of a range with their lines moved down by the ``lines`` before it."""
    return [Problem(p.source, p.message, None if p.line is None else p.line + lines,
                    p.severity) for p in problems]
