"""Issue 12 at the input layer: a bad file costs that file, never the report, and nothing
readable is dropped silently. Broken links, odd file names, unreadable directories, FIFOs,
symbolic-link loops, gzip bombs, damaged or misnamed compressed files, whitespace-only and
UTF-16 files (each test is the reproduction of one report)."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import mmap
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import loader
from dptrace.cli import main
from dptrace.errors import DptraceError
from dptrace.sources import NO_LIMIT, Source, expand, parse_size

FIXTURES = Path(__file__).parent / "fixtures" / "trainlog"
#: the SambaNova docs' data-parallel page (100 rows)
SAMBA = (FIXTURES / "ug_sn30_multinode_from_docs.md").read_bytes()
ROWS = 100
#: a DeepSpeed-Chat log of 1,472 rows on distinct lines (compresses evenly)
DSCHAT = (FIXTURES / "dschat_step1_opt1.3b_gbs128.log").read_bytes()
GOOD = b"0: e2e samples_per_sec: 563.9653143065\n1: e2e samples_per_sec: 613.7697389922524\n"
ROOT = os.geteuid() == 0


@contextlib.contextmanager
def deadline(seconds: int = 30) -> Iterator[None]:
    """Fail instead of hanging (a FIFO opened, a glob that never ends)."""
    def on_alarm(signum, frame):  # type: ignore[no-untyped-def]
        raise TimeoutError(f"did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _row(ds: dptrace.Dataset, name: str | Path) -> pd.Series:
    rows = ds.sources[ds.sources["source"] == str(name)]
    assert len(rows) == 1, ds.sources
    return rows.iloc[0]


def _messages(ds: dptrace.Dataset, severity: str | None = None) -> list[str]:
    p = ds.problems
    if severity:
        p = p[p["severity"] == severity]
    return p["message"].tolist()


def _rows_of(data: bytes, tmp_path: Path, name: str = "clean.log") -> int:
    (tmp_path / name).write_bytes(data)
    return int(_row(dptrace.load(tmp_path / name), tmp_path / name)["rows"])


# --- links, names, permissions, special files ------------------------------------------------

def test_dangling_symlink_in_a_directory_is_one_row_and_the_rest_is_parsed(tmp_path):
    (tmp_path / "good.log").write_bytes(SAMBA)
    (tmp_path / "gone.log").symlink_to(tmp_path / "purged" / "r1.log")
    ds = dptrace.load(tmp_path)
    assert len(ds.sources) == 2
    gone = _row(ds, tmp_path / "gone.log")
    assert gone["status"] == "failed"
    assert gone["message"].startswith(f"broken symbolic link -> {tmp_path / 'purged' / 'r1.log'}")
    assert _row(ds, tmp_path / "good.log")["rows"] == ROWS
    assert main(["report", str(tmp_path)]) == 1


def test_dangling_symlink_named_on_its_own_is_one_row(tmp_path):
    (tmp_path / "good.log").write_bytes(SAMBA)
    (tmp_path / "gone.log").symlink_to("nothing-here.log")
    ds = dptrace.load([tmp_path / "good.log", tmp_path / "gone.log"])
    assert ds.sources["source"].tolist() == [str(tmp_path / "good.log"),
                                             str(tmp_path / "gone.log")]
    gone = _row(ds, tmp_path / "gone.log")
    assert gone["status"] == "failed" and "broken symbolic link -> nothing-here.log" in \
        gone["message"]
    assert pd.isna(gone["size_bytes"])
    assert any("broken symbolic link" in m for m in _messages(ds, "error"))


def test_file_name_that_is_not_utf8_loads_and_exports(tmp_path):
    (tmp_path / "run").mkdir()
    raw = os.fsencode(tmp_path) + b"/run/caf\xe9.out"
    with open(raw, "wb") as fh:
        fh.write(SAMBA)
    shown = str(tmp_path / "run" / "caf\ufffd.out")
    for arg in (tmp_path / "run", os.fsdecode(raw), raw):
        ds = dptrace.load(arg)
        assert ds.sources["source"].tolist() == [shown]
        assert ds.sources["rows"].tolist() == [ROWS]
        assert set(ds["throughput"]["source"]) == {shown}
    for fmt in ("csv", "parquet", "json"):
        out = tmp_path / f"out-{fmt}"
        assert main(["export", str(tmp_path / "run"), "--to", str(out), "--format", fmt]) == 0
    assert pd.read_parquet(tmp_path / "out-parquet" / "sources.parquet")["source"].tolist() \
        == [shown]


def test_undecodable_bytes_in_a_problem_message_are_stored(tmp_path):
    raw = os.fsencode(tmp_path) + b"/gone-\xff.log"
    os.symlink(b"target-\xfe", raw)
    ds = dptrace.load(tmp_path)
    assert "target-\ufffd" in _row(ds, tmp_path / "gone-\ufffd.log")["message"]


def _deny(monkeypatch: pytest.MonkeyPatch, name: str, denied: Path) -> None:
    """Make ``os.<name>`` fail with EACCES on ``denied`` and below (root reads anything)."""
    real = getattr(os, name)

    def fake(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
        if text == str(denied) or text.startswith(str(denied) + os.sep):
            raise PermissionError(13, "Permission denied", text)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, fake)


def test_file_in_a_directory_that_cannot_be_searched_costs_only_that_file(tmp_path,
                                                                           monkeypatch):
    (tmp_path / "good.log").write_bytes(SAMBA)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "r1.log").write_bytes(SAMBA)
    _deny(monkeypatch, "stat", tmp_path / "locked")
    ds = dptrace.load([tmp_path / "good.log", tmp_path / "locked" / "r1.log"])
    assert _row(ds, tmp_path / "good.log")["rows"] == ROWS
    locked = _row(ds, tmp_path / "locked" / "r1.log")
    assert locked["status"] == "failed" and "permission denied" in locked["message"]
    assert main(["report", str(tmp_path / "good.log"), str(tmp_path / "locked" / "r1.log")]) == 1


def test_unlistable_subdirectory_is_an_error_not_silence(tmp_path, monkeypatch):
    d = tmp_path / "run"
    (d / "locked").mkdir(parents=True)
    (d / "good.log").write_bytes(SAMBA)
    (d / "locked" / "r1.log").write_bytes(SAMBA)
    _deny(monkeypatch, "scandir", d / "locked")
    ds = dptrace.load(d)
    assert _row(ds, d / "good.log")["rows"] == ROWS
    errors = ds.problems[ds.problems["severity"] == "error"]
    assert errors["source"].tolist() == [str(d)]
    assert f"{d / 'locked'}: cannot list this directory (Permission denied)" in \
        errors["message"].item()
    assert ds.skipped


@pytest.mark.skipif(ROOT, reason="root reads files whatever their mode")
def test_real_mode_000_directories(tmp_path):
    d = tmp_path / "run"
    (d / "locked").mkdir(parents=True)
    (d / "good.log").write_bytes(SAMBA)
    (d / "locked" / "r1.log").write_bytes(SAMBA)
    (d / "locked").chmod(0)
    try:
        ds = dptrace.load(d)
        assert _row(ds, d / "good.log")["rows"] == ROWS
        assert any("locked: cannot list this directory" in m for m in _messages(ds, "error"))
        ds = dptrace.load([d / "good.log", d / "locked" / "r1.log"])
        assert _row(ds, d / "locked" / "r1.log")["status"] == "failed"
        assert _row(ds, d / "good.log")["rows"] == ROWS
    finally:
        (d / "locked").chmod(0o755)


def test_fifo_in_a_directory_is_skipped_and_never_opened(tmp_path, monkeypatch):
    (tmp_path / "good.log").write_bytes(SAMBA)
    os.mkfifo(tmp_path / "pipe.log")
    opened: list[str] = []
    real_open = os.open

    def spy(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(os.fsdecode(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    with deadline():
        ds = dptrace.load(tmp_path)
    assert str(tmp_path / "pipe.log") not in opened
    pipe = _row(ds, tmp_path / "pipe.log")
    assert pipe["status"] == "skipped" and "FIFO" in pipe["message"]
    info = ds.problems[ds.problems["source"] == str(tmp_path / "pipe.log")]
    assert info["severity"].tolist() == ["info"]
    assert _row(ds, tmp_path / "good.log")["rows"] == ROWS
    assert not ds.skipped


def test_fifo_named_on_its_own_fails_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")
    with deadline():
        ds = dptrace.load(tmp_path / "pipe.log")
    pipe = _row(ds, tmp_path / "pipe.log")
    assert pipe["status"] == "failed" and "not a regular file" in pipe["message"]


def test_glob_over_symbolic_link_loops_ends_and_reads_each_file_once(tmp_path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "good.log").write_bytes(SAMBA)
    (d / "sub" / "r1.log").write_bytes(SAMBA)
    (d / "loop1").symlink_to(".")            # two loops in one directory: 2^40 paths for glob
    (d / "loop2").symlink_to(".")
    (d / "sub" / "up").symlink_to("..")
    for arg in (f"{d}/**", f"{d}/**/*.log", str(d)):
        with deadline():
            ds = dptrace.load(arg)
        assert ds.sources["source"].tolist() == [str(d / "good.log"), str(d / "sub" / "r1.log")]
        notes = ds.problems[ds.problems["severity"] == "info"]
        assert len(notes) == 3, notes
        assert set(notes["source"]) == {arg}
        assert all("symbolic link loop" in m for m in notes["message"])


def test_symbolic_links_to_directories_are_followed_once(tmp_path):
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "r1.log").write_bytes(SAMBA)
    run = tmp_path / "run"
    run.mkdir()
    (run / "good.log").write_bytes(SAMBA)
    (run / "logs").symlink_to(tmp_path / "scratch")       # data kept on scratch
    (run / "also").symlink_to(tmp_path / "scratch")       # a second name for it
    ds = dptrace.load(run)
    assert sorted(ds.sources["source"]) == [str(run / "also" / "r1.log"), str(run / "good.log")]
    assert any("the same directory as" in m for m in _messages(ds, "info"))


def test_expansion_stats_no_file_of_a_directory(tmp_path, monkeypatch):
    for i in range(50):
        (tmp_path / f"r{i}.log").write_bytes(GOOD)
    calls: list[str] = []
    real = os.stat

    def counting(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(os.fsdecode(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    sources, _ = expand(tmp_path)
    assert len(sources) == 50
    assert calls == [str(tmp_path)]


# --- compressed inputs -------------------------------------------------------------------------

def test_gzip_bomb_is_cut_at_the_limit_and_the_start_parsed(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.out.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        fh.write(SAMBA)
        fh.write(b"x" * 80 + b"\n")
        for _ in range(64):
            fh.write(b" " * (1 << 20))     # 64 MB of spaces: 64 KB on disk
    assert bomb.stat().st_size < 1 << 20
    ds = dptrace.load(bomb, max_decompressed="1M")
    row = _row(ds, bomb)
    assert row["status"] == "partial" and row["rows"] == ROWS
    cut = [m for m in _messages(ds, "error") if "limit" in m]
    assert len(cut) == 1 and "cut at 1,048,576 bytes" in cut[0]
    assert "--max-decompressed" in cut[0] and "DPTRACE_MAX_DECOMPRESSED" in cut[0]
    monkeypatch.setenv("DPTRACE_MAX_DECOMPRESSED", "2M")
    ds = dptrace.load(bomb)
    assert any("cut at 2,097,152 bytes" in m for m in _messages(ds, "error"))
    assert main(["report", str(bomb), "--max-decompressed", "512K"]) == 1
    ds = dptrace.load(bomb, max_decompressed=0)       # 0: no limit
    assert _row(ds, bomb)["status"] == "ok"


def test_limit_applies_to_streaming_readers_too(tmp_path):
    timeline = Path(__file__).parent / "fixtures" / "horovod" / "alcfws_timeline_gpu_n1.json"
    gz = tmp_path / "timeline.json.gz"
    gz.write_bytes(gzip.compress(timeline.read_bytes(), mtime=0))
    ds = dptrace.read_horovod(gz, max_decompressed=300_000)
    row = _row(ds, gz)
    assert row["status"] == "partial" and row["rows"] > 0
    assert any("cut at 300,000 bytes" in m for m in _messages(ds, "error"))


def test_bad_limits_are_usage_errors(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.log").write_bytes(GOOD)
    with pytest.raises(DptraceError):
        dptrace.load(tmp_path, max_decompressed="lots")
    with pytest.raises(SystemExit) as exc:
        main(["report", str(tmp_path), "--max-decompressed", "lots"])
    assert exc.value.code == 2
    monkeypatch.setenv("DPTRACE_MAX_DECOMPRESSED", "-3")
    assert main(["report", str(tmp_path)]) == 2
    assert "DPTRACE_MAX_DECOMPRESSED" in capsys.readouterr().err


def test_sizes():
    assert parse_size("16G") == 16 << 30
    assert parse_size("512 MiB") == 512 << 20
    assert parse_size("1.5k") == 1536
    assert parse_size("1000000") == 1_000_000
    assert parse_size("0") == parse_size("none") == NO_LIMIT
    with pytest.raises(ValueError):
        parse_size("12 apples")


def test_large_decompressed_content_is_one_memory_map_not_a_joined_copy(tmp_path):
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(DSCHAT * 40, mtime=0))      # 12 MB inflated
    src = Source(str(gz), gz)
    with src.buffer([]) as buf:
        assert isinstance(buf, mmap.mmap)
        assert len(buf) == len(DSCHAT) * 40
        assert buf[: 1 << 16] == DSCHAT[: 1 << 16] and buf[-100:] == DSCHAT[-100:]


@pytest.mark.parametrize("kind", ["gz", "xz", "bz2"])
def test_flipped_byte_keeps_the_rows_before_the_damage(kind, tmp_path):
    data = DSCHAT
    clean = _rows_of(data, tmp_path)
    packed = bytearray({"gz": lambda d: gzip.compress(d, mtime=0), "xz": lzma.compress,
                        "bz2": lambda d: bz2.compress(d, compresslevel=1)}[kind](data))
    packed[len(packed) * 9 // 10] ^= 0xFF
    path = tmp_path / f"flip.log.{kind}"
    path.write_bytes(packed)
    ds = dptrace.load(path)
    row = _row(ds, path)
    assert row["status"] == "partial"
    assert clean // 2 < row["rows"] <= clean
    damage = ds.problems[ds.problems["message"].str.startswith(
        f"{kind} stream is truncated or corrupt: damaged data")]
    assert len(damage) == 1 and damage["line"].notna().all()
    # what was kept is what the clean file says, line for line
    good = dptrace.load(tmp_path / "clean.log")["throughput"]
    kept = ds["throughput"]
    before = kept[kept["lineno"] < damage["line"].item() - 50]
    assert len(before) > 0
    merged = before.merge(good, on=["lineno", "name"], suffixes=("", "_clean"))
    assert len(merged) == len(before) and (merged["value"] == merged["value_clean"]).all()


def test_bz2_damage_drops_the_scrambled_block_whole(tmp_path):
    data = DSCHAT * 3
    packed = bytearray(bz2.compress(data, compresslevel=1))
    packed[len(packed) * 9 // 10] ^= 0xFF
    path = tmp_path / "flip.log.bz2"
    path.write_bytes(packed)
    src = Source(str(path), path)
    out = src.read_all()
    assert out and data.startswith(out)          # no scrambled byte was given out


def test_truncated_bz2_says_why_nothing_came_out(tmp_path):
    packed = bz2.compress(DSCHAT)
    path = tmp_path / "cut.log.bz2"
    path.write_bytes(packed[: len(packed) * 3 // 4])
    ds = dptrace.load(path)
    row = _row(ds, path)
    assert row["status"] == "failed"
    assert row["message"].startswith("bz2 stream truncated before its first block ended: "
                                     "nothing could be decompressed")
    assert "empty file" not in " ".join(_messages(ds))


def test_plain_text_named_gz_is_read_as_plain_text(tmp_path):
    path = tmp_path / "log.out.gz"
    path.write_bytes(SAMBA)
    ds = dptrace.load(path)
    row = _row(ds, path)
    assert row["status"] == "ok" and row["rows"] == ROWS
    assert _messages(ds, "warning") == ["not gzip data although named .gz: read as plain text"]


def test_gzip_members_padding_and_trailing_junk(tmp_path):
    path = tmp_path / "log.out.gz"
    path.write_bytes(gzip.compress(SAMBA[:1000], mtime=0) + gzip.compress(SAMBA[1000:], mtime=0)
                     + b"\0" * 512)
    assert Source(str(path), path).read_all() == SAMBA
    path.write_bytes(gzip.compress(SAMBA, mtime=0) + b"junk from a copy")
    ds = dptrace.load(path)
    assert _row(ds, path)["rows"] == ROWS
    assert _messages(ds, "warning") == ["16 bytes after the end of the gz stream are not gzip "
                                        "data: ignored"]


# --- text ---------------------------------------------------------------------------------------

def test_whitespace_only_file_has_a_problem_row(tmp_path):
    path = tmp_path / "blank.log"
    path.write_bytes(b" \n\t\n   \r\n" * 20)
    ds = dptrace.load(path)
    assert _row(ds, path)["status"] == "unknown"
    assert _messages(ds, "error") == ["skipped: empty file: only whitespace (180 bytes of "
                                      "spaces, tabs and newlines)"]
    (tmp_path / "good.log").write_bytes(SAMBA)
    ds = dptrace.load(tmp_path)                 # in a directory: skipped, noted once
    assert _row(ds, path)["status"] == "skipped"
    assert ds.problems["severity"].tolist() == ["info"]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_log_with_a_bom_is_transcoded(encoding, tmp_path):
    text = SAMBA.decode("utf-8").replace("\n", "\r\n")          # PowerShell: CRLF too
    bom = b"\xff\xfe" if encoding.endswith("le") else b"\xfe\xff"
    path = tmp_path / "slurm.out"
    path.write_bytes(bom + text.encode(encoding))
    gz = tmp_path / "slurm2.out.gz"
    gz.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    for p in (path, gz):
        ds = dptrace.load(p)
        row = _row(ds, p)
        assert row["status"] == "ok" and row["rows"] == ROWS, row
        warn = _messages(ds, "warning")
        assert len(warn) == 1 and warn[0].startswith(f"UTF-16 {encoding[-2:].upper()} text")
        assert "transcoded to UTF-8" in warn[0]
    src = Source(str(path), path)
    assert src.head().startswith(SAMBA[:20])
    assert not src.plain


def test_utf8_bom_is_dropped_quietly(tmp_path):
    path = tmp_path / "slurm.out"
    path.write_bytes(b"\xef\xbb\xbf" + SAMBA)
    ds = dptrace.load(path)
    assert _row(ds, path)["rows"] == ROWS and ds.problems.empty
    assert Source(str(path), path).read_all() == SAMBA


# --- time ---------------------------------------------------------------------------------------

def test_slow_inputs_are_named(tmp_path, monkeypatch):
    (tmp_path / "good.log").write_bytes(SAMBA)
    monkeypatch.setattr(loader, "SLOW_INPUT_S", 0.0)
    ds = dptrace.load(tmp_path / "good.log")
    assert _row(ds, tmp_path / "good.log")["status"] == "ok"
    info = _messages(ds, "info")
    assert len(info) == 1 and info[0].startswith("took ") and info[0].endswith(
        " s to read and parse")
