"""The scan loop in C (``_tqdm_fast.scan``, the fast engine's) against the Python loop.

``general._Scanner.run`` hands its loop to ``scan()`` when the C extension is there: it reads
the lines of ``\\r``-separated tqdm updates, SambaFlow lines and loss lines itself and returns
every other keyword to the Python loop. The rows, line numbers and problems must be exactly
those of the Python loop (with the same C reader of tqdm lines) and of the general engine, on
generated lines built to sit on every edge: prefixes, declined lines, long lines, holes of NUL
bytes, a last line without a newline, ranges that start inside the file.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import dptrace
from dptrace.formats.trainlog import fast as trainlog_fast
from dptrace.formats.trainlog import general, rules

try:
    from dptrace.formats.trainlog import _tqdm_fast  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a compiler
    _tqdm_fast = None

pytestmark = pytest.mark.skipif(_tqdm_fast is None or general.re2_match() is None,
                                reason="the C extension (or google-re2) is not there")


def _cr_line() -> Any:
    assert _tqdm_fast is not None
    if _tqdm_fast.cr_line not in general.C_SCANS:  # DPTRACE_PURE_PYTHON kept trainlog from it
        trainlog_fast.configure_fast(_tqdm_fast)
    return _tqdm_fast.cr_line


def _scan(data: bytes, start: int, end: int, line: int, c_scan: bool, tables: bool,
          last: bool = True) -> tuple[Any, ...]:
    cr_line = _cr_line()
    saved = dict(general.C_SCANS)
    if not c_scan:
        general.C_SCANS.clear()
    try:
        rows = (trainlog_fast.new_rows() if tables else None) or rules.Rows()
        problems: list[Any] = []
        scanner = general._Scanner(data, "x.log", rows, problems, start, end, line=line,
                                   cr_line=cr_line)
        scanner.run(last)
    finally:
        general.C_SCANS.update(saved)
    tp = rows.tp if isinstance(rows.tp, list) else rows.tp.rows()
    tm = rows.tm if isinstance(rows.tm, list) else rows.tm.rows()
    return repr(tp), repr(tm), repr(problems), scanner.newlines, repr(rows.headers)


def _same(data: bytes, start: int = 0, end: int | None = None, line: int = 1) -> None:
    end = len(data) if end is None else end
    for tables in (False, True):
        for last in (True, False):
            c = _scan(data, start, end, line, True, tables, last)
            py = _scan(data, start, end, line, False, tables, last)
            assert c == py, data[start:end][:2000]


NUMS = ["0.642", "1", "-2.5e-3", "+.5", "3.", "1e5", "2E+02", "007", "1.5x", "4.2.1", "9_",
        "12345678901234567890", "0.1e", ".e1", "nan", "1e400", "5,", "6]"]
PREFIXES = ["", "3: ", "  12: ", "1234567: ", "[rank3]: ", "[rank3] ", "[default0]:",
            "[default0]: ", "[1,3]<stdout>: ", "[0]<stdout>:", "[7] ", "[rank_x3]: ", "12:",
            "\t5: ", "[a1b2]: ", "[ranks3]:"]


def _plain(rng: random.Random) -> str:
    n = rng.choice(NUMS)
    forms = [
        f"inner train loop time : {rng.choice(NUMS)} for {rng.randint(0, 99)} epochs, "
        f"number of global steps: {rng.randint(0, 999)}, e2e samples_per_sec: {n}",
        f"inner train loop time: {n} for 1 epoch, number of global steps: 3,e2e samples_per_sec:{n}",
        f"e2e samples_per_sec: {n}",
        f"x inner train loop time : 1 for 2 epochs, e2e samples_per_sec:  {n} e2e samples_per_sec: 4",
        "WARNING: e2e samples_per_sec is not reported during warm-up epochs",
        f"Epoch {rng.randint(0, 9)} train loss: {n} val loss: {rng.choice(NUMS)} val acc: 0.5",
        f"step {rng.choice(NUMS)} loss: {n}", f"Step:{rng.randint(0, 10**20)} Loss = {n}",
        f"iteration #{rng.randint(0, 99)} iter: 3 epoch={rng.randint(0, 9)} loss: {n}",
        f"ITERATION 5 aaaaaaaaaaaaaaaaaaaaaaaaa_loss: {n} abcdefghijklmnopqrst loss:{n}",
        f"x_loss: {n} Xloss: {n} lossy: {n} loss_loss: {n} loss :{n}. loss:\t{n}",
        f"Boss: {n}", f"train loss: {n} epoch 3 epochs: 4 stepx 5 step", "loss: ",
        f"loss: {n} " * rng.randint(1, 40),
        f"{n} samples/sec loss: {n}", f"loss={n}", f"Loss: {n}", f"val loss: {n} it/s",
        f"tokens/s {n} loss: {n}", f"running loss: {n} \x1b[0m", f"loss: {n} caf\u00e9",
        f"loss: {n}\x0b", f"loss: {n} \u0663", f"per iteration loss: {n}", f"oss: {n}",
    ]
    return rng.choice(PREFIXES) + rng.choice(forms)


def _tqdm(rng: random.Random) -> str:
    ups = []
    for _ in range(rng.randint(1, 5)):
        k = rng.randint(0, 100)
        ups.append(f"Epoch 0:  {k}%|\u2588\u258c    | {k}/100 [00:01<00:02, {rng.choice(NUMS)}it/s, "
                   f"loss={rng.choice(NUMS)}, v_num=0]")
    return rng.choice(PREFIXES) + "\r" + "\r".join(ups)


def _noise(rng: random.Random) -> str:
    return rng.choice(["NCCL INFO Channel 19/32 :    0   1", "", " ", "site-packages/setuptools",
                       "Running on 64 tasks", "world_size=8", "12.5 img/sec per GPU",
                       "{'loss': 0.5, 'train_samples_per_second': 3.0}", "7.1it/s v_num: 1",
                       # '\r' lines: a keyword that is no literal (no direct read after a
                       # '\r' line, scan.c), none at all (no rows), an update after the prefix
                       "\r52.68it/s v_num: 1\r53.1it/s v_num: 1",
                       "\rEpoch 0: 5/9 [00:01<00:02, 3.0img/step]\rx 6/9 [00:02<00:01, 3img/step]",
                       "3: 5/9 [00:01<00:02, 3.0it/s]\r6/9 [00:02<00:01, 3.1it/s]"])


def _lines(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(_plain(rng) if r < 0.5 else _tqdm(rng) if r < 0.75 else _noise(rng))
    return out


def test_generated_lines_same_rows() -> None:
    rng = random.Random(14)
    for _ in range(300):
        text = "\n".join(_lines(rng, rng.randint(1, 30)))
        end = rng.choice(["\n", "", "\n\n"])
        _same((text + end).encode("utf-8", "surrogatepass"))


def test_ranges_and_line_numbers() -> None:
    rng = random.Random(3)
    data = ("\n".join(_lines(rng, 400)) + "\n").encode()
    for _ in range(40):
        a = rng.randrange(len(data))
        a = data.find(b"\n", a) + 1 or 0
        b = rng.randint(a, len(data))
        _same(data, a, b, line=rng.randint(1, 1000))


def test_long_lines_and_edges() -> None:
    w = general.WINDOW
    seg = general.MAX_SEGMENT
    cases = [
        "x" * (w + 10) + " loss: 1\nloss: 2\n",
        "loss: 1 " + "x" * (w + 10) + "\nloss: 2\n",
        "y" * (seg + 5) + " loss: 1\nloss: 2\n",
        "loss: 1 " + "y" * (seg + 5) + "\n3: loss: 2\n",
        "z" * (w - 3) + "\nloss: 4\n",
        "loss: 1\nloss: 2",  # last line without a newline
        "loss: 1\n\n\nloss: 2\r\n",
        "loss: 1\x00\x00\n2: e2e samples_per_sec: 5\n",
        "\n" * 5000 + "0: loss: 1\n" + "noise line\n" * 3000 + "1: loss: 2\n",
        "0: loss: 1\xff\n1: loss: 2\n",
    ]
    for text in cases:
        _same(text.encode("latin-1") if "\xff" in text else text.encode())


def test_holes_and_files_same_as_general(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    lines = _lines(rng, 3000)
    data = ("\n".join(lines)).encode()
    cut = len(data) // 2
    cut = data.find(b"\n", cut)
    holed = data[:cut] + b"\x00" * 40 + data[cut:] + b"\n0: loss: 1.5"
    if trainlog_fast._FAST is None:
        monkeypatch.setattr(trainlog_fast, "_FAST", _cr_line())
    for k, blob in enumerate((data + b"\n", data, holed)):
        path = tmp_path / f"slurm-{k}.out"
        path.write_bytes(blob)
        a = dptrace.read_trainlog(path, engine="fast")
        b = dptrace.read_trainlog(path, engine="general")
        for table in ("throughput", "train_metrics"):
            assert repr(a[table].to_dict("list")) == repr(b[table].to_dict("list"))
        assert repr(a.problems) == repr(b.problems)


def test_scan_checks_its_arguments() -> None:
    assert _tqdm_fast is not None
    _cr_line()
    with pytest.raises(ValueError):
        _tqdm_fast.scan(b"loss: 1\n", 5, 3, 0, 0, 1, rules.Rows())
    with pytest.raises(TypeError):
        _tqdm_fast.scan(b"loss: 1\n", 0, 8, 0, 0, 1, rules.Rows(tp=(), tm=()))
    rows = rules.Rows()
    assert _tqdm_fast.scan(b"3: loss: 1\nx\n", 0, 13, 0, 0, 1, rows) == (-1, 1, 4)
    assert rows.tm == [("3", 1, 0, "loss_line", "loss", 1.0, None, None)]


def test_patched_recognisers_turn_the_c_loop_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # the C loop reads SambaFlow and loss lines as rules.SPECIFIC / FALLBACK read them at
    # import; with other tables (a test's, a plugin's) the Python loop runs them
    _cr_line()
    seen: list[str] = []

    def spy(text: str, rows: rules.Rows) -> bool:
        seen.append(text)
        return False

    monkeypatch.setattr(rules, "SPECIFIC", ((("e2e",), spy),))
    rows = rules.Rows()
    general._Scanner(b"0: e2e samples_per_sec: 5\n", "x", rows, [], 0, 26,
                     cr_line=_cr_line()).run()
    assert seen == ["e2e samples_per_sec: 5"]


# --- the lines passed over without the matcher (general.required_literals) ---------------------

def _keyword_lines(rng: random.Random) -> list[bytes]:
    """Lines built to start keywords in every way the patterns allow, and near misses."""
    bits = [k.decode() for k in general.KEYWORDS if k.isascii() and k.decode().isprintable()]
    near = ["worker", "world size", "Running", "Number of", "it/", "/s", "s/", "oss", "per",
            "MEMBER:", "tps:", "SLURM_", "WORLD", "Num", "Total train", "7it/s", "9it/s\t",
            "ms, mfu", "step_avg", "store-based", "PerSe", "_per", " tps: 5", "  tps: x"]
    out = []
    for _ in range(4000):
        parts = [rng.choice(near + ["x", " ", "0", "[", "]", ":", "="] +
                            ["Running training", "Running on 12 tasks", "Number of GPUs:",
                             "World size:", "world size:", "worker 3 of 8", "MEMBER: 1",
                             "  tps: 9", "5it/s", "5it/s "] + bits)
                 for _ in range(rng.randint(0, 6))]
        out.append("".join(parts).encode())
    return out


def test_required_literals_hold_every_keyword_start() -> None:
    """Every match of the keywords that starts in a line holds a required literal in that
    line: what lets the C scan pass over lines without one."""
    required = general.required_literals()
    assert required is not None
    rng = random.Random(5)
    lines = _keyword_lines(rng) + [x.encode("utf-8", "surrogatepass") for x in _lines(rng, 3000)]
    for path in sorted((Path(__file__).parent / "fixtures" / "trainlog").rglob("*"))[:400]:
        if path.is_file() and path.stat().st_size < 5_000_000:
            lines += path.read_bytes().split(b"\n")
    matched = 0
    for line in lines:
        data = line + b"\n"
        m = general._SCAN.search(data)
        if m is not None and m.start() < len(line):
            matched += 1
            assert any(w in line for w in required), line
    assert matched > 1000


def test_required_literals_of_patterns() -> None:
    """The derivation: a literal after characters that cannot be a newline, every branch's
    own, None where a keyword has none (or holds flags, or can match a newline first)."""
    req = general._required_of

    assert req("[0-9]it/s(?:\\s|$)") == {"it/s"}
    assert req("(?:ab|cd)=|[Xx]yz:|Num") == {"ab", "cd", "yz:", "Num"}
    assert req("worker [0-9]+ of") == {"worker "}
    assert req("\\d+ loss") == {" loss"}
    assert req("x") is None  # one character: too common to filter by
    assert req("\\s+loss") is None  # a newline may come first
    assert req("[^a]+loss") is None
    assert req(".*loss") == {"loss"}  # '.' is no newline
    assert req("(?i)loss") is None
    assert req("a(?i:bc)") is None  # flags of a group
    assert req("(?s).loss") is None
    assert req("lo(ss)") == {"lo"}


def test_scan_same_without_the_filter() -> None:
    """The C scan with the filter of lines and without it (every line to the matcher) gives
    the same rows, line numbers and problems."""
    assert _tqdm_fast is not None
    _cr_line()
    rng = random.Random(9)
    blobs = [("\n".join(_lines(rng, 200)) + "\n").encode("utf-8", "surrogatepass")
             for _ in range(20)]
    blobs.append(b"\n".join(_keyword_lines(rng)) + b"\n")
    required = general.required_literals()
    try:
        for data in blobs:
            with_filter = _scan(data, 0, len(data), 1, True, True)
            _tqdm_fast.configure_required(None)
            without = _scan(data, 0, len(data), 1, True, True)
            _tqdm_fast.configure_required(required)
            assert with_filter == without
    finally:
        _tqdm_fast.configure_required(required)
    with pytest.raises(TypeError):
        _tqdm_fast.configure_required((b"x",))
    with pytest.raises(TypeError):
        _tqdm_fast.configure_required([b"xy"])
