"""The IBM mpitrace format's spec: name, tables and sniffing rule, without the reader
(see :mod:`dptrace.formats.trainlog` for why)."""

from __future__ import annotations

import re

from ...registry import Spec
from ...sources import Source

MARKERS = (b"Data for MPI rank", b"Times and statistics from MPI_Init", b"Times from MPI_Init",
           b"Times from MPI_Pcontrol")
_FIRST = MARKERS[0]
TABLES = ("mpi_routines", "mpi_messages", "mpi_ranks", "mpi_jobs", "mpi_comm_sizes",
          "mpi_call_stacks", "mpi_histogram")


def sniff(source: Source, head: bytes) -> float:
    """0.97 when the first 8 KB hold an mpitrace header; 0 otherwise."""
    if b"MPI" not in head:   # in every marker: most other inputs stop here (a needle with
        return 0.0            # spaces is a slow search through text of spaces and digits)
    # a rank file starts with its header: no search, no generator (thousands of heads)
    if head.startswith(_FIRST) or any(m in head for m in MARKERS):
        return 0.97
    i = head.find(b"MPI Routine")
    return 0.95 if i >= 0 and b"#calls" in head[i:i + 200] else 0.0


SPEC = Spec(
    name="mpitrace",
    description="IBM mpitrace profiles mpi_profile.<job>.<rank> (every generation: Theta/"
                "ThetaGPU 'Times and statistics', Polaris 'Times from'), also pasted in docs",
    tables=TABLES,
    sniff=sniff,
    embeddable=True,   # documents paste profiles next to training logs
    markers=(*(re.escape(m) for m in MARKERS), rb"MPI Routine"),
    batch=True,        # read.parse_many: thousands of rank files, each table built once
    engines=("fast", "general"),
    reads="IBM mpitrace profiles (``mpi_profile.<job>.<rank>``) into the ``mpi_*`` tables",
)
