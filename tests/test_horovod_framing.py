"""Horovod timelines: every framing, killed jobs, cut files and bad input.

The synthetic fixtures are made by tests/fixtures/horovod/make_synthetic.py, which lays the
records out as Horovod's writer does; their event lists are written out there, and the
expected values below are read off those lists.
"""

import gzip
import json
import re
from pathlib import Path

import msgspec
import pandas as pd
import pytest

import dptrace
from dptrace import registry
from dptrace.formats import _chrome as chrome
from dptrace.formats.horovod import decode as dec
from dptrace.sources import Source

FIX = Path(__file__).parent / "fixtures" / "horovod"
TABLES = ("hvd_activities", "hvd_tensors", "hvd_ready", "hvd_cycles")


def load(path, fmt: str = "auto", executor: int | None = None) -> dptrace.Dataset:
    return dptrace.load(path, format=fmt, executor=executor)


def same_tables(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    for name in TABLES:
        left, right = a[name].drop(columns=["run", "source"]), b[name].drop(columns=["run", "source"])
        pd.testing.assert_frame_equal(left, right, check_categorical=False)


def test_v0201_packed_layout_thousands_of_events_per_line():
    path = FIX / "synthetic_v0201_packed.json"
    longest = max(line.count(b"},{") for line in path.read_bytes().splitlines())
    assert longest > 1000
    ds = load(path)
    run = ds["hvd_runs"].iloc[0]
    assert (run["layout"], run["closed"], run["truncated"]) == ("packed", True, False)
    assert run["start_epoch_us"] == 1633449303945695
    # the file is valid JSON: count with the json module
    events = json.loads(path.read_bytes())
    assert run["events"] == len(events)
    b = [e["name"] for e in events if e["ph"] == "B"]
    assert len(ds["hvd_activities"]) == len(b)
    assert ds["hvd_activities"]["complete"].all()
    assert len(ds["hvd_ready"]) == sum(e["ph"] == "X" for e in events)
    assert ds["hvd_tensors"]["bytes"].notna().sum() == sum("dtype" in e.get("args", {})
                                                           for e in events)
    assert len(ds["hvd_cycles"]) == b.count("CYCLE_START") + sum(
        e.get("name") == "CYCLE_START" for e in events if e["ph"] == "i")


def test_per_line_layout_gives_the_same_tables():
    packed = load(FIX / "synthetic_v0201_packed.json")
    lines = load(FIX / "synthetic_v0200_per_line.json")
    assert lines["hvd_runs"]["layout"].item() == "per-line"
    assert not lines["hvd_runs"]["closed"].item()          # ends '},\n' like 0.16-0.20.0
    same_tables(packed, lines)


def test_gzip_gives_the_same_tables_and_a_cut_archive_is_reported(tmp_path):
    plain = load(FIX / "synthetic_v0201_packed.json")
    same_tables(plain, load(FIX / "synthetic_v0201_packed.json.gz"))
    data = (FIX / "synthetic_v0201_packed.json.gz").read_bytes()
    (tmp_path / "cut.json.gz").write_bytes(data[: len(data) // 2])
    ds = load(tmp_path / "cut.json.gz", "horovod")
    assert ds.sources["status"].item() == "partial"
    msgs = " ".join(ds.problems["message"])
    assert "truncated or corrupt" in msgs
    assert 0 < len(ds["hvd_activities"]) < len(plain["hvd_activities"])


def test_killed_run_keeps_open_intervals():
    # make_synthetic.KILLED: step 2 leaves NEGOTIATE A (5100), ALLREDUCE B (5160) and
    # NCCL_ALLREDUCE B (5171) open; 14 intervals closed (12 in step 1, NEGOTIATE B and QUEUE B)
    ds = load(FIX / "synthetic_killed_open_b.json")
    acts = ds["hvd_activities"]
    open_ = acts[~acts["complete"]]
    assert open_["activity"].astype(str).tolist() == ["NEGOTIATE_ALLREDUCE", "ALLREDUCE",
                                                      "NCCL_ALLREDUCE"]
    assert open_["start_us"].tolist() == [5000, 5060, 5071]            # ts - 100
    assert open_["dur_us"].isna().all()
    assert acts["complete"].sum() == 14
    run = ds["hvd_runs"].iloc[0]
    assert (run["open_intervals"], run["truncated"], run["closed"]) == (3, False, True)
    assert ds.sources["status"].item() == "ok"                        # nothing skipped
    assert "3 interval(s) still open" in ds.problems["message"].item()
    t = ds["hvd_tensors"]
    assert t["complete"].tolist() == [True, True, False]
    # grad_a: float32 [256, 128] = 131,072 bytes; grad_b: float32 [128] = 512 bytes
    assert t["bytes"].tolist()[:2] == [131072, 512]
    assert pd.isna(t["bytes"].iloc[2])
    assert t["fusion_group"].tolist() == [0, 0, 1]                     # A+B fused in step 1
    assert t["negotiate_us"].tolist() == [61, 96, 49]


def test_file_cut_mid_record():
    # the same job, the file cut inside its last record ('{"ph": "B", "name": "NCCL_AL')
    path = FIX / "synthetic_cut_mid_record.json"
    cut_at = path.read_bytes().rindex(b"{")
    ds = load(path)
    assert ds.sources["status"].item() == "partial"
    err = ds.problems[ds.problems["severity"] == "error"].iloc[0]
    assert f"ends inside a record at byte {cut_at:,}" in err["message"]
    assert err["line"] == path.read_bytes().count(b"\n") + 1
    run = ds["hvd_runs"].iloc[0]
    assert (run["truncated"], run["open_intervals"]) == (True, 2)
    assert len(ds["hvd_activities"]) == 16              # the killed file's 17 minus the torn B


def _records(data: bytes) -> list[int]:
    """End offsets (just past '}') of the complete top-level records of a Horovod file."""
    ends, depth, in_str, esc = [], 0, False, False
    for i, c in enumerate(data):
        ch = chr(c)
        if in_str:
            esc, in_str = (not esc and ch == "\\"), in_str if (esc or ch != '"') else False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                ends.append(i + 1)
    return ends


def test_decoder_cut_at_every_byte(tmp_path):
    data = (FIX / "synthetic_killed_open_b.json").read_bytes()
    ends = _records(data)
    path = tmp_path / "cut.json"
    for k in range(len(data) + 1):
        path.write_bytes(data[:k])
        cols = dec.merge(dec.decode_file(str(path), "cut.json", k))
        done = [e for e in ends if e <= k]
        assert cols.events == len(done), k
        rest = data[done[-1] if done else 0:k].strip(b"[],\n ")
        assert cols.torn == bool(rest), k
        assert cols.bad_records == 0, k
        if cols.torn:
            assert "ends inside a record at byte" in cols.problems[0].message


def test_load_cut_at_many_bytes_never_fails(tmp_path):
    data = (FIX / "synthetic_killed_open_b.json").read_bytes()
    full = load(FIX / "synthetic_killed_open_b.json")
    for k in range(0, len(data) + 1, 53):
        path = tmp_path / f"cut{k}.json"
        path.write_bytes(data[:k])
        ds = load(path, "horovod")
        assert ds.sources["status"].item() in ("ok", "partial", "empty"), k
        assert len(ds["hvd_activities"]) <= len(full["hvd_activities"])
        if len(ds["hvd_activities"]):
            # every closed interval of a cut file is closed, identically, in the whole file
            got = ds["hvd_activities"]
            got = got[got["complete"]][["pid", "activity", "start_us", "dur_us"]]
            fa = full["hvd_activities"]
            whole = fa[fa["complete"]][["pid", "activity", "start_us", "dur_us"]]
            offset = full["hvd_runs"]["ts_offset_us"].item() - \
                ds["hvd_runs"]["ts_offset_us"].item()
            got = got.assign(start_us=got["start_us"] - offset)
            merged = got.astype(str).merge(whole.astype(str), how="left", indicator=True)
            assert (merged["_merge"] == "both").all(), k


def test_small_blocks_and_parallel_ranges_give_the_same_tables(monkeypatch):
    path = FIX / "synthetic_v0201_packed.json"
    whole = load(path)
    monkeypatch.setattr(chrome, "BLOCK", 4096)
    same_tables(whole, load(path))
    monkeypatch.setattr(chrome, "PARALLEL_BYTES", 1)
    ranges = dec.split_ranges(str(path), path.stat().st_size, 3)
    assert len(ranges) == 3 and ranges[0].first and ranges[-1].last
    same_tables(whole, load(path, executor=3))
    lines = FIX / "synthetic_v0200_per_line.json"
    same_tables(whole, load(lines, executor=3))


def test_invalid_utf8_in_a_tensor_name(tmp_path):
    data = (FIX / "synthetic_killed_open_b.json").read_bytes()
    bad = data.replace(b"grad_a_0", b"grad_\xff\xfe_0")
    (tmp_path / "bad.json").write_bytes(bad)
    ds = load(tmp_path / "bad.json")
    assert ds.sources["format"].item() == "horovod"
    warn = ds.problems[ds.problems["message"].str.contains("UTF-8")].iloc[0]
    at = bad.index(b"\xff")
    assert f"invalid UTF-8 at byte {at:,}" in warn["message"]
    names = set(ds["hvd_tensors"]["tensor"].astype(str))
    assert "DistributedOptimizer_Allreduce/grad_\ufffd\ufffd_0" in names
    assert len(ds["hvd_activities"]) == 17


def test_malformed_record_costs_only_itself(tmp_path):
    data = (FIX / "synthetic_killed_open_b.json").read_bytes()
    broken = b'{"ph": "E", "ts": 330, "pid": }'
    bad = data.replace(b'{"ph": "E", "ts": 330, "pid": 1}', broken, 1)
    (tmp_path / "bad.json").write_bytes(bad)
    ds = load(tmp_path / "bad.json")
    err = ds.problems[ds.problems["severity"] == "error"]
    assert len(err) == 1
    at = bad.index(broken)
    assert f"skipped a malformed record at byte {at:,}" in err["message"].item()
    assert err["line"].item() == bad[:at].count(b"\n") + 1
    assert ds["hvd_runs"]["events"].item() == len(_records(data)) - 1


def test_many_records_without_their_e(tmp_path):
    # 300 nested B records in one pid, no E at all (E records lost): all kept, open
    recs = [f'{{"ph": "B", "name": "QUEUE", "ts": {t}, "pid": 1}}' for t in range(300)]
    path = tmp_path / "deep.json"
    path.write_text('[\n{"ph": "B", "name": "ALLREDUCE", "ts": 0, "pid": 1},' + ",".join(recs)
                    + "]")
    acts = load(path, "horovod")["hvd_activities"]
    assert len(acts) == 301 and not acts["complete"].any()
    assert acts["depth"].tolist() == list(range(301))
    assert set(acts["op"].astype(str)) == {"ALLREDUCE"}


def test_many_malformed_records_are_counted(tmp_path):
    good = '{"ph": "B", "name": "ALLREDUCE", "ts": 1, "pid": 1}'
    bad = '{"ph": "E", "ts": , "pid": 1}'
    path = tmp_path / "bad.json"
    path.write_text("[" + ",".join([good] + [bad] * 25) + "]")
    ds = load(path, "horovod")
    msgs = ds.problems.loc[ds.problems["severity"] == "error", "message"].tolist()
    assert len(msgs) == 21 and msgs[-1] == "5 more malformed record(s) skipped"


@pytest.mark.parametrize("content", [b"[]", b"[\n]\n", b"[\n", b"", b"  \n"])
def test_empty_timelines(tmp_path, content):
    path = tmp_path / "timeline.json"
    path.write_bytes(content)
    ds = load(path, "horovod")
    assert ds.sources["status"].item() == "empty"
    assert ds["hvd_activities"].empty


def test_non_horovod_chrome_trace_is_named_as_such(tmp_path):
    trace = [{"name": "process_name", "ph": "M", "pid": 7, "args": {"name": "python"}},
             {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 10,
              "dur": 5}, {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7,
                          "ts": 20, "dur": 1}]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    ds = load(path)
    assert ds.sources["format"].item() == "horovod"       # a Chrome trace: nobody else reads it
    assert ds.sources["status"].item() == "failed"
    msg = ds.problems["message"].item()
    assert msg.startswith("not a Horovod timeline: a Chrome trace of 3 events")
    assert "'aten::mm'" in msg


def test_torch_profiler_trace_is_not_claimed():
    path = FIX / "hta_sampled_rank-1_ws128.json.gz"
    src = Source(str(path), path)
    assert registry.get("horovod").sniff(src, src.head()) < 0.5
    ds = load(path, "horovod")
    assert ds.sources["status"].item() == "failed"
    assert "torch.profiler" in ds.problems["message"].item()


def test_sniff_rejects_other_formats():
    hv = registry.get("horovod")
    for head in (b"0: e2e samples_per_sec: 563.9\n", b"Data for MPI rank 0 of 32:\n",
                 b'{"a": 1}', b"\x00\x01binary", b"[1, 2, 3]"):
        assert hv.sniff(Source("x", Path("x")), head) == 0.0
    # sagemaker-debugger key order, no leading '['
    smd = b'{"name": "NEGOTIATE_ALLREDUCE", "pid": 1, "ph": "B", "ts": 8440608},\n'
    assert hv.sniff(Source("x", Path("x")), smd) >= 0.95


def test_tensor_name_is_kept_verbatim():
    ds = load(FIX / "synthetic_xss_tensor_name.json")
    assert ds["hvd_tensors"]["tensor"].astype(str).tolist() == ["<img src=x onerror=alert(1)>"]
    # float16 [1024, 4] = 8,192 bytes
    assert ds["hvd_tensors"]["bytes"].tolist() == [8192]


def test_huge_absolute_timestamps_keep_microsecond_precision(tmp_path):
    # 0.16-0.18 builds wrote ts ~1.41e12 (andrewor14 files): shift every ts by that much
    text = (FIX / "synthetic_killed_open_b.json").read_text()
    shifted_text = re.sub(r'"ts": (\d+)', lambda m: f'"ts": {int(m[1]) + 1410488741507}', text)
    gz = tmp_path / "t.json.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write(shifted_text)
    base, shifted = load(FIX / "synthetic_killed_open_b.json"), load(gz)
    same_tables(base, shifted)
    assert shifted["hvd_runs"]["ts_offset_us"].item() == 1410488741507 + 100


def test_literal_vocabulary_learns_new_names_and_falls_back():
    vocab = dec._Vocab()
    assert vocab.decode(b"[]") == [] and vocab.fast is None   # nothing to build a Literal of
    first = vocab.decode(b'[{"ph":"B","name":"QUEUE","ts":1,"pid":2}]')
    assert vocab.fast is not None and first[0].name == "QUEUE"
    # a name outside the vocabulary fails validation, is decoded plainly and learnt
    new = vocab.decode(b'[{"ph":"B","name":"NCCL_ALLREDUCE","ts":2,"pid":2},{"ph":"E","ts":3}]')
    assert [e.name for e in new] == ["NCCL_ALLREDUCE", ""] and vocab.misses == 1
    assert "NCCL_ALLREDUCE" in vocab.names
    again = vocab.decode(b'[{"ph":"B","name":"NCCL_ALLREDUCE","ts":4,"pid":2}]')
    assert again[0].ts == 4 and vocab.misses == 1
    with pytest.raises(msgspec.DecodeError):   # not a string: the caller's slow path takes it
        vocab.decode(b'[{"ph":"B","name":5,"ts":1,"pid":2}]')


def test_vocabulary_off_gives_the_same_tables(monkeypatch):
    path = FIX / "andrewor14_horovod_timeline_2019_4rank.json"
    with_vocab = load(path)
    monkeypatch.setattr(dec._Vocab, "_rebuild", lambda self: setattr(self, "fast", None))
    same_tables(with_vocab, load(path))
