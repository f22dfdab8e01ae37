"""The DeepSpeed comms logger grammar piece by piece (dptrace.formats.dscomms.grammar), on
real lines (tests/fixtures/dscomms, ../shared/realdata/trainlog) and on the damaged forms
that must not match."""

from __future__ import annotations

import pytest

from dptrace.formats.dscomms import grammar as g

HEADER = ("Comm. Op            Message Size        Count               Total Latency(ms)   "
          "Avg Latency(ms)     tput_avg (Gbps)     busbw_avg (Gbps)    ")


def test_header():
    assert g.parse_line(g.HEADER, HEADER.strip()) is not None
    assert g.parse_line(g.HEADER, "Comm. Op  Message Size  Count  Total Latency(ms)") is None


def test_op_lines():
    assert g.parse_line(g.OP, "broadcast").as_dict() == {"op": "broadcast"}
    assert g.parse_line(g.OP, "log_summary_barrier")["op"] == "log_summary_barrier"
    debug = g.parse_line(g.OP, "reduce_scatter_tensor | [Caller Func: reduce_scatter_fn]")
    assert (debug["op"], debug["caller"]) == ("reduce_scatter_tensor", "reduce_scatter_fn")
    # log text is not an op line
    assert g.parse_line(g.OP, "[2023-01-17 23:25:37,831] INFO done") is None
    assert g.parse_line(g.OP, "broadcast | [Caller Func:") is None


@pytest.mark.parametrize(("line", "size", "count", "total", "avg", "tput", "busbw"), [
    ("40.0 B              1                   0.07                0.07                0.00"
     "                0.00", 40, 1, 0.07, 0.07, 0.0, 0.0),
    ("1.12 KB             1                   1054.13             1054.13             0.00"
     "                0.00", 1147, 1, 1054.13, 1054.13, 0.0, 0.0),
    ("576.0 KB            1                   0.10                0.10                49.02"
     "               49.02", 576 * 1024, 1, 0.10, 0.10, 49.02, 49.02),
    ("0B                  1                   1104.30             1104.30             0.00"
     "                0.00", 0, 1, 1104.30, 1104.30, 0.0, 0.0),
    ("98.25 MB            1                   8317.12             8317.12             0.20"
     "                0.19", 103022592, 1, 8317.12, 8317.12, 0.20, 0.19),
    ("678.86 MB           40                  602.29              9.69                1468.06"
     "             1376.31", 711836303, 40, 602.29, 9.69, 1468.06, 1376.31),
])
def test_rows(line, size, count, total, avg, tput, busbw):
    r = g.parse_line(g.ROW, line)
    assert g.size_bytes(*r["size"]) == size
    assert (r["count"], r["total_latency_ms"], r["avg_latency_ms"], r["tput_gbps"],
            r["busbw_gbps"]) == (count, total, avg, tput, busbw)


def test_units_are_powers_of_1024():
    # DeepSpeed's convert_size divides by 1024**i: 1 KB is 1024 bytes, 1 GB 1024**3
    assert g.size_bytes(1.0, "KB") == 1024
    assert g.size_bytes(2.0, "GB") == 2 * 1024 ** 3
    assert g.size_bytes(98.25, "MB") == 98.25 * 1024 ** 2


@pytest.mark.parametrize("line", [
    "1.12 KB  1  1054.13  1054.13  0.00",              # a field missing (cut)
    "1.12 KB  1  1054.13  1054.13  0.00  0.00  0.00",  # a field extra (torn)
    "1.12     1  1054.13  1054.13  0.00  0.00",        # no unit
    "1.12 XB  1  1054.13  1054.13  0.00  0.00",        # not a unit
    "1.12 KB  1.5  1054.13  1054.13  0.00  0.00",      # count not whole
])
def test_damaged_rows_do_not_match(line):
    assert g.parse_line(g.ROW, line) is None
