"""Horovod timelines with bad numbers and keys (issue 12): a bad record costs that record,
with a problem naming file and line; numbers that do not fit become missing with a problem;
nothing costs the report (HTML, JSON and figures are always written).

Each test damages a copy of a real timeline (tests/fixtures/horovod, from
shared/realdata/horovod_timeline) the way the issue's reproduction did.
"""

import base64
import json
import math
import re
from pathlib import Path

import _cache
import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.formats import _chrome as chrome
from dptrace.formats.horovod import decode as dec

FIX = Path(__file__).parent / "fixtures" / "horovod"
REAL = FIX / "andrewor14_horovod_timeline_2019_4rank.json"   # 4 ranks, one event per line


def damage(tmp_path: Path, old: str, new: str, count: int = 1,
           source: Path = REAL) -> tuple[Path, str]:
    """A copy of ``source`` with the first ``count`` occurrences of ``old`` replaced."""
    text = source.read_text()
    assert text.count(old) >= count, old
    bad = text.replace(old, new, count)
    path = tmp_path / "timeline.json"
    path.write_text(bad)
    return path, bad


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


def undrawable(fig) -> list[str]:
    """Paths of numbers in a figure that plotly.js cannot draw (typed arrays decoded)."""
    out: list[str] = []

    def walk(o, path):
        if isinstance(o, dict) and set(o) >= {"dtype", "bdata"}:
            arr = np.frombuffer(base64.b64decode(o["bdata"]), dtype=o["dtype"])
            if arr.dtype.kind == "f" and not np.isfinite(arr[~np.isnan(arr)]).all():
                out.append(path)
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(v, f"{path}.{k}")
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                walk(v, f"{path}[{i}]")
        elif isinstance(o, float) and math.isinf(o):
            out.append(path)

    walk(fig.to_plotly_json(), "")
    return out


def report_everywhere(ds: dptrace.Dataset, tmp_path: Path) -> dptrace.Report:
    """The report's faces all build: HTML written, JSON parses, no figure holds inf. Returns
    the report (a test reads its tables and figures from it rather than building another)."""
    report = dptrace.report(ds)
    out = tmp_path / "report.html"
    report.to_html(str(out))
    assert out.stat().st_size > 10_000
    assert json.loads(report.to_json())["sections"]["horovod"]
    for name, fig in report.figures.items():
        assert not undrawable(fig), name
    return report


def errors(ds: dptrace.Dataset) -> pd.DataFrame:
    return ds.problems[ds.problems["severity"] == "error"]


def test_cycle_starts_sharing_one_timestamp_still_give_the_html(tmp_path):
    # every CYCLE_START at the first one's time: 13,999 cycles of 0 us
    text = REAL.read_text()
    bad = re.sub(r'("name": "CYCLE_START", "ts": )\d+', r"\g<1>1410488741507", text)
    path = tmp_path / "timeline.json"
    path.write_text(bad)
    ds = dptrace.load(path)
    cycles = ds["hvd_cycles"]
    assert len(cycles) == 13_999 and (cycles["dur_us"].dropna() == 0).all()
    report = report_everywhere(ds, tmp_path)
    # nothing to place on the log axis: no histogram, the tables still have the cycles
    assert not any(k.endswith("_cycles") for k in report.figures)
    assert report.tables["horovod.cycles"]["cycles"].item() == 13_999


def test_cycle_histogram_counts_zero_length_cycles_it_cannot_draw(tmp_path):
    text = REAL.read_text()
    # the second CYCLE_START at the first one's time: one cycle of 0 us among 13,998
    bad = text.replace('"ts": 1410488746885', '"ts": 1410488741507', 1)
    path = tmp_path / "timeline.json"
    path.write_text(bad)
    fig = report_everywhere(dptrace.load(path), tmp_path).figures["horovod.file1_cycles"]
    assert "1 cycle time(s) of 0 µs or less, or not finite: not drawn" in fig.layout.title.text


