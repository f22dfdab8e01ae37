"""Bad input never crashes a report: it becomes a problem naming the file (and line)."""

import bz2
import gzip
import lzma
from pathlib import Path

import dptrace
from dptrace.cli import main

GOOD = b"0: e2e samples_per_sec: 563.9653143065\n1: e2e samples_per_sec: 613.7697389922524\n"


def _problems(ds, name):
    return ds.problems[ds.problems["source"].str.endswith(name)]


def test_empty_file(tmp_path):
    (tmp_path / "empty.out").write_bytes(b"")
    ds = dptrace.load(tmp_path / "empty.out")
    row = ds.sources.iloc[0]
    assert row["status"] == "unknown"
    assert "empty file" in _problems(ds, "empty.out")["message"].item()


def test_binary_file_is_skipped_with_reason(tmp_path):
    (tmp_path / "core.123").write_bytes(bytes(range(256)) * 64)
    ds = dptrace.load(tmp_path / "core.123")
    assert ds.sources["status"].item() == "unknown"
    assert "binary" in ds.problems["message"].item()


def test_undecodable_bytes_keep_numbers(tmp_path):
    text = "caf\xe9 latin-1 noise\n0: e2e samples_per_sec: 563.5 \xb5s\n".encode("latin-1")
    (tmp_path / "latin1.out").write_bytes(text)
    ds = dptrace.load(tmp_path / "latin1.out")
    assert ds["throughput"]["value"].tolist() == [563.5]
    prob = _problems(ds, "latin1.out")
    assert prob["line"].tolist() == [2] and "UTF-8" in prob["message"].item()


def test_truncated_last_line_is_parsed_and_flagged(tmp_path):
    (tmp_path / "killed.out").write_bytes(GOOD + b"2: e2e samples_per_sec: 60 samples")
    ds = dptrace.load(tmp_path / "killed.out")
    assert ds["throughput"]["value"].tolist()[-1] == 60.0
    prob = _problems(ds, "killed.out")
    assert prob["line"].tolist() == [3]
    assert "newline" in prob["message"].item()


def test_number_cut_by_the_end_of_the_file_is_dropped(tmp_path):
    # '60' may be what is left of 603.3: never kept as a value (issue 12)
    (tmp_path / "killed.out").write_bytes(GOOD + b"2: e2e samples_per_sec: 60")
    ds = dptrace.load(tmp_path / "killed.out")
    assert 60.0 not in ds["throughput"]["value"].tolist()
    prob = _problems(ds, "killed.out")
    assert prob["line"].tolist() == [3] and prob["severity"].item() == "error"
    assert "newline" in prob["message"].item()


def test_huge_line_without_newline(tmp_path):
    big = tmp_path / "oneline.out"
    with open(big, "wb") as fh:
        fh.write(GOOD)
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            fh.write(chunk)
        fh.write(b" e2e samples_per_sec: 777.0 ")
        for _ in range(50):
            fh.write(chunk)
    ds = dptrace.load(big)
    assert ds["throughput"]["value"].tolist() == [563.9653143065, 613.7697389922524, 777.0]
    msgs = " ".join(_problems(ds, "oneline.out")["message"])
    assert "without a newline" in msgs


def test_unknown_format_with_others_still_reported(tmp_path, capsys):
    (tmp_path / "good.out").write_bytes(GOOD)
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (tmp_path / "empty.log").write_bytes(b"")
    code = main(["report", str(tmp_path), "--width", "120"])
    out = capsys.readouterr().out
    assert code == 0  # found in a directory: listed as skipped, not a failure
    assert "588.87" in out  # mean of 563.97 and 613.77 (SambaNova), the good file reported
    assert "blob.bin" in out and "binary" in out
    assert "empty.log" in out
    # named on their own, they are failures
    assert main(["report", str(tmp_path / "good.out"), str(tmp_path / "blob.bin")]) == 1


def test_missing_path_is_a_problem(tmp_path):
    ds = dptrace.load([tmp_path / "nope.out"])
    assert ds.problems["severity"].item() == "error"
    assert "no such file" in ds.problems["message"].item()


def test_text_without_records_is_empty_not_ok(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing to see here\n")
    ds = dptrace.load(tmp_path / "notes.txt")
    assert ds.sources["status"].item() == "empty"
    assert main(["report", str(tmp_path / "notes.txt")]) == 3


def test_compressed_inputs(tmp_path):
    for opener, ext in ((gzip.open, "gz"), (bz2.open, "bz2"), (lzma.open, "xz")):
        with opener(tmp_path / f"slurm-1.out.{ext}", "wb") as fh:
            fh.write(GOOD)
    ds = dptrace.load(str(tmp_path / "*.out.*"))
    assert sorted(ds.sources["format"]) == ["trainlog"] * 3
    assert len(ds["throughput"]) == 6


def test_truncated_gzip(tmp_path):
    data = gzip.compress(GOOD * 1000)
    (tmp_path / "cut.out.gz").write_bytes(data[: len(data) // 2])
    ds = dptrace.load(tmp_path / "cut.out.gz")
    assert ds.sources["status"].item() == "partial"
    msgs = ds.problems["message"].tolist()
    assert any("gz stream is truncated" in m for m in msgs), msgs
    # what was decompressed before the cut is kept
    assert 0 < len(ds["throughput"]) < 2000


def test_parser_crash_is_contained(tmp_path, monkeypatch):
    from dptrace.formats.trainlog import read as trainlog

    def boom(text, rows):
        raise ValueError("synthetic bug")

    monkeypatch.setattr(trainlog.rules, "SPECIFIC", ((("e2e",), boom),))
    (tmp_path / "a.out").write_bytes(GOOD)
    ds = dptrace.load(tmp_path / "a.out")
    assert ds.sources["status"].item() == "failed"
    assert "synthetic bug" in ds.problems["message"].item()


def test_directory_recursion_skips_hidden(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub" / "r0.log").write_bytes(GOOD)
    (tmp_path / ".git" / "x.log").write_bytes(GOOD)
    ds = dptrace.load(tmp_path)
    assert ds.sources["source"].tolist() == [str(tmp_path / "sub" / "r0.log")]
