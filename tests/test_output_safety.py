"""Issue 12: strings from inputs reach no spreadsheet as a formula and no terminal as a
control sequence; outputs that cannot be written are usage errors before any parsing."""

import csv
import io
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dptrace.cli import main
from dptrace.reports.export import guard_formulas
from dptrace.reports.safe_text import csv_cell, visible, visible_frame

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "examples" / "data" / "dschat_step1_opt1.3b_gbs128.log"


def test_export_csv_guards_formula_cells_and_raw_keeps_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hostile = "=HYPERLINK(1+2).log"
    shutil.copy(LOG, tmp_path / hostile)
    assert main(["export", hostile, "--to", "out"]) == 0
    cells = [r["source"] for r in _rows("out/sources.csv")]
    assert cells == ["'" + hostile]
    tp = _rows("out/throughput.csv")
    assert tp and all(r["source"] == "'" + hostile for r in tp)
    assert main(["export", hostile, "--to", "raw", "--raw"]) == 0
    cells = [r["source"] for r in _rows("raw/sources.csv")]
    assert cells == [hostile]


def test_guard_formulas_leaves_numbers_and_plain_text_alone():
    df = pd.DataFrame({"t": ["=1+1", "+x", "-x", "@sum", "-1.5", "ok", None],
                       "c": pd.Categorical(["=a", "b", "b", "b", "b", "b", "b"]),
                       "n": [-1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    out = guard_formulas(df)
    assert out["t"].tolist()[:6] == ["'=1+1", "'+x", "'-x", "'@sum", "-1.5", "ok"]
    assert pd.isna(out["t"].iloc[6])
    assert out["c"].iloc[0] == "'=a" and out["n"].tolist() == df["n"].tolist()
    plain = pd.DataFrame({"t": ["a", "b"]})
    assert guard_formulas(plain) is plain
    assert csv_cell(3) == 3 and csv_cell("\t=1") == "'\t=1"


def test_visible_marks_controls_bidi_and_zero_width():
    text = "MPI_\x1b]0;pwned\x07Allreduce\x1b[2J \u202eevil\u200b\x9b"
    out = visible(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in out)
    assert "\u202e" not in out and "\u200b" not in out
    assert "\u241b" in out and "\u2407" in out and "\u27e8U+202E\u27e9" in out
    assert visible("plain\ttext\nok") == "plain\ttext\nok"
    df = pd.DataFrame({"a": pd.Categorical(["x\x1b[2J", "y"]), "b": ["ok", None]})
    assert visible_frame(df)["a"].tolist() == ["x\u241b[2J", "y"]
    clean = pd.DataFrame({"a": ["x"]})
    assert visible_frame(clean) is clean


def test_export_to_an_existing_file_is_a_usage_error(tmp_path, capsys):
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert main(["export", str(LOG), "--to", str(target)]) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and "internal error" not in err


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_output_into_a_missing_directory_is_a_usage_error(tmp_path, capsys, option):
    target = tmp_path / "missing" / "out.file"
    assert main(["report", str(LOG), option, str(target)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "internal error" not in err
    assert main(["report", str(LOG), option, str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def _terminal(paths: list[str], width: int = 120) -> str:
    from rich.console import Console

    import dptrace
    from dptrace.reports import terminal

    buf = io.StringIO()
    terminal.render(dptrace.report(dptrace.load(paths)),
                    Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def _rows(path: str) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202eevil\u200b"


def test_hostile_strings_reach_the_terminal_as_visible_marks(tmp_path):
    """A file name, an MPI routine name and a log label holding escape sequences, a bidi
    override and a zero-width space: the terminal report shows marks, never the characters."""
    log = tmp_path / f"run{HOSTILE}.log"
    shutil.copy(LOG, log)
    prof = ROOT / "examples/data/mpitrace_theta_knl32/mpi_profile.19013.0"
    text = prof.read_text(encoding="utf-8")
    assert "MPI_Allreduce" in text
    bad = tmp_path / "mpi_profile.19013.0"
    bad.write_text(text.replace("MPI_Allreduce", f"MPI_All{HOSTILE}reduce"), encoding="utf-8")
    out = _terminal([str(log), str(bad)])
    assert "MPI_All" in out and "run" in out
    for ch in ("\x1b", "\x07", "\u202e", "\u200b"):
        assert ch not in out, repr(ch)
    assert "\u241b" in out and "\u27e8U+202E\u27e9" in out


def test_hostile_strings_in_cli_errors_are_visible(tmp_path, capsys):
    missing = tmp_path / f"gone{HOSTILE}.log"
    assert main(["report", str(LOG), "--html", str(missing / "x.html")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "\u241b" in err
