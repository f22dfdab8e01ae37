"""Numbers that do not fit their column, and lines that do not fit a message (issue 12).

The rule: a bad record costs that record, with a problem row naming the file and line; a
bad file costs that file; nothing costs the report. A number that does not fit its column
(an integer beyond int64, a float that is nan or inf, a product calls x avg that overflows)
becomes missing with an error at its line; the rest of the row is kept. Each case is a real
profile copied into ``tmp_path`` and damaged in one way; each failed before the fix (a
TypeError or OverflowError out of ``load`` or the terminal report, a parser crash that cost
the whole file, all rows lost to one stray byte, a 2 MB line quoted whole in a message).
"""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import dptrace
from dptrace import errors
from dptrace.cli import main
from dptrace.errors import Problem
from dptrace.formats.mpitrace import fast
from dptrace.formats.mpitrace import read as mpitrace
from dptrace.reports import terminal
from dptrace.reports.fmt import bin_label, human_bytes, human_rate, num, pct

FIX = Path(__file__).parent / "fixtures" / "mpitrace"
#: rank 0 of 16 (Theta): routine table lines 6-12, size bins 27-62, per-rank table 75-90
KNL16 = (FIX / "alcfws_theta_knl16_mpi_profile.75877.0").read_bytes()
NAME = "mpi_profile.75877.0"
#: a job whose rank files 1-7 take the batch route (rank 0 takes the scanner)
POLARIS = FIX / "mlprof_polaris_run4"


def _line_of(data: bytes, text: bytes) -> int:
    return data[:data.index(text)].count(b"\n") + 1


def _damaged(tmp_path: Path, old: bytes, new: bytes, data: bytes = KNL16,
             name: str = NAME) -> tuple[Path, int]:
    """``data`` with the first ``old`` replaced, written to tmp_path; and that line."""
    assert old in data
    path = tmp_path / name
    path.write_bytes(data.replace(old, new, 1))
    return path, _line_of(data, old)


def _errors_at(ds: dptrace.Dataset, path: Path, line: int) -> pd.DataFrame:
    p = ds.problems
    return p[(p["source"] == str(path)) & (p["line"] == line) & (p["severity"] == "error")]


def _finite_or_missing(ds: dptrace.Dataset) -> None:
    """No table holds an inf."""
    for name, df in ds.items():
        for col in df.select_dtypes("number"):
            values = df[col].dropna().astype("float64")
            assert np.isfinite(values).all(), f"inf stored in {name}.{col}"


def _render(ds: dptrace.Dataset) -> str:
    out = io.StringIO()
    terminal.render(dptrace.report(ds), Console(file=out, width=100, color_system=None))
    return out.getvalue()


def _job_with(tmp_path: Path, rank: int, old: bytes, new: bytes) -> tuple[Path, Path, int]:
    """The Polaris job with one rank file damaged: (folder, that file, its line)."""
    folder = tmp_path / "job"
    shutil.copytree(POLARIS, folder)
    path = folder / f"mpi_profile.359819.{rank}"
    data = path.read_bytes()
    _, line = _damaged(folder, old, new, data, path.name)
    return folder, path, line


def _same_tables_without(ds: dptrace.Dataset, folder: Path, damaged: Path) -> None:
    """The other files of the batch give exactly what they give without the damaged one."""
    clean = folder.parent / "clean"
    shutil.copytree(folder, clean)
    (clean / damaged.name).unlink()
    want = dptrace.load(clean)
    for name in want.tables:
        got = ds[name][ds[name]["source"] != str(damaged)].reset_index(drop=True)
        got["source"] = got["source"].str.replace(str(folder), str(clean), regex=False)
        got = got.drop(columns="run")   # the runs are named after the two folders
        exp = want[name].drop(columns="run").astype({"source": "object"})
        got = got.astype({"source": "object"})
        for col in got.select_dtypes("category"):
            got[col] = got[col].astype("object")
            exp[col] = exp[col].astype("object")
        pd.testing.assert_frame_equal(got, exp, check_exact=True)


