"""The NCCL debug-log format's spec: name, tables and sniffing rule, without the reader.

With ``NCCL_DEBUG=INFO`` every process of a job prints what NCCL set up: its version, the
network it chose between nodes (``NET/IB : Using [0]mlx5_0:1/IB``, ``NET/Socket : Using
[0]eth0``, ``NET/Plugin: Loaded net plugin AWS Libfabric``, ``Using network IB``), its ranks
and the transports of its channels (``via NET/IB/0/GDRDMA``, ``via P2P/IPC``), and its
warnings. The lines sit inside the job's log, among the training output, so the format is
embeddable: it runs beside the training log that holds them.
"""

from __future__ import annotations

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

#: a whole NCCL line (the grammar's ``LINE``; the reader runs it as a plain regular expression
#: on every NCCL line, and needs pyparsing only for the messages it reads):
#: ``host:pid:tid`` (the process), ``[3]`` (its CUDA device), NCCL 2.19+'s seconds since
#: start (``2345.678901``), where a WARN or TRACE line was written (``misc/ibvwrap.cc:63``,
#: ``nccl_net_ofi_init:1444``), ``NCCL``, the level, and the message
LINE_PATTERN = (
    r"(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<device>\d+)\] "
    r"(?:(?P<stamp>\d+\.\d+) )?(?:(?P<place>[\w./\-]+:\d+) )?"
    r"NCCL (?P<level>INFO|WARN|TRACE|ERROR)(?: (?P<message>.*))?$")
#: an NCCL line at a line start (after a launcher prefix): 'host:pid:tid [dev] NCCL INFO '
SURE = lazy_pattern(rb"(?m)^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s|\[default\d+\]:|"
                  rb"\[rank\d+\]:\s?)?[A-Za-z0-9][\w.\-]*:\d+:\d+ \[\d+\] "
                  rb"(?:\d+\.\d+ )?(?:[\w./\-]+:\d+ )?NCCL (?:INFO|WARN) ")


def sniff(source: Source, head: bytes) -> float:
    """Sure when the head holds a line NCCL wrote (its own ``host:pid:tid [dev] NCCL INFO``
    prefix), never for a mere mention of NCCL. Below the training log's score for a log
    with training lines (0.6): both run."""
    if b"NCCL " not in head or looks_binary(head):
        return 0.0
    return 0.55 if SURE.search(head) else 0.0


SPEC = Spec(
    name="nccl",
    description="NCCL_DEBUG=INFO lines in a job log: NCCL version, the network chosen "
                "(IB, sockets, a plugin), ranks, channel transports, warnings and timeouts",
    tables=("nccl_setup", "nccl_events", "nccl_env"),
    sniff=sniff,
    embeddable=True,
    deep=b"NCCL INFO",
    markers=(rb"NCCL ",),
    splits=True,   # a multi-GB job log is searched for NCCL lines on the executor's workers
    reads="NCCL debug lines (``NCCL_DEBUG=INFO``, alone or inside a job log) into "
          "``nccl_setup``, ``nccl_events`` and ``nccl_env``",
)
