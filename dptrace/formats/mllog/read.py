"""MLPerf ``:::MLLOG`` lines: every record of a source into ``mllog`` (:mod:`.tables`).

The marker is found with ``bytes.find`` (the rest of a log is never decoded); the text
before it on its line is the launcher prefix (``0: ``, ``[1,0]<stdout>:``), and the JSON runs
to the next marker on the line or its end. The JSON is decoded with the standard library
(MLLOG lines are few: thousands in a job log).

Damage is never read into numbers: a record whose JSON does not decode whole (torn by
another writer, cut by the end of the file) or is not an object with a ``key`` is skipped
with a problem naming its line; a ``time_ms`` that is not a number becomes missing, with a
problem. Text of another writer before the marker (``... = 0.379:::MLLOG {``) is not a
launcher prefix: the record is read, its instance is null.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd

from ... import schema
from ...errors import Problem
from ...registry import ParseResult
from ...sources import Source
from .._problems import INT64, note_skipped
from .tables import MLLOG

MARK = b":::MLLOG"
#: srun -l '3: ' / ' 12: '
_SRUN = re.compile(r"^\s*(\d+):\s*$")
#: mpirun --tag-output '[1,3]<stdout>:'
_TAG = re.compile(r"^\s*\[(\d+),(\d+)\]<std(?:out|err)>:\s*$")
_INT64 = INT64


def prefix(text: str) -> tuple[str | None, int | None]:
    """(instance, rank) of the text before the marker; (None, None) when it is not a
    launcher prefix."""
    m = _SRUN.match(text)
    if m:
        return m.group(1), int(m.group(1))
    m = _TAG.match(text)
    if m:
        return f"{m.group(1)},{m.group(2)}", int(m.group(2))
    return None, None


def value_text(v: Any) -> str | None:
    """The 'value' as the ``value`` column holds it."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"))


def _whole(v: Any) -> int | None:
    """An integer metadata field (an integral float too); None otherwise."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if -_INT64 <= v < _INT64 else None
    if isinstance(v, float) and v.is_integer() and abs(v) < _INT64:
        return int(v)
    return None


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def parse(source: Source) -> ParseResult:
    """Parse one source's ``:::MLLOG`` records into ``mllog``."""
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        buf = bytes(raw)
    name = source.name
    rows: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    pos = buf.find(MARK)
    lineno, counted = 1, 0            # line numbers counted incrementally
    prefixed = False
    while pos >= 0:
        start = buf.rfind(b"\n", 0, pos) + 1
        end = buf.find(b"\n", pos)
        if end < 0:
            end = len(buf)
        lineno += buf.count(b"\n", counted, start)
        counted = start
        line = buf[start:end].rstrip(b"\r")
        at = pos - start
        first = True
        while at >= 0:
            nxt = line.find(MARK, at + len(MARK))
            body = line[at + len(MARK):nxt if nxt >= 0 else len(line)]
            head = line[:at].decode("utf-8", "replace") if first else ""
            record = _record(body, lineno, bad)
            if record is not None:
                inst, rank = prefix(head) if first else (None, None)
                prefixed = prefixed or inst is not None
                rows.append(_row(record, name, inst, rank, lineno, problems))
            first = False
            at = nxt
        pos = buf.find(MARK, end)
    note_skipped(bad, name, problems, ":::MLLOG records")
    df = (pd.DataFrame(rows, columns=[c for c in MLLOG.names if c != "run"]) if rows
          else MLLOG.empty().drop(columns="run"))
    variant = None if not rows else "launcher prefixes" if prefixed else "plain"
    return ParseResult({"mllog": schema.conform(df, MLLOG)}, problems, variant)


def _record(body: bytes, lineno: int, bad: list[tuple[int, str]]) -> dict[str, Any] | None:
    try:
        record = json.loads(body)
    except (ValueError, RecursionError):
        bad.append((lineno, "not a whole :::MLLOG record (its JSON does not decode: torn or "
                            "cut): skipped"))
        return None
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        bad.append((lineno, ":::MLLOG record without a 'key': skipped"))
        return None
    return record


def _row(record: dict[str, Any], name: str, inst: str | None, rank: int | None, lineno: int,
         problems: list[Problem]) -> dict[str, Any]:
    meta = record.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    value = record.get("value")
    t = _number(record.get("time_ms"))
    if t is None and record.get("time_ms") is not None:
        problems.append(Problem(name, f"time_ms {str(record.get('time_ms'))[:24]!r} is not a "
                                "number: the record is kept, its time is missing", lineno,
                                "error"))
    status = meta.get("status")
    event = record.get("event_type")
    return {
        "source": name, "instance": inst, "rank": rank, "time_ms": t,
        "event_type": event if isinstance(event, str) else None,
        "key": record["key"], "value": value_text(value), "value_num": _number(value),
        "epoch_num": _whole(meta.get("epoch_num")),
        "first_epoch_num": _whole(meta.get("first_epoch_num")),
        "epoch_count": _whole(meta.get("epoch_count")), "step": _whole(meta.get("step")),
        "status": status if isinstance(status, str) else None, "lineno": lineno,
    }
