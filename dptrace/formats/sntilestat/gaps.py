"""The text between the tile rows of a capture, searched instead of the whole file.

A ``watch sntilestat`` capture is almost all tile rows; headers, ``watch`` stamps and
elisions sit on the few lines between them. :class:`Gaps` collects those lines (with
where each run of them starts in the file), so the parser's literal searches scan about
3% of the bytes. The parser trusts these searches only once the rows have been read by
the aligned reader (their fixed part is then known to be a tile path and numbers) and
their distinct owner tails are known to hold none of the searched words; otherwise it
searches the whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: words that must not occur inside a row's owner tail for the gap searches to be whole
TAIL_WORDS = (b"/XRDU_", b"%idle", b"Every")


@dataclass(frozen=True)
class Gaps:
    """The file outside its tile rows: ``text``, made of runs that start at ``offsets``
    in the file and at ``text_offsets`` in ``text``. Runs begin and end at line breaks,
    so no searched word (none holds a line break) spans two of them."""

    text: bytes
    offsets: np.ndarray
    text_offsets: np.ndarray

    @classmethod
    def between(cls, buf: bytes, starts: np.ndarray, ends: np.ndarray) -> Gaps:
        """The runs between row lines (``starts``/``ends``: each row's first byte and end)."""
        lo, hi = np.r_[0, ends], np.r_[starts, len(buf)]
        keep = np.flatnonzero(hi - lo > 1)  # a lone newline between two rows holds nothing
        lo, hi = lo[keep], hi[keep]
        text = b"".join([buf[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)])
        text_offsets = np.r_[0, np.cumsum(hi - lo)[:-1]].astype(np.int64)
        return cls(text, lo.astype(np.int64), text_offsets)

    def positions(self, word: bytes) -> np.ndarray:
        """File offsets of each occurrence of ``word`` in the gaps, ascending."""
        found = []
        pos = self.text.find(word)
        while pos >= 0:
            found.append(pos)
            pos = self.text.find(word, pos + 1)
        at = np.asarray(found, dtype=np.int64)
        run = np.searchsorted(self.text_offsets, at, side="right") - 1
        return self.offsets[run] + (at - self.text_offsets[run])


def tails_clean(tails: list[bytes]) -> bool:
    """True when no distinct owner tail holds a word the gap searches look for."""
    return not any(word in tail for tail in tails for word in TAIL_WORDS)


def findall_at(pattern: re.Pattern[bytes], buf: bytes,
               starts: np.ndarray) -> list[tuple[bytes, ...]]:
    """``pattern.findall(buf)`` when every match can only begin at one of ``starts``."""
    out: list[tuple[bytes, ...]] = []
    done = 0
    for pos in starts.tolist():
        if pos < done:  # inside the previous match (findall's matches do not overlap)
            continue
        m = pattern.match(buf, pos)
        if m:
            out.append(m.groups(b""))
            done = m.end()
    return out
