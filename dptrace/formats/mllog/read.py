"""MLPerf ``:::MLLOG`` lines: every record of a source into ``mllog`` (:mod:`.tables`).

The marker is found with ``bytes.find`` (the rest of a log is never decoded); the text
before it on its line is the launcher prefix (``0: ``, ``[1,0]<stdout>:``), and the JSON runs
to the next marker on the line or its end. The JSON is decoded with the standard library
(MLLOG lines are few: thousands in a job log).

Damage is never read into numbers: a record whose JSON does not decode whole (torn by
another writer, cut by the end of the file) or is not an object with a ``key`` is skipped
with a problem naming its line (one nested deeper than Python decodes says so); a
``time_ms`` that is not a number becomes missing, with a problem. The table holds it as
``time_us``, x 1000 (exact to the printed decimal, :mod:`dptrace.formats._units`). Numbers
are read by :mod:`dptrace.numbers`: an integer of more than 19 digits in a record is not
decoded into a Python int (``int()`` refuses 4,300 digits: it failed the file), and a
``time_ms``, ``epoch_num`` or other metadata number, or a launcher prefix's rank, that is
not an int64 (``epoch_num`` of 2^63) is missing, with an error naming the line; the record
is kept. Text of another writer before the marker (``... = 0.379:::MLLOG {``) is not a
launcher prefix: the record is read, its instance is null.

The job's launcher statements in the same log are read too (:func:`launcher_rows`), one row
each with a ``launcher_*`` key, no event type and no time: the command lines that start
the job's processes (``+ srun --ntasks=64 --ntasks-per-node=8 ...`` as ``set -x`` prints
it, ``mpirun ... -np 16 ...``) and the variables NVIDIA's MLPerf scripts and Slurm set
(``DGXNNODES=8``, ``DGXNGPU=8``, ``SLURM_NNODES=2``, ``WORLD_SIZE=16``). They say the job's
size where the records do not (:func:`dptrace.formats.mllog.compute.world_of`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd

from ... import schema
from ...errors import Problem
from ...numbers import NumberError, check_float, check_int, fit, int_or_error, note, parse_count
from ...registry import ParseResult
from ...sources import Source
from .._problems import note_skipped
from .._units import MS_TO_US, scaled_or_error
from .tables import MLLOG

MARK = b":::MLLOG"
#: srun -l '3: ' / ' 12: '
_SRUN = re.compile(r"^\s*(\d+):\s*$")
#: mpirun --tag-output '[1,3]<stdout>:'
_TAG = re.compile(r"^\s*\[(\d+),(\d+)\]<std(?:out|err)>:\s*$")


def prefix(text: str) -> tuple[str | None, int | None]:
    """(instance, rank) of the text before the marker; (None, None) when it is not a
    launcher prefix (the rank None when it is not a number: :func:`prefix_rank`)."""
    inst, rank = prefix_rank(text)
    return inst, rank if isinstance(rank, int) else None


def prefix_rank(text: str) -> tuple[str | None, int | NumberError | None]:
    """:func:`prefix`, the rank a NumberError when it is not an int64 (5,000 digits)."""
    m = _SRUN.match(text)
    if m:
        return m.group(1), _count(m.group(1))
    m = _TAG.match(text)
    if m:
        return f"{m.group(1)},{m.group(2)}", _count(m.group(2))
    return None, None


def _count(text: str) -> int | NumberError:
    try:
        return parse_count(text)
    except NumberError as exc:
        return exc


def _json_int(text: str) -> int | NumberError:
    """An integer of a record's JSON (``json.loads``'s ``parse_int``): its digits bounded
    before ``int()``, so 5,000 digits are a NumberError, not a ValueError for the record."""
    return int_or_error(text)


def value_text(v: Any) -> str | None:
    """The 'value' as the ``value`` column holds it."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, NumberError):
        return v.text[:64]
    return json.dumps(v, separators=(",", ":"), default=lambda x: getattr(x, "text", "?")[:64])


def _whole(v: Any, column: str = "", lineno: int | None = None, name: str = "",
           problems: list[Problem] | None = None) -> int | None:
    """An integer metadata field (an integral float too); None otherwise, with an error in
    ``problems`` when it is a number that is not an int64 (2^63, 5,000 digits)."""
    if isinstance(v, bool) or not isinstance(v, int | float | NumberError):
        return None
    if isinstance(v, float) and not v.is_integer() and math.isfinite(v):
        return None
    try:
        return check_int(v)
    except NumberError as exc:
        if problems is not None:
            fit(exc, column, lineno, name, problems,
                outcome="the record is kept, its value is missing")
        return None


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        return check_float(v)
    except NumberError:
        return None


