"""The DeepSpeed comms-logger summary grammar: one pyparsing element per kind of line (each
tested on its own in ``tests/test_dscomms_grammar.py``). Lines come here without launcher
prefixes and line breaks (:mod:`.read` strips them). Real lines (runs of spaces shortened)::

    Comm. Op  Message Size  Count  Total Latency(ms)  Avg Latency(ms)  tput_avg (Gbps)
      busbw_avg (Gbps)                                         (one line)
    broadcast
    broadcast | [Caller Func: _broadcast_model]
                        40.0 B     1       0.07     0.07    0.00    0.00
                        98.25 MB   1       8317.12  8317.12 0.20    0.19
                        0B         1       1104.30  1104.30 0.00    0.00

Message sizes are DeepSpeed's ``convert_size``: ``0B`` for nothing, else the size divided by
the largest power of 1024 not above it, rounded to 2 decimals, and the unit of that power
(B, KB, MB, GB, ...): a KB is 1024 bytes. A row must match to its end: a field missing or
extra (torn, cut) does not match, and is never read into other columns.
"""

from __future__ import annotations

import pyparsing as pp

from ...numbers import FLOAT_PATTERN, INT_PATTERN, NumberError, float_or_error, int_or_error

#: number fields, read by :mod:`dptrace.numbers`: a field shaped like a number matches
#: whatever its value, and one that is not a number of its column (5,000 digits, '14⁶', nan,
#: inf) comes back as a NumberError that the reader names (the row keeps its shape)
INT = pp.Regex(INT_PATTERN).set_name("integer").set_parse_action(lambda t: int_or_error(t[0]))
FLOAT = pp.Regex(FLOAT_PATTERN).set_name("number") \
    .set_parse_action(lambda t: float_or_error(t[0]))
KW = pp.Keyword

#: the units of DeepSpeed's convert_size, in powers of 1024
UNITS = ("B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")

#: ``Comm. Op  Message Size  Count  Total Latency(ms)  Avg Latency(ms)  tput_avg (Gbps)
#: busbw_avg (Gbps)``
HEADER = (pp.Literal("Comm.") + KW("Op") + KW("Message") + KW("Size") + KW("Count")
          + KW("Total") + pp.Literal("Latency(ms)") + KW("Avg") + pp.Literal("Latency(ms)")
          + KW("tput_avg") + pp.Literal("(Gbps)") + KW("busbw_avg") + pp.Literal("(Gbps)")
          + pp.StringEnd())

#: an op as printed: one word (DeepSpeed prints the name of the function it timed, so any
#: name reads as given: ``broad-cast``, ``all_to_all_single``)
_NAME = pp.Regex(r"[^\s|\[\]]+")
#: ``all_reduce`` or ``broadcast | [Caller Func: _broadcast_model]`` (debug mode; a caller
#: may hold spaces: ``<lambda> at 0x7f``)
OP = (_NAME("op") + pp.Optional(pp.Suppress("|") + pp.Suppress("[") + KW("Caller")
                                 + KW("Func") + pp.Suppress(":")
                                 + pp.Regex(r"[^\]]*[^\]\s]")("caller") + pp.Suppress("]"))
      + pp.StringEnd())

#: ``0B`` or ``1.12 KB``: the number and the unit
SIZE = (pp.Literal("0B").set_parse_action(lambda: [0.0, "B"])
        | FLOAT + pp.one_of(UNITS, as_keyword=True))
#: ``  1.12 KB  1  1054.13  1054.13  0.00  0.00``
ROW = (SIZE("size") + INT("count") + FLOAT("total_latency_ms") + FLOAT("avg_latency_ms")
       + FLOAT("tput_gbps") + FLOAT("busbw_gbps") + pp.StringEnd())


def size_bytes(value: float | NumberError, unit: str, printed: str | None = None) -> int:
    """Bytes of a printed size: ``value`` times 1024 to the unit's power, to the nearest
    byte. DeepSpeed rounded ``value`` to 2 decimals, so from KB on this is the size to
    within 0.005 of its unit (``1.12 KB`` -> 1147: the size was 1142-1152 bytes).
    :class:`~dptrace.numbers.NumberError` when it is not a size: not a finite number,
    negative, or not an int64 of bytes (``1e300 YB``); ``printed``: the size as the line
    has it, for the message."""
    text = printed or f"{getattr(value, 'text', value)} {unit}"
    if isinstance(value, NumberError):
        raise NumberError(text, value.reason)
    if value < 0:
        raise NumberError(text, "is negative")
    size = value * 1024 ** UNITS.index(unit)
    if not size < 2 ** 63:
        raise NumberError(text, "does not fit a 64-bit number of bytes")
    return round(size)


def parse_line(element: pp.ParserElement, line: str) -> pp.ParseResults | None:
    """``element`` matched against the whole of ``line``; None when it does not match."""
    try:
        return element.parse_string(line, parse_all=True)
    except pp.ParseException:
        return None
