"""The mpiP format's spec: name, tables and sniffing rule, without the reader.

mpiP (LLNL's lightweight MPI profiler) writes one report per job,
``<exe>.<ntasks>.<pid>.<k>.mpiP``: a header of ``@ Key : value`` lines, then sections
titled ``@--- MPI Time (seconds) ---``, ``@--- Callsites: N ---``, ``@--- Aggregate Time
...``, ``@--- Callsite Time statistics ...`` and so on (the concise report, ``MPIP=-c``,
has ``@--- Task Time Statistics`` and per-callsite summaries instead of per-task rows).
Reports are pasted in user guides and mails, so the format is embeddable.
"""

from __future__ import annotations

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

#: an mpiP report's own lines at a line start (after a quote mark of a mail or a page):
#: the ``@ mpiP`` first line or one of its section titles
SURE = lazy_pattern(rb"(?m)^(?:<[^>\n]*>)*(?:\s*(?:&gt;|>))*\s*(?:@ mpiP\s*$|@--- (?:MPI Time "
                  rb"\(seconds\)|Task Time Statistics \(seconds\)|Callsites: \d|Aggregate Time "
                  rb"\(top|Callsite Time statistics \())")


def sniff(source: Source, head: bytes) -> float:
    """0.97 when the head holds the ``@ mpiP`` line or an mpiP section title at a line
    start; 0 otherwise."""
    if b"@" not in head or (b"mpiP" not in head and b"@---" not in head):
        return 0.0
    if looks_binary(head):
        return 0.0
    return 0.97 if SURE.search(head) else 0.0


SPEC = Spec(
    name="mpip",
    description="mpiP reports (*.mpiP, mpiP 3.x full and concise, older ones pasted in docs): "
                "MPI and app time per task, time and sent bytes per callsite and routine",
    tables=("mpi_routines", "mpi_ranks", "mpi_callsites"),
    sniff=sniff,
    extensions=(".mpiP",),
    markers=(rb"mpiP", rb"@---"),
    embeddable=True,   # reports are pasted in user guides and mails
    reads="mpiP reports (``*.mpiP``) into ``mpi_ranks``, ``mpi_routines`` and "
          "``mpi_callsites``",
)
