"""The MLPerf logging format's table: ``mllog`` (one row per ``:::MLLOG`` record)."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table

_c = Column

MLLOG = register_table(Table(
    "mllog",
    "MLPerf training log events (:::MLLOG lines of mlperf_logging): one row per record, as "
    "printed.",
    (
        SOURCE,
        _c("instance", "string", "the launcher prefix of the line: srun -l ('3: ' -> '3'), "
           "mpirun --tag-output ('[1,3]<stdout>:' -> '1,3'); null without one"),
        _c("rank", "Int64", "the process's rank where the prefix says it (srun -l: the "
           "label; mpirun --tag-output: the second number); null otherwise"),
        _c("time_us", "float64", "when the event was logged, in microseconds since the Unix "
           "epoch: MLLOG's 'time_ms' x 1000 (a float64 holds whole microseconds exactly "
           "up to 2^53 us, the year 2255)", "us"),
        _c("event_type", "category", "'event_type': POINT_IN_TIME, INTERVAL_START or "
           "INTERVAL_END"),
        _c("key", "category", "'key': run_start, run_stop, epoch_start, epoch_stop, "
           "block_start, eval_accuracy, global_batch_size, train_samples, throughput, "
           "tracked_stats, submission_platform, ..."),
        _c("value", "string", "'value' as text: a string as is, a number or boolean as JSON "
           "prints it, a list or object as compact JSON; null for JSON null"),
        _c("value_num", "float64", "'value' where it is a number (not a boolean); null "
           "otherwise"),
        _c("epoch_num", "Int64", "metadata 'epoch_num' (epoch_start/stop, eval_accuracy)"),
        _c("first_epoch_num", "Int64", "metadata 'first_epoch_num' (block_start/stop)"),
        _c("epoch_count", "Int64", "metadata 'epoch_count' (block_start/stop)"),
        _c("step", "Int64", "metadata 'step' (tracked_stats)"),
        _c("status", "string", "metadata 'status' (run_stop: success or aborted)"),
        LINENO,
    ),
    key=("source", "lineno", "key"),
), place=54)
