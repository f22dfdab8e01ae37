"""The nccl-tests format's tables: ``nccl_tests`` (one row per size and placement) and
``nccl_tests_summary`` (one row per test printed in a source)."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table

_c = Column

#: the two blocks of a row, in the order nccl-tests prints them
PLACEMENTS = ("out-of-place", "in-place")

NCCL_TESTS = register_table(Table(
    "nccl_tests",
    "nccl-tests results: one row per message size and placement (a printed row gives two: "
    "out-of-place and in-place), as the test printed them.",
    (
        SOURCE,
        _c("block", "Int64", "0, 1, ... the test's place among the tests printed in the source"),
        _c("test", "string", "the collective: all_reduce, all_gather, alltoall, ... from the "
           "command line before the header (all_reduce_perf) or the file name; null when "
           "neither names it"),
        _c("size_bytes", "Int64", "message size (column 'size')", "B"),
        _c("count", "Int64", "elements per rank (column 'count')"),
        _c("type", "string", "element type: float, half, bfloat16, int8, ..."),
        _c("redop", "string", "reduction: sum, prod, min, max, avg; null where the test has "
           "none (the column is empty or absent)"),
        _c("root", "Int64", "root rank (-1: none); null where the column set has no 'root'"),
        _c("placement", "category", "out-of-place or in-place: the block of the row read"),
        _c("time_us", "float64", "time per operation", "us"),
        _c("algbw_gbps", "float64", "algorithm bandwidth: size / time", "GB/s"),
        _c("busbw_gbps", "float64", "bus bandwidth: algbw times the collective's factor "
           "(2(n-1)/n for all_reduce), comparable across rank counts", "GB/s"),
        _c("wrong", "Int64", "#wrong: values that failed validation; null when printed N/A "
           "(validation off) or when the column is absent or the old 'error' column"),
        _c("nranks", "Int64", "ranks of the test: the '# Using devices' lines before it; null "
           "when none were printed"),
        LINENO,
    ),
    key=("source", "block", "size_bytes", "placement", "lineno"),
), place=50)

NCCL_TESTS_SUMMARY = register_table(Table(
    "nccl_tests_summary",
    "nccl-tests: one row per test printed in a source: what its header and devices say, and "
    "the average bus bandwidth it printed.",
    (
        SOURCE,
        _c("block", "Int64", "0, 1, ... as in nccl_tests"),
        _c("test", "string", "as in nccl_tests"),
        _c("nthread", "Int64", "threads per process (nThread)"),
        _c("ngpus", "Int64", "GPUs per thread (nGpus)"),
        _c("min_bytes", "Int64", "smallest size asked for (minBytes)", "B"),
        _c("max_bytes", "Int64", "largest size asked for (maxBytes)", "B"),
        _c("warmup_iters", "Int64", "warmup iterations"),
        _c("iters", "Int64", "timed iterations per size"),
        _c("validation", "Int64", "1 when results were checked (#wrong is counted)"),
        _c("nranks", "Int64", "ranks listed under '# Using devices'"),
        _c("nhosts", "Int64", "distinct hosts among them"),
        _c("device", "string", "the device name of rank 0 (e.g. NVIDIA A100-SXM4-40GB)"),
        _c("rows", "Int64", "rows of the test read into nccl_tests (two per printed size)"),
        _c("out_of_bounds", "Int64", "'# Out of bounds values : N': values out of bounds"),
        _c("avg_busbw_gbps", "float64", "'# Avg bus bandwidth': the test's own average of "
           "busbw over every size and placement; null when not printed (a cut run)", "GB/s"),
        LINENO,
    ),
    key=("source", "block"),
), place=50)
