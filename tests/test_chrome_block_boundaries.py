"""Records that straddle the Chrome-trace decoder's blocks (issue 29, section 4).

The container (dptrace/formats/_chrome.py) reads a trace in blocks; a valid trace must read
whole wherever a block ends: inside a string (Kineto's kernel names hold ``},``:
``{lambda(float)#1}, at::detail``), an escape, a number, nested ``args``, between ``},`` and
``{``, in the keys after ``traceEvents``. Checked on the real traces of
shared/realdata/torch_trace, on tests/fixtures/torchtrace and tests/fixtures/horovod:

- the container alone, with a first block of every size around records (every byte offset
  of a record cut once), against ``json.loads``;
- ``dptrace.load`` with small blocks (every record straddles some boundary) against one big
  block, and its event count against ``json.load``;
- a real-sized trace (> 32 MiB, the real events repeated, only ``ts`` shifted) laid out so
  that records holding ``},`` in their name straddle the real 16 MiB and 32 MiB boundaries;
- files really cut: read up to the cut and flagged.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import _cache
import msgspec
import pandas as pd
import pytest

import dptrace
from dptrace.errors import Problem
from dptrace.executor import resolve
from dptrace.formats import _chrome as chrome
from dptrace.formats.horovod import decode as hvd_decode
from dptrace.formats.torchtrace import read as tt_read

HERE = Path(__file__).parent
TORCH_FIX = HERE / "fixtures" / "torchtrace"
HVD_FIX = HERE / "fixtures" / "horovod"
REAL = HERE.parent.parent / "shared" / "realdata" / "torch_trace"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
#: the categories the torch reader leaves out (read.py's _SKIP_CATS)
SKIP_CATS = {"python_function", "trace", "ac2g", "fwdbwd", "async_cpu_to_gpu"}


def _bytes(path: Path) -> bytes:
    if path.suffix != ".gz":
        return path.read_bytes()
    with gzip.open(path) as fh:
        return fh.read()


def _kept(events: list[dict]) -> int:
    """The events torch_events keeps, counted from json's events (read.py's rule)."""
    return sum(1 for e in events if e.get("ph") == "X" and isinstance(e.get("cat"), str)
               and isinstance(e.get("name"), str) and e["cat"].lower() not in SKIP_CATS
               and type(e.get("pid")) is int)


# -- the container alone ----------------------------------------------------------------------

class _Sink:
    def __init__(self) -> None:
        self.newlines = 0
        self.closed = self.torn = False
        self.bad_records = 0
        self.problems: list[Problem] = []

    def problem(self, source: str, message: str, line: int | None,
                severity: str = "error") -> None:
        self.problems.append(Problem(source, message, line, severity))


class _Collect(chrome.BlockScanner):
    """Every record as a plain dict (msgspec, untyped), in file order."""

    def __init__(self, fh, out: _Sink, block: int, start: int = 0) -> None:
        super().__init__(fh, "t", chrome.Range(start, None, True, True), out)
        self.block = block
        self.events: list[dict] = []

    def decode_block(self, data):
        self.events.extend(msgspec.json.decode(data))

    def validated(self, piece, start, record):
        return msgspec.json.decode(record)

    def add_records(self, events):
        self.events.extend(events)


def _scan_array(data: bytes, block: int) -> tuple[list[dict], _Sink]:
    out = _Sink()
    sc = _Collect(io.BytesIO(data), out, block)
    sc.run()
    return sc.events, out


def _scan_trace(data: bytes, block: int) -> tuple[list[dict], _Sink, bytes]:
    """The events of a Kineto trace through the torch reader's stream (the array ended at
    its ']'), and what follows the array."""
    m = tt_read._EVENTS_KEY.search(data)
    offset = m.end() - 1
    fh = io.BytesIO(data)
    fh.seek(m.end())
    stream = tt_read._EventsStream(fh, data[offset:m.end()])
    out = _Sink()
    sc = _Collect(stream, out, block, offset)
    sc.run()
    return sc.events, out, stream.trailer


def _record_spans(array: bytes) -> list[tuple[int, int]]:
    """(start, end) of each top-level record of a JSON array, by json's own decoder."""
    dec = json.JSONDecoder()
    text = array.decode("latin-1")          # one char per byte: offsets are byte offsets
    spans, i = [], text.index("[") + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return spans
        _, end = dec.raw_decode(text, i)
        spans.append((i, end))
        i = end


