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
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from ... import schema
from ...errors import Problem
from ...registry import ParseResult
from ...sources import Source
from .._problems import fits, note_skipped
from . import grammar as g
from .tables import DS_COMMS

#: mpirun --tag-output tags and srun -l labels at the start of a line
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s)")
#: a row's first field: a number (of the size)
_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?(?:B)?$")


class _Block:
    def __init__(self, index: int, lineno: int) -> None:
        self.index, self.lineno = index, lineno
        self.op: str | None = None
        self.caller: str | None = None
        self.rows = 0


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
    block: _Block | None = None
    for i, raw_line in enumerate(lines):
        lineno = i + 1
        if block is None and b"Comm. Op" not in raw_line:
            continue                    # outside a summary: only a header matters
        text = raw_line.decode("utf-8", "replace").rstrip("\r")
        m = _PREFIX.match(text)
        line = text[m.end():] if m else text
        body = line.strip()
        if body.startswith("Comm. Op"):
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
            if block.op is None:
                bad.append((lineno, "comms logger row before any op line: skipped"))
                continue
            rows.append(_row(block, parsed, lineno, name, problems))
            block.rows += 1
            continue
        if not indented:
            op = g.parse_line(g.OP, body)
            if op is not None:
                block.op, block.caller = op["op"], op.get("caller")
                continue
        block = None                    # any other line: the log goes on
    note_skipped(bad, name, problems, "comms logger rows")
    for b in blocks:
        if not b.rows:
            problems.append(Problem(name, "a comms logger summary header with no row under "
                                    "it (the output was cut?)", b.lineno))
    df = (pd.DataFrame(rows, columns=[c for c in DS_COMMS.names if c != "run"]) if rows
          else DS_COMMS.empty().drop(columns="run"))
    return ParseResult({"ds_comms": schema.conform(df, DS_COMMS)}, problems,
                       "summary" if rows else None)


def _row(block: _Block, parsed: Any, lineno: int, name: str,
         problems: list[Problem]) -> dict[str, Any]:
    value, unit = parsed["size"][0], parsed["size"][1]
    size = g.size_bytes(value, unit) if math.isfinite(value) else math.inf
    return {
        "source": name, "block": block.index, "op": block.op, "caller": block.caller,
        "size_bytes": fits(size, "message size", lineno, name, problems),
        "count": fits(parsed["count"], "count", lineno, name, problems),
        "total_latency_ms": fits(parsed["total_latency_ms"], "total latency", lineno, name,
                                  problems),
        "avg_latency_ms": fits(parsed["avg_latency_ms"], "avg latency", lineno, name,
                                problems),
        "tput_gbps": fits(parsed["tput_gbps"], "tput_avg", lineno, name, problems),
        "busbw_gbps": fits(parsed["busbw_gbps"], "busbw_avg", lineno, name, problems),
        "lineno": lineno,
    }