# -- an integer above int64 -------------------------------------------------------------

@pytest.mark.parametrize("value", [b"9223372036854775808", b"99999999999999999999999"])
def test_switches_above_int64_become_missing_with_a_problem(tmp_path, value):
    """`... 1164.25  9223372036854775808`: TypeError out of load before."""
    path, line = _damaged(tmp_path, b"1338620\n", value + b"\n")
    ds = dptrace.load(path)
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert len(tab) == 16
    assert tab["switches"].isna().tolist() == [True] + [False] * 15
    assert tab["switches"].iloc[1] == 525903 and tab["host"].iloc[0] == "nid00001"
    err = _errors_at(ds, path, line)
    assert len(err) == 1
    msg = err["message"].item()
    assert "switches" in msg and value.decode() in msg and "64-bit" in msg
    src = ds.sources.iloc[0]
    assert src["status"] == "partial" and src["rows"] == 54


def test_ints_beyond_int64_elsewhere(tmp_path):
    """A routine's #calls, a bin's #calls, a rank in the summary: each becomes missing."""
    big = b"99999999999999999999999"
    data = KNL16.replace(b"MPI_Bcast                             241", b"MPI_Bcast " + big, 1)
    data = data.replace(b"                           95245           8.0",
                        b"  " + big + b"           8.0", 1)
    data = data.replace(b"for task 13", b"for task " + big, 1)
    path = tmp_path / NAME
    path.write_bytes(data)
    ds = dptrace.load(path)
    r = ds["mpi_routines"].set_index("routine")
    assert pd.isna(r.loc["MPI_Bcast", "calls"]) and pd.isna(r.loc["MPI_Bcast", "bytes"])
    assert r.loc["MPI_Bcast", "avg_bytes"] == 772570.7
    m = ds["mpi_messages"]
    assert m["calls"].isna().sum() == 1 and len(m) == 29
    assert pd.isna(ds["mpi_jobs"]["median_comm_rank"].item())
    assert ds["mpi_jobs"]["median_comm_s"].item() == 502.875
    lines = sorted(ds.problems.loc[ds.problems["severity"] == "error", "line"])
    assert lines == [8, 45, 69]
    # the bins of MPI_Allreduce are not compared with the routine table (a count is missing)
    assert not ds.problems["message"].str.contains("add up to").any()
    _render(ds)


# -- avg. bytes 1e308: calls x avg overflows ---------------------------------------------

def test_avg_bytes_1e308_in_a_batch_costs_only_that_value(tmp_path):
    """In a size-bin row: OverflowError out of load (the whole batch) before."""
    folder, path, line = _job_with(tmp_path, 3, b"          29.0          0.000",
                                   b"         1e308          0.000")
    ds = dptrace.load(folder)
    _finite_or_missing(ds)
    m = ds["mpi_messages"]
    row = m[m["avg_bytes"] == 1e308]
    assert len(row) == 1 and row[["bin", "bin_lo_bytes", "bin_hi_bytes"]].isna().all(axis=None)
    assert row["calls"].item() == 1
    err = _errors_at(ds, path, line)
    assert len(err) == 1 and "1e308" in err["message"].item()
    st = ds.sources.set_index("source")["status"]
    assert st[str(path)] == "partial" and (st.drop(str(path)) == "ok").all()
    _same_tables_without(ds, folder, path)
    assert "MPI_Bcast" in _render(ds)