def test_twenty_digit_pid_costs_its_record_not_the_file(tmp_path):
    record = '{"ph": "B", "name": "ALLREDUCE", "ts": 1410496618188, "pid": 14}'
    bad_record = record.replace('"pid": 14}', '"pid": 12345678901234567890}')
    path, bad = damage(tmp_path, record, bad_record)
    base, ds = _cache.load(REAL), dptrace.load(path)
    assert ds.sources["status"].item() == "partial"
    err = errors(ds).iloc[0]
    assert err["line"] == line_of(bad, bad_record)
    assert f"byte {bad.encode().index(bad_record.encode()):,}" in err["message"]
    assert "pid does not fit a 64-bit integer" in err["message"]
    # the one record is gone (its op's last E then closes nothing); everything else is there
    assert ds["hvd_runs"]["events"].item() == base["hvd_runs"]["events"].item() - 1
    assert len(ds["hvd_activities"]) == len(base["hvd_activities"]) - 1
    assert len(ds["hvd_ready"]) == len(base["hvd_ready"])
    assert ds["hvd_runs"]["unmatched_ends"].item() == 1
    report_everywhere(ds, tmp_path)


@pytest.mark.parametrize("pid", ["-9223372036854775809", "99999999999999999999999",
                                 "18446744073709551615"])
def test_pids_beyond_int64_in_the_packed_layout(tmp_path, pid):
    real = FIX / "alcfws_timeline_gpu_n1.json"   # >= 0.20.1: thousands of events per line
    path, _ = damage(tmp_path, '"pid": 3}', f'"pid": {pid}}}', source=real)
    base, ds = _cache.load(real), dptrace.load(path)
    assert ds.sources["status"].item() == "partial"
    assert len(errors(ds)) == 1 and "64-bit" in errors(ds)["message"].item()
    assert ds["hvd_runs"]["events"].item() == base["hvd_runs"]["events"].item() - 1
    assert len(ds["hvd_cycles"]) == len(base["hvd_cycles"])
    report_everywhere(ds, tmp_path)


def test_negative_timestamp_is_dropped_from_its_record_with_a_problem(tmp_path):
    # the E closing pid 1's NEGOTIATE_BROADCAST, written as a negative time
    record = '{"ph": "E", "ts": 1410494648016, "pid": 1}'
    bad_record = '{"ph": "E", "ts": -340905, "pid": 1}'
    path, bad = damage(tmp_path, record, bad_record)
    base, ds = _cache.load(REAL), dptrace.load(path)
    err = errors(ds)
    assert len(err) == 1 and err["line"].item() == line_of(bad, bad_record)
    assert "timestamp -340905" in err["message"].item()
    assert "kept without it" in err["message"].item()
    acts = ds["hvd_activities"]
    assert not (acts["dur_us"] < 0).any()
    # the E still closes its negotiation (the records after it match as before), which has
    # no duration; the offset and the span are the file's
    assert len(acts) == len(base["hvd_activities"])
    assert acts["complete"].all() and acts["dur_us"].isna().sum() == 1
    runs, base_runs = ds["hvd_runs"].iloc[0], base["hvd_runs"].iloc[0]
    assert (runs["ts_offset_us"], runs["span_us"]) == (base_runs["ts_offset_us"],
                                                        base_runs["span_us"])
    assert runs["open_intervals"] == 0
    report_everywhere(ds, tmp_path)


def test_int64_overflowing_timestamp_gives_no_absurd_span(tmp_path):
    record = '{"ph": "E", "ts": 1410494648016, "pid": 1}'
    path, bad = damage(tmp_path, record, '{"ph": "E", "ts": 27000000000000000000, "pid": 1}')
    base, ds = _cache.load(REAL), dptrace.load(path)
    assert ds["hvd_runs"]["span_us"].item() == base["hvd_runs"]["span_us"].item()
    err = errors(ds)
    assert len(err) == 1 and "timestamp 2.7e+19" in err["message"].item()
    assert err["line"].item() == line_of(bad, '"ts": 27000000000000000000')
    assert ds["hvd_activities"]["dur_us"].max() < 1e9
    report_everywhere(ds, tmp_path)


def test_start_time_that_does_not_fit_is_dropped(tmp_path):
    path, _ = damage(tmp_path, '"start_time_since_epoch_in_micros":1633449303945695',
                     '"start_time_since_epoch_in_micros":1e300',
                     source=FIX / "alcfws_timeline_gpu_n1.json")
    ds = dptrace.load(path)
    assert ds["hvd_runs"]["start_epoch_us"].isna().item()
    assert "start_time_since_epoch_in_micros 1e+300" in errors(ds)["message"].item()
    report_everywhere(ds, tmp_path)


