"""DeepSpeed comms logger summaries: every ``log_summary()`` table printed in a source (see
:mod:`.grammar`), read into ``ds_comms`` (:mod:`.tables`).

The source is read line by line; a line loses its launcher prefix first (mpirun
``--tag-output`` ``[1,0]<stdout>:``, ``srun -l`` ``0: ``). A column header opens a summary;
under it an op line (``broadcast``, ``broadcast | [Caller Func: f]``) names the op of the rows
that follow; rows are indented. The summary ends at the first line that is none of these
(the log goes on) or at a new column header.

Damage is never read into numbers: an indented line in a summary that starts with a number
and does not match the row grammar whole (a field missing or extra: torn or cut) is skipped
with a problem naming its line; so is a row before any op line, and a last row the end of
the file cut (no final newline). A summary whose header is followed by no row is named.

A cell that is not a number of its column (:mod:`dptrace.numbers`) costs that cell, or its
row when it is the size (``inf KB``, ``-5.0 KB``, ``1e300 YB``: the row's key), with an
error naming the line; the rows after it read. An op name reads as given (``broad-cast``);
a line where an op line should be that is not one (another writer's text inside it, a
launcher tag glued to it) is named with its line, and the rows under it, which have no op,
are skipped; the next op line starts again.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ... import schema
from ...errors import Problem, quote
from ...numbers import FLOAT_PATTERN, INT_PATTERN, SKIPPED, NumberError, fit, note
from ...registry import ParseResult
from ...sources import Source
from .._problems import note_skipped
from .._units import MS_TO_S, MS_TO_US, scaled_or_error
from .tables import DS_COMMS

#: mpirun --tag-output tags and srun -l labels at the start of a line
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s)")
#: a row's first field: a number (of the size), valid or not (inf, nan, -5.0, 1e300, 0B)
_NUMBER = re.compile(rf"(?:0B|{FLOAT_PATTERN}|{INT_PATTERN})\Z")
#: another writer's text in an op line: a launcher tag or an NCCL line's prefix
_TORN = re.compile(r"\[\d+,\d+\]<std|\[rank\d+\]:|\[default\d+\]:|:\d+:\d+ \[\d+\] ")


class _Block:
    def __init__(self, index: int, lineno: int) -> None:
        self.index, self.lineno = index, lineno
        self.op: str | None = None
        self.caller: str | None = None
        self.rows = 0
        #: a line where an op line should be that is not one: (line, text, rows under it)
        self.not_op: list[Any] | None = None


def parse(source: Source) -> ParseResult:
    """Parse one source's comms logger summaries into ``ds_comms``."""
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        buf = bytes(raw)
    name = source.name
    lines = buf.split(b"\n")
    cut_last = not buf.endswith(b"\n")
    blocks: list[_Block] = []
    rows: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    numbers: list[Problem] = []     # cells that are not numbers of their column
    block: _Block | None = None
    g: Any = None                       # the pyparsing grammar, imported at the first header
    for i, raw_line in enumerate(lines):
        lineno = i + 1
        if block is None and b"Comm. Op" not in raw_line:
            continue                    # outside a summary: only a header matters
        text = raw_line.decode("utf-8", "replace").rstrip("\r")
        m = _PREFIX.match(text)
        line = text[m.end():] if m else text
        body = line.strip()
        if body.startswith("Comm. Op"):
            if g is None:
                from . import grammar as g
            if g.parse_line(g.HEADER, body) is not None:
                block = _Block(len(blocks), lineno)
                blocks.append(block)
            continue
        if block is None:
            continue
        if not body:
            continue
        indented = line[:1].isspace()
        if indented and _NUMBER.match(body.split(None, 1)[0]):
            if cut_last and i == len(lines) - 1:
                problems.append(Problem(name, "file does not end with a newline (output cut "
                                        "short?): its last comms row may be cut, and was not "
                                        "read", lineno, "error"))
                continue
            parsed = g.parse_line(g.ROW, body)
            if parsed is None:
                bad.append((lineno, f"not a whole comms logger row ({len(body.split())} "
                                    "fields; a row has 7: size, unit, count and four "
                                    "figures): torn or cut; skipped"))
                continue
            if block.not_op is not None:
                block.not_op[2] += 1    # under a line that is not an op line: no op
                continue
            if block.op is None:
                bad.append((lineno, "comms logger row before any op line: skipped"))
                continue
            row = _row(g, block, parsed, body, lineno, name, numbers)
            if row is not None:
                rows.append(row)
                block.rows += 1
            continue
        ended = block.not_op is not None and not block.not_op[2]
        _close(block, bad)
        if not indented:
            op = g.parse_line(g.OP, body)
            if op is not None and not _TORN.search(body):
                block.op, block.caller = op["op"], op.get("caller")
                continue
            if not ended:
                # an op line torn by another writer, or the log going on: told apart by
                # the rows under it (:func:`_close`); two such lines in a row: the log
                block.op, block.caller, block.not_op = None, None, [lineno, body, 0]
                continue
        block = None                    # any other line: the log goes on
    if block is not None:
        _close(block, bad)
    note(numbers, name, problems)
    note_skipped(bad, name, problems, "comms logger rows")
    for b in blocks:
        if not b.rows:
            problems.append(Problem(name, "a comms logger summary header with no row under "
                                    "it (the output was cut?)", b.lineno))
    df = (pd.DataFrame(rows, columns=[c for c in DS_COMMS.names if c != "run"]) if rows
          else DS_COMMS.empty().drop(columns="run"))
    return ParseResult({"ds_comms": schema.conform(df, DS_COMMS)}, problems,
                       "summary" if rows else None)


def _close(block: _Block, bad: list[tuple[int, str]]) -> None:
    """The line that was not an op line, named once the rows under it are counted: with
    rows under it, it stood where an op line should (torn, or an op name cut); without,
    the summary had ended there, and nothing is said."""
    if block.not_op is None:
        return
    lineno, text, n = block.not_op
    block.not_op = None
    if n:
        bad.append((lineno, f"not an op line ({quote(text, 60)}: torn by another writer or "
                            f"cut?): the {n} rows under it have no op and are skipped"))


def _row(g: Any, block: _Block, parsed: Any, body: str, lineno: int, name: str,
         problems: list[Problem]) -> dict[str, Any] | None:
    """A row, or None (with an error) when its size, the row's key, is not a size."""
    value, unit = parsed["size"][0], parsed["size"][1]
    try:
        size = g.size_bytes(value, unit, " ".join(body.split()[:2]))
    except NumberError as exc:
        fit(exc, "message size", lineno, name, problems, outcome=SKIPPED)
        return None
    return {
        "source": name, "block": block.index, "op": block.op, "caller": block.caller,
        "size_bytes": size,
        "count": fit(parsed["count"], "count", lineno, name, problems),
        "total_latency_s": fit(scaled_or_error(parsed["total_latency_ms"], MS_TO_S),
                               "total latency", lineno, name, problems),
        "avg_latency_us": fit(scaled_or_error(parsed["avg_latency_ms"], MS_TO_US),
                              "avg latency", lineno, name, problems),
        "tput_gbps": fit(parsed["tput_gbps"], "tput_avg", lineno, name, problems),
        "busbw_gbps": fit(parsed["busbw_gbps"], "busbw_avg", lineno, name, problems),
        "lineno": lineno,
    }