def test_avg_bytes_1e308_in_the_routine_table(tmp_path):
    """bytes = 241 x 1e308 is inf: stored as missing; OverflowError in the report before."""
    path, line = _damaged(tmp_path, b"    772570.7  ", b"     1e308    ")
    ds = dptrace.load([path, *sorted((FIX / "alcfws_theta_knl32").iterdir())])
    _finite_or_missing(ds)
    r = ds["mpi_routines"]
    bcast = r[(r["source"] == str(path)) & (r["routine"] == "MPI_Bcast")]
    assert bcast["avg_bytes"].item() == 1e308 and pd.isna(bcast["bytes"].item())
    assert bcast["calls"].item() == 241 and bcast["time_s"].item() == 0.625
    msg = _errors_at(ds, path, line)["message"].item()
    assert "overflows" in msg and "bytes" in msg
    assert (ds.sources["rows"] == [54, 71, 44, 45]).all()
    text = _render(ds)
    assert "MPI_Bcast" in text


# -- avg. bytes 1e999 (inf), nan ----------------------------------------------------------

def test_avg_bytes_inf_never_reaches_a_formatter(tmp_path):
    """`1e999` is inf as a float: OverflowError in human_bytes before."""
    path, line = _damaged(tmp_path, b"    772570.7  ", b"     1e999    ")
    ds = dptrace.load(path)
    _finite_or_missing(ds)
    r = ds["mpi_routines"].set_index("routine")
    assert pd.isna(r.loc["MPI_Bcast", "avg_bytes"]) and pd.isna(r.loc["MPI_Bcast", "bytes"])
    assert r.loc["MPI_Bcast", "calls"] == 241
    msg = _errors_at(ds, path, line)["message"].item()
    assert "'1e999'" in msg and "finite" in msg and "avg. bytes" in msg
    assert ds.sources["status"].item() == "partial" and ds.sources["rows"].item() == 54
    text = _render(ds)
    row = next(t for t in text.splitlines() if "MPI_Bcast" in t and "0.625" in t)
    assert row.split()[1:8] == ["MPI_Bcast", "1", "241", "241.0", "-", "-", "0.625"]


def test_formatters_show_missing_and_infinite_values_on_purpose():
    inf, nan = float("inf"), float("nan")
    for fmt in (human_bytes, human_rate, num, pct):
        assert fmt(None) == fmt(nan) == fmt(np.nan) == fmt(pd.NA) == "-"
        assert fmt(inf) == fmt(np.float64(inf)) == "inf" and fmt(-inf) == "-inf"
    assert human_bytes(1536) == "1.5 KiB" and human_bytes(2 ** 62) == "4 EiB"
    assert human_bytes(1e308) == "8.67e+289 EiB"
    assert bin_label(61, 2 ** 62) == "2-4 EiB"
    assert num(1e300) == "1e+300" and num(1234.5) == "1,234.500"
    assert pct(1e307) == "inf" and pct(0.25) == "25.0%"


@pytest.mark.parametrize("where", ["avg", "time"])
def test_nan_in_a_size_bin_costs_that_value(tmp_path, where):
    """`nan` as a size-bin row's average: 'parser failed ... please report' and the whole
    file lost before. The row stays (its calls still add up), its value is missing."""
    old = b"                           95245           8.0        379.901"
    new = (b"                           95245           nan        379.901" if where == "avg"
           else b"                           95245           8.0            nan")
    path, line = _damaged(tmp_path, old, new)
    ds = dptrace.load(path)
    assert ds.sources["rows"].item() == 54 and ds.sources["status"].item() == "partial"
    m = ds["mpi_messages"]
    row = m[m["calls"] == 95245]
    if where == "avg":
        assert row[["avg_bytes", "bytes", "bin", "bin_lo_bytes", "bin_hi_bytes"]].isna().all(
            axis=None)
    else:
        assert pd.isna(row["time_s"].item()) and row["bin"].item() == 2
    assert len(_errors_at(ds, path, line)) == 1
    assert not ds.problems["message"].str.contains("please report|add up to").any()
    _render(ds)


def test_nan_as_a_bin_count_costs_that_record(tmp_path):
    """A count must be an integer: the row is not read, an error names its line; the other
    rows of the file are kept."""
    old = b"                           95245           8.0"
    path, line = _damaged(tmp_path, old, b"                             nan           8.0")
    ds = dptrace.load(path)
    assert len(ds["mpi_messages"]) == 28 and len(ds["mpi_routines"]) == 7
    assert len(_errors_at(ds, path, line)) == 1
    assert not ds.problems["message"].str.contains("please report").any()


