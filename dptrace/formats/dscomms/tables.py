"""The DeepSpeed comms-logger format's table: ``ds_comms`` (one row per op and message size of
a ``log_summary()`` table)."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table

_c = Column

DS_COMMS = register_table(Table(
    "ds_comms",
    "DeepSpeed comms logger summaries (deepspeed.comm.log_summary()): one row per collective "
    "and message size, as printed.",
    (
        SOURCE,
        _c("block", "Int64", "0, 1, ... the summary's place among those printed in the source "
           "(each log_summary() call prints one)"),
        _c("op", "string", "the collective as DeepSpeed names it: all_reduce, broadcast, "
           "reduce_scatter_tensor, all_gather_into_tensor, log_summary_barrier, ..."),
        _c("caller", "string", "the calling function ('[Caller Func: ...]', printed with "
           "comms_logger debug on); null otherwise"),
        _c("size_bytes", "Int64", "message size: the printed value times 1024 to its unit "
           "(KB = 1024 B, MB = 1024^2 B, as DeepSpeed's convert_size), to the nearest byte; "
           "DeepSpeed rounds the value to 2 decimals, so from KB on it is exact to 0.005 of "
           "the unit", "B"),
        _c("count", "Int64", "calls of the op at this size"),
        _c("total_latency_s", "float64", "the calls' summed latency, a total over the calls "
           "in seconds: 'Total Latency(ms)' / 1000", "s"),
        _c("avg_latency_us", "float64", "mean latency of one call, in microseconds: 'Avg "
           "Latency(ms)' x 1000", "us"),
        _c("tput_gbps", "float64", "'tput_avg (Gbps)': mean algorithm bandwidth, in "
           "gigabits per second", "Gbit/s"),
        _c("busbw_gbps", "float64", "'busbw_avg (Gbps)': mean bus bandwidth, in gigabits per "
           "second", "Gbit/s"),
        LINENO,
    ),
    key=("source", "block", "op", "caller", "size_bytes", "lineno"),
), place=52)
