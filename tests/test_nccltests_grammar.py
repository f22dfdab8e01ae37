"""The nccl-tests grammar piece by piece (dptrace.formats.nccltests.grammar), on real lines
(tests/fixtures/nccltests) and on the damaged forms that must not match."""

from __future__ import annotations

import pytest

from dptrace.formats.nccltests import grammar as g
from dptrace.numbers import NumberError

NEW_COLUMNS = ("#       size         count      type   redop    root     time   algbw   busbw "
               "#wrong     time   algbw   busbw #wrong")
OLD_COLUMNS = ("#       size         count    type   redop     time   algbw   busbw  error     "
               "time   algbw   busbw  error")


def test_header_new_and_old():
    h = g.parse_line(g.HEADER, "# nThread 1 nGpus 1 minBytes 4 maxBytes 1073741824 step: "
                     "2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0")
    assert h.as_dict() == {"nthread": 1, "ngpus": 1, "min_bytes": 4, "max_bytes": 1073741824,
                           "step": 2, "step_kind": "factor", "warmup_iters": 5, "iters": 20,
                           "agg_iters": 1, "validation": 1, "graph": 0}
    old = g.parse_line(g.HEADER, "# nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step: "
                       "2(factor) warmup iters: 5 iters: 20 validation: 0")
    assert (old["ngpus"], old["iters"], old["validation"]) == (8, 20, 0)
    assert "agg_iters" not in old
    assert g.parse_line(g.HEADER, "# nThread 1 nGpus 8 minBytes 1 maxBytes") is None


def test_device_lines():
    new = g.parse_line(g.DEVICE, "#  Rank 10 Group  0 Pid     27 on test-nccl-worker-1 "
                       "device  2 [0x75] NVIDIA H100 80GB HBM3")
    assert (new["rank"], new["pid"], new["host"], new["device"], new["name"]) == \
        (10, 27, "test-nccl-worker-1", 2, "NVIDIA H100 80GB HBM3")
    old = g.parse_line(g.DEVICE, "#   Rank  0 Pid 112424 on localhost device  0 [0x00] "
                       "A100-SXM4-40GB")
    assert (old["rank"], old["host"], old["name"]) == (0, "localhost", "A100-SXM4-40GB")
    assert "group" not in old
    assert g.parse_line(g.DEVICE, "#  Rank  0 Group  0 Pid") is None


def test_column_headers():
    new = g.columns(g.parse_line(g.COLUMNS, NEW_COLUMNS))
    assert new == g.Columns(root=True, blocks=("#wrong", "#wrong"))
    assert new.fields == 13
    old = g.columns(g.parse_line(g.COLUMNS, OLD_COLUMNS))
    assert old == g.Columns(root=False, blocks=("error", "error"))
    bare = g.columns(g.parse_line(g.COLUMNS, "#  size  count  type  time  algbw  busbw"))
    assert bare == g.Columns(root=False, blocks=("",))
    assert g.parse_line(g.COLUMNS, "#        (B)    (elements)      (us)  (GB/s)") is None


def test_rows_new_columns():
    row = g.row_grammar(g.columns(g.parse_line(g.COLUMNS, NEW_COLUMNS)))
    r = g.parse_line(row, "  1073741824     268435456     float     sum      -1    51310   "
                     "20.93   36.62      0    51227   20.96   36.68      0")
    assert (r["size_bytes"], r["count"], r["type"], r["redop"], r["root"]) == \
        (1073741824, 268435456, "float", "sum", -1)
    assert (r["p0"]["time_us"], r["p0"]["algbw_gbps"], r["p0"]["busbw_gbps"]) == \
        (51310.0, 20.93, 36.62)
    assert (r["p1"]["time_us"], r["p1"]["busbw_gbps"], r["p1"]["wrong"]) == (51227.0, 36.68, "0")


@pytest.mark.parametrize("line", [
    # the in-place #wrong missing (cut), a field torn out, one field too many
    "  1073741824  268435456  float  sum  -1  51310  20.93  36.62  0  51227  20.96  36.68",
    "  1073741824  268435456  float  sum  -1  51310  36.62  0  51227  20.96  36.68  0",
    "  1073741824  268435456  float  sum  -1  51310  20.93  36.62  0  51227  20.96  36.68  0  7",
    # the root missing: the times would shift one column left
    "  1073741824  268435456  float  sum  51310  20.93  36.62  0  51227  20.96  36.68  0",
])
def test_rows_that_are_not_whole_do_not_match(line):
    row = g.row_grammar(g.columns(g.parse_line(g.COLUMNS, NEW_COLUMNS)))
    assert g.parse_line(row, line) is None


def test_a_whole_row_with_a_bad_value_matches_and_names_it():
    """A row with every field but one value that is not a number of its column (nan, 1e999,
    a 5,000-digit count) is whole: it matches, and the field holds the NumberError the
    reader names ('time nan is not finite'), never a value shifted from another column
    (issue 30: it was 'not a whole row', '13 fields; the header asks for 12-13')."""
    row = g.row_grammar(g.columns(g.parse_line(g.COLUMNS, NEW_COLUMNS)))
    r = g.parse_line(row, "  1073741824  268435456  float  sum  -1  nan  20.93  36.62  0  "
                     "51227  20.96  36.68  0")
    assert isinstance(r["p0"]["time_us"], NumberError) and r["p0"]["algbw_gbps"] == 20.93
    assert str(r["p0"]["time_us"]) == "nan is not finite"
    r = g.parse_line(row, f"  1073741824  {'9' * 5000}  float  sum  -1  51310  20.93  36.62  0"
                     "  51227  20.96  36.68  0")
    assert isinstance(r["count"], NumberError) and "5,000 digits" in r["count"].reason


def test_rows_old_columns_empty_redop_and_na():
    row = g.row_grammar(g.columns(g.parse_line(g.COLUMNS, OLD_COLUMNS)))
    r = g.parse_line(row, "  8589934592     268435456   float            33508  256.36  "
                     "224.31    N/A    33234  258.47  226.16    N/A")   # alltoall: no redop
    assert "redop" not in r
    assert (r["p0"]["time_us"], r["p1"]["busbw_gbps"], r["p1"]["wrong"]) == \
        (33508.0, 226.16, "N/A")
    assert g.wrong_value("N/A") == (None, True)
    assert g.wrong_value("3") == (3, True)
    assert g.wrong_value("0e+00") == (None, False)     # the old 'error' column: not a count


def test_summary_lines():
    assert g.parse_line(g.OUT_OF_BOUNDS, "# Out of bounds values : 0 OK")["out_of_bounds"] == 0
    assert g.parse_line(g.AVG_BUSBW, "# Avg bus bandwidth    : 9.76937 ")["avg_busbw_gbps"] \
        == 9.76937
    assert g.parse_line(g.AVG_BUSBW, "# Avg bus bandwidth    : ") is None
