"""Horovod timelines: every real file in tests/fixtures/horovod (copies of shared/realdata,
provenance in PROVENANCE.tsv), with counts checked by hand against the raw JSON.

The "grep" comments are the one-liners the expected values were derived with, run in
tests/fixtures/horovod. A second, deliberately naive reader (:func:`reference`: the json
module and a Python list per pid as the B/E stack) must agree with the parser on every file.
"""

import collections
import json
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import registry
from dptrace.sources import Source

FIX = Path(__file__).parent / "fixtures" / "horovod"
REAL = sorted(p.name for p in FIX.glob("*.json") if not p.name.startswith("synthetic_"))


def load(name: str, fmt: str = "auto") -> dptrace.Dataset:
    return dptrace.load(FIX / name, format=fmt)


def reference(path: Path) -> dict:
    """Counts from a plain json.loads (after closing the array) and per-pid Python stacks."""
    raw = path.read_bytes().strip()
    raw = raw if raw.endswith(b"]") else raw.rstrip(b",") + b"]"
    events = json.loads(raw)
    stacks: dict = collections.defaultdict(list)
    closed, orphans = collections.Counter(), 0
    for e in events:
        if e["ph"] == "B":
            stacks[e["pid"]].append(e["name"])
        elif e["ph"] == "E" and stacks[e["pid"]]:
            closed[stacks[e["pid"]].pop()] += 1
        elif e["ph"] == "E":
            orphans += 1
    opened = collections.Counter(n for st in stacks.values() for n in st)
    ticks = sum(1 for e in events if e["ph"] == "X" and e["name"].isdigit())
    return {"closed": closed, "open": opened, "orphans": orphans, "ticks": ticks,
            "events": len(events)}


def test_the_fixtures_are_the_eight_real_timelines():
    assert len(REAL) == 8
    listed = {line.split("\t")[1] for line in (FIX / "PROVENANCE.tsv").read_text().splitlines()[1:]}
    assert set(REAL) <= listed


@pytest.mark.parametrize("name", REAL)
def test_every_real_file_is_detected_and_parsed(name):
    ds = load(name)
    src = ds.sources.iloc[0]
    assert (src["format"], src["status"]) == ("horovod", "ok"), src["message"]
    forced = load(name, "horovod")
    for table in ("hvd_activities", "hvd_tensors", "hvd_ready", "hvd_cycles", "hvd_runs"):
        assert len(forced[table]) == len(ds[table])
    ref = reference(FIX / name)
    acts = ds["hvd_activities"]
    done = acts[acts["complete"]]["activity"].astype(str).value_counts().to_dict()
    still = acts[~acts["complete"]]["activity"].astype(str).value_counts().to_dict()
    assert done == dict(ref["closed"])
    assert still == dict(ref["open"])
    assert len(ds["hvd_ready"]) == ref["ticks"]
    run = ds["hvd_runs"].iloc[0]
    assert run["events"] == ref["events"]
    assert run["unmatched_ends"] == ref["orphans"]


@pytest.mark.parametrize("name", REAL)
def test_sniff_is_sure_of_every_real_timeline(name):
    src = Source(str(FIX / name), FIX / name)
    assert registry.get("horovod").sniff(src, src.head()) >= 0.95
    assert registry.detect(src).name == "horovod"


def test_events_per_op_in_the_2019_four_rank_file():
    # grep -c '"name": "ALLREDUCE"' etc.: ALLREDUCE 660, NEGOTIATE_ALLREDUCE 660,
    # MPI_ALLREDUCE 660, MEMCPY_IN/OUT_FUSION_BUFFER 214 each, INIT_FUSION_BUFFER 2,
    # BROADCAST 13, NEGOTIATE_BROADCAST 13, MPI_BCAST 13; CYCLE_START 13999
    ds = load("andrewor14_horovod_timeline_2019_4rank.json")
    counts = ds["hvd_activities"]["activity"].astype(str).value_counts().to_dict()
    assert counts == {"ALLREDUCE": 660, "NEGOTIATE_ALLREDUCE": 660, "MPI_ALLREDUCE": 660,
                      "MEMCPY_IN_FUSION_BUFFER": 214, "MEMCPY_OUT_FUSION_BUFFER": 214,
                      "INIT_FUSION_BUFFER": 2, "BROADCAST": 13, "NEGOTIATE_BROADCAST": 13,
                      "MPI_BCAST": 13}
    assert len(ds["hvd_cycles"]) == 13999
    assert len(ds["hvd_tensors"]) == 673              # 660 ALLREDUCE + 13 BROADCAST ops
    levels = ds["hvd_activities"]["level"].astype(str).value_counts().to_dict()
    assert levels == {"negotiate": 673, "op": 673, "activity": 1103}   # 660+13+214*2+2


