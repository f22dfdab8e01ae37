"""Damaged mpitrace profiles: parse what is there, say where it stopped, never crash.

The base file is the real Theta rank-0 profile (107 lines): routine table lines 6-12,
totals 14-22, message sizes 25-64 (Allreduce bins 45-57), job summary 67-71, per-rank
table 75-107.
"""

import gzip
from pathlib import Path

import pytest

import dptrace

FIX = Path(__file__).parent / "fixtures" / "mpitrace"
RANK0 = (FIX / "alcfws_theta_knl32" / "mpi_profile.19013.0").read_bytes()
LINES = RANK0.splitlines(keepends=True)


def _cut(tmp_path: Path, n: int, tail: bytes = b"") -> dptrace.Dataset:
    path = tmp_path / "mpi_profile.19013.0"
    path.write_bytes(b"".join(LINES[:n]) + tail)
    return dptrace.load(path)


@pytest.mark.parametrize(("keep", "where", "routines", "bins"), [
    (2, "no routine table", 0, 0),
    (9, "inside the routine table", 4, 0),
    (13, "right after the routine table", 7, 0),
    (15, "inside the totals", 7, 0),
    (24, "before the message size distributions", 7, 0),
    (50, "inside the size distribution of MPI_Allreduce", 7, 15 + 6),
    (70, "inside the job summary", 7, 30),
    (90, "the per-rank table lists 15 of 32 ranks", 7, 30),
])
def test_cut_inside_each_section(tmp_path, keep, where, routines, bins):
    ds = _cut(tmp_path, keep)
    assert len(ds["mpi_routines"]) == routines
    assert len(ds["mpi_messages"]) == bins
    errors = ds.problems[ds.problems["severity"] == "error"]
    assert len(errors) == 1, ds.problems
    err = errors.iloc[0]
    assert where in err["message"]
    assert err["source"].endswith("mpi_profile.19013.0")
    last_text_line = max(i + 1 for i in range(keep) if LINES[i].strip())
    assert err["line"] == last_text_line
    assert ds.sources["status"].item() == "partial"


def test_rows_before_the_cut_are_kept(tmp_path):
    ds = _cut(tmp_path, 90)
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert tab["rank"].tolist() == list(range(15))          # lines 76-90
    assert tab["comm_time_s"].iloc[-1] == 274.34            # line 90: rank 14
    assert ds["mpi_jobs"]["median_comm_rank"].item() == 26


def test_cut_mid_line_skips_the_partial_row(tmp_path):
    # line 46 "45773  8.0  214.933" cut to "45773  8.0  21": its time would be wrong
    partial = LINES[45][:-5]
    ds = _cut(tmp_path, 45, partial)
    m = ds["mpi_messages"]
    assert 21.0 not in m["time_s"].tolist()
    p = ds.problems
    cut = p[p["message"].str.contains("does not end with a newline")]
    assert cut["line"].tolist() == [46] and cut["severity"].tolist() == ["error"]


def test_unparseable_table_lines_are_problems_with_line_numbers(tmp_path):
    lines = list(LINES)
    lines[8] = b"MPI_Allreduce    47108    ###    250.492\n"           # line 9
    lines[45] = b"                           45773      eight        214.933\n"   # line 46
    lines[80] = b"     5       nid00103     271.55      oops\n"          # line 81
    path = tmp_path / "mpi_profile.19013.0"
    path.write_bytes(b"".join(lines))
    ds = dptrace.load(path)
    p = ds.problems.set_index("line")
    assert "routine table" in p.loc[9, "message"]
    assert "message size distributions" in p.loc[46, "message"]
    assert "per-rank table" in p.loc[81, "message"]
    assert (p["severity"] == "error").all()
    assert "MPI_Allreduce" not in set(ds["mpi_routines"]["routine"])
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert 5 not in tab["rank"].tolist() and len(tab) == 31


def test_unknown_line_in_totals_is_a_warning(tmp_path):
    lines = list(LINES)
    lines.insert(19, b"some new counter         = 12 widgets.\n")       # becomes line 20
    path = tmp_path / "mpi_profile.19013.0"
    path.write_bytes(b"".join(lines))
    ds = dptrace.load(path)
    prob = ds.problems.iloc[0]
    assert (prob["line"], prob["severity"]) == (20, "warning")
    assert ds.sources["status"].item() == "ok"


