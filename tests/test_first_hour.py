"""What a newcomer meets in the first hour (issue 11): a broken format import costs only that
format, pipes, --warmup, `dptrace schema` piped, --help start-up, JSON exports."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dptrace.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data"
#: the console script of the interpreter running the tests
DPTRACE = Path(sys.executable).with_name("dptrace")


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


# --- 1. a format module that fails to import costs only the inputs of that format -------------

BROKEN_IMPORT = """
import sys, json
# the sntilestat reader's helper cannot be imported: `from . import columns` fails
sys.modules["dptrace.formats.sntilestat.columns"] = None
import dptrace
from dptrace import registry
ds = dptrace.load({paths!r})
print(json.dumps({{
    "unavailable": registry.UNAVAILABLE,
    "tables": {{k: len(ds[k]) for k in ds.tables}},
    "sources": ds.sources[["source", "format", "status"]].astype(object).fillna("")
               .astype(str).values.tolist(),
    "problems": ds.problems[["source", "severity", "message"]].astype(object).fillna("")
                .astype(str).values.tolist(),
}}))
"""


def test_a_broken_format_import_leaves_the_other_formats_working():
    paths = [str(EXAMPLES), str(ROOT / "tests/fixtures/sntilestat")]
    proc = _run_python(BROKEN_IMPORT.format(paths=paths))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(out["unavailable"]) == ["sntilestat"]
    assert "sntilestat.columns" in out["unavailable"]["sntilestat"]
    # every other format parsed as usual
    assert out["tables"]["throughput"] > 0
    assert out["tables"]["mpi_routines"] > 0 and out["tables"]["hvd_tensors"] > 0
    assert "tiles" not in out["tables"]
    # each sntilestat input got one problem naming the import error, and only those
    tiles_inputs = {s for s, fmt, _ in out["sources"] if "sntilestat" in fmt}
    assert tiles_inputs, out["sources"]
    broken = [p for p in out["problems"] if "reader could not be loaded" in p[2]]
    assert {p[0] for p in broken} == tiles_inputs
    assert all(p[1] == "error" and "sntilestat.columns" in p[2] for p in broken)
    # the SambaNova doc holds training-log lines too: those are still read
    doc = [s for s in out["sources"] if s[0].endswith("ug_sn30_multinode_from_docs.md")]
    assert doc and doc[0][2] == "partial"


def test_the_same_load_without_the_break_has_no_such_problem():
    import dptrace

    ds = dptrace.load([EXAMPLES, ROOT / "tests/fixtures/sntilestat"])
    assert len(ds["tiles"]) > 0
    assert not ds.problems["message"].str.contains("could not be loaded").any()


def test_pyarrow_is_a_core_dependency():
    """As installed: pyarrow is required with no extra."""
    from importlib.metadata import requires

    reqs = requires("dptrace") or []
    assert any(r.startswith("pyarrow") and "extra ==" not in r for r in reqs), reqs


# --- 3. pipes ---------------------------------------------------------------------------------

@pytest.mark.skipif(not DPTRACE.exists(), reason="no dptrace console script beside python")
def test_report_into_a_closed_pipe_writes_its_files_and_exits_quietly(tmp_path):
    html, js = tmp_path / "d.html", tmp_path / "d.json"
    expected = main(["report", str(EXAMPLES), "--json", str(tmp_path / "ref.json")])
    cmd = (f"set -o pipefail; '{DPTRACE}' report '{EXAMPLES}' --html '{html}' --json '{js}' "
           "--width 100 | head -1")
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert proc.returncode == expected, proc.stderr
    assert proc.stderr == ""                       # quietly: no traceback, no "internal error"
    assert len(proc.stdout.splitlines()) == 1
    assert html.stat().st_size > 100_000 and "<html" in html.read_text()[:500]
    assert json.loads(js.read_text())["exit_code"] == expected


@pytest.mark.skipif(not DPTRACE.exists(), reason="no dptrace console script beside python")
def test_json_to_a_closed_pipe_and_schema_into_head_exit_quietly():
    for args in (["report", str(EXAMPLES), "--json", "-"], ["schema"]):
        cmd = "set -o pipefail; '" + "' '".join([str(DPTRACE), *args]) + "' | head -c 10"
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
        assert proc.stderr == "", (args, proc.stderr)
        assert proc.returncode in (0, 1), (args, proc.returncode)


def test_files_are_written_before_the_terminal_output(tmp_path, monkeypatch):
    """The terminal face fails as a closed pipe would: the files are already there."""
    from dptrace.reports import terminal

    def closed(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(terminal, "render", closed)
    html, js = tmp_path / "d.html", tmp_path / "d.json"
    code = main(["report", str(EXAMPLES), "--html", str(html), "--json", str(js)])
    assert code in (0, 1)
    assert html.exists() and js.exists()
    assert json.loads(js.read_text())["exit_code"] == code


# --- 8. small things ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1.5", "1", "-0.1", "nan", "ten"])
def test_warmup_outside_0_1_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", str(EXAMPLES), "--warmup", value])
    assert exc.value.code == 2
    assert "--warmup" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "0.5", "0.99"])
def test_warmup_inside_0_1_is_accepted(value, capsys):
    assert main(["report", str(EXAMPLES / "ug_sn30_multinode_from_docs.md"),
                 "--warmup", value, "--width", "120"]) in (0, 1)


def test_schema_piped_is_valid_markdown_with_one_row_per_line():
    proc = subprocess.run([sys.executable, "-m", "dptrace.cli", "schema"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, env={**os.environ, "COLUMNS": "40"})
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    rows = [ln for ln in lines if ln.startswith("|")]
    assert len(rows) > 100
    # every table row is whole: a line after a table row is another row or ends the table
    assert all(ln.rstrip().endswith("|") for ln in rows)
    for prev, ln in zip(lines, lines[1:], strict=False):
        if prev.startswith("|") and ln:
            assert ln.startswith("|"), (prev, ln)
    assert max(len(ln) for ln in rows) > 100   # not hard-wrapped at 80 columns


def test_help_does_not_import_pandas_or_rich():
    code = ("import sys\nfrom dptrace.cli import build_parser\n"
            "try:\n    build_parser().parse_args(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pandas', 'rich', 'numpy', 'plotly') if m in sys.modules))")
    proc = _run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_json_export_keeps_slashes_readable(tmp_path):
    out = tmp_path / "out"
    assert main(["export", str(EXAMPLES / "mpitrace_theta_knl32"), "--to", str(out),
                 "--format", "json"]) == 0
    text = (out / "sources.json").read_text()
    assert "\\/" not in text
    records = json.loads(text)
    assert records[0]["source"].endswith("mpitrace_theta_knl32/mpi_profile.19013.0")
    assert "/mpi_profile." in text


def test_unescape_slashes_keeps_escaped_backslashes():
    import pandas as pd

    from dptrace.reports.export import unescape_slashes

    values = ["a/b", "a\\/b", "a\\\\/b", "\\", "/", "\\\\\\/"]
    text = pd.Series(values).to_json(orient="values")
    assert json.loads(unescape_slashes(text)) == values
    assert "\\/" not in unescape_slashes(pd.Series(["a/b"]).to_json(orient="values"))


def test_progress_moves_within_one_large_log(monkeypatch):
    """A log scanned in parallel reports its bytes as its ranges finish (the CLI's bar counts
    bytes), and the rows are those of the serial scan."""
    import dptrace
    from dptrace import progress
    from dptrace.formats.trainlog import read as trainlog

    log = EXAMPLES / "dschat_step1_opt1.3b_gbs128.log"
    serial = dptrace.load(log)["throughput"]
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(trainlog, "RANGE_BYTES", 16 << 10)
    calls: list[tuple[int, int]] = []
    with progress.watching(lambda done, total: calls.append((done, total))):
        parallel = dptrace.load(log)["throughput"]
    size = log.stat().st_size
    assert len(calls) >= 4 and all(total == size for _, total in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and calls[-1][0] == size
    assert parallel.equals(serial)
