"""The terminal report at 60 to 120 columns: identifiers are never cut, columns give way in order.

Renders the report of real files (examples/data, tests/fixtures and, when it is beside the
clone, shared/realdata) with a pinned ``Console(width=W, color_system=None)`` and reads the
text a user would see. At 80 columns MPI_Gather and MPI_Gatherv used to both read
"MPI_Gat…", the Horovod activity table lost its "tensor time" and "mean" columns and the
tiles table's headers read "t…" and "plo…"; at 100 columns input paths wrapped over 3-7 lines.

The throughput panels are drawn by other code (tests/test_terminal_throughput.py).
"""

import io
import re
from functools import cache
from pathlib import Path

import _cache
import pandas as pd
import pytest
from rich.console import Console

from dptrace.formats.horovod.terminal import MAX_ACTIVITIES
from dptrace.formats.mpitrace.terminal import TOP_ROUTINES
from dptrace.reports import fit, model, terminal
from dptrace.reports.fit import common_dir
from dptrace.reports.fmt import human_time
from dptrace.reports.model import Report

HERE = Path(__file__).parent
FIX = HERE / "fixtures"
EXAMPLES = HERE.parent / "examples" / "data"
REAL = HERE.parent.parent / "shared" / "realdata"
WIDTHS = (60, 80, 100, 120)
#: the longest relative path that must fit on one line at 100 columns (the table's other
#: columns need at most 55: format, status, rows, a message wrapped at 16)
NORMAL_NAME = 45
#: the sections these tests cover
SECTIONS = ("inputs", "communication", "message_sizes", "horovod", "tiles", "problems")

INPUTS = {
    "examples": EXAMPLES,
    "fixtures-mpitrace": FIX / "mpitrace",
    "fixtures-horovod": FIX / "horovod",
    "fixtures-sntilestat": FIX / "sntilestat",
    "real-mpitrace": REAL / "mpitrace",
    "real-horovod": REAL / "horovod_timeline",
    "real-sntilestat": REAL / "sntilestat",
    "real-trainlog": REAL / "trainlog",
}


def _path(name: str) -> Path:
    path = INPUTS[name]
    if not path.exists():
        pytest.skip(f"{path} is not there (shared/realdata sits beside the clone)")
    return path


@cache
def _report(name: str) -> Report:
    """The report of ``name`` with the sections these tests read (SECTIONS) and not the
    others: the findings of every run are most of a report's cost (11.0 -> 2.6 CPU-s over
    INPUTS), and no section here reads them (their tables and text at every width are the
    same as in the whole report's)."""
    return model._build(_cache.load(_path(name)), "report", set(SECTIONS), {})


@cache
def _render(name: str, width: int, sections: tuple[str, ...] = SECTIONS) -> str:
    full = _report(name)
    report = Report(full.dataset, [s for s in full.sections if s.name in sections])
    console = Console(width=width, color_system=None, file=io.StringIO())
    terminal.render(report, console)
    out = console.file.getvalue()
    assert isinstance(out, str)
    return out


def _section(name: str, section: str) -> model.Section:
    found = _report(name).section(section)
    if found is None:
        pytest.skip(f"no {section} section for {name}")
    return found


def _flat(text: str) -> str:
    """The words of ``text`` without panel borders, wrapped lines joined."""
    return " ".join(text.replace("│", " ").split())


def _hidden(text: str) -> set[str]:
    """Column names the dim notes in ``text`` say were hidden for width."""
    return {c for names in re.findall(r"hidden for width: ([^;]+);", _flat(text))
            for c in names.split(", ")}


def _panels(out: str) -> list[str]:
    return out.split("╭─")[1:]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["examples", "fixtures-mpitrace", "real-mpitrace"])
def test_mpi_routine_names_are_whole(name, width):
    comm, sizes = _section(name, "communication"), _section(name, "message_sizes")
    shown = set(comm.tables["routines"].groupby("job", sort=False).head(TOP_ROUTINES)["routine"])
    shown |= set(sizes.tables["bins"]["routine"])
    out = _render(name, width)
    assert {"MPI_Allreduce"} <= shown
    assert shown <= set(re.findall(r"MPI_\w+", out))      # MPI_Gather and MPI_Gatherv apart
    assert not re.search(r"MPI_\w*…", out)


