"""Issue 30, round two, for the Chrome-trace readers (PyTorch profiler traces, Horovod
timelines): one bad value, one deep record or one giant record costs only that value or
record, with an error naming the file and the line (and byte offset), never the file; no
non-finite number enters a table or a finding; two traces claiming one rank are named.

Each case is a real fixture with one thing changed. The oracle of a lost record is the same
fixture with that record deleted: the damaged copy must read as that copy does.
"""

from __future__ import annotations

import gzip
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.formats import _chrome as chrome

HERE = Path(__file__).parent
TORCH = HERE / "fixtures" / "torchtrace"
HVD = HERE / "fixtures" / "horovod"
REAL = HERE.parent.parent / "shared" / "realdata" / "torch_trace"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")

ONE = (TORCH / "one_step" / "rank0.pt.trace.json").read_bytes()
HVD4 = (HVD / "andrewor14_horovod_timeline_2019_4rank.json").read_bytes()
BIG30 = "9" * 30
#: the one_step trace's ProfilerStep#2 record, as written (one key a line)
STEP_REC = '"name": "ProfilerStep#2",'
GLOO_REC = '"name": "gloo:all_reduce",'


def _sub(data: bytes, old: str, new: str) -> bytes:
    assert old.encode() in data, old
    return data.replace(old.encode(), new.encode(), 1)


def _line(data: bytes, marker: str | bytes) -> int:
    m = marker.encode() if isinstance(marker, str) else marker
    return data[:data.index(m)].count(b"\n") + 1


def _record_span(data: bytes, marker: str) -> tuple[int, int]:
    """Byte range of the Kineto record (``  {`` ... ``},``) holding ``marker``."""
    at = data.index(marker.encode())
    start = data.rindex(b"\n  {", 0, at) + 1
    end = data.index(b"\n  },", at) + len(b"\n  },")
    return start, end


def _without(data: bytes, marker: str) -> bytes:
    start, end = _record_span(data, marker)
    return data[:start] + data[end + 1:]


def _load(tmp_path: Path, name: str, data: bytes, sub: str = "x") -> dptrace.Dataset:
    d = tmp_path / sub
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_bytes(data)
    return dptrace.load([str(p)])


def _errors(ds: dptrace.Dataset) -> pd.DataFrame:
    p = ds.problems
    return p[p["severity"] == "error"]


def _rows(ds: dptrace.Dataset) -> int:
    return int(ds.sources["rows"].iloc[0])


def _status(ds: dptrace.Dataset) -> str:
    return str(ds.sources["status"].iloc[0])


def _no_nonfinite(ds: dptrace.Dataset) -> None:
    for name in ("torch_events", "torch_traces"):
        df = (ds[name] if name in ds.tables else None)
        if df is None:
            continue
        for col in df.columns:
            if df[col].dtype.kind == "f":
                v = df[col].to_numpy(dtype="float64")
                assert not np.isinf(v).any(), (name, col)


# -- PyTorch profiler traces: one value ----------------------------------------------------------

def test_profiler_step_of_30_digits_costs_its_step_number(tmp_path: Path) -> None:
    base = _load(tmp_path, "t.pt.trace.json", ONE, "base")
    bad = _sub(ONE, STEP_REC, f'"name": "ProfilerStep#{BIG30}",')
    ds = _load(tmp_path, "t.pt.trace.json", bad)
    assert _status(ds) != "failed"
    assert _rows(ds) == _rows(base)
    err = _errors(ds)
    hit = err[err["message"].str.contains(r"ProfilerStep# number '9{24}'… \(30 characters\) has 30 digits: does not fit")]
    assert hit["line"].tolist() == [_record_line(bad, f"ProfilerStep#{BIG30}")]
    assert re.search(r"at byte [\d,]+", hit["message"].iloc[0])
    ev = ds["torch_events"]
    assert ev["step"].isna().all()         # no step is read from it