def test_optional_sections_are_tables_not_misread(tmp_path):
    """PROFILE_BY_COMMUNICATOR and PROFILE_BY_CALL_STACK, in the layout of mpitrace's source."""
    extra = (
        b"   -----------------------------------------------------------------\n"
        b"   Profile data by communicator size:\n"
        b"   -----------------------------------------------------------------------\n"
        b"   Data for communicator sizes 17 to 32 , avg size = 32.00:\n"
        b"   -----------------------------------------------------------------------\n"
        b"   MPI Routine                        #calls      avg. bytes      time(sec)\n"
        b"   MPI_Allreduce                       47108       247017.5        250.492\n"
        b"   MPI time for this communicator bin = 250.492 sec.\n\n"
        b"-----------------------------------------------------------------\n"
        b"Profile by call stack, traceback level = 0, number of stacks = 1\n"
        b"-----------------------------------------------------------------\n"
        b"Use addr2line to map addresses to source file and line number.\n"
        b" \ntime in MPI routines = 250.492 sec, call stack index = 0\n"
        b"call stack:\n  filename = /lib/libhorovod.so\n"
        b"    address = 0x00007f0000001234,  offset  = 0x00001234\n"
        b"   MPI Routine                  #calls        time(sec)\n"
        b"   MPI_Allreduce                 47108         250.492\n\n")
    text = b"".join(LINES[:65]) + extra + b"".join(LINES[65:])
    text = text.replace(b"Data for MPI rank 0 of 32:", b"Data for MPI rank 0 of 32: (all communicators)")
    path = tmp_path / "mpi_profile.19013.0"
    path.write_bytes(text)
    ds = dptrace.load(path)
    assert ds.problems.empty, ds.problems
    cs = ds["mpi_comm_sizes"].iloc[0]
    assert (cs["comm_size_lo"], cs["comm_size_hi"], cs["comm_size_avg"], cs["calls"]) == \
        (17, 32, 32.0, 47108)
    st = ds["mpi_call_stacks"].iloc[0]
    assert (st["stack"], st["stack_time_s"], st["routine"], st["calls"]) == \
        (0, 250.492, "MPI_Allreduce", 47108)
    assert len(ds["mpi_routines"]) == 7 and len(ds["mpi_ranks"]) == 33
    assert "all-communicators+comm-sizes+call-stacks" in ds.sources["variant"].item()


def test_collective_barrier_and_pcontrol_and_kbytes(tmp_path):
    text = (b"Data for MPI rank 3 of 4:\n"
            b"Times from MPI_Pcontrol(1) to MPI_Pcontrol(0).\n" + b"".join(LINES[2:13]) +
            b"MPI task 3 of 4 had the maximum communication time.\n"
            b"synchronization time     = 1.500 seconds.\n"
            b"total communication time = 252.828 seconds (including synchronization).\n"
            b"total elapsed time       = 317.922 seconds.\n"
            b"maximum memory size      = 2048000 KBytes.\n\n" + b"".join(LINES[23:65]))
    path = tmp_path / "mpi_profile.5.3"
    path.write_bytes(text)
    ds = dptrace.load(path)
    own = ds["mpi_ranks"].iloc[0]
    assert (own["sync_time_s"], own["comm_time_s"], own["max_rss_mib"]) == (1.5, 252.828, 2000.0)
    assert ds["mpi_routines"]["region"].unique().tolist() == ["pcontrol"]
    assert ds.problems.empty, ds.problems


def test_empty_binary_and_gzip(tmp_path):
    (tmp_path / "mpi_profile.1.0").write_bytes(b"")
    (tmp_path / "mpi_profile.1.1").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "mpi_profile.19013.0.gz").write_bytes(gzip.compress(RANK0))
    ds = dptrace.load(tmp_path)
    status = dict(zip(ds.sources["source"].str.rsplit("/", n=1).str[-1], ds.sources["status"],
                      strict=True))
    # found in a directory: skipped with an info row, not failures (issue 11)
    assert status == {"mpi_profile.1.0": "skipped", "mpi_profile.1.1": "skipped",
                      "mpi_profile.19013.0.gz": "ok"}
    assert ds.problems["severity"].tolist() == ["info", "info"]
    assert len(ds["mpi_messages"]) == 30
    assert set(ds["mpi_routines"]["job"]) == {"19013"}


def test_read_mpitrace_survives_bad_files(tmp_path):
    (tmp_path / "mpi_profile.1.0").write_bytes(b"\xff\xfe garbage \x00")
    (tmp_path / "mpi_profile.19013.0").write_bytes(b"".join(LINES[:50]))
    ds = dptrace.read_mpitrace(tmp_path)
    st = dict(zip(ds.sources["source"].str.rsplit("/", n=1).str[-1], ds.sources["status"],
                  strict=True))
    assert st["mpi_profile.19013.0"] == "partial"
    assert len(ds["mpi_routines"]) == 7


def test_generated_job_above_32_ranks_has_histogram(tmp_path):
    """benchmarks/gen_mpitrace.py writes the real layout, with the histogram above 32 ranks."""
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import gen_mpitrace

    gen_mpitrace.generate(tmp_path, nranks=40, job=7)
    ds = dptrace.read_mpitrace(tmp_path)
    assert ds.problems.empty, ds.problems
    assert len(ds["mpi_histogram"]) == 15 and ds["mpi_histogram"]["ranks"].sum() == 40
    assert len(ds["mpi_ranks"]) == 40 + 40          # own files + rank 0's table
    m = ds["mpi_messages"]
    assert ((m["avg_bytes"] >= m["bin_lo_bytes"]) & (m["avg_bytes"] <= m["bin_hi_bytes"])).all()


def test_bad_number_inside_the_per_rank_table(tmp_path):
    """The table is converted column by column; a row that does not convert is a problem
    at its line, and the rows before and after it are kept, as row by row."""
    lines = list(LINES)
    lines[80] = lines[80].replace(b"271.55", b"271..5")                       # line 81
    lines[82] = lines[82].replace(b"249060", b"24906x")                       # line 83
    path = tmp_path / "mpi_profile.19013.0"
    path.write_bytes(b"".join(lines))
    ds = dptrace.load(path)
    p = ds.problems
    assert p["line"].tolist() == [81, 83, 107]
    assert p["message"].str.contains("per-rank table").all()
    assert "lists 30 of 32 ranks" in p["message"].iloc[2]
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert tab["rank"].tolist() == [r for r in range(32) if r not in (5, 7)]
    assert tab["comm_time_s"].tolist()[4:6] == [277.17, 270.32]