def test_e_before_its_b_never_gives_a_negative_duration(tmp_path):
    # three E records written with times before their B: out of order, flagged once
    text = REAL.read_text()
    bad = text
    for pid, ts in ((1, 1410494648016), (2, 1410494648019), (3, 1410494648021)):
        bad = bad.replace(f'{{"ph": "E", "ts": {ts}, "pid": {pid}}}',
                          f'{{"ph": "E", "ts": {ts - 6_000_000}, "pid": {pid}}}', 1)
    path = tmp_path / "timeline.json"
    path.write_text(bad)
    ds = dptrace.load(path)
    acts = ds["hvd_activities"]
    assert not (acts["dur_us"] < 0).any()
    assert acts["complete"].all() and acts["dur_us"].isna().sum() == 3
    msgs = ds.problems["message"]
    backwards = msgs[msgs.str.startswith("timestamps go backwards")]
    assert backwards.tolist() == [backwards.iloc[0]] and "3 time(s)" in backwards.iloc[0]
    neg = msgs[msgs.str.contains("end before they start")]
    assert len(neg) == 1 and neg.iloc[0].startswith("3 interval(s)")
    assert "NEGOTIATE_BROADCAST" in neg.iloc[0]
    assert ds.sources["status"].item() == "partial"
    # the negotiations' mean is over the ones with a duration
    br = report_everywhere(ds, tmp_path).tables["horovod.activities"]
    assert br["mean_us"].notna().all()


def test_cycle_markers_going_backwards_give_no_negative_cycle(tmp_path):
    path, _ = damage(tmp_path, '"ts": 1410488753030', '"ts": 1410488700000')
    ds = dptrace.load(path)
    assert not (ds["hvd_cycles"]["dur_us"] < 0).any()
    msgs = ds.problems["message"]
    assert msgs.str.startswith("1 CYCLE_START marker(s) are earlier").any()
    report_everywhere(ds, tmp_path)


def test_duplicate_keys_are_flagged_once_per_file_with_a_count(tmp_path):
    text = REAL.read_text()
    bad = text.replace('{"ph": "E", "ts": 1410494648016, "pid": 1}',
                       '{"ph": "E", "ts": 1410494648016, "pid": 1, "ts": 1}', 1)
    bad = bad.replace('{"ph": "E", "ts": 1410494648019, "pid": 2}',
                      '{"ph": "E", "ts": 1410494648019, "pid": 2, "pid": 7}', 1)
    path = tmp_path / "timeline.json"
    path.write_text(bad)
    ds = dptrace.load(path)
    dup = ds.problems[ds.problems["message"].str.contains("duplicate key")]
    assert len(dup) == 1 and dup["message"].item().startswith("2 duplicate key(s)")
    assert dup["severity"].item() == "warning"
    report_everywhere(ds, tmp_path)


def test_duplicate_keys_in_records_read_one_by_one(tmp_path):
    # beyond the checked head of the file, in a block that a malformed record sends down the
    # record-by-record route: found there too
    text = REAL.read_text()
    at = len(text) - 2000
    head, tail = text[:at], text[at:]
    tail = tail.replace('"s": "g"}', '"s": "g", "ph": "i"}', 1)
    tail = tail.replace('"s": "g"}', '"s": "g", }', 1)
    path = tmp_path / "timeline.json"
    path.write_text(head + tail)
    assert len(text.encode()) - 2000 > dec.DUP_SAMPLE
    ds = dptrace.load(path)
    msgs = ds.problems["message"]
    assert msgs.str.startswith("1 duplicate key(s)").sum() == 1
    assert msgs.str.contains("skipped a malformed record").sum() == 1


def test_real_timelines_have_no_duplicate_keys_or_bad_times():
    for path in sorted(FIX.glob("*.json")):
        msgs = dptrace.load(path).problems["message"]
        assert not msgs.str.contains("duplicate key|out of range|end before").any(), path


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400])
def test_nan_infinity_and_huge_numbers_cost_only_their_record(tmp_path, token):
    # not JSON, or a number no float holds: the rank tick is skipped, named by its line
    tick = '{"ph": "X", "name": "0", "ts": 1410494648015, "pid": 1, "dur": 0}'
    path, bad = damage(tmp_path, tick, tick.replace("1410494648015", token))
    base, ds = _cache.load(REAL), dptrace.load(path)
    err = errors(ds)
    assert len(err) == 1 and err["line"].item() == line_of(bad, token)
    assert "skipped a malformed record" in err["message"].item()
    assert len(ds["hvd_ready"]) == len(base["hvd_ready"]) - 1
    assert ds["hvd_ready"]["lag_us"].between(0, 1e12).all()
    report_everywhere(ds, tmp_path)


