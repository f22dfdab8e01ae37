"""The scan with the fast engine's reader of tqdm lines (:class:`.fast.Found`) against the
general engine's scan.

``general._Scanner.run`` lets ``Found`` read the lines of ``\\r``-separated tqdm updates of its
range at once and passes over them; the scanner reads every other line. The rows, line numbers
and problems must be exactly those of the general scan, on generated lines built to sit on every
edge: prefixes, declined lines, long lines, holes of NUL bytes, a last line without a newline,
ranges that start inside the file.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import dptrace
from dptrace.formats.trainlog import fast as trainlog_fast
from dptrace.formats.trainlog import general, rules


def _scan(data: bytes, start: int, end: int, line: int, fast: bool,
          last: bool = True) -> tuple[Any, ...]:
    rows = rules.Rows()
    found = trainlog_fast.Found() if fast else None
    problems: list[Any] = []
    scanner = general._Scanner(data, "x.log", rows, problems, start, end, line=line,
                               found=found)
    scanner.run(last)
    tp = trainlog_fast.frame(rows.tp, found, "tp", rules.TP_COLS)
    tm = trainlog_fast.frame(rows.tm, found, "tm", rules.TM_COLS)
    return (_values(tp), _values(tm), repr(problems), scanner.newlines, repr(rows.headers))


def _values(df: Any) -> str:
    """The rows as Python values (strings, categorical or not, None where missing)."""
    cols = {}
    for col in df:
        s = df[col]
        vals = s.astype(object).tolist()
        cols[col] = [None if v is None or (isinstance(v, float) and v != v and
                                           s.dtype.kind not in "fi") else v for v in vals]
    return repr(cols)


def _same(data: bytes, start: int = 0, end: int | None = None, line: int = 1) -> None:
    end = len(data) if end is None else end
    for last in (True, False):
        fast = _scan(data, start, end, line, True, last)
        py = _scan(data, start, end, line, False, last)
        assert fast == py, data[start:end][:2000]


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


def test_holes_and_files_same_as_general(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = _lines(rng, 3000)
    data = ("\n".join(lines)).encode()
    cut = len(data) // 2
    cut = data.find(b"\n", cut)
    holed = data[:cut] + b"\x00" * 40 + data[cut:] + b"\n0: loss: 1.5"
    for k, blob in enumerate((data + b"\n", data, holed)):
        path = tmp_path / f"slurm-{k}.out"
        path.write_bytes(blob)
        a = dptrace.read_trainlog(path, engine="fast")
        b = dptrace.read_trainlog(path, engine="general")
        for table in ("throughput", "train_metrics"):
            assert repr(a[table].to_dict("list")) == repr(b[table].to_dict("list"))
        assert repr(a.problems) == repr(b.problems)


def test_patched_recognisers_read_under_the_fast_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    # the fast engine reads tqdm lines only: SambaFlow and loss lines go to rules.SPECIFIC /
    # FALLBACK as they are when the scan runs (a test's, a plugin's tables)
    seen: list[str] = []

    def spy(text: str, rows: rules.Rows) -> bool:
        seen.append(text)
        return False

    monkeypatch.setattr(rules, "SPECIFIC", ((("e2e",), spy),))
    rows = rules.Rows()
    general._Scanner(b"0: e2e samples_per_sec: 5\n", "x", rows, [], 0, 26,
                     found=trainlog_fast.Found()).run()
    assert seen == ["e2e samples_per_sec: 5"]


def test_few_tqdm_lines_among_many() -> None:
    """A chunk with few lines of \\r updates (fewer than one in fast._FEW_CR): only those are
    looked at, and the scanner passes over them alone."""
    rng = random.Random(11)
    for _ in range(20):
        lines = [_plain(rng) if rng.random() < 0.3 else "noise line 12 of 99"
                 for _ in range(rng.randint(50, 300))]
        for _ in range(rng.randint(1, 4)):
            lines.insert(rng.randrange(len(lines) + 1), _tqdm(rng))
        _same(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