@pytest.mark.parametrize(("old", "new", "table", "col"), [
    (b"total elapsed time       = 621.756", b"total elapsed time       = 1e999", "mpi_ranks",
     "elapsed_s"),
    (b"max resident set size    = 1165.746", b"max resident set size    = " + b"9" * 400,
     "mpi_ranks", "max_rss_mib"),
    (b"   437.55      621.76    17306.83", b"   437.55      621.76         inf", "mpi_ranks",
     "user_s"),
    (b"minimum communication time = 437.555 sec",
     b"minimum communication time = " + b"9" * 400 + b" sec",
     "mpi_jobs", "min_comm_s"),
])
def test_non_finite_totals_become_missing(tmp_path, old, new, table, col):
    path, line = _damaged(tmp_path, old, new)
    ds = dptrace.load(path)
    _finite_or_missing(ds)
    assert ds[table][col].isna().sum() == 1
    assert len(_errors_at(ds, path, line)) == 1
    assert ds.sources["rows"].item() == 54
    _render(ds)


def test_a_time_too_long_for_a_float_leaves_the_batch(tmp_path, monkeypatch):
    """400 digits match the plain layout, and were stored as inf by the batch route; the
    file now takes the per-file path, which reports the value; the routes agree."""
    old = b"MPI_Comm_rank                           3            0.0          0.000"
    folder, path, line = _job_with(tmp_path, 5, old, old[:-5] + b"9" * 400 + b".000")
    taken = []
    take = fast.Plain.take

    def spy(self: fast.Plain, data: bytes, rank: int | None = None) -> bool:
        if took := take(self, data, rank):
            taken.append(rank)
        return took

    monkeypatch.setattr(fast.Plain, "take", spy)
    ds = dptrace.load(folder)
    assert 5 in taken               # taken, then singled out by the vectorised checks
    _finite_or_missing(ds)
    err = _errors_at(ds, path, line)["message"].item()
    assert "time(sec)" in err and "[364 more characters]" in err and len(err) < 200
    r = ds["mpi_routines"]
    assert r[r["source"] == str(path)]["time_s"].isna().sum() == 1
    _same_tables_without(ds, folder, path)
    monkeypatch.setattr(fast.Plain, "take", lambda self, data, rank=None: False)
    per_file = dptrace.load(folder)
    for name in ds.tables:
        pd.testing.assert_frame_equal(ds[name], per_file[name], check_exact=True)
    pd.testing.assert_frame_equal(ds.problems, per_file.problems)


def test_bin_of_has_no_bin_for_what_does_not_fit():
    for avg in (float("nan"), float("inf"), 1e308, 2.0 ** 62 + 2 ** 12):
        k, lo, hi = mpitrace.bin_of(avg)
        assert math.isnan(k) and math.isnan(lo) and math.isnan(hi)
        got = mpitrace._bins(np.array([avg]))
        assert all(np.isnan(a[0]) for a in got)
    assert mpitrace.bin_of(2.0 ** 62) == (61, 2 ** 61 + 1, 2 ** 62)


# -- one Latin-1 byte ----------------------------------------------------------------------

def test_latin1_byte_after_the_routine_table_heading(tmp_path):
    """`time(sec)\\xb5`: 'no routine table' and every row lost before."""
    path, line = _damaged(tmp_path, b"time(sec)\n", b"time(sec)\xb5\n")
    ds = dptrace.load(path)
    assert ds.sources["rows"].item() == 54 and ds.sources["status"].item() == "ok"
    assert len(ds["mpi_routines"]) == 7
    p = ds.problems
    assert len(p) == 1 and p["line"].item() == line == 4
    assert "UTF-8" in p["message"].item() and p["severity"].item() == "warning"


