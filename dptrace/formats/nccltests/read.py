"""nccl-tests output: the tables of every test printed in a source (see :mod:`.grammar`).

Fills ``nccl_tests`` and ``nccl_tests_summary`` (:mod:`.tables`). The output is read line by
line; each line loses its launcher prefix first: mpirun ``--tag-output`` tags
(``[1,0]<stdout>:``, which mpirun also puts inside a line where nccl-tests wrote a row in
several pieces: the pieces of one rank are joined) and ``srun -l`` labels (``0: ``). Other
log text around and inside the tables (NCCL INFO lines, warnings, a doc page's prose) is
passed over.

Damage is never read into numbers: inside a table, a line that starts with a number and
does not match the row grammar whole (a field missing or extra: torn by another writer or
cut) is skipped with a problem naming its line; so is a row whose pieces carry the tags of
different ranks, and a last row that the end of the file cut (no final newline). A number
too large for its column becomes missing, with a problem. A test whose table does not end
with ``# Avg bus bandwidth`` (a run cut short) is named.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ... import schema
from ...errors import Problem
from ...numbers import FLOAT_PATTERN, INT_PATTERN, NumberError, fit, note
from ...registry import ParseResult
from ...sources import Source
from .._problems import note_skipped
from . import grammar as g
from .tables import NCCL_TESTS, NCCL_TESTS_SUMMARY, PLACEMENTS

#: mpirun --tag-output tags, anywhere in a line
_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")
#: srun -l: '0: ', ' 12: ' at the start of a line
_SRUN = re.compile(r"^\s*\d+:\s")
#: the word before '_perf' in a command line (./build/all_reduce_perf -b 8 ...)
_PERF = re.compile(r"\b([a-z_]+)_perf\b")
#: collectives as file names spell them, longest first (allreduce before reduce)
_NAMES = (("reducescatter", "reduce_scatter"), ("allreduce", "all_reduce"),
          ("allgather", "all_gather"), ("alltoall", "alltoall"), ("broadcast", "broadcast"),
          ("sendrecv", "sendrecv"), ("hypercube", "hypercube"), ("gather", "gather"),
          ("scatter", "scatter"), ("reduce", "reduce"))
#: a line inside a table whose first field is a number is a row, or a piece of one: a field
#: shaped like a number, valid or not (a 5,000-digit or '1310²2' size is a row whose size is
#: bad, named as such; '8603225c1c76:3111:3237 [0] NCCL INFO' is not a row)
_NUMBER = re.compile(rf"(?:{INT_PATTERN}|{FLOAT_PATTERN})\Z")
#: the header's fields as the header names them, for messages
_HEADER_NAMES = {"nthread": "nThread", "ngpus": "nGpus", "min_bytes": "minBytes",
                 "max_bytes": "maxBytes", "step": "step", "warmup_iters": "warmup iters",
                 "iters": "iters", "agg_iters": "agg iters", "validation": "validation",
                 "graph": "graph"}


def test_from_name(name: str) -> str | None:
    """The collective a file name names (``..._allreduce_...``, ``all_reduce_output``)."""
    flat = re.sub(r"[^a-z]", "", name.lower().rsplit("/", 1)[-1])
    return next((canon for key, canon in _NAMES if key in flat), None)


def _test_from_command(word: str) -> str | None:
    flat = word.replace("_", "")
    return next((canon for key, canon in _NAMES if key == flat), None)


class _Block:
    """One test as read so far."""

    def __init__(self, index: int, test: str | None, lineno: int,
                 header: dict[str, Any] | None = None) -> None:
        self.index, self.test, self.lineno = index, test, lineno
        self.header = header or {}
        self.devices: list[dict[str, Any]] = []
        self.columns: g.Columns | None = None
        self.row: Any = None        # the row grammar of self.columns
        self.rows: list[dict[str, Any]] = []
        self.closed = False         # its Avg bus bandwidth was read
        self.out_of_bounds: int | None = None
        self.avg: float | None = None
        self.avg_read = False       # its Avg bus bandwidth line was there (valid or not)

    @property
    def nranks(self) -> int | None:
        return len(self.devices) or None


def _strip(line: str) -> tuple[str, str | None]:
    """The line without launcher prefixes; second, why it cannot be read as a row when
    several ranks' tags share it (None otherwise)."""
    torn = None
    if line.startswith("["):
        tags = _TAG.findall(line)
        if tags and line.startswith(tags[0]):
            if len(set(tags)) > 1:
                torn = f"holds the output of several ranks ({', '.join(sorted(set(tags)))})"
                line = line[len(tags[0]):].split("[", 1)[0]
            else:
                line = _TAG.sub("", line)
    elif line[:1] != " " or ":" in line[:8]:
        m = _SRUN.match(line)
        if m:
            line = line[m.end():]
    return line, torn