def _array_end(data: bytes, start: int) -> int:
    """The offset of the ']' closing the array that opens at ``data[start]``."""
    _, end = json.JSONDecoder().raw_decode(data.decode("latin-1"), start)
    return end - 1


def _interesting(events: bytes, spans: list[tuple[int, int]], n: int) -> list[int]:
    """Indices of up to ``n`` records that hold '},' (in a string or a nested object), an
    escape or nested args: where a cut used to go wrong."""
    out = []
    for k, (a, b) in enumerate(spans):
        rec = events[a:b]
        if b"}," in rec or b"\\" in rec or rec.count(b"{") > 2:
            out.append(k)
            if len(out) == n:
                break
    return out


def _torch_doc(path: Path, records: int) -> tuple[bytes, int]:
    """A valid trace made of the real file's head (its metadata), its first ``records``
    events (from the first one that holds '},' in a string, when there is one) and its
    tail (the keys after traceEvents). Returns the bytes and the offset of the '['."""
    data = _bytes(path)
    m = tt_read._EVENTS_KEY.search(data)
    doc = json.loads(data)
    n = len(doc["traceEvents"])
    close = _array_end(data, m.end() - 1)
    arr = data[m.end() - 1:close + 1]
    spans = _record_spans(arr)
    assert len(spans) == n
    first = next((k for k, (a, b) in enumerate(spans) if b"}," in arr[a:b]), 0)
    first = max(0, min(first - 2, n - records))
    lo, hi = spans[first][0], spans[min(first + records, n) - 1][1]
    body = data[:m.end()] + arr[lo:hi] + b"\n  ]" + data[close + 1:]
    json.loads(body)
    return body, m.end() - 1


TORCH_FILES = [TORCH_FIX / "one_step" / "rank0.pt.trace.json",
               TORCH_FIX / "balanced" / "rank1.pt.trace.json.gz"]
REAL_TORCH = ["hta_nccl_data_2rank.json.gz", "hta_trace_diff_control_rank3_ws8.json.gz",
              "hta_sampled_rank-0_ws128.json.gz", "hta_ns_resolution_rank-0.pt.trace.json.gz"]


def _torch_paths() -> list[Path]:
    return TORCH_FILES + ([REAL / n for n in REAL_TORCH] if REAL.is_dir() else [])