@pytest.mark.parametrize("field, good, bad, why", [
    ("world_size", "2", "1" + "0" * 30, r"world_size '10{23}'… \(31 characters\) does not fit a 64-bit"),
    ("world_size", "2", "0", r"world_size 0 is out of range"),
    ("rank", "0", "-3", r"rank -3 is negative"),
    ("rank", "0", str(2 ** 63 - 1), r"rank 9223372036854775807 is out of range"),
    ("rank", "0", "2", r"rank 2 is out of range \(0\.\.1\): not a rank of world_size 2"),
    ("rank", "0", '"0²"', r"rank 0² is not a number \('²' is not a digit 0-9\): the trace's rank is missing"),
])
def test_distributed_info_that_is_not_a_rank_costs_that_value(
        tmp_path: Path, field: str, good: str, bad: str, why: str) -> None:
    text = f'"{field}": {{}}' + ("," if field == "rank" else ",")
    data = _sub(ONE, text.format(good), text.format(bad))
    ds = _load(tmp_path, "t.pt.trace.json", data)
    assert _status(ds) != "failed"
    tr = ds["torch_traces"]
    assert pd.isna(tr[field].iloc[0])
    other = "rank" if field == "world_size" else "world_size"
    assert not pd.isna(tr[other].iloc[0])   # the other value is kept
    err = _errors(ds)
    hit = err[err["message"].str.contains(why)]
    assert len(hit) == 1, err["message"].tolist()
    assert hit["line"].iloc[0] == _line(data, '"distributedInfo"')
    assert _rows(ds) == _rows(_load(tmp_path, "t.pt.trace.json", ONE, "base"))


def test_dur_inf_string_is_not_read_and_builds_no_finding(tmp_path: Path) -> None:
    """Rank 0's first gloo:all_reduce lasts "inf": the value is missing, with an error at its
    line; no finding holds inf or nan."""
    slow = TORCH / "slow_rank1"
    r0 = gzip.decompress((slow / "rank0.pt.trace.json.gz").read_bytes())
    bad = _sub(r0, '"dur": 53726.898', '"dur": "inf"')
    d = tmp_path / "run"
    d.mkdir()
    (d / "rank0.pt.trace.json").write_bytes(bad)
    (d / "rank1.pt.trace.json.gz").write_bytes((slow / "rank1.pt.trace.json.gz").read_bytes())
    ds = dptrace.load([str(d)])
    _no_nonfinite(ds)
    err = _errors(ds)
    hit = err[err["message"].str.contains(r"dur inf is not finite \(the record at byte [\d,]+\): the event is kept")]
    assert hit["line"].tolist() == [_record_line(bad, '"dur": "inf"')]
    ev = ds["torch_events"]
    assert int((ev["name"].astype(str) == "gloo:all_reduce").sum()) == 6   # row kept
    findings = dptrace.findings(ds)
    for msg in findings["message"].astype(str):
        assert not re.search(r"\b(?:inf|nan)\b", msg), msg


def _record_line(data: bytes, marker: str) -> int:
    return data[:_record_start(data, marker)].count(b"\n") + 1


def _record_start(data: bytes, marker: str) -> int:
    """Byte offset of the ``{`` of the Kineto record holding ``marker``."""
    return _record_span(data, marker)[0] + 2


@pytest.mark.parametrize("old, new, column, why", [
    ('"ts": 4855136610536.674', '"ts": 1e300', "ts_us", r"ts 1e\+300 is out of range"),
    ('"ts": 4855136610536.674', '"ts": "nan"', "ts_us", r"ts nan is not finite"),
    ('"dur": 30859.782', '"dur": -5', "dur_us", r"dur -5 is negative"),
    ('"dur": 30859.782', '"dur": 1e300', "dur_us", r"dur 1e\+300 is out of range"),
])
def test_times_that_are_not_times_are_missing_with_an_error(
        tmp_path: Path, old: str, new: str, column: str, why: str) -> None:
    data = _sub(ONE, old, new)
    ds = _load(tmp_path, "t.pt.trace.json", data)
    base = _load(tmp_path, "t.pt.trace.json", ONE, "base")
    assert _rows(ds) == _rows(base)
    _no_nonfinite(ds)
    err = _errors(ds)
    hit = err[err["message"].str.contains(why)]
    assert hit["line"].tolist() == [_record_line(data, new)], err["message"].tolist()
    ev = ds["torch_events"]
    step = ev[ev["name"].astype(str) == "ProfilerStep#2"]
    assert step[column].isna().all()
    assert float(ds["torch_traces"]["last_us"].iloc[0]) < 1e16


def test_pid_of_30_digits_costs_its_record(tmp_path: Path) -> None:
    start, end = _record_span(ONE, GLOO_REC)
    rec = ONE[start:end].decode()
    bad = ONE[:start] + rec.replace('"pid": 19607', f'"pid": {BIG30}', 1).encode() + ONE[end:]
    ds = _load(tmp_path, "t.pt.trace.json", bad)
    gone = _load(tmp_path, "t.pt.trace.json", _without(ONE, GLOO_REC), "gone")
    assert _rows(ds) == _rows(gone)
    err = _errors(ds)
    hit = err[err["message"].str.contains(r"pid '9{24}'… \(30 characters\) does not fit a 64-bit number.*: the record is "
                                          r"skipped")]
    assert hit["line"].tolist() == [_record_line(bad, f'"pid": {BIG30}')]


