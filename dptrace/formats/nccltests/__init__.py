"""The nccl-tests format's spec: name, tables and sniffing rule, without the reader.

nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ``alltoall_perf`` ...) print a header
(``# nThread 1 nGpus 1 minBytes 4 maxBytes ...``), the devices (``#  Rank  0 Group  0 Pid
62125 on host device  0 [0x07] NVIDIA A100``), a column header (``#  size  count  type
redop  root  time  algbw  busbw #wrong ...``), one row per message size and the ``# Avg bus
bandwidth`` line. The output often sits inside other text (a job log with NCCL INFO lines,
a doc page), so the format is embeddable: it runs beside a training log that also holds
one.
"""

from __future__ import annotations

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

#: launcher prefixes a line may start with: mpirun --tag-output ``[1,0]<stdout>:``, srun -l
#: ``0: ``, and markdown quoting
_PREFIX = rb"(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s)?"
#: the header of a test, or its column header: nccl-tests' own lines, never a mere mention
#: of NCCL in a log
SURE = lazy_pattern(rb"(?m)^" + _PREFIX + rb"#\s*nThread\s+\d+\s+nGpus\s+\d+\s+minBytes\s+\d+"
                  rb"|^" + _PREFIX + rb"#\s+size\s+count\s+type\s+(?:redop\s+)?(?:root\s+)?"
                  rb"time\s+algbw\s+busbw")


def sniff(source: Source, head: bytes) -> float:
    """Sure when the head holds an nccl-tests header or column header at a line start."""
    if b"nThread" not in head and b"busbw" not in head:  # cheap: most inputs stop here
        return 0.0
    if looks_binary(head):
        return 0.0
    return 0.95 if SURE.search(head) else 0.0


SPEC = Spec(
    name="nccltests",
    description="nccl-tests output (all_reduce_perf, all_gather_perf, alltoall_perf, ...): "
                "bus bandwidth per message size, alone or inside a job log",
    tables=("nccl_tests", "nccl_tests_summary"),
    sniff=sniff,
    embeddable=True,
    markers=(rb"nThread", rb"busbw"),
    reads="nccl-tests output (``all_reduce_perf`` and friends, alone or inside a job log) "
          "into ``nccl_tests`` and ``nccl_tests_summary``",
)