@pytest.mark.parametrize("path", _torch_paths(), ids=lambda p: p.name)
def test_torch_every_cut_in_records_that_held_a_separator(path):
    """A first block of every size from before to after such records: each byte offset of
    them is once a block's end; the events and the trailer are json's."""
    body, offset = _torch_doc(path, 60)
    doc = json.loads(body)
    want = doc["traceEvents"]
    events = body[offset:]
    spans = _record_spans(events)
    targets = _interesting(events, spans, 3) or [0, len(spans) // 2]
    targets.append(len(spans) - 1)                 # the last record, then ']' and the keys
    sizes: set[int] = set()
    for k in targets:
        a, b = spans[k]
        sizes.update(range(max(a - 8, 2), b + 12))
    tail = len(events)                             # cuts in the keys after traceEvents
    sizes.update(range(max(tail - 400, 2), tail + 2))
    for size in sorted(sizes):
        got, out, trailer = _scan_trace(body, size)
        assert (got == want, out.problems, out.bad_records) == (True, [], 0), size
        assert out.closed and not out.torn, size
        assert tt_read._meta_after(trailer) == {k: v for k, v in doc.items()
                                               if k in tt_read._meta_after(trailer)}, size
        rest = tt_read._meta_after(trailer)
        after = list(doc)[list(doc).index("traceEvents") + 1:]
        assert sorted(rest) == sorted(after), size


HVD_FILES = ["andrewor14_horovod_timeline_2019_4rank.json", "alcfws_timeline_gpu_n1.json",
             "synthetic_v0200_per_line.json", "synthetic_v0201_packed.json",
             "smdebug_horovod_timeline_small.json", "synthetic_xss_tensor_name.json"]


def _hvd_array(name: str) -> bytes:
    """The fixture as a valid JSON array (the per-line layout never closes it)."""
    data = (HVD_FIX / name).read_bytes()
    body = data.rstrip()
    if not body.endswith(b"]"):
        body = body.rstrip(b",") + b"]"
    return body


@pytest.mark.parametrize("name", HVD_FILES)
def test_horovod_every_cut_around_records(name):
    """Around records of the file's start, middle and end (each in an array of the real
    records before and after it, in their real framing): every byte offset once a block's
    end."""
    data = _hvd_array(name)
    spans = _record_spans(data)
    picks = sorted({0, 1, len(spans) // 3, len(spans) // 2, len(spans) - 1}
                   | set(_interesting(data, spans, 2)))
    for k in picks:
        lo, hi = max(k - 12, 0), min(k + 12, len(spans) - 1)
        start = 0 if lo == 0 else spans[lo][0]          # the real opening, when there
        end = len(data) if hi == len(spans) - 1 else spans[hi][1]   # the real closing
        part = (b"" if lo == 0 else b"[") + data[start:end] + (
            b"" if hi == len(spans) - 1 else b"\n]")
        want = json.loads(part)
        a, b = _record_spans(part)[k - lo]
        for size in range(max(a - 6, 2), b + 8):
            got, out = _scan_array(part, size)
            assert (got == want, out.problems, out.bad_records) == (True, [], 0), (k, size)


def _lambda_array(names: int = 40) -> bytes:
    """Horovod records whose tensor names hold every kind of separator, in a string and
    nested: '},', '}, {', '}]', escapes, a nested args object."""
    recs = []
    for k in range(names):
        name = ["grad{lambda()#1}, at::x", "a}, {b", "c}],\"d", "e\\\\}, {\\\"f\"}",
                "g}{h", "\\u007d,"][k % 6]
        recs.append(json.dumps({"name": "process_name", "ph": "M", "pid": k,
                                "args": {"name": name, "extra": {"x": {"y": [1, {"z": 2}]}}}}))
        recs.append(json.dumps({"ph": "B", "name": "ALLREDUCE", "ts": 10 * k + 1, "pid": k}))
        recs.append(json.dumps({"ph": "E", "ts": 10 * k + 5, "pid": k,
                                "args": {"dtype": "float32", "shape": "[1, 2]"}}))
    return ("[\n" + ",\n".join(recs) + "\n]").encode()


def test_separators_in_strings_and_nested_objects_every_cut():
    data = _lambda_array()
    want = json.loads(data)
    for size in range(2, len(data) + 2):
        got, out = _scan_array(data, size)
        assert (got == want, out.problems) == (True, []), size


# -- dptrace.load: small blocks against one big block and json ---------------------------------

def _same(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    for name in a.tables:
        pd.testing.assert_frame_equal(a[name], b[name], check_like=False)


#: files and block sizes: ~1 KB blocks (every record straddles one) on the small files,
#: 64 KB ones on the large (a few hundred blocks each; ~1 KB would take minutes)
_SMALL, _LARGE = (1009,), (65536 + 7,)
LOAD_CASES = [(TORCH_FIX / "one_step" / "rank0.pt.trace.json", _SMALL + _LARGE),
              (TORCH_FIX / "balanced" / "rank1.pt.trace.json.gz", _SMALL + _LARGE)] + ([
    (REAL / "hta_sampled_rank-0_ws128.json.gz", _SMALL + _LARGE)] + [
    (REAL / n, _LARGE) for n in (
        "hta_nccl_data_2rank.json.gz", "hta_trace_diff_control_rank3_ws8.json.gz",
        "hta_ns_resolution_rank-0.pt.trace.json.gz", "hta_df_index_resolver_rank1_ws2.json.gz",
        "hta_rank0_ws16_alltoall.json.gz")] if REAL.is_dir() else [])


@pytest.mark.parametrize(("path", "blocks"), LOAD_CASES, ids=[c[0].name for c in LOAD_CASES])
def test_torch_load_small_blocks_equal_one_block_and_json(path, blocks, monkeypatch):
    whole = _cache.load(path)   # one block, read once per process (only read: test_torchtrace)
    assert whole.sources["status"].item() == "ok", whole.problems
    doc = json.loads(_bytes(path))
    assert len(whole["torch_events"]) == _kept(doc["traceEvents"])
    for block in blocks:
        monkeypatch.setattr(chrome, "BLOCK", block)
        small = dptrace.load(path)
        assert small.sources["status"].item() == "ok", (block, small.problems)
        _same(whole, small)


@pytest.mark.parametrize("name", HVD_FILES)
def test_horovod_load_small_blocks_and_ranges_equal_one_block(name, monkeypatch):
    path = HVD_FIX / name
    whole = dptrace.load(path)
    events = len(json.loads(_hvd_array(name)))
    assert int(whole["hvd_runs"]["events"].item()) == events
    for block in (1009, 4096 + 3):
        monkeypatch.setattr(chrome, "BLOCK", block)
        small = dptrace.load(path)
        assert small.sources["status"].item() == whole.sources["status"].item()
        _same(whole, small)


def test_parallel_ranges_never_start_inside_a_record(tmp_path, monkeypatch):
    """Byte ranges of a large plain file start where the window reads as whole records:
    never after a '},' in a tensor name or a nested object."""
    data = _lambda_array(400)
    path = tmp_path / "timeline.json"
    path.write_bytes(data)
    want = json.loads(data)
    for parts in range(2, 12):
        ranges = chrome.split_ranges(str(path), len(data), parts)
        for r in ranges[1:]:
            assert data[r.start - 2:r.start] == b"},"
            json.loads(b"[" + data[r.start:].rstrip().rstrip(b"]") + b"]")
        got = []
        for r in ranges:
            out = _Sink()
            with open(path, "rb") as fh:
                fh.seek(r.start)
                sc = _Collect(fh, out, 4096 + 3, r.start)
                sc.rng = r
                sc.left = None if r.end is None else r.end - r.start
                sc.run()
            assert out.problems == [], (parts, r)
            got.extend(sc.events)
        assert got == want, parts
    monkeypatch.setattr(chrome, "PARALLEL_BYTES", 1)
    cols = hvd_decode.merge(hvd_decode.decode_file(str(path), "t", len(data),
                                                   executor=resolve(3)))
    assert cols.events == len(want) and not cols.problems


# -- a real-sized trace: records straddle the real 16 MiB and 32 MiB boundaries -----------------

_TS = re.compile(rb'"ts": (\d+)')


def _build_big(src: bytes, size: int) -> tuple[bytes, int]:
    """``src``'s events repeated (the real records, each repeat's ts shifted past the last)
    until the events pass ``size`` bytes; at each 16 MiB boundary of the decoder's blocks,
    a record that holds '},' in its name is laid so that the boundary falls after that
    '},' and before the record's end (the cut that issue 29 saw). Returns the file and the
    number of events."""
    m = tt_read._EVENTS_KEY.search(src)
    close = _array_end(src, m.end() - 1)
    arr = src[m.end() - 1:close + 1]
    spans = _record_spans(arr)
    recs = [arr[a:b] for a, b in spans]
    ts = [int(t) for r in recs for t in _TS.findall(r)]
    period = max(ts) - min(ts) + 1000
    lam = [r for r in recs if b"}," in r and b'"name": "void' in r]
    assert lam, "the source trace has no kernel name holding '},'"
    sep = b",\n  "
    head = src[:m.end()] + b"\n  "
    out = [head]
    pos = len(head)                        # file offset of the next record
    block0 = m.end() - 1                   # file offset of the stream's first byte
    n = rep = 0
    boundary = block0 + chrome.BLOCK

    def shifted(r: bytes) -> bytes:
        return _TS.sub(lambda t: b'"ts": %d' % (int(t.group(1)) + rep * period), r)

    while pos < size:
        for r in recs:
            if pos + 4000 > boundary > pos:          # lay a '},' record across it
                r = lam[n % len(lam)]
                j = r.index(b"},") + 2
                fill = sorted((shifted(f) for f in recs), key=len)
                # real records before it until the boundary falls in r after its '},'
                while boundary - pos >= len(r):
                    f = next(f for f in reversed(fill)
                             if boundary - (pos + len(f) + len(sep)) > j)
                    out += [f, sep]
                    pos += len(f) + len(sep)
                    n += 1
                assert pos + j < boundary < pos + len(r)
                boundary += chrome.BLOCK
            r = shifted(r)
            out += [r, sep]
            pos += len(r) + len(sep)
            n += 1
        rep += 1
    out[-1] = b"\n  ]"
    out.append(src[close + 1:])
    return b"".join(out), n


@needs_real
def test_real_sized_trace_over_two_block_boundaries_reads_ok(tmp_path):
    src = _bytes(REAL / "hta_nccl_data_2rank.json.gz")
    data, n = _build_big(src, 33_500_000)
    path = tmp_path / "big.pt.trace.json"
    path.write_bytes(data)
    assert len(data) > 2 * chrome.BLOCK
    with open(path, "rb") as fh:
        doc = json.load(fh)
    assert len(doc["traceEvents"]) == n
    ds = dptrace.load(path)
    assert ds.sources["status"].item() == "ok", ds.problems
    assert ds.problems.empty
    assert len(ds["torch_events"]) == _kept(doc["traceEvents"])
    tr = ds["torch_traces"].iloc[0]
    assert not tr["cut"] and tr["events"] == _kept(doc["traceEvents"])
    assert tr["rank"] == doc["distributedInfo"]["rank"]
    # and every record, not only the kept ones, through the container
    got, out, _ = _scan_trace(data, chrome.BLOCK)
    assert len(got) == n and not out.problems


# -- really cut files: read up to the cut, flagged --------------------------------------------

def test_torch_cut_inside_a_record_is_read_up_to_it(tmp_path):
    body, offset = _torch_doc(TORCH_FIX / "one_step" / "rank0.pt.trace.json", 80)
    events = body[offset:]
    spans = _record_spans(events)
    for k in (5, len(spans) // 2, len(spans) - 1):
        a, b = spans[k]
        for cut in (a + 1, (a + b) // 2, b - 1):
            path = tmp_path / f"cut_{k}_{cut}.pt.trace.json"
            path.write_bytes(body[:offset + cut])
            ds = dptrace.load(path)
            assert ds.sources["status"].item() == "partial"
            whole = json.loads(b"[" + events[spans[0][0]:spans[k - 1][1]] + b"]")
            assert len(ds["torch_events"]) == _kept(whole), (k, cut)
            assert bool(ds["torch_traces"]["cut"].item())
            assert ds.problems["message"].str.contains("ends inside").any()


def test_horovod_cut_inside_a_record_is_read_up_to_it(tmp_path, monkeypatch):
    data = _lambda_array(30)
    spans = _record_spans(data)
    monkeypatch.setattr(chrome, "BLOCK", 1009)
    for k in (3, len(spans) // 2, len(spans) - 1):
        a, b = spans[k]
        for cut in (a + 1, (a + b) // 2, b - 1):
            got, out = _scan_array(data[:cut], 1009)
            assert got == json.loads(b"[" + data[spans[0][0]:spans[k - 1][1]] + b"]")
            assert out.torn and out.bad_records == 0, (k, cut)


def test_sorted_keys_trace_nested_args_before_other_keys(tmp_path, monkeypatch):
    """A real trace rewritten with sorted keys (``args`` first: ``},`` after every nested
    args object) reads as the original, whatever the block."""
    src = TORCH_FIX / "one_step" / "rank0.pt.trace.json"
    doc = json.loads(src.read_bytes())
    path = tmp_path / "sorted.pt.trace.json"
    path.write_text(json.dumps(doc, sort_keys=True, indent=1))
    assert b'"args": {' in path.read_bytes()
    whole = dptrace.load(src)
    for block in (257, 1009, 4099):
        monkeypatch.setattr(chrome, "BLOCK", block)
        got = dptrace.load(path)
        assert got.sources["status"].item() == "ok", (block, got.problems)
        a, b = whole["torch_events"], got["torch_events"]
        assert len(a) == len(b) == _kept(doc["traceEvents"])
        pd.testing.assert_frame_equal(a.drop(columns=["source", "run"]),
                                      b.drop(columns=["source", "run"]))