# -- a line of megabytes -------------------------------------------------------------------

def test_problem_messages_are_cut_with_a_marker(monkeypatch):
    p = Problem("f", "x" * 2_000_500, 3, "error")
    assert p.message == "x" * 500 + "… [2,000,000 more characters]"
    assert Problem("f", "y" * 500).message == "y" * 500
    monkeypatch.setattr(errors, "MAX_MESSAGE_CHARS", 10)
    assert Problem("f", "z" * 25).message == "z" * 10 + "… [15 more characters]"
    assert errors.quote("abc") == "'abc'"
    assert errors.quote("a" * 1000, 5) == "'aaaaa'… [995 more characters]"


def _huge_line(tmp_path: Path, size: int) -> Path:
    at = KNL16.index(b"MPI_Gather ")
    path = tmp_path / NAME
    with open(path, "wb") as fh:
        fh.write(KNL16[:at])
        fh.write(b"MPI_Bogus " + b"7 " * (size // 2) + b"\n")   # many words: never split
        fh.write(KNL16[at:])
    return path


def test_a_5mb_line_in_the_routine_table(tmp_path, capsys):
    """The message quoted the whole line, and rendering it took seconds per MB."""
    path = _huge_line(tmp_path, 5_000_000)
    ds = dptrace.load(path)
    assert len(ds["mpi_routines"]) == 7 and ds.sources["rows"].item() == 54
    err = ds.problems[ds.problems["line"] == 10]
    msg = err["message"].item()
    assert err["severity"].item() == "error" and len(msg) <= errors.MAX_MESSAGE_CHARS + 40
    assert "5,000,010 characters" in msg and "more characters]" in msg
    assert len(_render(ds)) < 50_000
    assert main(["report", str(path), "--json", "-"]) == 1
    out = capsys.readouterr().out
    assert len(out) < 100_000
    report = json.loads(out)
    assert "5,000,010 characters" in json.dumps(report)
    assert main(["report", str(path), "--width", "100"]) == 1
    assert len(capsys.readouterr().out) < 50_000


# -- a truncated file: nothing cut is kept as another value -------------------------------

def test_cut_inside_the_last_number_of_the_rank_table(tmp_path):
    """'... 1164.25  473245' cut to '... 1164.25  4732': that row is not read (4732 would be
    another value), the cut is flagged at its line; the rows before are kept."""
    data = KNL16[:KNL16.rindex(b"473245") + 4]
    path = tmp_path / NAME
    path.write_bytes(data)
    ds = dptrace.load(path)
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert tab["rank"].tolist() == list(range(15)) and 4732 not in tab["switches"].tolist()
    err = _errors_at(ds, path, data.count(b"\n") + 1)
    assert err["message"].str.contains("does not end with a newline").any()
    assert ds.sources["status"].item() == "partial"


def test_cut_inside_the_last_number_of_a_rank_file_in_a_batch(tmp_path):
    """A plain rank file of a batch cut inside its last size bin's average ('29.0' -> '2'):
    the per-file path takes it, flags the line and keeps no average of 2; the other files
    of the batch are as they are alone."""
    folder = tmp_path / "job"
    shutil.copytree(POLARIS, folder)
    path = folder / "mpi_profile.359819.6"
    data = path.read_bytes()
    at = data.rindex(b"29.0          0.000")
    path.write_bytes(data[:at + 1])
    ds = dptrace.load(folder)
    m = ds["mpi_messages"]
    mine = m[m["source"] == str(path)]
    assert mine["avg_bytes"].tolist() == [4.0]   # the row before the cut
    err = _errors_at(ds, path, data[:at].count(b"\n") + 1)
    assert err["message"].str.contains("does not end with a newline").any()
    st = ds.sources.set_index("source")["status"]
    assert st[str(path)] == "partial" and (st.drop(str(path)) == "ok").all()
    _same_tables_without(ds, folder, path)
