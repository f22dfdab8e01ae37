"""The DeepSpeed comms-logger format's spec: name, tables and sniffing rule, without the reader.

DeepSpeed's ``comms_logger`` (``"comms_logger": {"enabled": true}`` in the DeepSpeed config)
records every collective, and ``deepspeed.comm.log_summary()`` prints one table per call::

    Comm. Op            Message Size        Count               Total Latency(ms)   ...
    broadcast
                        40.0 B              1                   0.07                ...
                        1.12 KB             1                   1054.13             ...
    log_summary_barrier
                        0B                  1                   1104.30             ...

an op name on its own line (``op | [Caller Func: fn]`` with ``debug``), then one row per
message size. The table sits at the end of a training log, so the format is embeddable: it
runs beside the training-log format. It scores 0.55: above the companion threshold (0.5),
below the training log's 0.6, so on a log with training figures both formats run, and on a
file holding only the table it wins.
"""

from __future__ import annotations

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

#: the column header of log_summary(), at a line start (after an optional launcher prefix)
HEADER = lazy_pattern(rb"(?m)^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s)?\s*Comm\. Op\s+"
                    rb"Message Size\s+Count\s+Total Latency\(ms\)")
#: the DeepSpeed config turning the logger on (printed at start, long before the table)
CONFIG = lazy_pattern(rb'"comms_logger"\s*:\s*\{[^}]{0,200}"enabled"\s*:\s*true')
#: the score: between registry.COMPANION_SCORE (0.5) and the training log's 0.6
SCORE = 0.55


def sniff(source: Source, head: bytes) -> float:
    """0.55 when the head holds the summary's column header or a DeepSpeed config that turns
    the comms logger on (its table then comes at the end of the log); else 0."""
    # cheap: most heads stop here (a needle without a space first: CPython's search for
    # one with a space is slow in text of spaces and digits, an mpitrace profile's)
    if (b"Comm." not in head or b"Comm. Op" not in head) and b"comms_logger" not in head:
        return 0.0
    if looks_binary(head):
        return 0.0
    return SCORE if HEADER.search(head) or CONFIG.search(head) else 0.0


SPEC = Spec(
    name="dscomms",
    description="DeepSpeed comms logger summaries (deepspeed.comm.log_summary()): count, "
                "latency and bandwidth per collective and message size, inside a training log",
    tables=("ds_comms",),
    sniff=sniff,
    embeddable=True,
    deep=b"Comm. Op",
    markers=(rb"Comm\. Op", rb"comms_logger"),
    reads="DeepSpeed comms logger summaries (``log_summary()`` tables, alone or inside a "
          "training log) into ``ds_comms``",
)
