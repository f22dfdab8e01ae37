"""The bad-input corpus (issue 12, item 4): every class in tests/corpus/expected.tsv goes
through ``dptrace.load`` (in-process, under an alarm) and through ``dptrace report --json
--html``, and must give the outcome the table states. The report runs as ``dptrace.cli.main``
in this process (under an alarm, its stdout and stderr written through streams with the
encoding and error handler a ``dptrace`` process would have, so that a name that cannot be
encoded fails here as it would there); the classes of ``IN_A_PROCESS`` run it as a real
``dptrace`` process, for what only a process shows (its exit status, its real pipes, a
hang killed by a timeout).

Rows marked ``known_failing = issue12`` fail on the code of the day: they are strict
xfails, so whoever fixes one sees an XPASS failure and flips the flag
(``DPTRACE_CORPUS_STRICT=1`` runs them as plain tests, to see why each fails). See
tests/corpus/README.md.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

import dptrace
from dptrace.cli import main
from dptrace.sources import display_name

CORPUS = Path(__file__).parent / "corpus"
FILES = CORPUS / "files"
ROOT = Path(__file__).resolve().parents[1]
LOAD_TIMEOUT = 60
CLI_TIMEOUT = 180
sys.path.insert(0, str(CORPUS))
import make_corpus  # noqa: E402


def _rows() -> list[dict[str, str]]:
    with open(CORPUS / "expected.tsv", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


ROWS = _rows()
HOSTILE_CHARS = ("\x1b", "\x07", "\u202e", "\u200b", "\u200d")


# --- inputs built at test time -------------------------------------------------------------

def _generated(cls: str, tmp: Path) -> tuple[list[str], str]:
    """(the paths given to dptrace, the source name whose sources row is checked)."""
    good = make_corpus.SAMBAFLOW
    if cls == "huge_single_line_100mb":
        p = tmp / "oneline.log"
        head, tail = good[:300], good[300:]
        cut = head.rindex(b"\n") + 1
        with open(p, "wb") as fh:
            fh.write(head[:cut])
            chunk = b"x" * (1 << 20)
            for _ in range(100):
                fh.write(chunk)
            fh.write(b"\n" + head[cut:] + tail)
        return [str(p)], str(p)
    if cls == "hostile_file_name":
        p = tmp / ("run" + make_corpus.HOSTILE + make_corpus.FORMULA.replace("/", "") + ".log")
        p.write_bytes(good)
        return [str(p)], str(p)
    if cls == "non_utf8_file_name":
        raw = os.fsencode(tmp) + b"/run-\xff\xfe.log"
        with open(raw, "wb") as fh:
            fh.write(good)
        return [os.fsdecode(raw)], os.fsdecode(raw)
    if cls == "fifo":
        p = tmp / "pipe.log"
        os.mkfifo(p)
        return [str(p)], str(p)
    if cls == "dangling_symlink":
        p = tmp / "gone.log"
        p.symlink_to(tmp / "nothing-here.log")
        return [str(p)], str(p)
    if cls == "symlink_loop_glob":
        d = tmp / "d"
        d.mkdir()
        (d / "good.log").write_bytes(good)
        (d / "loop").symlink_to(".")
        return [str(d / "**" / "*.log")], str(d / "good.log")
    if cls == "mode000_file":
        p = tmp / "secret.log"
        p.write_bytes(good)
        p.chmod(0)
        return [str(p)], str(p)
    if cls == "mode000_subdir":
        d = tmp / "d"
        (d / "locked").mkdir(parents=True)
        (d / "good.log").write_bytes(good)
        (d / "locked" / "r1.log").write_bytes(good)
        (d / "locked").chmod(0)
        return [str(d)], str(d / "good.log")
    raise AssertionError(f"no generator for {cls}")


# --- the extra checks named in the table's `check` column ----------------------------------

def _check(spec: str, ds: dptrace.Dataset, stdout: str, html: str, csv_dir: Path | None,
           name: str) -> None:
    if not spec:
        return
    kind, _, arg = spec.partition(":")
    if kind == "cut":   # cut:<table>.<col>=<value>@<line>: kept only when the line is flagged
        where, _, line = arg.partition("@")
        col_ref, _, value = where.partition("=")
        table, col = col_ref.split(".")
        df = ds[table]
        kept = df[df[col].astype("float64") == float(value)]
        flagged = set(ds.problems[ds.problems["source"] == name]["line"].dropna().astype(int))
        assert kept.empty or int(line) in flagged, (
            f"the cut value {value} was kept in {table}.{col} and line {line} is not flagged")
    elif kind == "na":   # na:<table>.<col>: the oversized value became missing, row kept
        table, col = arg.split(".")
        assert ds[table][col].isna().any(), f"no missing value in {table}.{col}"
    elif kind == "finite":   # finite:<table>.<col>: no inf stored
        table, col = arg.split(".")
        vals = ds[table][col].dropna().astype("float64")
        assert all(math.isfinite(v) for v in vals), f"inf stored in {table}.{col}"
    elif kind == "safe_output":
        for ch in HOSTILE_CHARS:
            assert ch not in stdout, f"raw {ch!r} reached the terminal report"
            assert ch not in html, f"raw {ch!r} reached the HTML"
        assert "<script>alert" not in html and "<img src=x" not in html
        assert csv_dir is not None
        for f in sorted(csv_dir.glob("*.csv")):
            with open(f, encoding="utf-8", newline="") as fh:
                for row in csv.reader(fh):
                    for cell in row:
                        assert not cell.startswith(("=", "@", "+")), (
                            f"{f.name}: a cell starts with a formula character: {cell[:40]!r}")
                        # control characters stay in CSV cells: an export keeps the data
                        # as read (README, "CLI"); only formulas are guarded
    else:
        raise AssertionError(f"unknown check {spec!r}")


# --- the test ------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


def _load_guarded(paths: list[str], fmt: str) -> dptrace.Dataset:
    def on_alarm(signum, frame):
        raise _Timeout(f"dptrace.load did not return within {LOAD_TIMEOUT} s (a hang)")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(LOAD_TIMEOUT)
    try:
        return dptrace.load(paths, format=fmt)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


#: classes whose ``dptrace`` commands run as a real process: an exit status through the
#: process (a usage error's 3), names shown through the process's own pipes (hostile and
#: non-UTF-8 file names), and a FIFO (a hang there is killed by the timeout, not the worker)
IN_A_PROCESS = {"empty", "hostile_file_name", "non_utf8_file_name", "fifo"}


class _Ran(NamedTuple):
    """What a ``dptrace`` command gave: its exit code and its output bytes."""

    returncode: int
    stdout: bytes
    stderr: bytes


class _CliTimeout(BaseException):   # not an Exception: main's last-resort handler lets it by
    pass


def _cli_process(args: list[str]) -> _Ran:
    code = "import sys; from dptrace.cli import main; sys.exit(main(sys.argv[1:]))"
    try:
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                              timeout=CLI_TIMEOUT, cwd=ROOT, env={**os.environ, "COLUMNS": "100"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"dptrace {' '.join(args[:1])} did not finish within {CLI_TIMEOUT} s "
                    "(a hang)")
    return _Ran(proc.returncode, proc.stdout, proc.stderr)


_STREAMS: list[tuple[str, str]] = []


def _process_streams() -> list[tuple[str, str]]:
    """(encoding, errors) of stdout and stderr in a Python process started as
    ``_cli_process`` starts one (same interpreter, environment and pipes), asked once."""
    if not _STREAMS:
        code = ("import sys; print(sys.stdout.encoding, sys.stdout.errors, "
                "sys.stderr.encoding, sys.stderr.errors)")
        words = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                               cwd=ROOT, env={**os.environ, "COLUMNS": "100"}).stdout.split()
        _STREAMS.extend([(words[0].decode(), words[1].decode()),
                         (words[2].decode(), words[3].decode())])
    return _STREAMS


def _cli_here(args: list[str], monkeypatch: pytest.MonkeyPatch) -> _Ran:
    """``dptrace ARGS`` as ``dptrace.cli.main`` in this process, as ``_cli_process`` runs it
    (cwd, COLUMNS, a timeout, stdout and stderr encoded as that process encodes them)."""
    (out_enc, out_err), (err_enc, err_err) = _process_streams()
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding=out_enc, errors=out_err, write_through=True)
    stderr = io.TextIOWrapper(err, encoding=err_enc, errors=err_err, write_through=True)

    def on_alarm(signum, frame):
        raise _CliTimeout(f"dptrace {' '.join(args[:1])} did not finish within {CLI_TIMEOUT} s "
                          "(a hang)")

    with monkeypatch.context() as m:
        m.chdir(ROOT)
        m.setenv("COLUMNS", "100")
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(CLI_TIMEOUT)
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(args)
            stdout.flush()
            stderr.flush()
        except _CliTimeout as exc:
            pytest.fail(str(exc))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    return _Ran(code, out.getvalue(), err.getvalue())


def _accepts(rule: str, n: int) -> bool:
    if rule.startswith(">="):
        return n >= int(rule[2:])
    return n == int(rule.lstrip("="))


@pytest.mark.parametrize("row", ROWS, ids=[r["class"] for r in ROWS])
def test_corpus_class(row: dict[str, str], tmp_path: Path, request,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    cls = row["class"]
    if cls.startswith("mode000") and os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    if row["known_failing"] and not os.environ.get("DPTRACE_CORPUS_STRICT"):
        request.applymarker(pytest.mark.xfail(strict=True, reason=row["known_failing"]))
    if row["file"] == "@generated":
        paths, focus = _generated(cls, tmp_path)
    else:
        focus = str(FILES / row["file"])
        paths = [focus]
    fmt = row["format"]

    ds = _load_guarded(paths, fmt)
    names = list(ds.sources["source"])
    if row["file"] != "@generated" or cls in ("fifo", "dangling_symlink", "hostile_file_name",
                                              "non_utf8_file_name", "mode000_file"):
        # names are shown as given, bytes that are not UTF-8 as U+FFFD (sources.display_name)
        assert names == [display_name(p) for p in paths], (
            f"one sources row per input expected, got {names}")
    assert display_name(focus) in names, f"no sources row for {focus!r}: {names}"
    assert len(set(names)) == len(names), f"a file was read twice: {names}"
    unknown_src = set(ds.problems["source"]) - set(names) - set(map(display_name, paths))
    assert not unknown_src, f"problems naming no input: {unknown_src}"
    src = ds.sources[ds.sources["source"] == display_name(focus)].iloc[0]
    assert src["status"] in row["status"].split("|"), (
        f"status {src['status']!r} ({src['message']}), expected {row['status']}")
    assert _accepts(row["rows"], int(src["rows"])), (
        f"rows {int(src['rows'])}, expected {row['rows']}")
    if row["problem"]:
        text = " | ".join([*ds.problems["message"].astype(str), str(src["message"])])
        assert re.search(row["problem"], text, re.I), (
            f"no problem matching /{row['problem']}/: {text[:500]}")

    def _cli(args: list[str]) -> _Ran:
        return _cli_process(args) if cls in IN_A_PROCESS else _cli_here(args, monkeypatch)

    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    proc = _cli(["report", *paths, "--format", fmt, "--json", str(out_json),
                 "--html", str(out_html), "--width", "100"])
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr[-2000:]
    assert str(proc.returncode) in row["exit"].split("|"), (
        f"exit code {proc.returncode}, expected {row['exit']}: {stderr[-500:]}")
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["exit_code"] == proc.returncode
    html = out_html.read_text(encoding="utf-8")
    assert html.rstrip().endswith("</html>")
    csv_dir = None
    if row["check"] == "safe_output":
        csv_dir = tmp_path / "csv"
        exp = _cli(["export", *paths, "--to", str(csv_dir), "--format", "csv"])
        assert exp.returncode in (0, 1), exp.stderr.decode("utf-8", "replace")[-500:]
    _check(row["check"], ds, proc.stdout.decode("utf-8", "replace"), html, csv_dir, focus)


def test_corpus_is_complete_and_small() -> None:
    """Every file in files/ is a class of the table, every class's file exists, each < 50 KB,
    and there are at least 30 classes."""
    assert len(ROWS) >= 30
    assert not IN_A_PROCESS - {r["class"] for r in ROWS}   # each still names a class
    listed = {r["file"] for r in ROWS if r["file"] != "@generated"}
    on_disk = {str(p.relative_to(FILES)) for p in FILES.rglob("*") if p.is_file()}
    assert listed == on_disk
    for p in FILES.rglob("*"):
        if p.is_file():
            assert p.stat().st_size < make_corpus.MAX_BYTES, p


def test_corpus_is_reproducible(tmp_path: Path) -> None:
    """make_corpus.py builds exactly the committed files (so the corpus cannot drift from the
    script that documents it)."""
    for k in make_corpus.classes():
        # compressors' bytes depend on the Python and library versions (gzip headers differ
        # between Python 3.10 and 3.11): those files must exist; their damage is what the
        # class tests check
        if k["file"] != "@generated" and not k["file"].endswith((".gz", ".bz2", ".xz")):
            assert (FILES / k["file"]).read_bytes() == k["data"], k["cls"]
        elif k["file"] != "@generated":
            assert (FILES / k["file"]).exists(), k["cls"]
