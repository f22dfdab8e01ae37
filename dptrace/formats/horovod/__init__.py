"""The Horovod timeline format's spec: name, tables and sniffing rule, without the reader
(see :mod:`dptrace.formats.trainlog` for why)."""

from __future__ import annotations

from ...registry import Spec, lazy_pattern
from ...sources import Source

TABLES = ("hvd_activities", "hvd_tensors", "hvd_ready", "hvd_cycles", "hvd_runs")
_EVENT_KEYS = rb'"(?:ph|name|pid|tid|ts|cat|args|dur|s|id)"\s*:'
STARTS_LIKE_EVENTS = lazy_pattern(rb"\s*(?:\xef\xbb\xbf)?\s*(?:\[\s*)*\{\s*" + _EVENT_KEYS)
_PH_KEY = lazy_pattern(rb'"ph"\s*:\s*"[A-Za-z]"')
_MARKERS = lazy_pattern(
    rb'"(?:NEGOTIATE_[A-Z]+|CYCLE_START|(?:ALLREDUCE|ALLGATHER|BROADCAST|REDUCESCATTER|ALLTOALL|'
    rb'ADASUM)|(?:MPI|NCCL|GLOO|CCL)_[A-Z]+|MEMCPY_(?:IN|OUT)_FUSION_BUFFER|WAIT_FOR_DATA)"'
    rb'|"start_time_since_epoch_in_micros"|"name"\s*:\s*"Horovod[A-Z][a-z]+_')
OBJECT_TRACE = lazy_pattern(rb'\s*\{\s*"(?:schemaVersion|traceEvents|deviceProperties|'
                          rb'displayTimeUnit|otherData|distributedInfo)"')


def sniff(source: Source, head: bytes) -> float:
    """0.97 for Chrome trace events with Horovod's names; 0.2 for other Chrome traces
    (so a clear "not a Horovod timeline" beats "no log lines found"); 0 otherwise."""
    if not head:
        return 0.0
    if STARTS_LIKE_EVENTS.match(head) and _PH_KEY.search(head):
        return 0.97 if _MARKERS.search(head) else 0.2
    if OBJECT_TRACE.match(head) and b'"ph"' in head:
        return 0.2
    return 0.0


SPEC = Spec(
    name="horovod",
    description="Horovod timelines (HOROVOD_TIMELINE): negotiation, rank readiness, fusion, "
                "activities per tensor; every framing from 0.16 to 0.28, killed runs included",
    tables=TABLES,
    sniff=sniff,
    extensions=(".json",),
    splits=True,
    markers=(rb'"ph"',),
    reads="Horovod timelines (``HOROVOD_TIMELINE=timeline.json``) into the ``hvd_*`` tables",
)