@pytest.mark.parametrize("width", WIDTHS)
def test_mpi_rank_hosts_are_whole(width):
    comm = _section("examples", "communication")
    out = _render("examples", width)
    rank_lines = [line for line in out.splitlines() if re.search(r"\bnid\d+\b", line)]
    hosts = set(comm.tables["ranks"]["host"].dropna())
    assert {re.search(r"\bnid\d+\b", line)[0] for line in rank_lines} <= hosts  # type: ignore[index]
    for r in comm.tables["ranks"].itertuples():
        if r.comm_role in ("minimum", "median", "maximum"):   # always drawn, with its rank
            line = next(line for line in rank_lines if str(r.comm_role) in line)
            assert re.search(rf"│\s+{r.rank}\s+{r.host}\s", line), line


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["examples", "fixtures-horovod", "real-horovod"])
def test_horovod_activity_names_whole_and_no_column_lost(name, width):
    hvd = _section(name, "horovod")
    acts = hvd.tables["activities"]
    sources = hvd.tables["runs"]["source"].astype(str).tolist()
    panels = dict(zip(sources, _panels(_render(name, width, ("horovod",))), strict=True))
    checked = 0
    for src, rows in acts.groupby(acts["source"].astype(str), sort=False):
        if len(rows) > MAX_ACTIVITIES:          # the rest is in --json only
            continue
        panel = panels[src]
        hidden = _hidden(panel)
        assert not hidden & {"activity", "wall"}
        lines = panel.splitlines()
        for r in rows.itertuples():
            want = [human_time(r.wall_us)]
            want += [] if "tensor time" in hidden else [human_time(r.tensor_us)]
            want += [] if "mean" in hidden else [human_time(r.mean_us)]
            mine = [line for line in lines
                    if re.search(rf"│\s+{re.escape(str(r.activity))}\s", line)]
            assert any(all(w in line for w in want) for line in mine), (r.activity, want)
            checked += 1
    assert checked


@pytest.mark.parametrize("width", WIDTHS)
def test_horovod_activity_table_keeps_its_numbers_at_80_columns(width):
    panel = _panels(_render("examples", width, ("horovod",)))[0]
    hidden = _hidden(panel)
    # NEGOTIATE_ALLREDUCE: 660 intervals, wall 140,008,... us of the 189.81 s span, tensor
    # time 386.70 s, mean 585.9 ms (test_horovod_analysis.py has the hand-checked values)
    line = next(line for line in panel.splitlines() if "NEGOTIATE_ALLREDUCE" in line)
    assert re.search(r"NEGOTIATE_ALLREDUCE\s+660\s+0\s+140\.01 s\s+73\.8%", line), line
    if width >= 80:                         # only the bar gives way (it repeats "of span")
        assert not hidden & {"count", "open", "wall", "of span", "tensor time", "mean"}
        assert "386.70 s" in line and "585.9 ms" in line
    else:                                   # at 60 the per-tensor figures go, with a note
        assert {"tensor time", "mean"} <= hidden and not hidden & {"count", "open", "of span"}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["examples", "fixtures-sntilestat", "real-sntilestat"])
def test_tile_names_pids_and_instances_are_whole(name, width):
    tiles = _section(name, "tiles")
    out = _render(name, width)
    for src, grid in tiles.tables["grid"].groupby(tiles.tables["grid"]["source"].astype(str)):
        ntiles = int(grid["tile"].max()) + 1
        assert {f"TILE_{k}" for k in range(ntiles)} <= set(re.findall(r"TILE_\d+", out)), src
    assert not re.search(r"TILE_\d*…|TIL…|TI…", out)
    inst, grid = tiles.tables["instances"], tiles.tables["grid"]
    assert len(inst)
    for r in inst.itertuples():      # instance numbers are per source
        mine = grid[(grid["source"] == r.source) & (grid["pid"] == r.pid)]
        row = re.compile(rf"^\s*#{mine['instance'].iloc[0]}\s+{r.pid}\s", re.M)
        assert row.search(out), (r.pid, width)
    header = next(line for line in out.splitlines() if re.match(r"\s*#\s+PID\s", line))
    assert "…" not in header and "tiles" in header


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(INPUTS))
def test_no_cell_or_header_is_cut(name, width):
    out = _render(name, width)
    assert max(len(line) for line in out.splitlines()) <= width
    # rich's cut appends "…" to what is left of a word: "MPI_Gat…", "til…", "plo…"; names
    # shortened on purpose keep their end instead ("…gradients_AddN_5_0")
    cut = [line for line in out.splitlines() if re.search(r"\w…", line)]
    assert not cut, cut[:5]


