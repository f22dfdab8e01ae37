"""The PyTorch profiler (Kineto) trace format's spec: name, tables and sniffing rule, without
the reader.

``torch.profiler.profile(on_trace_ready=tensorboard_trace_handler(dir))`` and
``prof.export_chrome_trace(path)`` write a Chrome trace *object* (``*.pt.trace.json``,
gzipped with ``use_gzip=True``)::

    {"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"backend": "nccl",
     "rank": 0, "world_size": 2, ...}, ..., "traceEvents": [{"ph": "X", "cat": "kernel",
     "name": "ncclKernel_AllReduce_RING_LL_Sum_float(...)", ...}, ...], "traceName": ...}

Horovod timelines are bare arrays of events (:mod:`dptrace.formats.horovod`), so an object
with ``traceEvents`` and Kineto's own keys is surely this format.
"""

from __future__ import annotations

from ...registry import Spec, lazy_pattern
from ...sources import Source

TABLES = ("torch_events", "torch_traces")
#: a JSON object (after a BOM and blanks) whose keys include traceEvents and one of Kineto's
_OBJECT = lazy_pattern(rb"\A(?:\xef\xbb\xbf)?\s*\{")
_KINETO_KEY = lazy_pattern(rb'"(?:schemaVersion|deviceProperties|distributedInfo|'
                         rb'baseTimeNanoseconds)"\s*:')
_TRACE_EVENTS = lazy_pattern(rb'"traceEvents"\s*:\s*\[')
#: what Kineto's events hold, for a head that starts with the events (no metadata before)
_KINETO_EVENT = lazy_pattern(rb'"cat"\s*:\s*"(?:cpu_op|kernel|cuda_runtime|user_annotation|'
                           rb'gpu_memcpy|gpu_memset|python_function|ac2g)"')


def sniff(source: Source, head: bytes) -> float:
    """0.98 for a Chrome trace object with Kineto's keys or events; 0.6 for another
    Chrome trace object with ``traceEvents`` (export_chrome_trace of an old torch); 0
    otherwise (a bare array is Horovod's)."""
    if not head or b"traceEvents" not in head or not _OBJECT.match(head):
        return 0.0
    if not _TRACE_EVENTS.search(head):
        return 0.0
    if _KINETO_KEY.search(head) or _KINETO_EVENT.search(head):
        return 0.98
    return 0.6


SPEC = Spec(
    name="torchtrace",
    description="PyTorch profiler (Kineto) Chrome traces (*.pt.trace.json[.gz]): GPU kernels, "
                "CPU ops, collectives and ProfilerStep#N per rank; killed jobs' cut traces",
    tables=TABLES,
    sniff=sniff,
    extensions=(".json",),
    markers=(rb"traceEvents",),
    batch=True,        # read.parse_many: names the traces that claim one rank of one job
    reads="PyTorch profiler (Kineto) traces (``*.pt.trace.json[.gz]``) into ``torch_events`` "
          "and ``torch_traces``",
)