def parse(source: Source) -> ParseResult:
    """Parse one source's nccl-tests output into ``nccl_tests`` and ``nccl_tests_summary``."""
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        buf = bytes(raw)
    name = source.name
    lines = buf.split(b"\n")
    cut_last = not buf.endswith(b"\n")
    from_name = test_from_name(name)
    command: str | None = None
    blocks: list[_Block] = []
    bad: list[tuple[int, str]] = []
    numbers: list[Problem] = []     # fields that are not numbers of their column
    tagged = False

    def current(lineno: int) -> _Block:
        if not blocks or blocks[-1].closed:
            blocks.append(_Block(len(blocks), command or from_name, lineno))
        return blocks[-1]

    for i, raw_line in enumerate(lines):
        lineno = i + 1
        text = raw_line.decode("utf-8", "replace").rstrip("\r")
        if "_perf" in text:
            m = _PERF.search(text)
            if m and (t := _test_from_command(m.group(1))):
                command = t
        line, torn = _strip(text)
        body = line.strip()
        if not body:
            continue
        if body[0] == "#":
            _hash_line(body, lineno, blocks, current, command or from_name, name, numbers)
            continue
        if not body[0].isdigit() or not blocks or blocks[-1].columns is None \
                or blocks[-1].closed:
            continue
        if not _NUMBER.match(body.split(None, 1)[0]):
            continue
        block = blocks[-1]
        if torn is not None:
            bad.append((lineno, f"nccl-tests row {torn}: torn by another writer; skipped"))
            continue
        if cut_last and i == len(lines) - 1:
            problems.append(Problem(name, "file does not end with a newline (output cut "
                                    "short?): its last row may be cut, and was not read",
                                    lineno, "error"))
            continue
        parsed = g.parse_line(block.row, body)
        if parsed is None:
            n, want = len(body.split()), _fields(block)
            bad.append((lineno, f"not a whole nccl-tests row ({n} fields; the column header "
                                f"asks for {want - 1}-{want}): torn or cut; skipped"))
            continue
        _add_rows(block, parsed, lineno, name, numbers)
        tagged = tagged or line != text
    note_skipped(bad, name, problems, "nccl-tests rows")
    note(numbers, name, problems)
    for b in blocks:
        if b.columns is not None and b.rows and not b.avg_read:
            problems.append(Problem(name, "the test's table does not end with '# Avg bus "
                                    "bandwidth' (the run was cut short?): its rows so far "
                                    "were read", b.lineno))
    rows = [r for b in blocks for r in b.rows]
    summary = [_summary(b, name) for b in blocks if b.rows or b.header]
    tables = {
        "nccl_tests": schema.conform(pd.DataFrame(rows, columns=NCCL_TESTS.names)
                                     if rows else NCCL_TESTS.empty().drop(columns="run"),
                                     NCCL_TESTS),
        "nccl_tests_summary": schema.conform(
            pd.DataFrame(summary, columns=NCCL_TESTS_SUMMARY.names) if summary
            else NCCL_TESTS_SUMMARY.empty().drop(columns="run"), NCCL_TESTS_SUMMARY),
    }
    variant = "tagged output" if tagged else "plain"
    return ParseResult(tables, problems, variant)