@pytest.mark.parametrize("name", ["examples", "fixtures-mpitrace", "fixtures-horovod",
                                  "fixtures-sntilestat", "real-mpitrace", "real-horovod",
                                  "real-sntilestat", "real-trainlog"])
def test_input_paths_take_one_line_at_100_columns(name):
    """Relative to the directory the inputs share; a name longer than the room left folds."""
    sources = _report(name).dataset.sources["source"].astype(str)
    prefix, names = common_dir(sources)
    out = _render(name, 100)
    inputs = out[out.index("Inputs"):out.index("One row per input file")]
    assert prefix and f"Inputs (under {prefix})" in inputs
    lines = inputs.splitlines()
    for rel in (n for n in names if len(n) <= NORMAL_NAME):
        whole = re.compile(rf"(?<![\w./-]){re.escape(rel)}(?![\w.])")
        assert sum(bool(whole.search(line)) for line in lines) == 1, rel


@pytest.mark.parametrize("width", WIDTHS)
def test_problem_paths_are_relative_to_their_directory(width):
    probs = _section("fixtures-sntilestat", "problems").tables["problems"]
    prefix, names = common_dir(probs["source"].astype(str))
    out = _render("fixtures-sntilestat", width)
    table = out[out.index("Problems (under "):]
    # the title may wrap at a narrow width when the prefix is long (a deep checkout path)
    assert f"Problems (under {prefix})" in " ".join(table.split())
    assert table.count(prefix) == 1          # said once, in the title
    if width >= 100:
        for rel, r in zip(names, probs.itertuples(), strict=True):
            where = f"{rel}:{r.line}" if pd.notna(r.line) else rel
            assert any(where in line for line in table.splitlines()), where


def test_hidden_columns_are_named_in_a_dim_note():
    def routines(width: int) -> str:
        out = _render("fixtures-mpitrace", width, ("communication",))
        job = next(p for p in _panels(out) if p.startswith(" job 19013 "))
        return job[job.index("top routines"):job.index("╰")]

    narrow = routines(60)
    note = _flat(narrow[narrow.index("hidden for width:"):])
    assert note.startswith("hidden for width: calls/rank, ")
    assert re.search(r"; see --width \d+ or --json$", note), note
    table = narrow[:narrow.index("hidden for width:")]
    assert "routine" in table and "calls/rank" not in table and "MPI_Gatherv" in table
    # the note's --width shows every column again
    wide = int(re.search(r"--width (\d+)", note)[1])  # type: ignore[index]
    assert 60 < wide <= 120
    again = routines(wide)
    assert "hidden for width" not in again and "calls/rank" in again
    assert "calls/rank" in routines(wide - 1) or "hidden for width" in routines(wide - 1)
    # and nothing is hidden when everything fits
    assert "hidden for width" not in _render("examples", 120, ("inputs", "communication",
                                                                "message_sizes"))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["examples", "fixtures-mpitrace", "fixtures-horovod",
                                  "fixtures-sntilestat"])
def test_every_table_fits_without_cutting_its_keys(name, width, monkeypatch):
    """White box: each table finds a layout, and key and number columns get their widest cell."""
    seen = []
    layout = fit.FitTable.layout

    def checked(self, avail):
        widths, hidden = layout(self, avail)
        seen.append(self)
        assert widths is not None, [c.name for c in self.cols]
        for i, w in widths.items():
            if self.cols[i].kind in (fit.KEY, fit.NUM):
                cells = [fit._cell_width(row[i]) for row in self.rows]
                assert w >= max(cells, default=0), (self.cols[i].name, w, cells)
        return widths, hidden

    monkeypatch.setattr(fit.FitTable, "layout", checked)
    _render.__wrapped__(name, width)
    assert seen


def test_readme_gives_the_drop_orders_of_the_code():
    from dptrace.formats.horovod.terminal import ACTIVITY_DROP
    from dptrace.formats.mpitrace.terminal import ROUTINE_DROP
    from dptrace.formats.sntilestat.terminal import INSTANCE_DROP

    readme = " ".join((HERE.parent / "README.md").read_text().split())
    for order in (ROUTINE_DROP, ACTIVITY_DROP, INSTANCE_DROP):
        assert ", ".join(order) in readme, order