def test_tid_beyond_int64_is_missing(tmp_path: Path) -> None:
    start, end = _record_span(ONE, GLOO_REC)
    rec = ONE[start:end].decode()
    bad = ONE[:start] + rec.replace('"tid": 19638', f'"tid": {BIG30}', 1).encode() + ONE[end:]
    ds = _load(tmp_path, "t.pt.trace.json", bad)
    base = _load(tmp_path, "t.pt.trace.json", ONE, "base")
    assert _rows(ds) == _rows(base)
    hit = _errors(ds)["message"].str.contains(r"tid '9{24}'….*: the event is kept, its value is missing")
    assert hit.sum() == 1


@needs_real
@pytest.mark.parametrize("bad, why", [
    (BIG30, r"In msg nelems '9{24}'… \(30 characters\) does not fit"),
    ('"2049000²"', r"In msg nelems 2049000² is not a number"),
    ("-5", r"In msg nelems -5 is negative"),
])
def test_nelems_that_is_not_a_count_is_missing(tmp_path: Path, bad: str, why: str) -> None:
    real = gzip.decompress((REAL / "hta_nccl_data_2rank.json.gz").read_bytes())
    data = _sub(real, '"In msg nelems": 2049000', f'"In msg nelems": {bad}')
    ds = _load(tmp_path, "t.pt.trace.json", data)
    base = _load(tmp_path, "t.pt.trace.json", real, "base")
    assert _rows(ds) == _rows(base)
    err = _errors(ds)
    hit = err[err["message"].str.contains(why)]
    assert hit["line"].tolist() == [_record_line(data, f'"In msg nelems": {bad}')]
    ev, ev0 = ds["torch_events"], base["torch_events"]
    assert int(ev["elements"].notna().sum()) == int(ev0["elements"].notna().sum()) - 1


def test_two_traces_claiming_one_rank_are_named_and_not_compared(tmp_path: Path) -> None:
    slow = TORCH / "slow_rank1"
    d = tmp_path / "run"
    d.mkdir()
    (d / "rank0.pt.trace.json.gz").write_bytes((slow / "rank0.pt.trace.json.gz").read_bytes())
    r1 = gzip.decompress((slow / "rank1.pt.trace.json.gz").read_bytes())
    (d / "rank1.pt.trace.json").write_bytes(_sub(r1, '"rank": 1,', '"rank": 0,'))
    ds = dptrace.load([str(d)])
    warn = ds.problems[ds.problems["message"].str.contains(r"both claim rank 0")]
    assert len(warn) == 1 and warn["severity"].iloc[0] == "warning"
    assert "rank0.pt.trace.json.gz" in warn["message"].iloc[0]
    assert "rank1.pt.trace.json" in str(warn["source"].iloc[0]) + warn["message"].iloc[0]
    kinds = set(dptrace.findings(ds)["kind"].astype(str))
    assert "collective_straggler" not in kinds
    # the same two files with their own ranks: compared, and no warning
    ok = dptrace.load([str(slow)])
    assert not ok.problems["message"].str.contains("claim rank").any()
    assert "collective_straggler" in set(dptrace.findings(ok)["kind"].astype(str))


# -- deep records --------------------------------------------------------------------------------

DEEP = "[" * 1000 + "]" * 1000


def test_torch_record_nested_1000_deep_costs_itself(tmp_path: Path) -> None:
    start, end = _record_span(ONE, GLOO_REC)
    rec = ONE[start:end].decode()
    bad = ONE[:start] + rec.replace('"args": {', f'"args": {{"x": {DEEP}, ', 1).encode() \
        + ONE[end:]
    ds = _load(tmp_path, "t.pt.trace.json", bad)
    gone = _load(tmp_path, "t.pt.trace.json", _without(ONE, GLOO_REC), "gone")
    assert _status(ds) != "failed"
    assert _rows(ds) == _rows(gone)
    err = _errors(ds)
    hit = err[err["message"].str.contains("nested deeper")]
    assert hit["line"].tolist() == [_record_line(bad, DEEP)]
    assert not err["message"].str.contains("torn|cut|malformed").any()
    assert f"byte {start + 2:,}" in hit["message"].iloc[0]


