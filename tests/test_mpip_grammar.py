"""The mpiP report grammar piece by piece (dptrace.formats.mpip.grammar), on real lines
(tests/fixtures/mpip, the mpiP user guides) and on the damaged forms that must not match."""

from __future__ import annotations

import pytest

from dptrace.formats.mpip import grammar as g
from dptrace.formats.mpip.read import section_kind


def test_tool_and_header_lines():
    assert g.parse_line(g.TOOL, "@ mpiP") is not None
    assert g.parse_line(g.TOOL, "@ mpiPx") is None
    h = g.parse_line(g.HEADER, "@ MPIP env var             : -k 2 -c")
    assert (h["key"], h["value"]) == ("MPIP env var", "-k 2 -c")
    old = g.parse_line(g.HEADER, "@ Version : 2.8.2")       # mpiP 2.8.2: one space
    assert (old["key"], old["value"]) == ("Version", "2.8.2")
    empty = g.parse_line(g.HEADER, "@ Command : ")
    assert (empty["key"], empty["value"]) == ("Command", "")
    t = g.parse_line(g.TASK_ASSIGNMENT, "3 f6f0fa466bc7")
    assert (t["rank"], t["host"]) == (3, "f6f0fa466bc7")


@pytest.mark.parametrize(("line", "title", "count", "kind"), [
    ("@--- MPI Time (seconds) ---------------------------------------------------",
     "MPI Time (seconds)", None, "mpi_time"),
    ("@--- Callsites: 32 --------------------------------------------------------",
     "Callsites", 32, "callsites"),
    ("@--- Callsite Time statistics (all, milliseconds): 807 --------------------",
     "Callsite Time statistics (all, milliseconds)", 807, "callsite_time"),
    ("@--- Callsite Time statistics (all callsites, milliseconds): 32 -----------",
     "Callsite Time statistics (all callsites, milliseconds)", 32, "callsite_time_concise"),
    ("@--- Callsite Message Sent statistics (all callsites, sent bytes): 28 -----",
     "Callsite Message Sent statistics (all callsites, sent bytes)", 28,
     "callsite_sent_concise"),
    ("@--- Aggregate Point-To-Point Sent (top twenty, descending) ---------------",
     "Aggregate Point-To-Point Sent (top twenty, descending)", None, None),
    ("@--- Task Time Statistics (seconds) ---------------------------------------",
     "Task Time Statistics (seconds)", None, "task_stats"),
])
def test_section_titles(line, title, count, kind):
    s = g.parse_line(g.SECTION, line)
    assert s["title"] == title
    assert s.get("count") == count
    assert section_kind(title) == kind


def test_mpi_time_rows():
    r = g.parse_line(g.MPI_TIME, "   0       9.11       1.03    11.35")
    assert (r["task"], r["app_s"], r["mpi_s"], r["mpi_pct"]) == (0, 9.11, 1.03, 11.35)
    star = g.parse_line(g.MPI_TIME, "   *       36.5       4.09    11.23")
    assert (star["task"], star["mpi_s"]) == ("*", 4.09)
    big = g.parse_line(g.MPI_TIME, "   0   3.61e+03        661    18.32")   # %.3g
    assert (big["app_s"], big["mpi_s"]) == (3610.0, 661.0)
    assert g.parse_line(g.MPI_TIME, "   0       9.11       1.03") is None       # cut
    assert g.parse_line(g.MPI_TIME, "   0       9.11       1.03    11.35  7") is None


def test_concise_task_statistics():
    mx = g.parse_line(g.TASK_STATS, "Max                 9.091058          1.012447"
                      "                 0          0")
    assert (mx["stat"], mx["app_s"], mx["mpi_s"], mx["app_task"], mx["mpi_task"]) == \
        ("Max", 9.091058, 1.012447, 0, 0)
    agg = g.parse_line(g.TASK_STATS, "Aggregate          36.355052          3.950130  10.87")
    assert (agg["stat"], agg["mpi_s"], agg["mpi_pct"]) == ("Aggregate", 3.95013, 10.87)
    mean = g.parse_line(g.TASK_STATS, "Mean                9.088763          0.987533")
    assert mean["app_s"] == 9.088763
    assert g.parse_line(g.TASK_STATS, "Max                 9.091058          1.012447") is None


def test_callsite_frames():
    named = g.parse_line(g.CALLSITE, "  1   0 dp_steps.c            62 step"
                         "                     Allreduce")
    assert named.as_dict() == {"site": 1, "level": 0, "file": "dp_steps.c", "line": 62,
                               "function": "step", "call": "Allreduce"}
    parent = g.parse_line(g.CALLSITE, "  1   1 dp_steps.c           111 main")
    assert (parent["level"], parent["line"], parent["function"]) == (1, 111, "main")
    assert "call" not in parent
    addr = g.parse_line(g.CALLSITE, "  9   0 0x7f416bc10328           [unknown]"
                        "                Allreduce")
    assert (addr["file"], addr["function"], addr["call"]) == \
        ("0x7f416bc10328", "[unknown]", "Allreduce")
    assert "line" not in addr


def test_aggregate_tables_with_and_without_count():
    new = g.parse_line(g.AGGREGATE_TIME, "Allreduce              22        747    2.05   18.24"
                       "        600   0.00")
    assert (new["site"], new["time_ms"], new["count"], new["cov"]) == (22, 747.0, 600, 0.0)
    old = g.parse_line(g.AGGREGATE_TIME, "Wait                    8    5.4e+04   33.13   45.74"
                       "    0.32")   # mpiP 3.4.1: no Count column
    assert (old["time_ms"], old["cov"]) == (54000.0, 0.32) and "count" not in old
    sent = g.parse_line(g.AGGREGATE_SENT, "Allreduce               6        600   6.29e+08"
                        "   1.05e+06  24.63")
    assert (sent["count"], sent["total_bytes"], sent["sent_pct"]) == (600, 6.29e8, 24.63)


def test_callsite_statistics_rows():
    t = g.parse_line(g.CALLSITE_TIME, "Allreduce            6    0    600     3.44     1.24"
                     "    0.756   8.15  71.83")
    assert (t["call"], t["site"], t["rank"], t["count"], t["mean_ms"], t["mpi_pct"]) == \
        ("Allreduce", 6, 0, 600, 1.24, 71.83)
    star = g.parse_line(g.CALLSITE_TIME, "Irecv                1    * 2444442     1.13  0.00234"
                        "    0.001   3.51   4.85")
    assert (star["rank"], star["count"]) == ("*", 2444442)
    s = g.parse_line(g.CALLSITE_SENT, "Allreduce            6    *     600 1.049e+06 1.049e+06"
                     " 1.049e+06 6.291e+08")
    assert (s["rank"], s["sum"]) == ("*", 6.291e8)
    c = g.parse_line(g.CALLSITE_CONCISE, "Allreduce           22       1       729       729"
                     "       729      1      1")
    assert (c["tasks"], c["mean"], c["max_rank"]) == (1, 729.0, 1)
    # a field torn out, or the row cut inside its last number: no match, never shifted
    assert g.parse_line(g.CALLSITE_TIME, "Allreduce            6    0    600     3.44     1.24"
                        "    0.756   8.15") is None
    assert g.parse_line(g.CALLSITE_SENT, "Allreduce            6    *     600 1.049e+06 "
                        "1.049e+06 1.049e+06 6.291e+") is None