def test_shape_too_large_for_bytes_leaves_them_empty(tmp_path):
    path, _ = damage(tmp_path, '"shape": "[1001]"', '"shape": "[99999999999, 99999999999, '
                     '99999999999]"')
    base, ds = _cache.load(REAL), dptrace.load(path)
    t = ds["hvd_tensors"]
    assert t["bytes"].isna().sum() == base["hvd_tensors"]["bytes"].isna().sum() + 1
    assert (t["bytes"].dropna() > 0).all()
    assert errors(ds)["message"].str.contains("more than").any()
    report_everywhere(ds, tmp_path)


@pytest.mark.parametrize("line", ["[", "]"])
def test_a_repeated_bracket_costs_no_record(tmp_path, line):
    # the fuzzer's dup_line (tests/test_fuzz.py): the first or last line written twice
    real = FIX / "smdebug_rotated_horovod_timeline_tiny.json"
    lines = real.read_text().splitlines(keepends=True)
    at = lines.index(line + "\n")
    path = tmp_path / "timeline.json"
    path.write_text("".join(lines[:at + 1] + lines[at:]))
    # (forced: the sniffer does not take '[[' for a timeline)
    base, ds = _cache.load(real), dptrace.load(path, format="horovod")
    pd.testing.assert_frame_equal(ds["hvd_cycles"].drop(columns=["run", "source"]),
                                  base["hvd_cycles"].drop(columns=["run", "source"]))
    warn = ds.problems[ds.problems["message"].str.contains("extra")]
    assert warn["line"].tolist() == [at + 2] and warn["severity"].item() == "warning"
    dptrace.report(ds).to_html(str(tmp_path / "report.html"))


def test_stray_bytes_after_the_last_record_cost_only_themselves(tmp_path):
    # the fuzzer's bit flip: the newline before the closing ']' became a control character
    real = FIX / "smdebug_rotated_horovod_timeline_tiny.json"
    data = real.read_bytes()
    at = data.rindex(b"}\n]") + 1
    path = tmp_path / "timeline.json"
    path.write_bytes(data[:at] + b"\x0e" + data[at + 1:])
    base, ds = _cache.load(real), dptrace.load(path)
    assert len(ds["hvd_cycles"]) == len(base["hvd_cycles"]) == 1
    warn = ds.problems[ds.problems["message"].str.contains("stray")]
    assert warn["message"].item().startswith("ignored 1 stray byte(s) around the record")
    assert warn["line"].item() == data[:at].count(b"\n") + 1
    assert not errors(ds).shape[0] and not ds["hvd_runs"]["truncated"].item()


def test_bad_numbers_in_later_blocks_and_parallel_ranges(tmp_path, monkeypatch):
    # small blocks, three ranges decoded by forked workers: the damage deep in the file is
    # still named by its own byte and line, and costs only its record
    record = '{"ph": "E", "ts": 1410496618036, "pid": 14}'
    bad_record = '{"ph": "E", "ts": -5, "pid": 14}'
    pid_record = '{"ph": "B", "name": "MPI_ALLREDUCE", "ts": 1410496618193, "pid": 14}'
    bad_pid = pid_record.replace('"pid": 14}', '"pid": 99999999999999999999}')
    text = REAL.read_text()
    bad = text.replace(record, bad_record, 1).replace(pid_record, bad_pid, 1)
    path = tmp_path / "timeline.json"
    path.write_text(bad)
    whole = dptrace.load(path)
    events = _cache.load(REAL)["hvd_runs"]["events"].item()   # the clean file, read as usual
    monkeypatch.setattr(chrome, "BLOCK", 4096)
    monkeypatch.setattr(chrome, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(chrome, "RANGE_BYTES", len(bad) // 3)
    for ds in (whole, dptrace.load(path, executor=3)):
        err = errors(ds).sort_values("line")
        assert err["line"].tolist() == [line_of(bad, bad_record), line_of(bad, bad_pid)]
        data = bad.encode()
        assert f"byte {data.index(bad_record.encode()):,}" in err["message"].iloc[0]
        assert f"byte {data.index(bad_pid.encode()):,}" in err["message"].iloc[1]
        assert ds["hvd_runs"]["events"].item() == events - 1
        assert not (ds["hvd_activities"]["dur_us"] < 0).any()