def parse(source: Source) -> ParseResult:
    """Parse one source's ``:::MLLOG`` records into ``mllog``."""
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        buf = bytes(raw)
    name = source.name
    rows: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    numbers: list[Problem] = []     # numbers that are not values of their column
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
                inst, rank = prefix_rank(head) if first else (None, None)
                rank = fit(rank, "launcher prefix rank", lineno, name, numbers,
                           outcome="the record is kept, its rank is missing")
                prefixed = prefixed or inst is not None
                rows.append(_row(record, name, inst, rank, lineno, numbers))
            first = False
            at = nxt
        pos = buf.find(MARK, end)
    rows.extend(launcher_rows(buf, name, numbers))
    note(numbers, name, problems)
    note_skipped(bad, name, problems, ":::MLLOG records")
    df = (pd.DataFrame(rows, columns=[c for c in MLLOG.names if c != "run"]) if rows
          else MLLOG.empty().drop(columns="run"))
    variant = None if not rows else "launcher prefixes" if prefixed else "plain"
    return ParseResult({"mllog": schema.conform(df, MLLOG)}, problems, variant)


def _record(body: bytes, lineno: int, bad: list[tuple[int, str]]) -> dict[str, Any] | None:
    try:
        record = json.loads(body, parse_int=_json_int)
    except RecursionError:
        bad.append((lineno, "an :::MLLOG record nested deeper than Python decodes (about "
                            "1,000 levels): skipped"))
        return None
    except ValueError:
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
    if isinstance(record.get("time_ms"), NumberError | int | float) and t is None:
        fit(record["time_ms"] if isinstance(record["time_ms"], NumberError) else
            NumberError(str(record["time_ms"])[:64], "is not finite"), "time_ms", lineno,
            name, problems, outcome="the record is kept, its time is missing")
    elif t is None and record.get("time_ms") is not None:
        problems.append(Problem(name, f"time_ms {str(record.get('time_ms'))[:24]!r} is not a "
                                "number: the record is kept, its time is missing", lineno,
                                "error"))
    t_us = fit(scaled_or_error(t, MS_TO_US), "time_ms", lineno, name, problems,
               outcome="the record is kept, its time is missing")
    status = meta.get("status")
    event = record.get("event_type")
    return {
        "source": name, "instance": inst, "rank": rank, "time_us": t_us,
        "event_type": event if isinstance(event, str) else None,
        "key": record["key"], "value": value_text(value), "value_num": _number(value),
        "epoch_num": _whole(meta.get("epoch_num"), "epoch_num", lineno, name, problems),
        "first_epoch_num": _whole(meta.get("first_epoch_num"), "first_epoch_num", lineno,
                                  name, problems),
        "epoch_count": _whole(meta.get("epoch_count"), "epoch_count", lineno, name,
                              problems),
        "step": _whole(meta.get("step"), "step", lineno, name, problems),
        "status": status if isinstance(status, str) else None, "lineno": lineno,
    }


# ---- the launcher's statements ------------------------------------------------------------

#: a command line that starts processes: ``srun``/``mpirun``/``mpiexec`` first on its line
#: (after ``set -x``'s ``+ `` and a path); the launcher word again later on the line (``srun
#: ... mpirun ...``) starts another launch
_LAUNCH_LINE = re.compile(rb"(?m)^[ \t]*(?:\++[ \t]+)?(?:[\w./-]*/)?(?:srun|mpirun|mpiexec)"
                          rb"[ \t][^\n]*")
_LAUNCHER = re.compile(r"(?:(?<=\s)|^)(?:[\w./-]*/)?(srun|mpirun|mpiexec)(?=\s|$)")
#: variables that state a size: NVIDIA's MLPerf configs (DGXNNODES, DGXNGPU), Slurm's,
#: torchrun's and MPI's; not ``${VAR}`` uses, not lower-case names of a program's options
_SIZE_VARS = {"DGXNNODES": "launcher_nodes", "SLURM_NNODES": "launcher_nodes",
              "SLURM_JOB_NUM_NODES": "launcher_nodes", "DGXNGPU": "launcher_ranks_per_node",
              "SLURM_NTASKS_PER_NODE": "launcher_ranks_per_node",
              "SLURM_NTASKS": "launcher_ranks", "WORLD_SIZE": "launcher_ranks"}
_SIZE_VAR = re.compile(rb"(?<![\w$.{-])(" + b"|".join(v.encode() for v in _SIZE_VARS)
                       + rb")=(\d+)(?![\w.])")
#: options of each launcher that state a size, by what they state (srun's -N is nodes,
#: Open MPI's -N is processes per node)
_OPTIONS = {
    "srun": {"-n": "launcher_ranks", "--ntasks": "launcher_ranks", "-N": "launcher_nodes",
             "--nodes": "launcher_nodes", "--ntasks-per-node": "launcher_ranks_per_node"},
    "mpirun": {"-np": "launcher_ranks", "-n": "launcher_ranks", "--np": "launcher_ranks",
               "-c": "launcher_ranks", "-N": "launcher_ranks_per_node",
               "-npernode": "launcher_ranks_per_node", "--npernode": "launcher_ranks_per_node",
               "-ppn": "launcher_ranks_per_node"},
}
_OPTIONS["mpiexec"] = _OPTIONS["mpirun"]
#: launcher statements read from one file at most (a log that prints its command per step)
MAX_LAUNCH_ROWS = 1000


