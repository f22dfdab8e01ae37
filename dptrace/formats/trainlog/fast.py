"""The trainlog format's fast engine: the lines of tqdm updates of a range, and the SambaFlow
and loss lines among them, read at once with pyarrow.compute; the rest handed to the general
engine's scanner.

A physical line made only of ``\\r``-separated tqdm updates dominates large logs. Before the
scanner's loop runs, :meth:`Found.read` finds every line of the range that holds a ``\\r`` and
a keyword, and reads them together as one Arrow array, split at the ``\\r``s. Each update is
matched by Python's own :data:`.rules.TQDM_SEGMENT` once per *shape* (the update with each
ASCII digit made '0': a few thousand shapes for a million updates, the pattern reading every
ASCII digit alike), which gives the byte spans of its parts; what needs Python (a bar's
description, a launcher prefix, a rate's unit, a postfix) is worked out once per distinct
text. A line gives exactly the rows of :func:`.general._tqdm_updates`, or is declined as a
whole and left to the scanner, which then reads it as the general engine does: bytes that are
not UTF-8, ANSI escapes, ``<std`` tags, a dict after a bar, digits that are not ASCII, a count
beyond int64, a line after a Megatron iteration line (which may continue on it), a long line.

In a chunk dense with such lines, the other lines with a keyword are looked at too
(:meth:`Found._plain_lines`): a line of printable ASCII that the general engine's recognisers
would give to :func:`.rules.sambaflow` or :func:`.rules.generic_loss` only (or to none) is read
with RE2 (whose ``\\s``, ``\\d``, ``\\w`` and ``\\b`` are Python's on such text); a line
holding a guard of any other recogniser is declined. ``engine="fast"`` and ``"auto"`` do all
this; ``"general"`` does not.

The rows read here stay columns (:class:`Found`: strings as codes into one dictionary);
:func:`frame` makes of them and of the scanner's tuples the very frame
``pd.DataFrame.from_records`` makes of the general engine's lists of tuples, in line order.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ... import memory
from ...registry import finder
from . import KEYWORDS, general, rules

#: bytes of whole lines read at once (bounds the temporaries of a range)
CHUNK = 16 << 20
#: a chunk with fewer lines of ``\r`` than one in this many: only those are looked at (no
#: keyword pass over the whole chunk to find the lines the scanner may pass over)
_FEW_CR = 8
#: lines at least this long are left to the scanner (its look-around window: see general.WINDOW)
MAX_LINE = general.WINDOW // 2

#: TQDM_SEGMENT's groups, in the order :func:`_segment_spans` gives their byte spans
_GROUPS = tuple(rules.TQDM_SEGMENT.groupindex)
#: every class of TQDM_SEGMENT treats the ASCII digits alike (no digit of its own but in its
#: bounds): a segment with each digit made '0' (its *shape*) has the match of the segment
#: itself, group for group, at the same places (see :func:`_segment_spans`)
assert not re.search(r"[0-9]", re.sub(r"\{\d+(?:,\d*)?\}", "", rules.TQDM_SEGMENT.pattern))
#: what a line must not hold to be read here (in any of its segments, looked for once per
#: shape): an ANSI escape, a ``<std`` tag, a dict after a bar (the lookahead of TQDM_SEGMENT),
#: a digit that is not ASCII
_DECLINE = re.compile(r"\x1b|<std|\{'|(?![0-9])\d")
#: valid UTF-8, as Python's strict decoder takes it (the bytes of a binary array, one by one)
_UTF8 = (r"^(?:[\x00-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]"
         r"|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
         r"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2})*$")
_KEYWORDS = b"|".join(KEYWORDS).decode("ascii")
#: a count read as an int64 by a cast: 1 to 18 ASCII digits (in a shape: zeros)
_PLAIN_COUNT = re.compile("0{1,18}")
#: the characters Python's ``\s`` matches in a text (``str.isspace``; RE2's ``\s`` is ASCII)
_WS = (r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
       r"\x{202f}\x{205f}\x{3000}")
#: what decides a line's launcher prefix (rules.PREFIX): its leading white space, the run of
#: other characters after it, and one more white space (every alternative of PREFIX is made of
#: characters that are not white space but for its last one)
_PREFIX_HEAD = f"^(?P<head>[{_WS}]*[^{_WS}]*[{_WS}]?)"

#: plain lines read here are shorter than the scanner's segment window (it reads such a line
#: whole)
MAX_PLAIN = min(MAX_LINE, general.MAX_SEGMENT)
#: a plain line not read here: a byte that is not printable ASCII or a tab, a ``<std`` tag (the
#: scanner looks for a tag anywhere), a Megatron line (joined with the next ones)
_NOT_PLAIN = r"[^\t\x20-\x7e]|<std|per iteration"
#: rules._SAMBA as RE2 runs it on printable ASCII (Python's \s and \d are RE2's there)
_SAMBA_RE2 = rules._SAMBA.pattern
#: rules._LOSS, its lookahead ``(?![\w.])`` made the first character of what follows (a
#: loss's findall goes on after the number: from ``rest``)
assert rules._LOSS.pattern.endswith(r"(?![\w.])") and rules._LOSS.groups == 2
_LOSS_RE2 = (rules._LOSS.pattern[:-len(r"(?![\w.])")].replace("(", "(?P<key>", 1)
             .replace("(" + rules.NUM + ")", "(?P<val>" + rules.NUM + ")")
             + r"(?P<rest>[^\w.].*|)$")
assert _LOSS_RE2.count("(?P<") == 3, _LOSS_RE2
_STEP_RE2 = "(?i)" + rules._STEP_HINT.pattern.replace(r"(\d+)", r"(?P<s>\d+)")
_EPOCH_RE2 = "(?i)" + rules._EPOCH_HINT.pattern.replace(r"(\d+)", r"(?P<e>\d+)")
assert rules._STEP_HINT.flags & rules._EPOCH_HINT.flags & re.IGNORECASE
assert "(?P<s>" in _STEP_RE2 and "(?P<e>" in _EPOCH_RE2

TP_STRINGS = ("prefix", "pattern", "name", "metric", "scope", "label")
TM_STRINGS = ("prefix", "pattern", "name")


class Found:
    """The rows of the lines read here: columns per chunk, strings as codes into
    :attr:`strings` (one dictionary for every string column)."""

    def __init__(self, give_back: bool = False) -> None:
        #: the buffer maps a file: each chunk's pages are handed back once read
        #: (:func:`dptrace.memory.give_back`)
        self.give_back = give_back
        self.strings: dict[str, int] = {}
        self.tp: list[dict[str, np.ndarray]] = []
        self.tm: list[dict[str, np.ndarray]] = []
        #: where each line read here starts (per chunk)
        self.starts: list[np.ndarray] = []

    def codes(self, values: list[str | None]) -> np.ndarray:
        """The codes of ``values`` (None: -1), new strings added to the dictionary."""
        strings = self.strings
        return np.array([-1 if v is None else strings.setdefault(v, len(strings))
                         for v in values], dtype=np.int32)

    def code(self, value: str) -> int:
        """The code of one string (added to the dictionary when new)."""
        return self.strings.setdefault(value, len(self.strings))

    def lines_read(self) -> np.ndarray:
        """Where each line read here starts, in order."""
        return np.concatenate(self.starts) if self.starts else np.empty(0, np.int64)

    def read(self, buf: Any, start: int, end: int, line: int) -> tuple[np.ndarray, np.ndarray]:
        """Read the lines of tqdm updates of ``buf[start:end]`` (``start``: the start of line
        ``line``); returns the (start, end) of each run of lines the scanner can pass over
        (the lines read here and the lines without a keyword; end: the last one's ``\n``, or
        ``end``)."""
        after_megatron = _after_megatron(buf, start, end)
        starts, ends = [], []
        pos = start
        while pos < end:
            hi = end
            if end - pos > CHUNK:
                nl = buf.rfind(b"\n", pos, pos + CHUNK)
                hi = nl + 1 if nl >= 0 else (buf.find(b"\n", pos + CHUNK, end) + 1 or end)
            s, e, newlines = self._chunk(buf, pos, hi, line, after_megatron)
            if self.give_back:
                memory.give_back(buf, pos, hi)
            starts.append(s)
            ends.append(e)
            line += newlines
            pos = hi
        if not starts:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        memory.release(sum(len(c["lineno"]) for c in self.tm))  # the chunks' temporaries
        s, e = np.concatenate(starts), np.concatenate(ends)
        joined = np.flatnonzero(s[1:] == e[:-1] + 1)  # runs that meet at a chunk's cut
        return np.delete(s, joined + 1), np.delete(e, joined)

    def _chunk(self, buf: Any, lo: int, hi: int, line: int, after_megatron: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, int]:
        """One chunk of whole lines: the runs of lines to pass over (see :meth:`read`), and
        the newlines in it."""
        data = np.frombuffer(buf, np.uint8, hi - lo, lo)
        nl = np.flatnonzero(data == 10)
        cr = np.flatnonzero(data == 13)
        none = np.empty(0, np.int64)
        if not len(cr):
            return none, none, len(nl)
        line_starts = np.concatenate(([0], nl + 1))
        line_ends = np.append(nl, hi - lo)  # each line's '\n' (or the chunk's end)
        with_cr = _sorted_unique(np.searchsorted(nl, cr))  # the lines (0-based in the chunk)
        idx = with_cr
        keyword = None
        if len(idx) * _FEW_CR >= len(line_starts):
            # every line as one element (with its '\n': the keywords see it as the scanner
            # does): the lines without a keyword are passed over with the lines read
            whole = pa.Array.from_buffers(pa.large_binary(), len(line_starts), [
                None, pa.py_buffer(np.append(line_starts, hi - lo)), pa.py_buffer(data)])
            keyword = _mask(pc.match_substring_regex(whole, _KEYWORDS))
            del whole  # the view of the map
            idx = idx[keyword[idx]]
        tables = len(self.tp), len(self.tm)
        read = self._cr_lines(data, idx, line_starts[idx], line_ends[idx], lo, line,
                              after_megatron, keyword is None)
        if keyword is not None:  # and the plain lines with a keyword (SambaFlow, losses)
            plain = keyword.copy()
            plain[with_cr] = False
            plain_idx = np.flatnonzero(plain)
            read_plain = self._plain_lines(data, plain_idx, line_starts[plain_idx],
                                           line_ends[plain_idx], lo, line, after_megatron)
            self._in_line_order(self.tp, tables[0])
            self._in_line_order(self.tm, tables[1])
        pa.default_memory_pool().release_unused()  # the chunk's temporaries (mimalloc keeps them)
        if keyword is None:  # a few lines read: the scanner passes over those alone
            if not read.any():
                return none, none, len(nl)
            self.starts.append(line_starts[idx[read]] + lo)
            return line_starts[idx[read]] + lo, line_ends[idx[read]] + lo, len(nl)
        done = np.sort(np.concatenate([idx[read], plain_idx[read_plain]]))
        if not len(done):
            return none, none, len(nl)
        self.starts.append(line_starts[done] + lo)
        skip = ~keyword
        skip[done] = True
        return (*_runs(skip, line_starts + lo, line_ends + lo), len(nl))

    @staticmethod
    def _in_line_order(chunks: list[dict[str, np.ndarray]], first: int) -> None:
        """The rows a chunk added (``chunks[first:]``: its tqdm lines', its plain lines') as
        one, in line order (a line's rows keep their order: one kind of line each)."""
        if len(chunks) - first < 2:
            return
        added = chunks[first:]
        del chunks[first:]
        keys = set().union(*added)
        n = [len(c["lineno"]) for c in added]
        merged = {}
        for key in keys:  # a key one chunk lacks: step_none (its steps are all ints)
            merged[key] = np.concatenate([c[key] if key in c else np.zeros(k, dtype=bool)
                                          for c, k in zip(added, n, strict=True)])
        order = np.argsort(merged["lineno"], kind="stable")
        chunks.append({key: col[order] for key, col in merged.items()})

    def _cr_lines(self, data: np.ndarray, idx: np.ndarray, ls: np.ndarray, le: np.ndarray,
                  lo: int, line: int, after_megatron: np.ndarray, keywords: bool,
                  ) -> np.ndarray:
        """Read the lines with a ``\\r`` and a keyword (``idx``, from ``ls`` to ``le`` in
        ``data``, the chunk at ``lo`` whose first line is ``line``; ``keywords``: not known
        yet, look): where each was read."""
        out = np.zeros(len(idx), dtype=bool)
        keep = (le - ls) < MAX_LINE
        if len(after_megatron):
            keep &= ~_inside(ls + lo, after_megatron)
        pick = np.flatnonzero(keep)
        if not len(pick):
            return out
        offsets = np.empty(2 * len(pick), dtype=np.int64)
        offsets[0::2], offsets[1::2] = ls[pick], le[pick]
        spans = pa.Array.from_buffers(
            pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        lines = spans.take(pa.array(np.arange(0, len(offsets) - 1, 2)))
        del spans  # the view of the map
        if keywords:
            sel = _mask(pc.match_substring_regex(lines, _KEYWORDS))
            lines, pick = lines.filter(pa.array(sel)), pick[sel]
        try:
            text = lines.cast(pa.large_string())
        except pa.ArrowInvalid:  # bytes that are not UTF-8: those lines are the scanner's
            valid = _mask(pc.match_substring_regex(lines, _UTF8))
            text = lines.filter(pa.array(valid)).cast(pa.large_string())
            pick = pick[valid]
        del lines
        if len(pick):
            out[pick[self._lines(text, idx[pick] + line, ls[pick] + lo)]] = True
        return out

    def _lines(self, text: pa.Array, lineno: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Read the lines ``text`` (at ``starts``, numbered ``lineno``): where each was read
        (its rows added) rather than declined."""
        parts = pc.split_pattern(text, "\r")
        flat = parts.flatten()
        bounds = parts.offsets.to_numpy()
        k = len(text)
        parent = np.repeat(np.arange(k), np.diff(bounds))
        first = np.zeros(len(flat), dtype=bool)
        first[bounds[:-1]] = True
        length = pc.utf8_length(flat).to_numpy(zero_copy_only=False)
        # every segment's match, by shape (a line's launcher prefix before its first '\r',
        # with no '[', is one of a few shapes that fail at once)
        shapes = _segment_spans(flat)
        matched, data = shapes.matched, shapes.data
        # the segments TQDM_SEGMENT does not read: none, or a first one without '[' or keywords
        skipped = (length > 0) & ~matched
        count = np.bincount(parent[skipped], minlength=k)
        good = count == 0
        lone = skipped & first
        if lone.any():
            heads = flat.filter(pa.array(lone))
            fine = _per_value(heads, _plain_head)
            one = np.zeros(k, dtype=bool)
            one[parent[lone][fine.astype(bool)]] = True
            good |= (count == 1) & one
        good &= np.bincount(parent[shapes.per_segment(shapes.declined)], minlength=k) == 0
        seg = matched & good[parent]
        where = np.flatnonzero(seg)
        chosen = shapes.select(where)
        fields = {name: _slices(data, *shapes.span_of(name, chosen))
                  for name in ("n", "rate", "post")}
        fields["pre"] = _slices(data, *shapes.pre_key(chosen))
        bad = np.zeros(k, dtype=bool)
        # the segment's offset: the line's start plus the characters (and \r) before it
        ends = np.cumsum(length + 1)
        offset = ends - (length + 1) - (ends - (length + 1))[bounds[:-1]][parent]
        seg_at = starts[parent] + offset
        parent_at = parent[where]
        rows = self._rows(fields, parent_at, bad, shapes, chosen[0])
        if rows is None:
            return good & ~bad
        (keep, metric, value, step, pre, post_rows), _ = rows
        lines_ok = good & ~bad
        keep &= lines_ok[parent_at]
        prefix = self._prefixes(text)
        own, label, epoch = pre
        kept = np.flatnonzero(keep)   # the rows (one bool subscript each found them again)
        rows_at = parent_at[kept]
        pre_prefix = own[kept]
        line_prefix = prefix[rows_at]
        pfx = np.where(pre_prefix >= -1, pre_prefix, line_prefix)  # -2: the line's
        n = len(rows_at)
        tp = {"prefix": pfx, "lineno": lineno[rows_at], "seg": seg_at[where[kept]],
              "pattern": np.full(n, self.code("tqdm"), dtype=np.int32),
              "metric": metric[kept], "value": value[kept],
              "scope": np.full(n, self.code("instance"), dtype=np.int32),
              "step": step[kept], "epoch": epoch[kept], "label": label[kept]}
        tp["name"] = tp["pattern"]
        self.tp.append(tp)
        seg_of, names, vals = post_rows  # per pair: its segment (index into where), name, value
        take = np.flatnonzero(keep[seg_of])
        seg_of, names, vals = seg_of[take], names[take], vals[take]
        if len(seg_of):
            # the segment's row in tp: its position among the kept segments
            row = np.cumsum(keep) - 1
            r = row[seg_of]
            self.tm.append({"prefix": tp["prefix"][r], "lineno": tp["lineno"][r],
                            "seg": tp["seg"][r], "pattern": tp["pattern"][r], "name": names,
                            "value": vals, "step": tp["step"][r], "epoch": tp["epoch"][r]})
        return lines_ok

    def _rows(self, f: dict[str, pa.Array], line_of: np.ndarray, bad: np.ndarray,
              shapes: _Shapes, sub: np.ndarray) -> tuple[tuple[Any, ...], np.ndarray] | None:
        """The row of each matched segment (``keep``: it gives one) and its postfix pairs;
        lines found unfit here are flagged in ``bad``. None: no segments. ``sub``: each
        segment's shape (in ``shapes``)."""
        n = len(f["n"])
        if not n:
            return None
        # once per shape: the rate's unit (no digits in it: the same for every segment of a
        # shape), whether there is a rate ('?it/s': none), whether the count is plain digits
        kinds = [None if m is None else _unit_of(m["scale"], m["unit"], m["per"])
                 for m in shapes.matches]
        def at(per_shape: list[Any], dtype: Any, missing: Any) -> np.ndarray:
            return np.array(per_shape + [missing], dtype=dtype)[sub]

        metric = at([-1 if k is None else self.code(k[0]) for k in kinds], np.int32, -1)
        factor = at([1.0 if k is None else k[1] for k in kinds], np.float64, 1.0)
        inverse = at([k is not None and k[2] for k in kinds], bool, False)
        rated = [m is not None and m["rate"] is not None for m in shapes.matches]
        keep = at([r and k is not None for k, r in zip(kinds, rated, strict=True)], bool, False)
        plain = at([m is not None and _PLAIN_COUNT.fullmatch(m["n"]) is not None
                    for m in shapes.matches], bool, False)
        if at(rated, bool, False).all():  # every segment has a rate ('?it/s': an empty one)
            rate = _floats(f["rate"])
        else:
            rate = _floats(pc.if_else(pc.equal(f["rate"], ""), "0", f["rate"]))
        with np.errstate(divide="ignore"):
            value = np.where(inverse, 1.0 / np.where(rate == 0, 1.0, rate), rate * factor)
        keep &= ~(inverse & (rate == 0))
        # the count: an int (ASCII digits; '1.5k' through rules._tqdm_count, an int too)
        if plain.all():
            step = np.asarray(pc.cast(f["n"], pa.int64()).to_numpy(zero_copy_only=False),
                              dtype=np.int64)
        else:
            step = np.zeros(n, dtype=np.int64)
            if plain.any():
                step[plain] = pc.cast(f["n"].filter(pa.array(plain)), pa.int64()).to_numpy()
            odd = np.flatnonzero(~plain)
            counts = _per_value(f["n"].filter(pa.array(~plain)), _count, object)
            for i, c in zip(odd.tolist(), counts.tolist(), strict=True):
                if c is None:
                    bad[line_of[i]] = True
                else:
                    step[i] = c
        pre = self._pre(f["pre"])
        post = self._post(f["post"])
        return (keep, metric, value, step, pre, post), bad

    def _pre(self, pre: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(own prefix code, -2 for the line's; label code; epoch, NaN for None) of each
        update, from what precedes its count and its bar's percentage (:meth:`_Shapes.pre_key`:
        :func:`.general._pre_info`, once per text)."""
        values, which = _distinct(pre)
        infos = [_pre_info(v) for v in values]
        own = np.array([-2 if o is None else self.code(o) for o, _, _ in infos] + [-2],
                       dtype=np.int32)[which]
        label = self.codes([lab for _, lab, _ in infos] + [None])[which]
        epoch = np.array([np.nan if e is None else e for _, _, e in infos] + [np.nan],
                         dtype=np.float64)[which]
        return own, label, epoch

    def _post(self, post: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``key=value`` pairs of the postfixes (:func:`.rules.postfix_pairs`, once per
        distinct postfix): (segment of each pair, name code, value)."""
        values, which = _distinct(post)
        seen = _postfixes_seen()
        found = [seen.get(v) or _read_postfix(seen, v) for v in values] + [[]]
        per = np.array([len(f) for f in found], dtype=np.int64)
        names = self.codes([name for f in found for name, _ in f])
        vals = np.array([v for f in found for _, v in f], dtype=np.float64)
        first = np.cumsum(per) - per
        counts = per[which]
        owner = np.repeat(np.arange(len(which)), counts)
        if not len(owner):
            return owner, np.empty(0, np.int32), np.empty(0)
        within = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        pair = first[which[owner]] + within
        return owner, names[pair], vals[pair]

    def _prefixes(self, text: pa.Array) -> np.ndarray:
        """The launcher prefix code of each line (``_split_prefix`` of its text; -1: none),
        once per distinct head (:data:`_PREFIX_HEAD`)."""
        heads = pc.extract_regex(text, _PREFIX_HEAD).field("head")
        values, which = _distinct(heads)
        return self.codes([general._split_prefix(h)[0] for h in values] + [None])[which]


    def _plain_lines(self, data: np.ndarray, idx: np.ndarray, ls: np.ndarray, le: np.ndarray,
                     lo: int, line: int, after_megatron: np.ndarray) -> np.ndarray:
        """Read the lines without ``\\r`` that hold a keyword (``idx``, from ``ls`` to their
        ``\\n`` at ``le`` in ``data``, the chunk at ``lo`` whose first line is ``line``), when
        the general engine's recognisers would give them to :func:`.rules.sambaflow` or
        :func:`.rules.generic_loss` only, or to no recogniser: where each was read.

        Declined (left to the scanner): lines that are not printable ASCII (tab allowed: then
        Python's ``\\s``, ``\\d``, ``\\w`` and ``\\b`` are RE2's), with ``<std`` or
        ``per iteration``, after a Megatron iteration line, as long as the scanner's segment
        window, at the end of the data without a newline, holding a guard of any other
        recogniser (:data:`.rules.SPECIFIC`, :data:`.rules.FALLBACK` as they are when the scan
        runs), or a step hint of more than 18 digits."""
        out = np.zeros(len(idx), dtype=bool)
        route = _plain_route()
        keep = ((le - ls) < MAX_PLAIN) & (le < len(data))
        if route is None or not keep.any():
            return out
        if len(after_megatron):
            keep &= ~_inside(ls + lo, after_megatron)
        pick = np.flatnonzero(keep)
        raw = _slices(pa.py_buffer(data), ls[pick], le[pick], pa.large_binary())
        fine = ~_mask(pc.match_substring_regex(raw, _NOT_PLAIN))
        pick = pick[fine]
        if not len(pick):
            return out
        text = raw.filter(pa.array(fine)).cast(pa.large_string())
        del raw
        # the launcher prefix, once per distinct head; the recognisers see the rest (body)
        heads, which = _distinct(pc.extract_regex(text, _PREFIX_HEAD).field("head"))
        split = [general._split_prefix(h) for h in heads]
        prefix = self.codes([p for p, _ in split] + [None])[which]
        cut = np.array([len(h) - len(b) for h, (_, b) in zip(heads, split, strict=True)] + [0],
                       dtype=np.int64)[which]
        offsets = _offsets(text)
        body = _slices(text.buffers()[2], offsets[:-1] + cut, offsets[1:])
        other_re, samba_re = route
        ok = ~_mask(pc.match_substring_regex(body, other_re))
        samba = _mask(pc.match_substring_regex(body, samba_re)) & ok
        lines = np.flatnonzero(ok)  # read: rows from sambaflow, generic_loss or none
        tp: list[dict[str, np.ndarray]] = []
        tm: list[dict[str, np.ndarray]] = []
        loss = ok & _mask(pc.match_substring(body, "oss"))
        if samba.any():
            at = np.flatnonzero(samba)
            m = pc.extract_regex(body.filter(pa.array(samba)), _SAMBA_RE2)
            hit = _mask(m.is_valid())
            loss[at[hit]] = False  # else sambaflow gave nothing: the fallbacks read the line
            if hit.any():
                tp_rows, tm_rows = self._sambaflow(m.filter(pa.array(hit)), at[hit])
                tp.append(tp_rows)
                tm.extend(tm_rows)
        if loss.any():
            tm_loss, bad = self._losses(body.filter(pa.array(loss)), np.flatnonzero(loss))
            if len(bad):  # a step too long for an int64: the scanner reads the line
                ok[bad] = False
                lines = np.flatnonzero(ok)
            tm.append(tm_loss)
        where = pick  # line of each element of text, in idx
        for table, parts in ((self.tp, tp), (self.tm, tm)):
            parts = [p for p in parts if len(p["at"])]
            if not parts:
                continue
            rows = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
            keep_rows = ok[rows["at"]]
            order = np.lexsort((rows.pop("order")[keep_rows], rows["at"][keep_rows]))
            at = rows.pop("at")[keep_rows][order]
            cols = {key: col[keep_rows][order] for key, col in rows.items()}
            cols["prefix"] = prefix[at]
            cols["lineno"] = idx[where[at]] + line
            cols["seg"] = ls[where[at]] + lo
            table.append(cols)
        out[where[lines]] = True
        return out

    def _sambaflow(self, m: pa.StructArray, at: np.ndarray,
                   ) -> tuple[dict[str, np.ndarray], list[dict[str, np.ndarray]]]:
        """The rows of :func:`.rules.sambaflow` for its matches ``m`` (of the lines ``at``)."""
        n = len(at)
        code = self.codes
        tp = {"at": at, "order": np.zeros(n, dtype=np.int64),
              "pattern": np.full(n, code(["sambaflow"])[0], dtype=np.int32),
              "name": np.full(n, code(["e2e samples_per_sec"])[0], dtype=np.int32),
              "metric": np.full(n, code(["samples_per_s"])[0], dtype=np.int32),
              "value": _floats(m.field("v")),
              "scope": np.full(n, code(["instance"])[0], dtype=np.int32),
              "step": np.zeros(n, dtype=np.int64), "step_none": np.ones(n, dtype=bool),
              "epoch": np.full(n, np.nan), "label": np.full(n, -1, dtype=np.int32)}
        loop = np.flatnonzero(_mask(pc.not_equal(m.field("t"), "")))
        tm = []
        for k, (group, name) in enumerate((("t", "train_loop_time_s"), ("ep", "epochs"),
                                           ("steps", "global_steps"))):
            j = len(loop)
            tm.append({"at": at[loop], "order": np.full(j, k, dtype=np.int64),
                       "pattern": tp["pattern"][:j], "name": np.full(j, code([name])[0],
                                                                     dtype=np.int32),
                       "value": _floats(m.field(group).take(pa.array(loop))),
                       "step": np.zeros(j, dtype=np.int64), "step_none": np.ones(j, dtype=bool),
                       "epoch": np.full(j, np.nan)})
        return tp, tm

    def _losses(self, body: pa.Array, at: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The rows of :func:`.rules.generic_loss` for the texts ``body`` (of the lines
        ``at``): each loss in the order ``findall`` finds them, with the line's step and epoch
        hints; and the lines whose step is too long for an int64 (their rows to drop)."""
        owners, keys, values, order = [], [], [], []
        rest, who, k = body, np.arange(len(at)), 0
        while len(who):
            m = pc.extract_regex(rest, _LOSS_RE2)
            hit = _mask(m.is_valid())
            if not hit.any():
                break
            m = m.filter(pa.array(hit))
            who = who[hit]
            owners.append(who)
            keys.append(m.field("key"))
            values.append(_floats(m.field("val")))
            order.append(np.full(len(who), k, dtype=np.int64))
            rest, k = m.field("rest"), k + 1
        if not owners:
            return {"at": np.empty(0, np.int64)}, np.empty(0, np.int64)
        owner = np.concatenate(owners)
        names, name_of = _distinct(pa.chunked_array(keys).combine_chunks())
        name = np.append(self.codes([rules._snake(v) for v in names]), -1).astype(np.int32)
        step = pc.extract_regex(body, _STEP_RE2)
        has_step = _mask(step.is_valid())
        digits = step.field("s")
        long_step = has_step & _mask(pc.greater(pc.utf8_length(digits), 18))
        steps = np.zeros(len(at), dtype=np.int64)
        if (has_step & ~long_step).any():
            fit = has_step & ~long_step
            steps[fit] = pc.cast(digits.filter(pa.array(fit)), pa.int64()).to_numpy()
        epoch = pc.extract_regex(body, _EPOCH_RE2)
        epochs = np.full(len(at), np.nan)
        has_epoch = _mask(epoch.is_valid())
        if has_epoch.any():
            epochs[has_epoch] = _floats(epoch.field("e").filter(pa.array(has_epoch)))
        n = len(owner)
        rows = {"at": at[owner], "order": np.concatenate(order),
                "pattern": np.full(n, self.code("loss_line"), dtype=np.int32),
                "name": name[name_of], "value": np.concatenate(values),
                "step": steps[owner], "step_none": ~has_step[owner], "epoch": epochs[owner]}
        return rows, at[long_step]


def _plain_head(part: str) -> bool:
    """A first ``\\r`` segment that gives nothing (see :func:`.general._tqdm_updates`)."""
    return "[" not in part and not general._SCAN_TEXT.search(part)


class _Shapes:
    """The segments of a chunk by shape (see :func:`_segment_spans`)."""

    def __init__(self, data: Any, which: np.ndarray, matches: list[re.Match[str] | None],
                 declined: list[bool], spans: np.ndarray, starts: np.ndarray) -> None:
        #: the segments' data buffer; the shape of each segment; TQDM_SEGMENT's fullmatch of
        #: each shape (None: none); the shapes that decline their line (:data:`_DECLINE`)
        self.data, self.which, self.matches, self.declined = data, which, matches, declined
        #: whether each segment matches
        self.matched = self.at(None, [m is not None for m in matches], bool, False)
        #: the byte (start, end) of each group within a segment of each shape (a row per
        #: shape, and one of zeros for none), as a contiguous column per group bound (each
        #: bound of many segments one plain take); where each segment starts in :attr:`data`
        self.spans, self.starts = np.ascontiguousarray(spans.T), starts

    def select(self, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the shape, where it starts in :attr:`data`) of each of ``segments``: what
        :meth:`span` and :meth:`pre_key` read, looked up once for all their groups."""
        return self.which[segments], self.starts[segments]

    def span(self, group: str, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The byte (start, end) in :attr:`data` of ``group`` of each of ``segments``."""
        return self.span_of(group, self.select(segments))

    def span_of(self, group: str, chosen: tuple[np.ndarray, np.ndarray],
                ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`span` of the segments ``chosen`` (:meth:`select`)."""
        i = 2 * _GROUPS.index(group)
        shape, at = chosen
        return self.spans[i][shape] + at, self.spans[i + 1][shape] + at

    def pre_key(self, chosen: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The byte (start, end) in :attr:`data` of the ``pre`` group of each segment
        ``chosen`` (:meth:`select`) cut before the percentage of its bar (the whole group
        when it has none): what :func:`.general._pre_info` reads of it (see
        :func:`_pre_key_end`), the percentage and the bar's glyphs left out (a few texts per
        bar description, where the whole groups are a few per percent and bar: tens of
        thousands in a dense log)."""
        i = 2 * _GROUPS.index("pre")
        shape, at = chosen
        return self.spans[i][shape] + at, self.spans[-1][shape] + at

    def at(self, segments: np.ndarray | None, per_shape: list[Any], dtype: Any,
           missing: Any) -> np.ndarray:
        """A value per shape (``missing``: of a segment without one) for each of ``segments``
        (None: all)."""
        table = np.array(per_shape + [missing], dtype=dtype)
        return table[self.which if segments is None else self.which[segments]]

    def per_segment(self, per_shape: list[bool]) -> np.ndarray:
        """The segments whose shape is flagged in ``per_shape``."""
        return np.flatnonzero(self.at(None, per_shape, bool, False))


def _segment_spans(flat: pa.Array) -> _Shapes:
    """TQDM_SEGMENT's fullmatch of each segment of ``flat`` (the general engine's reading of
    an update: :func:`.general._tqdm_updates`): whether it matches, and the byte (start, end)
    of each of its groups (:data:`_GROUPS`; an empty span for a group that took no part) in
    ``flat``'s data buffer.

    Python's own regex runs once per distinct *shape* of segment, the segment with each ASCII
    digit made '0' (a few thousand shapes for a million updates: the numbers change, the text
    around them hardly): as the pattern treats all ASCII digits alike, a shape's match is its
    segments' match, with the same groups at the same places. Nothing else is approximated:
    bounds, laziness and classes are Python's."""
    width = 2 * len(_GROUPS) + 1  # and the end of pre's key (_Shapes.pre_key)
    data = flat.buffers()[2]
    if not len(flat):
        return _Shapes(data, np.zeros(0, dtype=np.int64), [], [],
                       np.zeros((1, width), dtype=np.int64), np.zeros(0, dtype=np.int64))
    offsets = _offsets(flat)
    base = int(offsets[0])
    shape = np.frombuffer(data, np.uint8, int(offsets[-1]) - base, base).copy()
    np.putmask(shape, (shape - np.uint8(0x30)) < 10, 0x30)  # UTF-8: ASCII digits only
    shapes = pa.Array.from_buffers(pa.large_string(), len(flat), [
        None, pa.py_buffer(offsets - base), pa.py_buffer(shape)])
    values, which = _distinct(shapes)
    del shapes, shape
    seen = _shapes_seen()
    got = [seen.get(text) or _read_shape(seen, text) for text in values]
    zero = [0] * width
    table = np.array([spans or zero for _, spans, _ in got] + [zero], dtype=np.int64)
    return _Shapes(data, which, [m for m, _, _ in got], [d for _, _, d in got], table,
                   offsets[:-1])


#: a shape's reading: TQDM_SEGMENT's fullmatch (None: none), the byte spans of its groups
#: and the end of pre's key (None: no match), whether it declines its line
_ShapeReading = tuple["re.Match[str] | None", "list[int] | None", bool]
#: the shapes read in this process (a dense log's chunks print the same few thousand), for
#: the TQDM_SEGMENT they were read with; emptied past :data:`_MAX_SHAPES`
_SHAPES: dict[str, _ShapeReading] = {}
_SHAPES_OF: list[Any] = [None]
_MAX_SHAPES = 1 << 15


def _shapes_seen() -> dict[str, _ShapeReading]:
    """The shapes read so far with the current :data:`.rules.TQDM_SEGMENT`."""
    if _SHAPES_OF[0] is not rules.TQDM_SEGMENT or len(_SHAPES) > _MAX_SHAPES:
        _SHAPES.clear()
        _SHAPES_OF[0] = rules.TQDM_SEGMENT
    return _SHAPES


def _read_shape(seen: dict[str, _ShapeReading], text: str) -> _ShapeReading:
    """One shape read (see :func:`_segment_spans`) and remembered in ``seen``."""
    m = rules.TQDM_SEGMENT.fullmatch(text)
    spans = None
    if m is not None:
        spans = [max(x, 0) for g in _GROUPS for x in m.span(g)]  # -1: took no part, empty
        spans.append(_pre_key_end(text, *m.span("pre")))
        if not text.isascii():  # characters -> bytes
            spans = [len(text[:x].encode()) for x in spans]
    got = seen[text] = (m, spans, _DECLINE.search(text) is not None)
    return got


#: the postfixes read in this process (a dense log's chunks print the same ~1,000: its
#: losses to three digits), each's (name, value) pairs, for the :func:`.rules.postfix_pairs`
#: they were read with; emptied past :data:`_MAX_SHAPES`
_POSTFIXES: dict[str, list[tuple[str, float]]] = {}
_POSTFIXES_OF: list[Any] = [None]


def _postfixes_seen() -> dict[str, list[tuple[str, float]]]:
    """The postfixes read so far with the current :func:`.rules.postfix_pairs`."""
    if _POSTFIXES_OF[0] is not rules.postfix_pairs or len(_POSTFIXES) > _MAX_SHAPES:
        _POSTFIXES.clear()
        _POSTFIXES_OF[0] = rules.postfix_pairs
    return _POSTFIXES


def _read_postfix(seen: dict[str, list[tuple[str, float]]], post: str,
                  ) -> list[tuple[str, float]]:
    """One postfix's pairs (none without a ``=``), remembered in ``seen``."""
    got = seen[post] = rules.postfix_pairs(post) if "=" in post else []
    return got


def _pre_key_end(text: str, start: int, end: int) -> int:
    """Where the key of the ``pre`` group ``text[start:end]`` ends: before the digits of the
    percentage before its last ``%|`` (at ``end`` when it has none; after that ``%|`` when
    another ``%|`` precedes those digits). :func:`.general._pre_info` gives the key what it
    gives the group: ``rules._strip_bar`` cuts the group there (the digits before its last
    ``%|``, ``str.isdigit`` as it looks at them) and the key holds no ``%|`` to cut at; the
    launcher prefix ``rules.PREFIX`` matches at the start of both ends before those digits
    (its alternatives end in ``:``, ``]`` or white space, and none takes a digit or a ``%``
    where the key ends), and a key that is empty, as a group starting with the digits,
    gives no prefix and no label. The same in a shape as in its segments (digits made
    ``0`` stay digits, and make or break no ``%|``)."""
    last = text.rfind("%|", start, end)
    if last < 0:
        return end
    cut = last
    while cut > start and text[cut - 1].isdigit():
        cut -= 1
    return last + 2 if text.rfind("%|", start, cut) >= 0 else cut


def _plain_route() -> tuple[str, str] | None:
    """(RE2 of the guards that send a plain line to any recogniser but sambaflow and
    generic_loss, RE2 of sambaflow's guards), from :data:`.rules.SPECIFIC` and
    :data:`.rules.FALLBACK` as they are now; None when they hold no sambaflow or other
    fallbacks than generic_rate's ``/s`` and generic_loss's ``oss``."""
    key = (id(rules.SPECIFIC), id(rules.FALLBACK))
    if key not in _ROUTES:
        samba = [g for guards, rec in rules.SPECIFIC if rec is rules.sambaflow for g in guards]
        fallbacks = [(guards[:1], rec) for guards, rec in rules.FALLBACK]
        known = [(("/s",), rules.generic_rate), (("oss",), rules.generic_loss)]
        if not samba or fallbacks != known:
            _ROUTES[key] = None
        else:
            other = [g for guards, rec in rules.SPECIFIC if rec is not rules.sambaflow
                     for g in guards] + ["/s"]
            _ROUTES[key] = ("|".join(map(_literal, other)), "|".join(map(_literal, samba)))
    return _ROUTES[key]


_ROUTES: dict[tuple[int, int], tuple[str, str] | None] = {}


def _literal(text: str) -> str:
    """RE2 of a literal text."""
    return re.sub(r"([^A-Za-z0-9 _])", r"\\\1", text)


def _offsets(arr: pa.Array) -> np.ndarray:
    """The offsets of a large_string/large_binary array, as numpy (its own slice of them)."""
    return np.frombuffer(arr.buffers()[1], np.int64, len(arr) + 1, arr.offset * 8)


def _slices(data: Any, starts: np.ndarray, ends: np.ndarray, kind: Any = None) -> pa.Array:
    """The texts ``data[starts[i]:ends[i]]`` (UTF-8 at character boundaries) as one Arrow
    array of strings (``kind``: or of bytes; their bytes copied once)."""
    kind = pa.large_string() if kind is None else kind
    n = len(starts)
    if not n:
        return pa.array([], kind)
    offsets = np.empty(2 * n, dtype=np.int64)
    offsets[0::2], offsets[1::2] = starts, ends
    spans = pa.Array.from_buffers(kind, 2 * n - 1,
                                  [None, pa.py_buffer(offsets), data])
    return spans.take(pa.array(np.arange(0, 2 * n - 1, 2)))


def _unit_of(scale: str, unit: str, per: str) -> tuple[str, float, bool] | None:
    """rules.rate_unit, remembered in general._UNIT (the general engine's)."""
    key = (scale, unit, per)
    if key not in general._UNIT:
        general._UNIT[key] = rules.rate_unit(*key)
    return general._UNIT[key]


def _count(n: str) -> int | None:
    """rules._tqdm_count of a count that is not plain digits, when it is an int64."""
    if n.isdigit():  # more than 18 digits
        return int(n) if abs(int(n)) < 2**63 else None
    v = rules._tqdm_count(n)
    return v if isinstance(v, int) and abs(v) < 2**63 else None


def _pre_info(pre: str) -> tuple[str | None, str | None, float | None]:
    info = general._PRE.get(pre)
    return info if info is not None else general._pre_info(pre)


def _distinct(arr: pa.Array) -> tuple[list[Any], np.ndarray]:
    """The distinct values of ``arr`` and the index of each element's (nulls: the last + 1)."""
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    values = enc.dictionary.to_pylist()
    which = pc.fill_null(enc.indices, len(values)).to_numpy(zero_copy_only=False)
    return values, which


def _per_value(arr: pa.Array, func: Any, dtype: Any = bool) -> np.ndarray:
    """``func`` of each value of ``arr``, called once per distinct value."""
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    values = [func(v) for v in enc.dictionary.to_pylist()]
    table = np.empty(len(values), dtype=dtype)
    table[:] = values if dtype is not object else _objects(values)
    return table[enc.indices.to_numpy(zero_copy_only=False)]


def _floats(arr: pa.Array) -> np.ndarray:
    """Python's ``float`` of each text of ``arr`` (numbers of :data:`.rules.NUM`): Arrow's
    parse, correctly rounded as Python's is; once per distinct text where Arrow refuses one."""
    try:
        return np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _per_value(arr, float, np.float64)


def _objects(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _mask(arr: Any) -> np.ndarray:
    """A boolean array as numpy (null: False)."""
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def _after_megatron(buf: Any, start: int, end: int) -> np.ndarray:
    """(start, end) byte ranges of the 3 lines after each line holding ``per iteration``
    (the scanner may join them to it: ``_Scanner._continuation``), sorted and merged."""
    out: list[list[int]] = []
    with finder(buf) as find:  # the C library's memmem: a third of buf.find's time
        pos = find(b"per iteration", start, end)
    while pos >= 0:
        nl = buf.find(b"\n", pos, end)
        if nl < 0:
            break
        stop = nl
        for _ in range(3):
            nxt = buf.find(b"\n", stop + 1, end)
            stop = nxt if nxt >= 0 else end
            if nxt < 0:
                break
        if out and nl + 1 <= out[-1][1]:
            out[-1][1] = max(out[-1][1], stop + 1)
        else:
            out.append([nl + 1, stop + 1])
        pos = buf.find(b"per iteration", nl + 1, end)
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of values already in order (each first of its run: no hash, no sort)."""
    if len(values) < 2:
        return values
    first = np.empty(len(values), dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]


def _runs(flags: np.ndarray, starts: np.ndarray, ends: np.ndarray,
          ) -> tuple[np.ndarray, np.ndarray]:
    """(start of the first, end of the last) line of each run of lines where ``flags``."""
    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    first, last = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return starts[first], ends[last]


def _inside(points: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Whether each point lies in one of the sorted, non-overlapping ``ranges``."""
    k = np.searchsorted(ranges[:, 0], points, side="right") - 1
    return (k >= 0) & (points < ranges[np.maximum(k, 0), 1])


# --- the frame -------------------------------------------------------------------------------

def frame(rows: list[tuple[Any, ...]], found: Found | None, table: str,
          columns: tuple[str, ...]) -> pd.DataFrame:
    """The scanner's rows (``rows``, tuples) and the rows of ``found`` (``table``: "tp" or
    "tm") as the frame ``pd.DataFrame.from_records`` makes of all of them in line order
    (the general engine's): the same values and dtypes, strings as categoricals."""
    chunks = [] if found is None else getattr(found, table)
    py = _records(rows, columns)
    if not chunks or not sum(len(c["lineno"]) for c in chunks):
        return py
    assert found is not None
    vec: dict[str, np.ndarray] = {}
    # steps without a value (None): the plain lines' (a chunk of tqdm rows has none)
    nones = [ch.pop("step_none", None) for ch in chunks]
    step_none = None if all(x is None for x in nones) else np.concatenate([
        np.zeros(len(ch["lineno"]), dtype=bool) if x is None else x
        for ch, x in zip(chunks, nones, strict=True)])
    for col in columns:  # each chunk's column freed once copied, its pages handed back
        vec[col] = np.concatenate([ch.pop(col) for ch in chunks])
        memory.release(len(vec[col]))
    chunks.clear()
    cats = pd.Index(list(found.strings), dtype=object)
    strings = TP_STRINGS if table == "tp" else TM_STRINGS
    data: dict[str, Any] = {}
    for col in columns:
        if col in strings:
            data[col] = _strings(py[col] if len(py) else None, vec.pop(col), found, cats)
        else:
            data[col] = _numbers(py[col] if len(py) else None, vec.pop(col), col,
                                 step_none if col == "step" else None)
    out = pd.DataFrame(data, copy=False)
    del data, vec
    memory.release(len(out))
    if len(py):
        order = np.argsort(out["lineno"].to_numpy(), kind="stable")
        if (order != np.arange(len(order))).any():
            out = out.take(order).reset_index(drop=True)
    return out


def _records(rows: list[tuple[Any, ...]], columns: tuple[str, ...]) -> pd.DataFrame:
    """``pd.DataFrame.from_records``, also where pandas 2 raises on an int past a float's range
    among floats (kept as objects, as pandas 3 keeps it, for the reader's checks to make
    missing with a problem)."""
    try:
        return pd.DataFrame.from_records(rows, columns=list(columns))
    except OverflowError:
        cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
        return pd.DataFrame({name: pd.Series(list(col), dtype=object)
                             for name, col in zip(columns, cols, strict=True)})


def _strings(py: pd.Series | None, codes: np.ndarray, found: Found, cats: pd.Index) -> Any:
    """A string column: the scanner's strings then the codes, as a categorical (all missing:
    objects, None, as from_records makes them)."""
    if py is not None:
        values, uniques = pd.factorize(py.to_numpy(dtype=object))
        lookup = np.append(found.codes(list(uniques)), -1).astype(np.int32)
        codes = np.concatenate([lookup[values], codes])
        cats = pd.Index(list(found.strings), dtype=object)
    if (codes < 0).all():
        return np.full(len(codes), None, dtype=object)
    return pd.Categorical.from_codes(codes, categories=cats)


def _numbers(py: pd.Series | None, vec: np.ndarray, col: str,
             none: np.ndarray | None = None) -> Any:
    """A number column: the scanner's values then ``vec`` (epochs: NaN for None; ``none``:
    where a step is None), with the dtype from_records gives the values of both."""
    given = vec
    if none is not None and none.any():  # ints and None: floats, NaN for None
        vec = vec.astype(np.float64)
        vec[none] = np.nan
    is_none = none if none is not None else np.isnan(vec) if col == "epoch" else None
    if is_none is not None and is_none.all():  # all None
        vec_kind: Any = None
    else:
        vec_kind = vec.dtype
    if py is None:
        return np.full(len(vec), None, dtype=object) if vec_kind is None else vec
    p = py.to_numpy()
    p_none = p.dtype == object and py.isna().all()
    if vec_kind is None:
        if p_none:
            return np.full(len(p) + len(vec), None, dtype=object)
        if p.dtype == np.float64:
            return np.concatenate([p, vec])
    elif p_none or p.dtype == np.float64 or (p.dtype == np.int64 and vec.dtype != np.int64):
        head = np.full(len(p), np.nan) if p_none else p.astype(np.float64)
        return np.concatenate([head, vec.astype(np.float64)])
    elif p.dtype == vec.dtype:
        return np.concatenate([p, vec])
    # anything else (Python ints past int64, objects): as from_records infers the values
    tail = given.astype(object)
    if is_none is not None:
        tail[is_none] = None
    objs = list(py.astype(object)) + ([None] * len(vec) if vec_kind is None else tail.tolist())
    return _records([(v,) for v in objs], (col,))[col].array
