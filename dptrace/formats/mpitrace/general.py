"""Line scanner for mpitrace profiles: cuts a text into profile blocks and reads each block.

One pass over the lines with a small state machine; every value goes into plain lists
of tuples (:class:`Block`), which :mod:`dptrace.formats.mpitrace.read` turns into tables. The
hot states (routine rows, bin rows, the per-rank table) use ``str.split`` and ``int`` /
``float`` only; regexes are tried on the few other lines. Every line inside a profile is
either understood, blank, a separator, or reported as a problem with its line number.

Numbers that do not fit their column (an integer beyond int64, a float that is nan or inf,
e.g. '1e999', or a product calls x avg. bytes that overflows) are stored as missing (NaN;
None for the header's ranks) and reported as an error at their line; the rest of the row is
kept. The checks cost a comparison per row: the conversions themselves signal nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from ...errors import Problem, quote

# states
HEAD, ROUTINES, TOTALS, MSG, COMMSIZE, STACK, SUMMARY, HISTO, RANKTABLE, SKIP, AFTER = range(11)
#: a pseudo-state recorded in Block.seen when the size distributions were closed by a separator
MSG_CLOSED = -MSG

_DATA = re.compile(r"Data for MPI rank (\d+) of (\d+):\s*(\(all communicators\))?")
_TIMES = re.compile(r"Times (and statistics )?from (MPI_Init\(\)|MPI_Pcontrol\(1\)|"
                    r"summary_start\(\)) to (\S+?)\.?$")
_ROUTINE_HDR = re.compile(r"MPI Routine\s+#calls\s+avg\. bytes\s+time\(sec\)$")
_ROLE = re.compile(r"MPI task (\d+) of (\d+) had the (minimum|median|maximum) "
                   r"communication time\.?$")
_TOTAL = re.compile(r"(total communication time|total elapsed time|exclusive elapsed time|"
                    r"user cpu time|system time|synchronization time|total MPI-IO time)"
                    r"\s*=\s*([-+\d.eE]+) seconds\b")
_MEM = re.compile(r"(?:max resident set size|maximum memory size)\s*=\s*([\d.]+)\s*"
                  r"([KMG]i?B(?:ytes)?)\.?$")
_AGGREGATE = re.compile(r"aggregate memory\s*=\s*[\d.]+\s*\w+\.?$")
_LARGEST = re.compile(r"Rank (\d+) reported the largest (memory utilization|elapsed time)\s*:"
                      r"\s*([\d.]+)\s*([KMG]i?B(?:ytes)?|sec)$")
_SECTION = re.compile(
    r"(?P<msg>Message size distributions:)|(?P<onnode>On-node message size distributions:|"
    r"Summary for on-node communication|Call Graph Section:)|"
    r"(?P<commsize>Profile data by communicator size:)|(?P<stack>Profile by call stack)|"
    r"(?P<summary>(?:Communication )?[Ss]ummary for all tasks:)|"
    r"(?P<histo>Histogram of times spent in MPI)|"
    r"(?P<ranktable>MPI timing summary for all ranks:|MPI tasks sorted by communication time:)")
_MSG_HDR = re.compile(r"(\w+)\s+#calls\s+avg\. bytes\s+time\(sec\)$")
_COMM_LINE = re.compile(r"(minimum|median|maximum)\s+communication time\s*=\s*([\d.]+) sec "
                        r"for task (\d+)$")
_IO_LINE = re.compile(r"(minimum|average|maximum) MPI-IO time\s*=\s*[\d.]+ seconds$")
_COMMSIZE_BIN = re.compile(r"Data for communicator sizes (\d+) to (\d+)\s*,\s*avg size\s*=\s*"
                           r"([\d.]+):?$")
_COMMSIZE_END = re.compile(r"MPI time for this communicator bin\s*=\s*[\d.]+ sec\.?$")
_STACK_HEAD = re.compile(r"time in MPI routines\s*=\s*([\d.]+) sec, call stack index\s*=\s*"
                         r"(\d+)$")
_STACK_NOISE = ("call stack:", "filename", "address =", "Use addr2line", "For addresses",
                "addr2line", "Or translate", "Ensure -g", "MPI Routine")
#: what mpitrace's util/translate.py adds after each frame's "address = ..." line (addr2line
#: -f -C output): "function = negotiate", "source = /src/dp.c:19 (discriminator 4)"
_TRANSLATION = re.compile(r"(function|source) =(?: (.*))?$")
_DISCRIMINATOR = re.compile(r"\s+\(discriminator \d+\)$")
_SHORT = {"minimum": "min", "median": "median", "maximum": "max"}
_FENCE = ("```", "~~~", "</details", "<details", "</p>", "<p>")
_HOST_COLS = {"hostname", "host"}
_UNIT_MIB = {"KB": 1 / 1024, "KBytes": 1 / 1024, "KiB": 1 / 1024, "MB": 1.0, "MBytes": 1.0,
             "MiB": 1.0, "GB": 1024.0, "GBytes": 1024.0, "GiB": 1024.0}
_REGION = {"MPI_Init()": "init_finalize", "MPI_Pcontrol(1)": "pcontrol",
           "summary_start()": "summary_start"}

#: integers stored in Int64 columns must be below this (and at least its negative). The
#: columns are carried as float64 until they are conformed, and float64 rounds every integer
#: from 2^63 - 512 up to 2^63, which Int64 cannot hold (9223372036854775807 calls failed the
#: load; found by the coverage-guided fuzzer): those are stored as missing, with a problem
I64 = (1 << 63) - 512
#: the largest average message size whose size bin fits Int64 bounds: bin 61 holds
#: (2^61, 2^62] bytes (and, at that size, calls x avg cannot overflow a float)
MAX_BIN_BYTES = float(1 << 62)
NAN = float("nan")
#: a line longer than this is no mpitrace line (they are under 200 characters, call-stack
#: paths a few hundred): reported without being split into words, which for a line of
#: hundreds of MB would cost GBs
MAX_LINE = 10_000
_FFFD_EDGES = re.compile(r"^[\s\ufffd]+|[\s\ufffd]+$")
_NOT_INT64 = "does not fit a 64-bit integer"
_NOT_FINITE = "is not a finite number"


def _fits(value: float) -> bool:
    """True for a finite float (nan - nan and inf - inf are nan, which is not 0)."""
    return value - value == 0.0


def _digits(text: str) -> int:
    """``int`` of a word of ASCII digits (a regex group); one too long for ``int`` (Python's
    4300-digit limit) is beyond int64 anyway."""
    try:
        return int(text)
    except ValueError:
        return I64


def _int(cur: Block, what: str, text: str) -> int | None:
    """``int(text)`` of digits, or None (noted in ``cur.unfit``) when it does not fit int64."""
    n = _digits(text)
    if -I64 <= n < I64:
        return n
    cur.unfit.append((what, text, _NOT_INT64))
    return None


def _float(cur: Block, what: str, text: str) -> float:
    """``float(text)``, or NaN (noted in ``cur.unfit``) when it is nan or inf."""
    x = float(text)
    if x - x == 0.0:
        return x
    cur.unfit.append((what, text, _NOT_FINITE))
    return NAN


@dataclass
class Block:
    """One profile (one rank's output) as plain lists; line numbers are 1-based."""

    start_line: int
    rank: int | None = None
    nranks: int | None = None
    all_comms: bool = False
    generation: str | None = None   # "statistics" (older) or "times" (newer)
    region: str | None = None
    mem_unit: str | None = None
    routines: list[tuple[str, int, float, float]] = field(default_factory=list)
    own: dict[str, Any] = field(default_factory=dict)
    roles: list[str] = field(default_factory=list)
    messages: list[tuple[str, int, float, float]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    histogram: list[tuple[float, int]] = field(default_factory=list)
    table: list[tuple[Any, ...]] = field(default_factory=list)
    comm_sizes: list[tuple[Any, ...]] = field(default_factory=list)
    #: (stack, stack_time_s, routine, calls, time_s, function, call_site, call_path)
    stacks: list[tuple[Any, ...]] = field(default_factory=list)
    #: the call stacks carry translate.py's function names
    translated: bool = False
    seen: set[int] = field(default_factory=set)
    state: int = HEAD
    last_line: int = 0
    ended_by: str = "eof"
    elided: bool = False
    underlined: bool = False
    msg_lines: dict[str, int] = field(default_factory=dict)
    #: values read from a line that did not fit (what, text, why), not yet reported
    unfit: list[tuple[str, str, str]] = field(default_factory=list)


class Scanner:
    """Reads ``text`` into :class:`Block` objects, reporting problems into ``problems``."""

    def __init__(self, text: str, name: str, problems: list[Problem]) -> None:
        self.lines = text.split("\n")
        self.name, self.problems = name, problems
        self.blocks: list[Block] = []
        self.cur: Block | None = None
        self.msg_routine: str | None = None
        self.table_cols: list[str] | None = None
        self.table_reader: RankReader | None = None
        self.limit = 0
        #: communicator-size bin: lo, hi (None: beyond int64), avg size
        self.sub: tuple[int | None, int | None, float] | None = None
        #: call stack index (NaN: beyond int64), its time
        self.stack: tuple[float, float] | None = None
        #: the current call stack's frames: [function, source] each, as translated
        self.frames: list[list[str | None]] = []
        self.lineno = 0
        #: number of the last line when the text does not end with a newline (maybe cut)
        self.cut_line = 0
        #: the text holds U+FFFD, bytes that were not UTF-8 (reported when decoded): taken
        #: off the ends of lines, so that a stray byte after a heading or a number costs
        #: nothing ('time(sec)\ufffd' is still the routine table's heading)
        self.replaced = "\ufffd" in text

    def problem(self, message: str, severity: str = "error", line: int | None = None) -> None:
        self.problems.append(Problem(self.name, message, line or self.lineno, severity))

    # -- numbers that do not fit their column ---------------------------------------------
    def unfit(self, what: str, text: str, why: str, line: int | None = None) -> None:
        self.problem(f"{what} {quote(text, 40)} {why}: stored as missing", "error", line)

    def report_unfit(self, cur: Block) -> None:
        """Report the values :func:`_int` / :func:`_float` set aside on the current line."""
        for what, text, why in cur.unfit:
            self.unfit(what, text, why)
        cur.unfit.clear()

    def _header_int(self, what: str, text: str) -> int | None:
        n = _digits(text)
        if -I64 <= n < I64:
            return n
        self.unfit(what, text, _NOT_INT64)
        return None

    def _fit(self, values: Sequence[Any], words: Sequence[str], names: Sequence[str],
             line: int) -> tuple[Any, ...]:
        """``values`` (ints and floats converted from ``words``) with each that does not fit
        its column (an int beyond int64, a float nan or inf) as NaN, reported at ``line``."""
        out = list(values)
        for k, v in enumerate(out):
            if isinstance(v, int):
                if -I64 <= v < I64:
                    continue
                why = _NOT_INT64
            elif v - v == 0.0:
                continue
            else:
                why = _NOT_FINITE
            self.unfit(names[k], words[k], why, line)
            out[k] = NAN
        return tuple(out)

    def _fit3(self, routine: str, words: Sequence[str], row: tuple[int, float, float],
              line: int, binned: bool) -> tuple[Any, ...]:
        """A (#calls, avg. bytes, time) row that failed the quick check of the row readers:
        the values that do not fit as NaN; an average too large to bin (``binned``) and a
        product calls x avg that overflows (the table's bytes) reported too."""
        label = f"{routine}: "
        c, a, t = self._fit(row, words, (label + "#calls", label + "avg. bytes",
                                         label + "time(sec)"), line)
        if binned and a > MAX_BIN_BYTES:
            self.problem(f"{label}avg. bytes {quote(words[1], 40)} is beyond the largest size "
                         "bin stored (2^62 bytes): its bin is stored as missing", "error", line)
        if _fits(c) and _fits(a) and not _fits(c * a):
            self.problem(f"{label}#calls x avg. bytes ({words[0]} x {quote(words[1], 40)}) "
                         "overflows a float: its bytes are stored as missing", "error", line)
        return c, a, t

    def run(self) -> list[Block]:
        lines = self.lines
        if lines and lines[-1] == "":
            lines.pop()
        elif lines and lines[-1].strip():
            self.cut_line = len(lines)
        self.limit = len(lines) - (1 if self.cut_line else 0)
        i, n = 0, len(lines)
        while i < n:
            line = lines[i]
            i += 1
            self.lineno = i
            if len(line) > MAX_LINE:
                if self.cur is not None:
                    self.problem(f"a line of {len(line):,} characters, too long for an mpitrace "
                                 f"line: skipped it ({quote(line, 80)})")
                continue
            line = line.strip()
            if self.replaced and "\ufffd" in line:
                line = _FFFD_EDGES.sub("", line)
            if line[:1] == ">":
                line = line.lstrip("> ")
            cur = self.cur
            if cur is None:
                self._outside(line)
            elif line:
                self._inside(cur, line)
                if self.cur is cur:
                    cur.last_line = i
                    if cur.state == MSG:
                        i = self._bulk_bins(cur, i)
                    elif cur.state == RANKTABLE and self.table_reader is not None:
                        i = self._bulk_ranks(cur, i)
            elif cur.state == MSG:
                self.msg_routine = None
        if self.cur is not None:
            self._end("eof")
        return self.blocks

    def _bulk_bins(self, cur: Block, i: int) -> int:
        """Read size-bin rows and routine headings from line index ``i`` on, in a tight loop.

        Stops at the first other line (separator, section, anything odd), which the general
        loop then handles; returns the index of that line.
        """
        lines, out, limit, routine = self.lines, cur.messages, self.limit, self.msg_routine
        while i < limit:
            line = lines[i]
            if len(line) > MAX_LINE:
                break
            parts = line.split()
            k = len(parts)
            if k == 3 and routine is not None and parts[0].isdigit():
                try:
                    c, a, t = int(parts[0]), float(parts[1]), float(parts[2])
                except ValueError:
                    break
                if c >= I64 or a - a or t - t or a > MAX_BIN_BYTES:
                    c, a, t = self._fit3(routine, parts, (c, a, t), i + 1, True)
                out.append((routine, c, a, t))
            elif k == 0:
                routine = None
            elif k == 5 and parts[1] == "#calls" and parts[4] == "time(sec)":
                routine = parts[0]
                cur.msg_lines[routine] = i + 1
            else:
                break
            i += 1
            if k:
                cur.last_line = i
        self.msg_routine = routine
        return i

    def _bulk_ranks(self, cur: Block, i: int) -> int:
        """Read rows of the per-rank table from line index ``i`` on (see :meth:`_bulk_bins`),
        converting them column by column (rank 0's table lists every rank of the job)."""
        lines, limit, read = self.lines, self.limit, self.table_reader
        assert read is not None
        ncol = len(self.table_cols or ())
        start, rows = i, []
        while i < limit:
            line = lines[i]
            if len(line) > MAX_LINE:
                break
            parts = line.split()
            if len(parts) != ncol or not parts[0].isdigit():
                break
            rows.append(parts)
            i += 1
        try:
            got, bad = read(rows)
        except ValueError:   # stop at the first row that does not convert, as row by row
            got, bad = [], []
            for k, parts in enumerate(rows):
                try:
                    one, one_bad = read([parts])
                except ValueError:
                    i = start + k
                    break
                got.extend(one)
                bad.extend((k, *b[1:]) for b in one_bad)
        cur.table.extend(got)
        for k, what, text, why in bad:
            self.unfit(what, text, why, start + k + 1)
        if i > start:
            cur.last_line = i
        return i

    # -- block boundaries ---------------------------------------------------------------
    def _outside(self, line: str) -> None:
        if line.startswith("Data for MPI rank"):
            self._start_data(line)
        elif line.startswith("Times ") and _TIMES.match(line):
            self._start(Block(self.lineno))
            self._times(self.cur, line)  # type: ignore[arg-type]

    def _start(self, block: Block) -> None:
        if self.cur is not None:
            self._end("next")
        self.cur, self.msg_routine, self.table_cols, self.table_reader = block, None, None, None
        block.last_line = block.last_line or block.start_line   # its header is read
        self.blocks.append(block)

    def _start_data(self, line: str) -> None:
        m = _DATA.match(line)
        if not m:
            if self.cur is not None:
                self.problem(f"unreadable profile header {quote(line)}")
            return
        self._start(Block(self.lineno, self._header_int("rank", m[1]),
                          self._header_int("ranks", m[2]), bool(m[3])))

    def _end(self, how: str) -> None:
        assert self.cur is not None
        self.cur.ended_by = how
        self.cur = None

    # -- inside a block -----------------------------------------------------------------
    def _inside(self, cur: Block, line: str) -> None:
        if self.lineno == self.cut_line and not line.startswith(_FENCE):
            self.problem(f"the file does not end with a newline, so its last line {quote(line)} "
                         "may be cut short: skipped it")
            return
        state = cur.state
        if state == MSG and self._bin_row(cur, line):
            return
        if state == RANKTABLE and self._rank_row(cur, line):
            return
        if state == ROUTINES and self._routine_row(cur, line):
            return
        first = line[0]
        if first == "-" and line.count("-") == len(line):
            self._separator(cur)
        elif first == "D" and line.startswith("Data for MPI rank"):
            self._start_data(line)
        elif first in "`~<" and line.startswith(_FENCE):
            self._end("fence")
        elif line == "..." or line == "…":
            cur.elided = True
            self._end("elided")
        elif not self._section(cur, line):
            self._by_state(cur, line)

    def _separator(self, cur: Block) -> None:
        if cur.state == ROUTINES:
            if not cur.underlined and not cur.routines:   # the line under the heading
                cur.underlined = True
                return
            cur.state = TOTALS
            cur.seen.add(TOTALS)
        elif cur.state == MSG:
            self.msg_routine = None
            cur.state = AFTER
            cur.seen.add(MSG_CLOSED)

    def _section(self, cur: Block, line: str) -> bool:
        if cur.state in (HEAD, ROUTINES):
            return False
        m = _SECTION.match(line)
        if not m:
            return False
        kind = m.lastgroup
        state = {"msg": MSG, "onnode": SKIP, "commsize": COMMSIZE, "stack": STACK,
                 "summary": SUMMARY, "histo": HISTO, "ranktable": RANKTABLE}[kind or ""]
        if kind == "onnode":
            self.problem(f"section {quote(line)} (old mpitrace) is not read: skipped it", "warning")
        if kind == "msg" and MSG in cur.seen:
            self.problem("a second 'Message size distributions' section in one profile",
                         "warning")
        cur.state = state
        cur.seen.add(state)
        self.msg_routine, self.table_cols, self.table_reader = None, None, None
        self.sub, self.stack, self.frames = None, None, []
        return True

    def _by_state(self, cur: Block, line: str) -> None:
        state = cur.state
        if state == HEAD:
            self._head(cur, line)
        elif state == TOTALS:
            self._totals(cur, line)
        elif state == MSG:
            self._msg_other(cur, line)
        elif state == SUMMARY:
            self._summary(cur, line)
        elif state == HISTO:
            self._histo(cur, line)
        elif state == RANKTABLE:
            self._rank_header(cur, line)
        elif state == COMMSIZE:
            self._commsize(cur, line)
        elif state == STACK:
            self._stack(cur, line)
        elif state == ROUTINES:
            self.problem(f"unparseable line in the routine table: {quote(line)}")
        elif state == AFTER:
            self.problem(f"unrecognised line after the message size distributions: {quote(line)}",
                         "warning")

    # -- header and routine table -------------------------------------------------------
    def _head(self, cur: Block, line: str) -> None:
        if _ROUTINE_HDR.match(line):
            cur.state = ROUTINES
            cur.seen.add(ROUTINES)
        elif line.startswith("Times ") and _TIMES.match(line):
            self._times(cur, line)
        else:
            self.problem(f"unexpected line before the routine table: {quote(line)}", "warning")

    def _times(self, cur: Block, line: str) -> None:
        m = _TIMES.match(line)
        assert m is not None
        if cur.generation is not None:   # a second header: a new profile without Data line
            self._start(Block(self.lineno))
            cur = self.cur  # type: ignore[assignment]
        cur.generation = "statistics" if m[1] else "times"
        cur.region = _REGION.get(m[2], m[2])

    def _routine_row(self, cur: Block, line: str) -> bool:
        parts = line.split()
        if len(parts) != 4 or not parts[1].isdigit():
            return False
        try:
            row = c, a, t = int(parts[1]), float(parts[2]), float(parts[3])
        except ValueError:
            return False
        if c >= I64 or a - a or t - t or a > MAX_BIN_BYTES:   # a large avg: check c x a
            row = self._fit3(parts[0], parts[1:], row, self.lineno, False)
        cur.routines.append((parts[0], *row))
        return True

    # -- totals -------------------------------------------------------------------------
    def _totals(self, cur: Block, line: str) -> None:
        if not read_total(cur, line):
            self.problem(f"unrecognised line after the routine table: {quote(line)}", "warning")
        if cur.unfit:
            self.report_unfit(cur)

    # -- message size distributions -----------------------------------------------------
    def _bin_row(self, cur: Block, line: str) -> bool:
        parts = line.split()
        if len(parts) != 3 or not parts[0].isdigit() or self.msg_routine is None:
            return False
        try:
            row = c, a, t = int(parts[0]), float(parts[1]), float(parts[2])
        except ValueError:
            return False
        if c >= I64 or a - a or t - t or a > MAX_BIN_BYTES:
            row = self._fit3(self.msg_routine, parts, row, self.lineno, True)
        cur.messages.append((self.msg_routine, *row))
        return True

    def _msg_other(self, cur: Block, line: str) -> None:
        m = _MSG_HDR.match(line)
        if m and m[1] != "MPI":
            self.msg_routine = m[1]
            cur.msg_lines[m[1]] = self.lineno
        elif self.msg_routine is None and line.split()[0].isdigit():
            self.problem(f"size-bin row without a routine heading: {quote(line)}")
        else:
            self.problem(f"unparseable line in the message size distributions: {quote(line)}")

    # -- rank 0's job summary -----------------------------------------------------------
    def _summary(self, cur: Block, line: str) -> None:
        try:
            known = _summary_line(cur, line)
        except ValueError:   # a malformed number such as '1..5'
            known = False
            cur.unfit.clear()
        if not known:
            self.problem(f"unrecognised line in the job summary: {quote(line)}", "warning")
        if cur.unfit:
            self.report_unfit(cur)

    def _histo(self, cur: Block, line: str) -> None:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            try:
                row: tuple[Any, ...] = (float(parts[0]), int(parts[1]))
            except ValueError:
                pass
            else:
                if row[0] - row[0] or row[1] >= I64:
                    row = self._fit(row, parts, ("time-bin", "#ranks"), self.lineno)
                cur.histogram.append(row)
                return
        if not line.startswith("time-bin"):
            self.problem(f"unparseable line in the histogram of times spent in MPI: {quote(line)}")

    def _rank_header(self, cur: Block, line: str) -> None:
        if line.startswith("taskid"):
            self.table_cols = line.split()
            try:
                self.table_reader = _rank_reader(self.table_cols)
            except ValueError as exc:
                self.problem(f"per-rank table heading not understood ({exc}): {quote(line)}")
        else:
            self.problem(f"unparseable line in the per-rank table: {quote(line)}")

    def _rank_row(self, cur: Block, line: str) -> bool:
        cols, read = self.table_cols, self.table_reader
        if cols is None or read is None:
            return False
        parts = line.split()
        if len(parts) != len(cols) or not parts[0].isdigit():
            return False
        try:
            got, bad = read([parts])
        except ValueError:
            return False
        cur.table.extend(got)
        for _, what, text, why in bad:
            self.unfit(what, text, why)
        return True

    # -- optional sections --------------------------------------------------------------
    def _commsize(self, cur: Block, line: str) -> None:
        m = _COMMSIZE_BIN.match(line)
        if m:
            self.sub = (_int(cur, "communicator size", m[1]),
                        _int(cur, "communicator size", m[2]),
                        _float(cur, "avg size", m[3]))
            if cur.unfit:
                self.report_unfit(cur)
            return
        parts = line.split()
        if self.sub is not None and len(parts) == 4 and parts[1].isdigit():
            try:
                row = c, a, t = int(parts[1]), float(parts[2]), float(parts[3])
            except ValueError:
                pass
            else:
                if c >= I64 or a - a or t - t or a > MAX_BIN_BYTES:
                    row = self._fit3(parts[0], parts[1:], row, self.lineno, False)
                cur.comm_sizes.append((*self.sub, parts[0], *row))
                return
        if not (_ROUTINE_HDR.match(line) or _COMMSIZE_END.match(line)):
            self.problem(f"unparseable line in the communicator-size profile: {quote(line)}")

    def _stack(self, cur: Block, line: str) -> None:
        m = _STACK_HEAD.match(line)
        if m:
            index = _int(cur, "call stack index", m[2])
            self.stack = (NAN if index is None else index,
                          _float(cur, "time in MPI routines", m[1]))
            self.frames = []
            if cur.unfit:
                self.report_unfit(cur)
            return
        parts = line.split()
        if self.stack is not None and len(parts) == 3 and parts[1].isdigit():
            try:
                row: tuple[Any, ...] = (int(parts[1]), float(parts[2]))
            except ValueError:
                pass
            else:
                if row[0] >= I64 or row[1] - row[1]:
                    label = f"{parts[0]}: "
                    row = self._fit(row, parts[1:], (label + "#calls", label + "time(sec)"),
                                    self.lineno)
                cur.stacks.append((*self.stack, parts[0], *row, *self._translation()))
                return
        if self.stack is not None:
            if line.startswith("filename"):      # "filename = ./a.out", "filename is unknown"
                self.frames.append([None, None])
                return
            t = _TRANSLATION.match(line)
            if t and self.frames:
                self.frames[-1][1 if t[1] == "source" else 0] = (t[2] or "").strip()
                cur.translated = True
                return
        if not line.startswith(_STACK_NOISE) and self.stack is not None:
            self.problem(f"unparseable line in the call-stack profile: {quote(line)}")

    def _translation(self) -> tuple[str | None, str | None, str | None]:
        """(function, call_site, call_path) of the current stack; Nones when untranslated."""
        if all(f is None and s is None for f, s in self.frames):
            return None, None, None
        frames = [(_known(f), _known(s)) for f, s in self.frames]
        path = " < ".join(f"{f or '??'} ({s})" if s else (f or "??") for f, s in frames)
        return frames[0][0], frames[0][1], path


def _known(text: str | None) -> str | None:
    """addr2line's answer, None when it did not know ("??", "??:0", "??:?", nothing)."""
    if not text or text.startswith("??"):
        return None
    return _DISCRIMINATOR.sub("", text)


def read_total(cur: Block, line: str) -> bool:
    """One stripped line of the totals after the routine table into ``cur``; False when the
    line is none of them or holds a malformed number such as '96..28' (shared by
    :class:`Scanner` and the fast path)."""
    try:
        return _total(cur, line)
    except ValueError:
        cur.unfit.clear()   # the line is not read: nothing of it is stored
        return False


def _total(cur: Block, line: str) -> bool:
    m = _TOTAL.match(line)
    if m:
        cur.own[m[1]] = _float(cur, m[1], m[2])
        return True
    m = _MEM.match(line)
    if m:
        size = _float(cur, "max resident set size", m[1])
        cur.own["max_rss_mib"] = size * _UNIT_MIB.get(m[2], float("nan"))
        cur.mem_unit = m[2]
        return True
    m = _ROLE.match(line)
    if m:
        cur.roles.append(m[3])
        if cur.nranks is None:
            cur.rank, cur.nranks = _int(cur, "rank", m[1]), _int(cur, "ranks", m[2])
        return True
    return read_largest(cur, line) or bool(_AGGREGATE.match(line))


def _summary_line(cur: Block, line: str) -> bool:
    m = _COMM_LINE.match(line)
    if m:
        key = _SHORT[m[1]]
        what = f"{m[1]} communication time"
        cur.summary[f"{key}_comm_s"] = _float(cur, what, m[2])
        cur.summary[f"{key}_comm_rank"] = _int(cur, f"{what}: task", m[3])
        return True
    return read_largest(cur, line) or bool(_IO_LINE.match(line))


def read_largest(cur: Block, line: str) -> bool:
    """'Rank N reported the largest memory utilization/elapsed time' into ``cur.summary``."""
    m = _LARGEST.match(line)
    if not m:
        return False
    what = f"the largest {m[2]}"
    rank = _int(cur, f"{what}: rank", m[1])
    value = _float(cur, what, m[3])
    if m[2] == "elapsed time":
        cur.summary["max_elapsed_rank"], cur.summary["max_elapsed_s"] = rank, value
    else:
        mib = value * _UNIT_MIB.get(m[4], float("nan"))
        cur.summary["max_rss_rank"], cur.summary["max_rss_mib"] = rank, mib
    return True


#: a value of the per-rank table that did not fit: (row index, column, text, why)
Unfit = tuple[int, str, str, str]
RankReader = Callable[[list[list[str]]], tuple[list[tuple[Any, ...]], list[Unfit]]]


def _rank_reader(cols: list[str]) -> RankReader:
    """A function turning rows of the per-rank table (split into words, ``len(cols)`` each)
    into (rank, host, cpu, comm, elapsed, user, system, rss_mib, switches) tuples, converted
    column by column; absent columns: None. It also returns the values that do not fit
    their column (stored as NaN): found per column with one ``max`` of the words' lengths
    (an int of up to 18 digits fits int64) or one ``sum`` of the floats (finite unless a
    value is nan or inf, or the sum overflows)."""
    where = {c: i for i, c in enumerate(cols)}
    host = next((where[c] for c in cols if c in _HOST_COLS), None)
    size = next((c for c in cols if c.startswith("size(")), None)
    scale = _UNIT_MIB.get(size[5:-1], float("nan")) if size else float("nan")
    # (column index, kind: int, str or float, scale of a float)
    fields: list[tuple[int | None, str, float]] = [
        (where.get("taskid"), "i", 1.0), (host, "s", 1.0), (where.get("cpu"), "i", 1.0),
        (where.get("comm(s)"), "f", 1.0), (where.get("elapsed(s)"), "f", 1.0),
        (where.get("user(s)"), "f", 1.0), (where.get("system(s)"), "f", 1.0),
        (where.get(size) if size else None, "f", scale), (where.get("switches"), "i", 1.0)]
    if fields[0][0] is None:
        raise ValueError("per-rank table without a taskid column")

    def read(rows: list[list[str]]) -> tuple[list[tuple[Any, ...]], list[Unfit]]:
        if not rows:
            return [], []
        columns = list(zip(*rows, strict=True))
        out: list[Any] = []
        bad: list[Unfit] = []
        for i, kind, factor in fields:
            if i is None:
                out.append(repeat(None, len(rows)))
                continue
            words = columns[i]
            if kind == "s":
                out.append(words)
                continue
            if kind == "i":
                values: list[Any] = list(map(int, words))
                check = max(map(len, words)) > 18
            else:
                values = list(map(float, words))
                total = sum(values)
                check = total - total != 0.0
            if check:
                for k, v in enumerate(values):
                    if (-I64 <= v < I64) if kind == "i" else (v - v == 0.0):
                        continue
                    bad.append((k, cols[i], words[k], _NOT_INT64 if kind == "i" else
                                _NOT_FINITE))
                    values[k] = NAN
            out.append(values if factor == 1.0 else [v * factor for v in values])
        return list(zip(*out, strict=True)), bad

    return read


_HOW = {"eof": "the file ends", "fence": "the pasted output ends",
        "next": "the next profile starts", "elided": "the output is elided with '...'"}


def check_block(b: Block, name: str, problems: list[Problem]) -> None:
    """Report where a profile stops short: which section it was in, at which line."""
    sev = "error" if b.ended_by == "eof" else "warning"
    how = _HOW[b.ended_by]
    where = f"{how} after line {b.last_line}"

    def add(message: str, severity: str = sev) -> None:
        problems.append(Problem(name, message, b.last_line, severity))

    if ROUTINES not in b.seen:
        return add(f"profile has no routine table: {where}")
    if TOTALS not in b.seen:
        return add(f"{where}, inside the routine table")
    if not b.own:
        return add(f"{where}, right after the routine table (no totals)")
    if not {"total communication time", "total elapsed time"} <= b.own.keys():
        return add(f"{where}, inside the totals that follow the routine table")
    if MSG not in b.seen:
        return add(f"{where}, before the message size distributions")
    if _check_messages(b, add, where):
        return None
    if SUMMARY in b.seen or RANKTABLE in b.seen:
        _check_summary(b, add, where)
    elif b.rank == 0 and b.state in (MSG, AFTER):
        add(f"rank 0's profile has no job summary ('Summary for all tasks'): {where}",
            "warning")


def _check_messages(b: Block, add: Any, where: str) -> bool:
    """Bins against the routine table; True when the profile was cut inside this section."""
    calls: dict[str, int] = {}
    for routine, n, _, _ in b.messages:
        calls[routine] = calls.get(routine, 0) + n
    table = {r: n for r, n, _, _ in b.routines}
    last = b.messages[-1][0] if b.messages else None
    open_end = b.state == MSG
    missing = [r for r, _, avg, _ in b.routines if avg > 0 and r not in calls]
    short = last if open_end and last in table and calls[last] < table[last] else None
    if short or (open_end and missing):
        what = [f"inside the size distribution of {short} (its bins hold {calls[short]:,} of "
                f"{table[short]:,} calls)"] if short else ["inside the message size distributions"]
        if missing:
            what.append(f"no bins for {', '.join(missing)}")
        add(f"{where}, {'; '.join(what)}")
        return True
    if missing:
        add(f"no message size bins for {', '.join(missing)} although the routine table gives "
            "them bytes (bins cut from this copy?)", "warning")
    for routine, n in calls.items():   # a count stored as missing (NaN) is not compared
        if routine in table and table[routine] != n and n == n and _fits(table[routine]):
            add(f"the size bins of {routine} add up to {n:,} calls, the routine table "
                f"says {table[routine]:,}", "warning")
    return False


def _check_summary(b: Block, add: Any, where: str) -> None:
    if b.state == SUMMARY:
        return add(f"{where}, inside the job summary (no per-rank table)")
    if b.state == HISTO and len(b.histogram) < 15:
        return add(f"{where}, inside the histogram of times spent in MPI")
    if RANKTABLE not in b.seen:
        return None
    n = len(b.table)
    if b.nranks is not None and n < b.nranks:
        return add(f"the per-rank table lists {n:,} of {b.nranks:,} ranks: {where}")
    if b.nranks is not None and n > b.nranks:
        return add(f"the per-rank table lists {n:,} ranks, the job has {b.nranks:,}",
                   "warning")
    return None
