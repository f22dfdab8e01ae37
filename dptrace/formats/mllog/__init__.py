"""The MLPerf logging format's spec: name, tables and sniffing rule, without the reader.

MLPerf training submissions log with ``mlperf_logging.mllog``: one line per event,
``:::MLLOG {json}``, the JSON holding ``time_ms`` (read as ``time_us``), ``event_type``
(POINT_IN_TIME, INTERVAL_START, INTERVAL_END), ``key`` (``run_start``, ``epoch_stop``,
``global_batch_size``, ``throughput``, ...), ``value`` and ``metadata``. The lines sit
inside the job's output (launcher prefixes ``0: `` or ``[1,0]<stdout>:``, the framework's
own log, NCCL lines), so the format is embeddable and runs beside the training-log format:
it scores 0.55, above the companion threshold (0.5) and below a training log's 0.6; on a
file of MLLOG lines only it wins.
"""

from __future__ import annotations

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

#: an MLLOG record: the marker, then a JSON object
SURE = lazy_pattern(rb":::MLLOG\s*\{")
#: the score: between registry.COMPANION_SCORE (0.5) and the training log's 0.6
SCORE = 0.55


def sniff(source: Source, head: bytes) -> float:
    """0.55 when the head holds an ``:::MLLOG {`` record; else 0."""
    if b":::MLLOG" not in head or looks_binary(head):
        return 0.0
    return SCORE if SURE.search(head) else 0.0


SPEC = Spec(
    name="mllog",
    description="MLPerf training logs (:::MLLOG lines of mlperf_logging): run start and "
                "stop, epochs, evaluations, throughput, submission metadata",
    tables=("mllog",),
    sniff=sniff,
    embeddable=True,
    deep=b":::MLLOG",
    markers=(rb":::MLLOG",),
    extensions=(".txt", ".log"),
    reads="MLPerf ``:::MLLOG`` lines (alone or inside a job log) into ``mllog``",
)
