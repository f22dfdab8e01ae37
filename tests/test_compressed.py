"""Compressed inputs (issue 30, "gz event bomb"; issue 32, "compressed inputs inflate into
memory"): a ``.gz``/``.bz2``/``.xz`` input gives the rows of the same file plain, by each of
the three routes of :class:`dptrace.sources.Source` (a stream, a mapped temporary file, the
bytes), its decompressed content never held twice, and the decompression limit, whose
default is set per route from its readers' peak memory, cuts it with a problem naming the
file, the bytes and how to raise the limit. Timings are in benchmarks/bench_compressed.py,
never here.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import sources
from dptrace.sources import Source

FIXTURES = Path(__file__).parent / "fixtures"
COMPRESS = {".gz": lambda b: gzip.compress(b, mtime=0), ".bz2": bz2.compress,
            ".xz": lzma.compress}
#: one real file per reader, each read by the route its reader takes
REAL = [
    "trainlog/dschat_step1_opt1.3b_gbs128.log",                     # buffer (map)
    "trainlog/megatron_ds_gpt3_125M_8gpu.log",                      # buffer, with NCCL lines
    "nccl/polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log",  # buffer
    "mllog/mlperf1.0_nv_bert_pytorch_n1_8gpu.txt",                  # buffer
    "dscomms/deepspeed_comms_logging_tutorial_from_docs.md",        # buffer
    "nccltests/polaris_nccltests_allreduce_n2x4gpu.dat",            # buffer
    "sntilestat/ug_sn30_miscellaneous_idle_from_docs.md",           # buffer
    "horovod/alcfws_timeline_gpu_n1.json",                          # stream
    "torchtrace/one_step/rank0.pt.trace.json",                      # stream
    "mpitrace/alcfws_theta_knl16_mpi_profile.75877.0",              # bytes (read_all)
]


def _tables(ds: dptrace.Dataset) -> dict[str, pd.DataFrame]:
    """Every table but those that name the input, without its name."""
    out = {}
    for name in ds.tables:
        if name in ("sources", "problems"):
            continue
        df = ds[name].drop(columns=[c for c in ("source", "run") if c in ds[name].columns])
        out[name] = df.reset_index(drop=True)
    return out


def _messages(ds: dptrace.Dataset, severity: str | None = None) -> list[str]:
    p = ds.problems
    if severity:
        p = p[p["severity"] == severity]
    return [str(m) for m in p["message"]]


def _row(ds: dptrace.Dataset, path: Path) -> pd.Series:
    rows = ds.sources[ds.sources["source"] == str(path)]
    assert len(rows) == 1, ds.sources
    return rows.iloc[0]


def _same(plain: dptrace.Dataset, packed: dptrace.Dataset) -> None:
    a, b = _tables(plain), _tables(packed)
    assert a.keys() == b.keys()
    assert sum(len(df) for df in a.values()) > 0
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_categorical=False, obj=name)
    assert list(plain.sources["status"]) == list(packed.sources["status"])
    assert list(plain.sources["rows"]) == list(packed.sources["rows"])


def _copy(tmp_path: Path, rel: str, suffix: str = "") -> Path:
    """The fixture under its own name in ``tmp_path`` (compressed with ``suffix``), so the
    plain and compressed copies make runs of the same name."""
    data = (FIXTURES / rel).read_bytes()
    d = tmp_path / suffix.lstrip(".") if suffix else tmp_path / "plain"
    d.mkdir(exist_ok=True)
    out = d / (Path(rel).name + suffix)
    out.write_bytes(COMPRESS[suffix](data) if suffix else data)
    return out


@pytest.fixture
def spill_everything(monkeypatch):
    """Every compressed content of the buffer route goes to a temporary file, as one over
    8 MB (``_SPILL``) and past what detection reads (16 MB) would: not only the large
    ones, nor a small content kept whole by :meth:`Source.head`."""
    monkeypatch.setattr(sources, "_SPILL", 1)
    head = Source.head

    def head_kept_not(self, n=sources.HEAD_BYTES):  # type: ignore[no-untyped-def]
        data = head(self, n)
        self._whole.clear()
        return data

    monkeypatch.setattr(Source, "head", head_kept_not)


@pytest.mark.parametrize("rel", REAL, ids=[Path(r).name for r in REAL])
def test_a_gzipped_real_file_gives_the_rows_of_the_plain_file(rel, tmp_path, spill_everything):
    plain = dptrace.load(_copy(tmp_path, rel))
    _same(plain, dptrace.load(_copy(tmp_path, rel, ".gz")))


@pytest.mark.parametrize("suffix", [".bz2", ".xz"])
@pytest.mark.parametrize("rel", [REAL[1], REAL[7]], ids=["trainlog", "horovod"])
def test_bz2_and_xz_give_the_rows_of_the_plain_file(rel, suffix, tmp_path, spill_everything):
    plain = dptrace.load(_copy(tmp_path, rel))
    _same(plain, dptrace.load(_copy(tmp_path, rel, suffix)))


def test_without_a_temporary_file_the_content_is_held_in_memory(tmp_path, monkeypatch,
                                                                spill_everything):
    monkeypatch.setattr(sources._Spill, "make", classmethod(lambda cls: None))
    rel = REAL[1]
    plain = dptrace.load(_copy(tmp_path, rel))
    _same(plain, dptrace.load(_copy(tmp_path, rel, ".gz")))


def test_the_content_is_decompressed_once_for_all_the_formats_that_read_it(
        tmp_path, monkeypatch, spill_everything):
    """A training log with NCCL lines is read by two formats; the mapped temporary file is
    made once and removed when the source is done (no file descriptor left open)."""
    routes = []
    real = Source._content

    def counting(self, route="stream"):  # type: ignore[no-untyped-def]
        routes.append(route)
        return real(self, route)

    monkeypatch.setattr(Source, "_content", counting)
    monkeypatch.setenv(sources.TMPDIR_ENV, str(tmp_path))
    gz = _copy(tmp_path, "trainlog/megatron_ds_gpt3_125M_8gpu.log", ".gz")
    before = set(os.listdir("/proc/self/fd"))
    made = []
    make = sources._Spill.make.__func__   # type: ignore[attr-defined]

    def recording(cls):  # type: ignore[no-untyped-def]
        spill = make(cls)
        made.append(spill)
        return spill

    monkeypatch.setattr(sources._Spill, "make", classmethod(recording))
    ds = dptrace.load(gz)
    assert {"throughput", "nccl_setup"} <= set(ds.tables)
    assert len(made) == 1 and made[0].where == str(tmp_path)
    assert made[0].fd is None                      # closed by forget()
    # the first bytes for detection, then the whole content once: the companions map the
    # same file
    assert routes.count("map") == 1 and set(routes) == {"head", "map"}, routes
    assert set(os.listdir("/proc/self/fd")) <= before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gz"]   # nothing left behind


def test_a_full_disk_goes_on_in_memory_with_a_warning(tmp_path, monkeypatch, spill_everything):
    """The temporary file's disk fills up after 1 MiB: what was written comes back from it,
    the rest of the content goes on in memory, every row is read, a warning says so."""
    import errno

    real = sources._Spill._write

    def full(self, data):  # type: ignore[no-untyped-def]
        """A disk with 1 MiB of room."""
        room = (1 << 20) - self.size
        real(self, data[:max(room, 0)])
        if len(data) > room:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sources, "_WRITE", 300_000)   # a write across the disk's end
    monkeypatch.setattr(sources._Spill, "_write", full)
    log = (FIXTURES / "trainlog/dschat_step1_opt1.3b_gbs128.log").read_bytes() * 8
    plain = tmp_path / "big.log"
    plain.write_bytes(log)                            # 2.5 MB of log
    gz = tmp_path / "gz" / "big.log.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(log, mtime=0))
    ds = dptrace.load(gz)
    _same(dptrace.load(plain), ds)
    msg = [m for m in _messages(ds, "warning") if "no room" in m]
    assert len(msg) == 1 and "No space left on device" in msg[0]
    assert "after 1,048,576 bytes: held in memory instead" in msg[0]
    assert sources.TMPDIR_ENV in msg[0]
    assert not _messages(ds, "error")


# --- the limit ----------------------------------------------------------------------------

def _bomb(tmp_path: Path, copies: int = 40_000) -> tuple[Path, int]:
    """The gz event bomb of issue 30, small: a real torch trace whose events are copies of
    one of its real events (the gloo:all_reduce annotation)."""
    trace = (FIXTURES / "torchtrace/one_step/rank0.pt.trace.json").read_bytes()
    m = re.search(rb'"traceEvents"\s*:\s*\[\s*', trace)
    assert m
    at = trace.index(b'"name": "gloo:all_reduce"')
    start = trace.rindex(b"\n  {", 0, at) + 3
    event = trace[start:trace.index(b"\n  }", at) + 4]
    close = trace.rindex(b"]", 0, trace.rindex(b'"traceName"'))
    body = trace[:m.end()] + (event + b",\n") * (copies - 1) + event + b"\n" + trace[close:]
    path = tmp_path / "bomb.pt.trace.json.gz"
    path.write_bytes(gzip.compress(body, 9, mtime=0))
    return path, len(body)


def test_the_event_bomb_is_cut_at_the_limit_with_the_numbers(tmp_path):
    bomb, size = _bomb(tmp_path)
    assert bomb.stat().st_size * 100 < size      # a bomb: 100x and more
    whole = dptrace.load(bomb, max_decompressed=0)
    assert _row(whole, bomb)["status"] == "ok"
    n = len(whole["torch_events"])
    assert n >= 40_000
    ds = dptrace.load(bomb, max_decompressed="2M")
    row = _row(ds, bomb)
    assert row["status"] == "partial" and 0 < row["rows"] < n
    errors = [p for p in ds.problems.itertuples() if "cut at" in str(p.message)]
    assert len(errors) == 1 and errors[0].source == str(bomb) and errors[0].severity == "error"
    # the reader's own word on the cut record names the limit, not a killed job
    ends = [str(p.message) for p in ds.problems.itertuples() if "ends inside" in str(p.message)]
    assert ends and all("decompression limit" in m and "killed" not in m for m in ends), ends
    msg = str(errors[0].message)
    assert "limit of 2 MiB" in msg and "cut at 2,097,152 bytes decompressed" in msg
    assert f"of its {bomb.stat().st_size:,} compressed bytes" in msg
    assert "--max-decompressed" in msg and sources.MAX_DECOMPRESSED_ENV in msg
    assert "0 means no limit" in msg


def test_the_default_limit_comes_from_the_route_and_says_so(tmp_path, monkeypatch):
    """The default is half the available memory over the route's peak per byte: a stream
    read into tables gets a lower one than a mapped file; the message says where it came
    from."""
    monkeypatch.delenv(sources.MAX_DECOMPRESSED_ENV, raising=False)
    monkeypatch.setattr(sources, "_mem_available", lambda: 64 << 30)
    stream, mapped = (sources.default_max_decompressed(r) for r in ("stream", "map"))
    assert stream == int((32 << 30) / sources.PEAK_PER_BYTE["stream"])
    assert mapped == 16 << 30 and stream < mapped
    monkeypatch.setattr(sources, "MIN_DEFAULT_DECOMPRESSED", 1)
    monkeypatch.setattr(sources, "_mem_available", lambda: 10 << 20)   # 10 MiB free
    bomb, size = _bomb(tmp_path)
    ds = dptrace.load(bomb)
    cap = int((5 << 20) / sources.PEAK_PER_BYTE["stream"])
    msg = [m for m in _messages(ds, "error") if "cut at" in m]
    assert len(msg) == 1 and f"cut at {cap:,} bytes decompressed" in msg[0]
    assert "the default: half the 10 MiB of memory available" in msg[0]
    assert "read as a stream" in msg[0]
    # the same content mapped (a training log) has the map route's default
    # past what detection reads (16 MB), which no default limit (256 MiB and more) cuts
    log = (FIXTURES / "trainlog/dschat_step1_opt1.3b_gbs128.log").read_bytes() * 60
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(log, mtime=0))
    ds = dptrace.load(gz)
    cap = int((5 << 20) / sources.PEAK_PER_BYTE["map"])
    msg = [m for m in _messages(ds, "error") if "cut at" in m]
    assert len(msg) == 1 and f"cut at {cap:,} bytes decompressed" in msg[0]
    assert "temporary file" in msg[0]


def test_a_reader_can_tell_a_cut_at_the_limit_from_a_cut_file(tmp_path):
    bomb, _ = _bomb(tmp_path)
    src = Source(str(bomb), bomb, max_decompressed=1 << 20)
    with src.open() as fh:
        assert len(fh.read()) == 1 << 20
    assert src.cut_short() == "limit"
    data = bomb.read_bytes()
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    src = Source(str(cut), cut)
    with src.open() as fh:
        fh.read()
    assert src.cut_short() == "damage"
    whole = Source(str(bomb), bomb)
    with whole.open() as fh:
        fh.read()
    assert whole.cut_short() is None


def test_a_limit_from_the_environment_is_the_limit_of_every_route(tmp_path, monkeypatch):
    monkeypatch.setenv(sources.MAX_DECOMPRESSED_ENV, "3M")
    assert sources.resolve_max_decompressed(None) == 3 << 20
    assert all(sources.default_max_decompressed(r) == 3 << 20 for r in sources.PEAK_PER_BYTE)
    monkeypatch.delenv(sources.MAX_DECOMPRESSED_ENV)
    assert sources.resolve_max_decompressed(None) is None   # each route's own, at read time
    assert sources.resolve_max_decompressed("1G") == 1 << 30


# --- damage -------------------------------------------------------------------------------

@pytest.mark.parametrize("rel", [REAL[0], REAL[7]], ids=["trainlog", "horovod"])
def test_a_truncated_gz_keeps_the_rows_before_the_cut(rel, tmp_path, spill_everything):
    """The rows of a .gz cut at 60% are those of the plain text it decompresses to, with an
    error naming the file and the bytes read."""
    data = (FIXTURES / rel).read_bytes()
    packed = gzip.compress(data, mtime=0)
    gz = tmp_path / (Path(rel).name + ".gz")
    gz.write_bytes(packed[: len(packed) * 6 // 10])
    ds = dptrace.load(gz)
    row = _row(ds, gz)
    assert row["status"] == "partial" and row["rows"] > 0
    cut = [p for p in ds.problems.itertuples()
           if p.severity == "error" and "gz stream is truncated" in str(p.message)]
    assert len(cut) == 1 and cut[0].source == str(gz)
    got = int(re.search(r"parsed the ([\d,]+) bytes", str(cut[0].message))[1].replace(",", ""))
    assert 0 < got < len(data)
    prefix = tmp_path / "prefix" / Path(rel).name
    prefix.parent.mkdir()
    prefix.write_bytes(data[:got])
    assert row["rows"] == _row(dptrace.load(prefix), prefix)["rows"]


def test_a_gz_that_is_not_gzip_is_a_problem_naming_it(tmp_path):
    bad = tmp_path / "train.log.gz"
    bad.write_bytes(bz2.compress((FIXTURES / REAL[0]).read_bytes()))   # bzip2 named .gz
    ds = dptrace.load(bad)
    row = _row(ds, bad)
    assert row["status"] in ("failed", "unknown") and row["rows"] == 0
    text = " | ".join([*_messages(ds), str(row["message"])])
    assert re.search(r"gz stream is truncated or corrupt", text), text


def test_a_source_read_outside_a_load_frees_its_temporary_file(tmp_path, spill_everything):
    gz = _copy(tmp_path, REAL[0], ".gz")
    src = Source(str(gz), gz)
    with src.buffer() as buf:
        assert buf[:1]
    spill = src._st["spill"]
    with src.buffer() as again:                    # mapped again, not decompressed again
        assert again[:100] == (FIXTURES / REAL[0]).read_bytes()[:100]
    src.forget()
    assert spill.fd is None and "spill" not in src._st


def test_a_source_sent_to_another_process_decompresses_again(tmp_path, spill_everything):
    """A pickled source's temporary file arrives closed (its descriptor means nothing in
    another process, and closing it there must not close another file): it is decompressed
    again there."""
    import pickle

    gz = _copy(tmp_path, REAL[0], ".gz")
    src = Source(str(gz), gz)
    with src.buffer():
        pass
    copy = pickle.loads(pickle.dumps(src))
    assert src._st["spill"].fd is not None
    if "spill" in copy._st:
        assert copy._st["spill"].fd is None
    with copy.buffer() as buf:
        assert bytes(buf) == (FIXTURES / REAL[0]).read_bytes()
    copy.forget()
    src.forget()