@pytest.mark.parametrize("name,ranks", [
    # grep -o '"ph": "X", "name": "[0-9]*"' FILE | sort | uniq -c
    ("andrewor14_horovod_timeline_2019_4rank.json", [0, 1, 2, 3]),          # 673 each
    ("andrewor14_horovod_timeline_2019_v2.json", list(range(12))),           # 673 each
    ("cipherdoc_horovod_pytorch_bcast_only.json", [0]),
    ("alcfws_timeline_cpu_n1.json", [0]),
    ("smdebug_horovod_timeline_small.json", [4, 5, 7]),
    ("smdebug_rotated_horovod_timeline_tiny.json", []),
])
def test_ranks_seen(name, ranks):
    ds = load(name)
    assert sorted(ds["hvd_ready"]["rank"].unique().tolist()) == ranks
    assert ds["hvd_runs"]["ranks"].item() == len(ranks)


def test_truncated_2019_files_end_between_records_with_nothing_open():
    # both end '},\n' with no ']' (tail -c 100): every B has its E (2449 B, 2449 E:
    # grep -c '"ph": "B"' / grep -c '"ph": "E"'), so no open interval and nothing torn
    for name in ("andrewor14_horovod_timeline_2019_4rank.json",
                 "andrewor14_horovod_timeline_2019_v2.json"):
        ds = load(name)
        run = ds["hvd_runs"].iloc[0]
        assert (run["open_intervals"], run["closed"], run["truncated"]) == (0, False, False)
        assert run["layout"] == "per-line"
        assert ds["hvd_activities"]["complete"].all()
        assert ds.problems.empty


def test_open_negotiations_of_the_sagemaker_fixtures_are_kept():
    # smdebug_small: NEGOTIATE_ALLREDUCE B for pids 1, 2, 12, 13; E only for pids 1 and 2
    ds = load("smdebug_horovod_timeline_small.json")
    acts = ds["hvd_activities"]
    assert acts.loc[~acts["complete"], "pid"].tolist() == [12, 13]
    assert acts.loc[~acts["complete"], "dur_us"].isna().all()
    assert "2 interval(s) still open" in " ".join(ds.problems["message"])
    # rotated rewrite: E records moved to pid 14, which opened nothing
    rot = load("smdebug_rotated_horovod_timeline.json")
    run = rot["hvd_runs"].iloc[0]
    assert (run["open_intervals"], run["unmatched_ends"], run["layout"]) == \
        (4, 2, "sagemaker-debugger")


def test_bytes_from_dtype_and_shape():
    # line 824: pid 19 is ..._gradients_AddN_1_0; its op-closing E records read
    # {"dtype": "float32", "shape": "[4096, 1001]"} -> 4096 * 1001 * 4 = 16,400,384 bytes
    t = load("andrewor14_horovod_timeline_2019_4rank.json")["hvd_tensors"]
    addn1 = t[t["tensor"] == "tower_0/v0/HorovodAllreduce_tower_0_v0_gradients_AddN_1_0"]
    assert len(addn1) == 110
    assert set(addn1["bytes"]) == {16_400_384}
    assert set(addn1["shape"]) == {"[4096, 1001]"} and set(addn1["dtype"]) == {"float32"}
    # "[154587, 172]" -> 154587 * 172 * 4 = 106,355,856
    assert 106_355_856 in set(t["bytes"].dropna())
    # broadcasts close without args: no size
    assert t.loc[t["op"] == "BROADCAST", "bytes"].isna().all()


def test_bytes_of_int64_scalars_and_missing_args():
    # cipherdoc: 'broadcast.layer4.2.bn1.num_batches_tracked' ends with
    # {"dtype": "int64", "shape": "[]"} -> 8 bytes; 320 of 322 BROADCAST E records carry
    # args (grep -c '"dtype"' = 320)
    t = load("cipherdoc_horovod_pytorch_bcast_only.json")["hvd_tensors"]
    row = t[t["tensor"] == "broadcast.layer4.2.bn1.num_batches_tracked"].iloc[0]
    assert (row["dtype"], row["shape"], row["bytes"]) == ("int64", "[]", 8)
    assert t["bytes"].notna().sum() == 320
    assert t["dtype"].dropna().astype(str).value_counts().to_dict() == {
        "float32": 267, "int64": 53}


def test_timestamps_are_relative_and_the_offset_is_kept():
    # first event: line 2, CYCLE_START ts 1410488741507; last: CYCLE_START ts 1410678550022
    run = load("andrewor14_horovod_timeline_2019_4rank.json")["hvd_runs"].iloc[0]
    assert run["ts_offset_us"] == 1410488741507
    assert run["span_us"] == 1410678550022 - 1410488741507
    assert pd.isna(run["start_epoch_us"])                # 0.16 builds: no pid 0 record
    # v0.20.1+: pid 0 carries start_time_since_epoch_in_micros (line 2)
    cpu = load("alcfws_timeline_cpu_n1.json")["hvd_runs"].iloc[0]
    assert cpu["start_epoch_us"] == 1633399518104473
    assert cpu["ts_offset_us"] == 3585422                 # first B NEGOTIATE_BROADCAST
    assert cpu["layout"] == "packed" and cpu["closed"]