def launch_options(segment: str, bad: list[tuple[str, str, NumberError]] | None = None
                   ) -> list[tuple[str, str, int]]:
    """(key, text as printed, number) of each size option of one launch (``srun --ntasks=64
    --ntasks-per-node=8 ./run.sh``): the launcher's own options, up to its program (the
    first word that is neither an option nor an option's value), so a program's ``-n 5`` is
    never read. A value that starts like a number and is not a count (``8²``, 5,000 digits)
    is not read; it goes to ``bad``, with its NumberError, for the caller to name."""
    words = segment.split()
    if not words:
        return []
    launcher = _LAUNCHER.match(words[0])
    if launcher is None:
        return []
    known = _OPTIONS[launcher.group(1)]
    out: list[tuple[str, str, int]] = []
    prev_takes_value = False
    i = 1
    while i < len(words):
        w = words[i]
        if not w.startswith("-"):
            if not prev_takes_value:
                break                      # the program
            prev_takes_value = False
            i += 1
            continue
        opt, eq, val = w.partition("=")
        printed = w
        if not eq and opt not in known and len(opt) > 2 and not opt.startswith("--") \
                and opt[:2] in known and opt[2:].isdigit():
            opt, val, eq = opt[:2], opt[2:], "joined"     # srun -n64
        key = known.get(opt)
        if key is not None and not eq and i + 1 < len(words):
            val = words[i + 1]
            printed = f"{w} {val}"
            i += 1
        if key is not None and val[:1].isdigit():
            n = _count(val)
            if isinstance(n, int):
                out.append((key, f"{launcher.group(1)} {printed}", n))
            elif bad is not None:
                bad.append((key, f"{launcher.group(1)} {printed}", n))
        prev_takes_value = not eq and key is None
        i += 1
    return out


def launcher_rows(buf: bytes, name: str, problems: list[Problem] | None = None
                  ) -> list[dict[str, Any]]:
    """The launcher statements of a log (see the module's docstring), as ``mllog`` rows; a
    size that is not a count (``--ntasks=8²``, ``SLURM_NNODES=`` and 5,000 digits) is not
    a row, and an error naming its line in ``problems``."""
    rows: list[dict[str, Any]] = []

    def add(lineno: int, key: str, text: str, n: int) -> None:
        rows.append({"source": name, "instance": None, "rank": None, "time_us": None,
                     "event_type": None, "key": key, "value": text, "value_num": float(n),
                     "epoch_num": None, "first_epoch_num": None, "epoch_count": None,
                     "step": None, "status": None, "lineno": lineno})

    found: list[tuple[int, int, str, str, int | NumberError]] = []   # (offset, order, key,
    #                                                                    text, n)
    for m in _LAUNCH_LINE.finditer(buf):
        line = m.group().decode("utf-8", "replace")
        if ":::MLLOG" in line:
            continue
        starts = [s.start() for s in _LAUNCHER.finditer(line)]
        seen: set[str] = set()
        for k, at in enumerate(starts):
            seg = line[at:starts[k + 1] if k + 1 < len(starts) else len(line)]
            wrong: list[tuple[str, str, NumberError]] = []
            said: list[tuple[str, str, int | NumberError]] = [
                *launch_options(seg.strip(), wrong), *wrong]
            for key, text, n in said:
                if key not in seen:        # a line's first launch that states it
                    seen.add(key)
                    found.append((m.start(), len(found), key, text, n))
        if len(found) >= MAX_LAUNCH_ROWS:
            break
    for m in _SIZE_VAR.finditer(buf):
        if len(found) >= 2 * MAX_LAUNCH_ROWS:
            break
        var, digits = m.group(1).decode(), m.group(2).decode()
        found.append((m.start(), len(found), _SIZE_VARS[var], f"{var}={digits[:64]}",
                      _count(digits)))
    found.sort()
    lineno, counted = 1, 0
    done: set[tuple[int, str]] = set()
    for at, _, key, text, n in found:
        lineno += buf.count(b"\n", counted, at)
        counted = at
        if isinstance(n, NumberError):
            if problems is not None:
                what = text[:text.index(n.text[:64])].rstrip("= ") if n.text[:64] in text \
                    else text
                fit(n, what, lineno, name, problems,
                    outcome="not read as the job's size")
            continue
        if (lineno, key) not in done:      # the table's key: one row per line and key
            done.add((lineno, key))
            add(lineno, key, text, n)
    return rows
