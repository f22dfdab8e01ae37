"""The trainlog format's general engine: the scanner, in Python, correct on any text.

One pass over a buffer (:class:`_Scanner`): find the keywords, cut the segment around each
hit, resolve the launcher prefix, run the recognisers of :mod:`.rules`. Under the fast engine
the lines made only of ``\\r``-separated tqdm updates are read first, all at once
(:class:`.fast.Found`, which declines any line it is unsure of), and the loop passes over
them; this module reads the rest (and everything under ``engine="general"``). Ranges, holes,
cut numbers and the tables are :mod:`.read`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import Problem
from ...registry import lazy_pattern
from . import KEYWORDS, rules
from . import RE_ENGINE as _re_engine
from . import SCAN as _SCAN

#: how far to look for a line or segment boundary before giving up (very long lines)
WINDOW = 1 << 16
#: recognisers see at most this much text either side of the keyword (bounds regex work)
MAX_SEGMENT = 1 << 13
_COUNT_CHUNK = 1 << 20
_NP_COUNT_MIN = 1 << 12
_ANSI = lazy_pattern(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")
#: launcher prefixes (srun, mpirun, [rankN]:, torchrun roles, bare [N]): see rules.PREFIX
_PREFIX = rules.PREFIX
#: the keywords again, for text already decoded (one tqdm update at a time)
_SCAN_TEXT = lazy_pattern("|".join(k.decode() for k in KEYWORDS))
_PREFIX_START = frozenset(" \t[0123456789")
_TAG_ANYWHERE = lazy_pattern(r"\[\d+,(\d+)\]<std(?:out|err|diag)>:")


class _Scanner:
    """One pass over a buffer: find keywords, cut segments, resolve prefixes, run recognisers."""

    def __init__(self, buf: Any, name: str, rows: rules.Rows, problems: list[Problem],
                 start: int, end: int, line: int = 1, eof: int | None = None,
                 found: Any = None) -> None:
        """Scan ``buf[start:end]``; ``start`` is the start of line ``line``. ``eof``: where
        the file ends, when the scan stops short of it (before a cut number). ``found``: the
        fast engine's :class:`.fast.Found`, which reads the lines of tqdm updates first (the
        loop passes over those it read); None reads every line here."""
        self.found = found
        self.buf, self.name, self.rows, self.problems = buf, name, rows, problems
        self.start, self.n = start, end
        self.eof = end if eof is None else eof
        self.line0 = line
        self.line, self.counted, self.newlines = line, start, 0
        self.bad_utf8: int | None = None
        self.long_line: int | None = None

    def run(self, last: bool = True) -> None:
        """The hot loop: kept flat, with locals, because dense logs have a hit on every line.

        ``last``: this range ends the file (check the final newline) rather than ending where
        another range starts (count its newlines for the next range's line numbers).
        """
        buf, start, n, rows = self.buf, self.start, self.n, self.rows
        rfind, find = buf.rfind, buf.find
        line, counted, next_free = self.line0, start, start
        hit = _keyword_finder()
        # the lines the fast engine read: (start, end) each; the loop searches the gaps
        skip_starts: Any = ()
        skip_ends: Any = ()
        if self.found is not None:
            skip_starts, skip_ends = self.found.read(buf, start, n, self.line0)
        skips, k = len(skip_starts), 0
        limit = int(skip_starts[0]) if skips else n
        while True:
            pos = hit(buf, next_free, limit) if next_free < limit else -1
            if pos < 0:
                if k >= skips:
                    break
                next_free = max(next_free, int(skip_ends[k]))  # the '\n' of a line read
                k += 1
                limit = int(skip_starts[k]) if k < skips else n
                continue
            if pos - counted < _NP_COUNT_MIN:  # the usual gap: a line or a few (no call)
                line += buf[counted:pos].count(b"\n")
            else:
                line += _count_newlines(buf, counted, pos)
            counted = pos
            lo = pos - WINDOW if pos - WINDOW > start else start
            nl = rfind(b"\n", lo, pos)
            line_start = nl + 1 if nl >= 0 else self._long(lo, line, lo > start)
            hi = pos + WINDOW if pos + WINDOW < n else n
            line_end = find(b"\n", pos, hi)
            if line_end < 0:
                line_end = self._long(hi, line, hi < n)
            self.line = line
            if find(b"\r", line_start, line_end) >= 0:  # tqdm: many updates on one line
                next_free = max(self._cr_line(pos, line_start, line_end, line), pos + 1)
                continue
            seg_start, seg_end = line_start, line_end
            prefix, body = self._prefixed_text(pos, line_start, seg_start, seg_end)
            if "per iteration" in body and not body.rstrip().endswith("|"):
                more, seg_end = self._continuation(seg_end)
                body += more
            rows.seg = (prefix, line, seg_start)
            _recognise(body, rows)
            next_free = max(seg_end, pos + 1)
        self.line, self.counted = line, counted
        self._report(last)
        if not last:
            self.newlines = line - self.line0 + _count_newlines(buf, counted, n)

    def _cr_line(self, pos: int, line_start: int, line_end: int, line: int) -> int:
        """All ``\\r``-separated updates of one physical line: decoded once, prefix found once.

        Returns where the scan may go on. A line longer than the look-around window is cut
        at update boundaries, so no update is read in halves.
        """
        buf = self.buf
        whole_start = line_start == self.start or buf[line_start - 1:line_start] == b"\n"
        if not whole_start:
            line_start = buf.find(b"\r", line_start, pos) + 1 or line_start
        if line_end < self.n and buf[line_end:line_end + 1] != b"\n":
            cut = buf.rfind(b"\r", pos, line_end)
            line_end = cut if cut > pos else line_end
        text = self._decode(buf[line_start:line_end])
        line_prefix = _split_prefix(text)[0] if whole_start else None
        if "<std" not in text and _tqdm_updates(text, line_prefix, line, line_start, self.rows):
            return line_end
        rows, offset = self.rows, line_start
        whole_update = rules.TQDM_SEGMENT.fullmatch
        for seg in text.split("\r"):
            tq = whole_update(seg) if "[" in seg else None
            if tq is not None:  # the common case, kept cheap: one regex per update
                pre = tq["pre"]
                prefix, desc = _split_prefix(pre) if pre[:1] in _PREFIX_START else (None, pre)
                if prefix is None:
                    prefix = line_prefix if "<std" not in seg else _tag_or(seg, line_prefix)
                rows.seg = (prefix, line, offset)
                rules.tqdm_row(rows, desc, tq["n"], tq)
            elif seg and ("/s]" in seg or "s/it" in seg or _SCAN_TEXT.search(seg)):
                prefix, body = _split_prefix(seg) if seg[:1] in _PREFIX_START else (None, seg)
                if prefix is None:
                    prefix = line_prefix
                    if prefix is None and "<std" in seg:
                        tag = _TAG_ANYWHERE.search(seg)
                        prefix = tag.group(1) if tag else None
                rows.seg = (prefix, line, offset)
                _recognise(body, rows)
            offset += len(seg) + 1
        return line_end

    def _long(self, cut: int, line: int, is_long: bool) -> int:
        """Record a line longer than the look-around window; return where to cut it."""
        if is_long and self.long_line is None:
            self.long_line = line
        return cut

    def _prefixed_text(self, pos: int, line_start: int, seg_start: int, seg_end: int,
                       ) -> tuple[str | None, str]:
        """The launcher instance and the segment's text without the prefix."""
        lo = seg_start if pos - seg_start <= MAX_SEGMENT else pos - MAX_SEGMENT
        hi = seg_end if seg_end - pos <= MAX_SEGMENT else pos + MAX_SEGMENT
        text = self._decode(self.buf[lo:hi])
        prefix, body = _split_prefix(text) if lo == seg_start else (None, text)
        if prefix is None and seg_start != line_start:
            head = self.buf[line_start:min(line_start + 80, pos)]  # may cut a character
            prefix = _split_prefix(head.decode("utf-8", "ignore"))[0]
        if prefix is None and "<std" in text:
            tag = _TAG_ANYWHERE.search(text)
            prefix = tag.group(1) if tag else None
        return prefix, body

    def _continuation(self, end: int) -> tuple[str, int]:
        """Join up to 3 hard-wrapped lines of a Megatron iteration record (BLOOM chronicles)."""
        joined, pos = "", end
        for _ in range(3):
            if pos >= self.n or self.buf[pos:pos + 1] not in (b"\n", b"\r"):
                break
            nxt = self.buf.find(b"\n", pos + 1, min(self.n, pos + 1 + WINDOW))
            nxt = nxt if nxt >= 0 else min(self.n, pos + 1 + WINDOW)
            piece = self._decode(self.buf[pos + 1:nxt]).rstrip("\r")
            if _PREFIX.match(piece) or rules._MEG_ITER.search(piece) or not piece.strip():
                break
            joined, pos = joined + " " + piece.strip(), nxt
            if piece.rstrip().endswith("|"):
                return joined, pos
        return "", end

    def _decode(self, raw: bytes) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            if self.bad_utf8 is None:
                self.bad_utf8 = self.line
        return _ANSI.sub("", text) if "\x1b" in text else text

    def _report(self, last: bool) -> None:
        if self.bad_utf8 is not None:
            self.problems.append(Problem(
                self.name, "bytes that are not UTF-8 (first at this line) were replaced by U+FFFD;"
                " numbers around them were still read", self.bad_utf8))
        if self.long_line is not None:
            self.problems.append(Problem(
                self.name, f"line longer than {WINDOW // 1024} KiB without a newline: "
                "read in windows around each match", self.long_line))
        if last and self.eof > self.start and self.buf[self.eof - 1:self.eof] != b"\n":
            final = self.line + _count_newlines(self.buf, self.counted, self.n)
            self.problems.append(Problem(
                self.name, f"{_NO_NEWLINE} the last line was read as it is and may be cut "
                "short", final))


_NO_NEWLINE = "file does not end with a newline (job killed or file truncated?):"


#: every whole tqdm update of a line: TQDM_SEGMENT anchored at the line start or after a
#: ``\r``. Nothing in TQDM_SEGMENT crosses a ``\r`` and it ends with ``[^\r]*``, so each
#: match is the ``fullmatch`` of one ``\r`` segment, with the same groups
_UPDATES = lazy_pattern(r"(?:^|(?<=\r))" + rules.TQDM_SEGMENT.pattern)
assert tuple(_UPDATES.groupindex) == ("pre", "n", "rate", "scale", "unit", "per", "post")
#: what precedes an update's count -> (its own launcher prefix, bar label, epoch)
_PRE: dict[str, tuple[str | None, str | None, float | None]] = {}
#: (scale, unit, per) of a rate -> (metric, factor, whether the rate is inverted) or None
_UNIT: dict[tuple[str, str, str], tuple[str, float, bool] | None] = {}


def _tqdm_updates(text: str, line_prefix: str | None, line: int, start: int,
                  rows: rules.Rows) -> bool:
    """Rows of a line made of whole tqdm updates only, found with one ``findall``.

    The first ``\r`` segment may instead be text without ``[`` or keywords (an ``srun``
    label before a leading ``\r``), which gives nothing. Gives exactly the rows of
    :func:`rules.tqdm_row` applied update by update; returns False, adding nothing, for any
    other line (the caller then reads it segment by segment).
    """
    found = _UPDATES.findall(text)
    parts = text.split("\r")
    skipped = len(parts) - parts.count("") - len(found)
    if skipped and (skipped > 1 or not parts[0] or "[" in parts[0] or _SCAN_TEXT.search(parts[0])):
        return False
    offsets, offset = [], start
    for part in parts:
        if part:
            offsets.append(offset)
        offset += len(part) + 1
    tp, tm = rows.tp, rows.tm
    for (pre, count, rate, scale, unit, per, post), seg in zip(found, offsets[skipped:],
                                                                strict=True):
        if not rate:  # '?it/s': no rate yet
            continue
        sig = (scale, unit, per)
        kind = _UNIT[sig] if sig in _UNIT else _UNIT.setdefault(sig, rules.rate_unit(*sig))
        if kind is None:
            continue
        metric, factor, inverse = kind
        value = float(rate)
        if inverse:
            if value == 0:
                continue
            value = 1.0 / value
        else:
            value *= factor
        info = _PRE.get(pre)
        if info is None:
            info = _pre_info(pre)
        own, label, epoch = info
        prefix = line_prefix if own is None else own
        step = int(count) if count.isdigit() else rules._tqdm_count(count)
        tp.append((prefix, line, seg, "tqdm", "tqdm", metric, value, "instance", step, epoch,
                   label))
        if "=" in post:
            for name, val in rules.postfix_pairs(post):
                tm.append((prefix, line, seg, "tqdm", name, val, step, epoch))
    return True


def _pre_info(pre: str) -> tuple[str | None, str | None, float | None]:
    prefix, desc = _split_prefix(pre) if pre[:1] in _PREFIX_START else (None, pre)
    info = (prefix, *rules._desc_label(desc))
    if len(_PRE) >= 1 << 16:
        _PRE.clear()
    _PRE[pre] = info
    return info


def re2_match(pattern: Any = _SCAN) -> tuple[Any, Any] | None:
    """(google-re2's own matcher of ``pattern``, compiled by :data:`RE_ENGINE`; default
    :data:`SCAN`, and its unanchored mode), or None without google-re2. Called directly,
    ``match(anchor, buf, pos, end)[0]`` is the span of the first match, (-1, -1) for none:
    the Python wrapper around it (a match object per hit) costs about as much as the
    search itself between two nearby hits."""
    regexp = getattr(pattern, "_regexp", None)
    anchor = getattr(getattr(_re_engine, "_Anchor", None), "UNANCHORED", None)
    if regexp is None or anchor is None:
        return None
    return regexp.Match, anchor


def _keyword_finder() -> Callable[[Any, int, int], int]:
    """``find(buf, pos, end)``: where the next keyword starts in ``buf[pos:end]``, or -1
    (with google-re2, its matcher called directly: :func:`re2_match`)."""
    direct = re2_match()
    if direct is not None:
        match, anchor = direct

        def find_re2(buf: Any, pos: int, end: int) -> int:
            return int(match(anchor, buf, pos, end)[0][0])
        return find_re2

    def find(buf: Any, pos: int, end: int) -> int:
        m = _SCAN.search(buf, pos, end)
        return m.start() if m else -1
    return find


def _tag_or(text: str, default: str | None) -> str | None:
    tag = _TAG_ANYWHERE.search(text)
    return tag.group(1) if tag else default


#: (launcher instance, rest of the text): see rules.split_prefix
_split_prefix = rules.split_prefix


def _recognise(body: str, rows: rules.Rows) -> None:
    """The first specific recogniser that knows the segment reads it; else the fallbacks."""
    for guards, recogniser in rules.SPECIFIC:
        for g in guards:
            if g in body:
                if recogniser(body, rows):
                    return
                break
    for guards, fallback in rules.FALLBACK:
        if guards[0] in body:
            fallback(body, rows)


def line_cuts(buf: Any, pieces: int) -> list[int]:
    """Where to cut ``buf`` into ``pieces`` ranges of about equal size, each starting at a
    line start: 0, the cuts, ``len(buf)`` (a range may be empty when a line is longer)."""
    n = len(buf)
    cuts = [0]
    for k in range(1, pieces):
        nl = buf.find(b"\n", max(n * k // pieces, cuts[-1]))
        cuts.append(nl + 1 if nl >= 0 else n)
    cuts.append(n)
    return cuts


def _count_newlines(buf: Any, start: int, end: int) -> int:
    """Newlines in ``buf[start:end]``. Gaps of a few KB and more are counted by NumPy in
    place (slicing an mmap copies the bytes out first: ~35% slower), in blocks of
    :data:`_COUNT_CHUNK` to bound the temporary mask."""
    if end - start < _NP_COUNT_MIN:
        return int(buf[start:end].count(b"\n"))
    total = 0
    for lo in range(start, end, _COUNT_CHUNK):
        block = np.frombuffer(buf, np.uint8, min(end, lo + _COUNT_CHUNK) - lo, lo)
        total += int(np.count_nonzero(block == 10))
    return total