def test_negotiation_ticks_and_lags_by_hand():
    # grep -n '"pid": 14[,}]': line 772 names pid 14 ..._gradients_AddN_0; its first
    # negotiation: 774 B NEGOTIATE_ALLREDUCE 1410496123903; ticks 775 "2" ...123905,
    # 787 "3" ...156916, 790 "1" ...178978, 854 "0" ...618035; 855 E ...618036;
    # then 856 B ALLREDUCE ...618188 and 859 E ...618651 {"dtype": "float32", "shape": "[1001]"}
    ds = load("andrewor14_horovod_timeline_2019_4rank.json")
    r = ds["hvd_ready"]
    first = r[(r["pid"] == 14) & (r["op"] == "ALLREDUCE") & (r["op_index"] == 0)]
    offset = 1410488741507
    assert first["ts_us"].tolist() == [x - offset for x in (1410496123905, 1410496156916,
                                                            1410496178978, 1410496618035)]
    assert first["rank"].tolist() == [2, 3, 1, 0]
    assert first["lag_us"].tolist() == [0, 33011, 55073, 494130]
    assert first["last_ready"].tolist() == [False, False, False, True]
    assert set(first["ranks_ready"]) == {4}
    acts = ds["hvd_activities"]
    neg = acts[(acts["pid"] == 14) & (acts["activity"] == "NEGOTIATE_ALLREDUCE")].iloc[0]
    assert neg["dur_us"] == 1410496618036 - 1410496123903
    t = ds["hvd_tensors"]
    op = t[(t["pid"] == 14) & (t["op_index"] == 0)].iloc[0]
    assert (op["start_us"], op["dur_us"], op["negotiate_us"]) == (
        1410496618188 - offset, 1410496618651 - 1410496618188, 1410496618036 - 1410496123903)
    assert (op["shape"], op["bytes"]) == ("[1001]", 4004)


def test_fusion_groups_match_the_fusion_buffer_copies():
    # a tensor is copied into the fusion buffer only when fused with others:
    # grep -c MEMCPY_IN_FUSION_BUFFER = 214 tensors -> 107 fused pairs
    t = load("andrewor14_horovod_timeline_2019_4rank.json")["hvd_tensors"]
    sizes = t.groupby("fusion_group")["pid"].count()
    assert sizes.value_counts().to_dict() == {1: 459, 2: 107}
    assert (t["fused_tensors"] == 2).sum() == 214
    # lines 354-355 of the file: B ALLREDUCE pid 15 ts ...008111, pid 16 ts ...008112
    pair = t[t["start_us"].isin([1410500008111 - 1410488741507, 1410500008112 - 1410488741507])]
    assert pair["pid"].tolist() == [15, 16] and pair["fusion_group"].nunique() == 1


def test_cycles_of_the_gpu_file():
    # 22784 CYCLE_START (grep -c); first ts 344, last 25714307
    c = load("alcfws_timeline_gpu_n1.json")["hvd_cycles"]
    assert len(c) == 22784
    assert c["ts_us"].iloc[0] == 0 and c["ts_us"].iloc[-1] == 25714307 - 344
    assert pd.isna(c["dur_us"].iloc[-1])                     # no next marker
    assert c["dur_us"].iloc[0] == 5575 - 344


def test_tensor_names_come_from_process_name_records():
    ds = load("cipherdoc_horovod_pytorch_bcast_only.json")
    names = set(ds["hvd_tensors"]["tensor"].astype(str))
    assert len(names) == 322 and "broadcast.bn1.bias" in names       # line 3: pid 1
    # smdebug_small: ticks on pid 26, which has no process_name record
    small = load("smdebug_horovod_timeline_small.json")
    assert "(pid 26)" in set(small["hvd_ready"]["tensor"].astype(str))
    assert any("no process_name record (pids 26)" in m for m in small.problems["message"])


def test_near_empty_rotated_chunk():
    # 259 bytes: pid 0 metadata and one CYCLE_START with pid 1
    ds = load("smdebug_rotated_horovod_timeline_tiny.json")
    assert ds.sources["status"].item() == "ok"
    assert len(ds["hvd_cycles"]) == 1 and ds["hvd_activities"].empty
    assert ds["hvd_runs"]["start_epoch_us"].item() == 1592860687560103


def test_parse_returns_the_schema_dtypes_itself():
    # parse skips conform (load does it once); so its frames must already be exact
    from dptrace import schema
    path = FIX / "andrewor14_horovod_timeline_2019_4rank.json"
    result = registry.get("horovod").parse(Source(str(path), path))
    for name, df in result.tables.items():
        table = schema.TABLES[name]
        assert list(df.columns) == table.names, name
        assert [str(d) for d in df.dtypes] == [c.dtype for c in table.columns], name


def test_schema_dtypes():
    ds = load("andrewor14_horovod_timeline_2019_4rank.json")
    from dptrace import schema
    for name in ("hvd_activities", "hvd_tensors", "hvd_ready", "hvd_cycles", "hvd_runs"):
        table = schema.TABLES[name]
        assert list(ds[name].columns) == [c.name for c in table.loaded_columns]
        assert [str(d) for d in ds[name].dtypes] == [c.dtype for c in table.loaded_columns], name
