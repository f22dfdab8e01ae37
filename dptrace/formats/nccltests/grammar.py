"""The nccl-tests grammar, one pyparsing element per kind of line (each tested on its own in
``tests/test_nccltests_grammar.py``). Lines come here without launcher prefixes and line
breaks (:mod:`.read` strips them). Real lines (runs of spaces shortened)::

    # nThread 1 nGpus 1 minBytes 4 maxBytes 1073741824 step: 2(factor) warmup iters: 5
      iters: 20 agg iters: 1 validation: 1 graph: 0          (one line)
    #  Rank  0 Group  0 Pid  62125 on x3006c0s13b1n0 device  0 [0x07] NVIDIA A100-SXM4-40GB
    #   Rank  0 Pid 112424 on localhost device  0 [0x00] A100-SXM4-40GB
    #  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong
    #  size  count  type  redop  time  algbw  busbw  error  time  algbw  busbw  error
         4      1  float  sum  -1  36.90  0.00  0.00    0  32.69  0.00  0.00    0
         0      0  float          1.63  0.00  0.00  N/A   1.38  0.00  0.00  N/A
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 9.76937

A data row's grammar is made from its column header (:func:`row_grammar`): the root column
only where the header names it, a block of time, algbw, busbw (and #wrong or error where
named) per placement. ``redop`` may be empty (old alltoall prints nothing there). A row must
match to its end: a row with a field too few or too many (torn by another writer, cut by
the end of the file) does not match, and is never read into other columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyparsing as pp

from ...numbers import FLOAT_PATTERN, INT_PATTERN, NumberError, float_or_error, int_or_error

#: number fields, read by :mod:`dptrace.numbers`: a field shaped like a number matches
#: whatever its value, and a value that is not one of its column (5,000 digits, above 2^63,
#: '1²', nan, 1e999) comes back as a NumberError that the reader names (the row keeps its
#: shape: 'busbw nan is not finite', not 'not a whole row')
INT = pp.Regex(INT_PATTERN).set_name("integer").set_parse_action(lambda t: int_or_error(t[0]))
FLOAT = pp.Regex(FLOAT_PATTERN).set_name("number") \
    .set_parse_action(lambda t: float_or_error(t[0]))
HASH = pp.Suppress("#")
KW = pp.Keyword

#: ``# nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step: 2(factor) warmup iters: 5
#: iters: 20 [agg iters: 1] [validation: 1] [graph: 0]``
HEADER = (
    HASH + KW("nThread") + INT("nthread") + KW("nGpus") + INT("ngpus")
    + KW("minBytes") + INT("min_bytes") + KW("maxBytes") + INT("max_bytes")
    + pp.Literal("step:") + INT("step") + pp.Suppress("(") + pp.Word(pp.alphas)("step_kind")
    + pp.Suppress(")")
    + KW("warmup") + pp.Literal("iters:") + INT("warmup_iters")
    + pp.Literal("iters:") + INT("iters")
    + pp.Optional(KW("agg") + pp.Literal("iters:") + INT("agg_iters"))
    + pp.Optional(pp.Literal("validation:") + INT("validation"))
    + pp.Optional(pp.Literal("graph:") + INT("graph"))
    + pp.Optional(pp.Regex(r".+"))("rest")
)

#: ``#  Rank  0 [Group  0] Pid  62125 on HOST device  0 [0x07] NAME``
DEVICE = (
    HASH + KW("Rank") + INT("rank") + pp.Optional(KW("Group") + INT("group"))
    + KW("Pid") + INT("pid") + KW("on") + pp.Word(pp.printables)("host")
    + KW("device") + INT("device") + pp.Optional(pp.Regex(r"\[[^\]\s]*\]"))("bus")
    + pp.Optional(pp.Regex(r".*\S"))("name") + pp.StringEnd()
)

_WRONG_NAME = pp.Literal("#wrong") | KW("error")
_BLOCK_NAMES = pp.Group(KW("time") + KW("algbw") + KW("busbw")
                        + pp.Optional(_WRONG_NAME)("wrong"))
#: ``#  size  count  type  [redop]  [root]  time algbw busbw [#wrong|error]  (x1 or x2)``
COLUMNS = (
    HASH + KW("size") + KW("count") + KW("type") + pp.Optional(KW("redop"))("redop")
    + pp.Optional(KW("root"))("root") + pp.OneOrMore(_BLOCK_NAMES)("blocks") + pp.StringEnd()
)

#: ``# Out of bounds values : 0 OK``
OUT_OF_BOUNDS = (HASH + KW("Out") + KW("of") + KW("bounds") + KW("values") + pp.Suppress(":")
                 + INT("out_of_bounds") + pp.Optional(pp.Word(pp.alphas))("verdict"))
#: ``# Avg bus bandwidth    : 9.76937``
AVG_BUSBW = (HASH + KW("Avg") + KW("bus") + KW("bandwidth") + pp.Suppress(":")
             + FLOAT("avg_busbw_gbps") + pp.StringEnd())

_TYPE = pp.Word(pp.alphas, pp.alphanums + "_")
_REDOP = pp.Word(pp.alphas, pp.alphanums + "_")


@dataclass(frozen=True)
class Columns:
    """What a column header says about the rows under it."""

    root: bool
    #: per placement block: the name of its validation column ('#wrong', 'error') or ''
    blocks: tuple[str, ...]

    @property
    def fields(self) -> int:
        """Fields of a whole row, with a redop printed."""
        return 4 + self.root + sum(3 + bool(w) for w in self.blocks)


def columns(parsed: pp.ParseResults) -> Columns:
    """The :class:`Columns` of a parsed :data:`COLUMNS` line."""
    blocks = tuple(str(b.get("wrong", "")) for b in parsed["blocks"])
    return Columns(root="root" in parsed, blocks=blocks)


def row_grammar(cols: Columns) -> pp.ParserElement:
    """The grammar of a data row under ``cols``: ``size count type [redop] [root]`` then a
    ``time algbw busbw [wrong]`` group per placement, to the end of the line."""
    g = INT("size_bytes") + INT("count") + _TYPE("type") + pp.Optional(_REDOP)("redop")
    if cols.root:
        g += INT("root")
    for k, wrong in enumerate(cols.blocks):
        block = FLOAT("time_us") + FLOAT("algbw_gbps") + FLOAT("busbw_gbps")
        if wrong:
            block += pp.Regex(r"N/A|" + FLOAT_PATTERN)("wrong")
        g += pp.Group(block)(f"p{k}")
    return g + pp.StringEnd()


_WHOLE = re.compile(INT_PATTERN + r"\Z")


def wrong_value(text: str) -> tuple[int | NumberError | None, bool]:
    """A row's #wrong text as (count, is_a_count): N/A -> (None, True); an integer -> (n,
    True), or a NumberError when it is not an int64 (5,000 digits); the old error column's
    float (0e+00) -> (None, False)."""
    if text == "N/A":
        return None, True
    if _WHOLE.match(text):
        return int_or_error(text), True
    return None, False


def parse_line(element: pp.ParserElement, line: str) -> pp.ParseResults | None:
    """``element`` matched against the whole of ``line``; None when it does not match."""
    try:
        return element.parse_string(line, parse_all=True)
    except pp.ParseException:
        return None