def test_torch_metadata_nested_1000_deep_keeps_the_events(tmp_path: Path) -> None:
    bad = _sub(ONE, '"host_name": "vm",', f'"host_name": "vm", "deep": {DEEP},')
    ds = _load(tmp_path, "t.pt.trace.json", bad)
    base = _load(tmp_path, "t.pt.trace.json", ONE, "base")
    assert _status(ds) != "failed"
    assert _rows(ds) == _rows(base)
    assert ds.problems["message"].str.contains("nested deeper").any()


def _hvd_record(data: bytes, marker: bytes) -> tuple[int, int]:
    at = data.index(marker)
    return data.rindex(b"\n", 0, at) + 1, data.index(b"\n", at) + 1


def test_horovod_record_nested_1000_deep_costs_itself(tmp_path: Path) -> None:
    start, end = _hvd_record(HVD4, b'"ph": "B", "name": "NEGOTIATE_ALLREDUCE"')
    rec = HVD4[start:end]
    bad = HVD4[:start] + rec.replace(b'"ph": "B"', b'"deep": ' + DEEP.encode() + b', "ph": "B"',
                                     1) + HVD4[end:]
    ds = _load(tmp_path, "timeline.json", bad)
    gone = _load(tmp_path, "timeline.json", HVD4[:start] + HVD4[end:], "gone")
    assert _status(ds) != "failed"
    assert _rows(ds) == _rows(gone)
    err = _errors(ds)
    hit = err[err["message"].str.contains("nested deeper")]
    assert hit["line"].tolist() == [HVD4[:start].count(b"\n") + 1]
    assert f"byte {start:,}" in hit["message"].iloc[0]
    assert not err["message"].str.contains("torn|malformed").any()


# -- giant records -------------------------------------------------------------------------------

@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> int:
    """A record cap of 1 MiB and 64 KiB blocks, so a 3 MiB name is a giant record."""
    monkeypatch.setattr(chrome, "BLOCK", 64 << 10)
    monkeypatch.setattr(chrome, "MAX_RECORD", 1 << 20)
    return 1 << 20


@pytest.mark.parametrize("fill", ["a", "},{\\\"x\\\": [1]},"])
def test_torch_record_over_the_cap_is_skipped_with_its_offset(
        tmp_path: Path, small_cap: int, fill: str) -> None:
    name = fill * (3 * small_cap // len(fill))
    bad = _sub(ONE, GLOO_REC, f'"name": "{name}",')
    start = _record_start(bad, f'"name": "{name[:40]}')
    ds = _load(tmp_path, "t.pt.trace.json", bad)
    gone = _load(tmp_path, "t.pt.trace.json", _without(ONE, GLOO_REC), "gone")
    assert _rows(ds) == _rows(gone)
    err = _errors(ds)
    hit = err[err["message"].str.contains("longer than")]
    assert len(hit) == 1, err["message"].tolist()
    assert f"byte {start:,}" in hit["message"].iloc[0]
    assert hit["line"].iloc[0] == bad[:start].count(b"\n") + 1
    assert not err["message"].str.contains("torn|cut").any()


def test_horovod_record_over_the_cap_is_skipped_with_its_offset(
        tmp_path: Path, small_cap: int) -> None:
    start, end = _hvd_record(HVD4, b'"ph": "B", "name": "NEGOTIATE_ALLREDUCE"')
    rec = HVD4[start:end]
    huge = b'"name": "' + b"x" * (3 * small_cap) + b'"'
    bad = HVD4[:start] + rec.replace(b'"name": "NEGOTIATE_ALLREDUCE"', huge, 1) + HVD4[end:]
    ds = _load(tmp_path, "timeline.json", bad)
    gone = _load(tmp_path, "timeline.json", HVD4[:start] + HVD4[end:], "gone")
    assert _rows(ds) == _rows(gone)
    err = _errors(ds)
    hit = err[err["message"].str.contains("longer than")]
    assert len(hit) == 1, err["message"].tolist()
    assert f"byte {start:,}" in hit["message"].iloc[0]
    assert hit["line"].iloc[0] == HVD4[:start].count(b"\n") + 1


def test_a_giant_last_record_cut_by_the_end_of_the_file(tmp_path: Path, small_cap: int) -> None:
    """A giant record the file ends inside: skipped, and the file flagged as cut."""
    start, _ = _hvd_record(HVD4, b'"ph": "B", "name": "NEGOTIATE_ALLREDUCE"')
    bad = HVD4[:start] + b'{"ph": "B", "name": "' + b"x" * (3 * small_cap)
    ds = _load(tmp_path, "timeline.json", bad)
    assert _status(ds) != "failed"
    msgs = ds.problems["message"]
    assert msgs.str.contains("longer than").any()
    assert math.isfinite(float(ds["hvd_runs"]["span_us"].iloc[0]))