def _hash_line(body: str, lineno: int, blocks: list[_Block], current: Any,
               test: str | None, name: str, problems: list[Problem]) -> None:
    """A '#' line: header, device, column header, out-of-bounds or average line."""
    words = body[1:].split(None, 1)
    key = words[0] if words else ""
    if key == "nThread":
        parsed = g.parse_line(g.HEADER, body)
        if parsed is not None:
            header = {k: fit(v, _HEADER_NAMES.get(k, k), lineno, name, problems, lo=0,
                             outcome="the test is read, this value is missing")
                      for k, v in parsed.as_dict().items()}
            blocks.append(_Block(len(blocks), test, lineno, header))
    elif key == "Rank":
        parsed = g.parse_line(g.DEVICE, body)
        if parsed is not None:
            block = current(lineno)
            if block.columns is None:
                device = parsed.as_dict()
                for k, v in device.items():
                    if isinstance(v, NumberError):   # the device still counts (its host)
                        device[k] = fit(v, k.capitalize(), lineno, name, problems,
                                        outcome="the device is counted, this value is "
                                        "missing")
                block.devices.append(device)
    elif key == "size":
        parsed = g.parse_line(g.COLUMNS, body)
        if parsed is not None:
            block = current(lineno)
            if block.columns is not None and block.rows:   # a second table, no header
                block.closed = True
                block = current(lineno)
            block.columns = g.columns(parsed)
            block.row = g.row_grammar(block.columns)
    elif key == "Out" and blocks:
        parsed = g.parse_line(g.OUT_OF_BOUNDS, body)
        if parsed is not None:
            blocks[-1].out_of_bounds = fit(parsed["out_of_bounds"], "Out of bounds values",
                                           lineno, name, problems, lo=0,
                                           outcome="its value is missing")
    elif key == "Avg" and blocks and not blocks[-1].closed:
        parsed = g.parse_line(g.AVG_BUSBW, body)
        if parsed is not None:
            blocks[-1].avg = fit(parsed["avg_busbw_gbps"], "Avg bus bandwidth", lineno, name,
                                 problems, outcome="the test's average is missing")
            blocks[-1].avg_read = blocks[-1].closed = True


def _fields(block: _Block) -> int:
    assert block.columns is not None
    return block.columns.fields


def _add_rows(block: _Block, parsed: Any, lineno: int, name: str,
              problems: list[Problem]) -> None:
    cols = block.columns
    assert cols is not None
    common = {
        "source": name, "block": block.index, "test": block.test,
        "size_bytes": fit(parsed["size_bytes"], "size", lineno, name, problems),
        "count": fit(parsed["count"], "count", lineno, name, problems),
        "type": parsed["type"], "redop": parsed.get("redop") or None,
        "root": fit(parsed["root"], "root", lineno, name, problems) if cols.root else None,
        "nranks": block.nranks, "lineno": lineno,
    }
    for k, placement in enumerate(PLACEMENTS[:len(cols.blocks)]):
        part = parsed[f"p{k}"]
        wrong = None
        if cols.blocks[k]:
            count, is_count = g.wrong_value(part["wrong"])
            wrong = fit(count, "#wrong", lineno, name, problems) if is_count else None
        block.rows.append({
            **common, "placement": placement,
            "time_us": fit(part["time_us"], "time", lineno, name, problems),
            "algbw_gbps": fit(part["algbw_gbps"], "algbw", lineno, name, problems),
            "busbw_gbps": fit(part["busbw_gbps"], "busbw", lineno, name, problems),
            "wrong": wrong,
        })


def _summary(b: _Block, name: str) -> dict[str, Any]:
    h = b.header
    return {
        "source": name, "block": b.index, "test": b.test,
        "nthread": h.get("nthread"), "ngpus": h.get("ngpus"),
        "min_bytes": h.get("min_bytes"), "max_bytes": h.get("max_bytes"),
        "warmup_iters": h.get("warmup_iters"), "iters": h.get("iters"),
        "validation": h.get("validation"), "nranks": b.nranks,
        "nhosts": len({d["host"] for d in b.devices}) or None,
        "device": b.devices[0].get("name") if b.devices else None,
        "rows": len(b.rows), "out_of_bounds": b.out_of_bounds,
        "avg_busbw_gbps": b.avg, "lineno": b.lineno,
    }
