"""The mpiP report grammar, one pyparsing element per kind of line (each tested on its own in
``tests/test_mpip_grammar.py``). Lines come here without their line break and without the
quoting of a mail archive or a doc page (:mod:`.read` strips it). Real lines (mpiP 3.5.0
from tests/fixtures/mpip, 3.4.1 and 2.8.2 from the user guides; runs of spaces shortened)::

    @ mpiP
    @ Command : /tmp/dp_steps 20 10 40 2
    @ MPI Task Assignment      : 0 vm
    @--- MPI Time (seconds) ---------------------------------------------------
       0       9.11       1.03    11.35                (Task AppTime MPITime MPI%)
       *       36.5       4.09    11.23
    Max                 9.091058          1.012447                 0          0
                                                       (concise: Task Time Statistics)
      1   0 dp_steps.c            62 step                     Allreduce   (Callsites)
      9   1 0x7f416bc22105           [unknown]
    Allreduce              22        747    2.05   18.24        600   0.00   (Aggregate Time)
    Allreduce               6        600   6.29e+08   1.05e+06  24.63  (Aggregate Sent)
    Allreduce            1    0    200     4.23     1.32   0.0253   2.90  25.57
                                                       (Callsite Time statistics)
    Allreduce            6    *     600 1.049e+06 1.049e+06 1.049e+06 6.291e+08
                                                       (Callsite Message Sent statistics)
    Allreduce           22       1       729       729       729      1      1
                                                       (concise callsite statistics)

Every row element matches a whole line or nothing (``parse_all``): a row with a field torn
out or cut by the end of the file does not match, and is never read into other columns.
"""

from __future__ import annotations

import pyparsing as pp

from ...numbers import FLOAT_PATTERN, INT_PATTERN, float_or_error, int_or_error

#: an integer that is a whole field (not the start of 0.25 or 1e+04), read by
#: :mod:`dptrace.numbers`: a field shaped like one matches whatever its value, and a value
#: that is not an int64 (5,000 digits, above 2^63, '¹') is a NumberError the reader names
INT = pp.Regex(INT_PATTERN).set_name("integer").set_parse_action(lambda t: int_or_error(t[0]))
#: a number field (nan, inf, 1e999 come back as a NumberError: not finite)
FLOAT = pp.Regex(FLOAT_PATTERN).set_name("number") \
    .set_parse_action(lambda t: float_or_error(t[0]))
#: an MPI routine as mpiP prints it, without MPI_: Allreduce, File_read, Type_commit
NAME = pp.Regex(r"[A-Z][A-Za-z0-9_]*").set_name("MPI routine")
#: a rank, or ``*`` for the line that aggregates every rank
RANK = INT | pp.Literal("*")
_END = pp.StringEnd()

#: ``@ mpiP``: the first line of a report
TOOL = pp.Literal("@") + pp.Keyword("mpiP") + _END
#: ``@ Key     : value`` (the value may be empty: ``@ Command : ``)
HEADER = (pp.Suppress("@") + pp.Regex(r"[A-Za-z][A-Za-z ]*?(?=\s*:)")("key") + pp.Suppress(":")
          + pp.Optional(pp.Regex(r".*\S"), "")("value") + _END)
#: ``@ MPI Task Assignment      : 0 vm``: a rank and its host
TASK_ASSIGNMENT = INT("rank") + pp.Word(pp.printables)("host") + _END
#: ``@--- MPI Time (seconds) -----``, ``@--- Callsites: 32 ----``: a section title, and the
#: number it ends with (callsites) when it has one
SECTION = (pp.Suppress("@---") + pp.Regex(r".*?(?=(?::\s*\d+)?\s+-+\s*$|(?::\s*\d+)?\s*$)")
           ("title") + pp.Optional(pp.Suppress(":") + INT("count"))
           + pp.Optional(pp.Regex(r"-+")).suppress() + _END)

#: MPI Time: ``Task AppTime MPITime MPI%`` rows: ``0  9.11  1.03  11.35``, ``*  36.5 ...``
MPI_TIME = RANK("task") + FLOAT("app_s") + FLOAT("mpi_s") + FLOAT("mpi_pct") + _END

#: concise Task Time Statistics: ``Max app mpi app_task mpi_task`` (and Min), ``Mean app
#: mpi`` (and Stddev), ``Aggregate app mpi mpi%``
TASK_STATS = (
    (pp.one_of("Max Min", as_keyword=True)("stat") + FLOAT("app_s") + FLOAT("mpi_s")
     + INT("app_task") + INT("mpi_task") + _END)
    | (pp.one_of("Mean Stddev", as_keyword=True)("stat") + FLOAT("app_s") + FLOAT("mpi_s")
       + _END)
    | (pp.Keyword("Aggregate")("stat") + FLOAT("app_s") + FLOAT("mpi_s") + FLOAT("mpi_pct")
       + _END)
)

#: Callsites: ``ID Lev File/Address Line Parent_Funct MPI_Call``; the file:line is an address
#: without a line when mpiP could not look it up, and frames past level 0 have no call
CALLSITE = (INT("site") + INT("level") + pp.Word(pp.printables)("file")
            + pp.Optional(INT("line")) + pp.Word(pp.printables)("function")
            + pp.Optional(NAME("call")) + _END)

#: Aggregate Time: ``Call Site Time App% MPI% [Count] COV`` (Count from mpiP 3.5)
AGGREGATE_TIME = (NAME("call") + INT("site") + FLOAT("time_ms") + FLOAT("app_pct")
                  + FLOAT("mpi_pct") + pp.Optional(INT("count")) + FLOAT("cov") + _END)
#: Aggregate Sent Message Size: ``Call Site Count Total Avrg Sent%`` (MPI% before 3.x)
AGGREGATE_SENT = (NAME("call") + INT("site") + INT("count") + FLOAT("total_bytes")
                  + FLOAT("mean_bytes") + FLOAT("sent_pct") + _END)

#: Callsite Time statistics: ``Name Site Rank Count Max Mean Min App% MPI%`` (ms per call;
#: the fields keep the input's unit, the reader converts them to the table's us)
CALLSITE_TIME = (NAME("call") + INT("site") + RANK("rank") + INT("count") + FLOAT("max_ms")
                 + FLOAT("mean_ms") + FLOAT("min_ms") + FLOAT("app_pct") + FLOAT("mpi_pct")
                 + _END)
#: Callsite Message Sent statistics: ``Name Site Rank Count Max Mean Min Sum`` (bytes)
CALLSITE_SENT = (NAME("call") + INT("site") + RANK("rank") + INT("count") + FLOAT("max")
                 + FLOAT("mean") + FLOAT("min") + FLOAT("sum") + _END)
#: the concise report's callsite statistics (time in ms, or sent bytes):
#: ``Name Site Tasks Max Mean Min MaxRnk MinRnk``, over the tasks' totals at the callsite
CALLSITE_CONCISE = (NAME("call") + INT("site") + INT("tasks") + FLOAT("max") + FLOAT("mean")
                    + FLOAT("min") + INT("max_rank") + INT("min_rank") + _END)


def parse_line(element: pp.ParserElement, line: str) -> pp.ParseResults | None:
    """``element`` matched against the whole of ``line``; None when it does not match."""
    try:
        return element.parse_string(line, parse_all=True)
    except pp.ParseException:
        return None
