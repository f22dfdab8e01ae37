"""Problems the line readers of several formats name the same way (nccl-tests, mpiP,
DeepSpeed comms, MLPerf logs): a number that does not fit its 64-bit column, and records
skipped as torn or cut, named one by one up to :data:`MAX_NOTED` and the rest counted."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..errors import Problem

#: what a reader guesses when a trace ends inside a record, in the texts that say it
_GUESSES = ("(the job was probably killed while the profiler wrote it)",
            "the job was probably killed while writing the timeline",
            "the job was probably killed")
#: what the content's source says instead (:meth:`dptrace.sources.Source.cut_short`)
_CAUSES = {
    "limit": "the content stopped at the decompression limit (--max-decompressed)",
    "damage": "the compressed file is truncated or corrupt",
    "memory": "the content stopped where memory ran out",
}


def explain_cut(cause: str | None, problems: list[Problem]) -> list[Problem]:
    """``problems`` with a reader's guess at why a trace ends inside a record (a job killed
    while writing) replaced by the known cause, when the source knows one (``cause``:
    ``Source.cut_short()``: the decompression limit, a damaged compressed stream)."""
    text = _CAUSES.get(cause or "")
    if text is None:
        return problems
    out = []
    for p in problems:
        msg = p.message
        for guess in _GUESSES:
            if guess in msg:
                msg = msg.replace(guess, f"({text})" if guess.startswith("(") else text)
                break
        out.append(p if msg == p.message else replace(p, message=msg))
    return out

#: a value at or beyond this does not fit an Int64 column
INT64 = 2 ** 63
#: skipped records named one by one in a file; the rest are counted in one more problem
MAX_NOTED = 10


def fits(value: Any, column: str, lineno: int, name: str, problems: list[Problem]) -> Any:
    """``value``, or None (with an error naming the line) when it does not fit its column:
    an integer outside int64, a float that is not finite."""
    if isinstance(value, int) and not -INT64 <= value < INT64 or \
            isinstance(value, float) and not math.isfinite(value):
        problems.append(Problem(name, f"{column} {str(value)[:24]} does not fit a 64-bit "
                                "number: the row is kept, its value is missing", lineno,
                                "error"))
        return None
    return value


def note_skipped(bad: list[tuple[int, str]], name: str, problems: list[Problem],
                 what: str) -> None:
    """One error per skipped record of ``bad`` ((line, message) pairs), up to
    :data:`MAX_NOTED`; the rest in one more ('12 more <what> torn or cut (lines a-b)')."""
    for lineno, msg in bad[:MAX_NOTED]:
        problems.append(Problem(name, msg, lineno, "error"))
    if len(bad) > MAX_NOTED:
        rest = [ln for ln, _ in bad[MAX_NOTED:]]
        problems.append(Problem(name, f"{len(rest)} more {what} torn or cut (lines "
                                f"{rest[0]}-{rest[-1]}): skipped", rest[0], "error"))
