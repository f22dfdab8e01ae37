"""The fast engine's reading of plain lines (no ``\\r``) in a chunk dense with tqdm lines
(:meth:`.fast.Found._plain_lines`: the lines :func:`.rules.sambaflow` and
:func:`.rules.generic_loss` read) against the general engine's scan, row for row.

Each case checks both that the rows are the general engine's and that the fast reader did read
lines (a reader that declined every line would pass the comparison alone).
"""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest

from dptrace.formats.trainlog import fast as trainlog_fast
from dptrace.formats.trainlog import general, rules

NUMS = ["0.642", "1", "-2.5e-3", "+.5", "3.", "1e5", "2E+02", "007", "1.5x", "4.2.1", "9_",
        "12345678901234567890", "0.1e", ".e1", "nan", "1e400", "5,", "6]", "1.0.", "3e", "-0"]
PREFIXES = ["", "3: ", "  12: ", "[rank3]: ", "[1,3]<stdout>: ", "[loss0]: ", "[default0]:",
            "[7] ", "12:", "\t5: "]


def _plain(rng: random.Random) -> str:
    n, m = rng.choice(NUMS), rng.choice(NUMS)
    forms = [
        f"inner train loop time : {m} for {rng.randint(0, 99)} epochs, number of global "
        f"steps: {rng.randint(0, 999)}, e2e samples_per_sec: {n}",
        f"inner train loop time:{m} for 1 epoch,number of global steps:3,e2e samples_per_sec:{n}",
        f"e2e samples_per_sec: {n}", f"e2e samples_per_sec: {n} loss: {m}",
        "WARNING: e2e samples_per_sec is not reported during warm-up epochs",
        f"WARNING: e2e samples_per_sec n/a, loss: {m}",
        f"Epoch {rng.randint(0, 99)} train loss: {n} val loss: {m} val acc: 0.5",
        f"epoch={rng.randint(0, 9)} step {rng.randint(0, 10**rng.randint(1, 21))} loss: {n}",
        f"Iteration: {rng.randint(0, 99)} EPOCH #{rng.randint(0, 9)} Loss = {n} x_loss={m}",
        f"iter{rng.randint(0, 9)} loss:{n}, loss:{m} lossy: 1 Xloss: 2 aaaaaaaaaaaaaaaaaaaaaaa_loss: 3",
        f"train loss: {n}\tval_loss: {m}", f"loss: {n} " * rng.randint(1, 12), "loss: ",
        f"step 3 loss: {n} 12 img/sec", f"loss: {n} it/s", f"loss: {n} Loss: {m}",
        f"loss: {n} {{'a': 1}}", f"Running on 8 tasks loss: {n}", f"per iteration loss: {n}",
        f"loss: {n} caf\u00e9", f"loss: {n} \x1b[0m", f"[1,0]<stderr>: loss: {n}",
        f"loss: {n}\x0b", f"loss={n}", f"the oss: {n}",
    ]
    return rng.choice(PREFIXES) + rng.choice(forms)


def _tqdm(rng: random.Random) -> str:
    k = rng.randint(0, 99)
    ups = [f"Epoch {k % 7}:  {k}%|\u2588\u258c    | {k}/100 [00:01<00:02, {rng.choice(NUMS)}it/s, "
           f"loss={rng.choice(NUMS)}, v_num=0]" for _ in range(rng.randint(1, 4))]
    return rng.choice(PREFIXES) + "\r" + "\r".join(ups)


def _scan(data: bytes, fast: bool) -> tuple[Any, ...]:
    rows = rules.Rows()
    found = trainlog_fast.Found() if fast else None
    problems: list[Any] = []
    scanner = general._Scanner(data, "x.log", rows, problems, 0, len(data), found=found)
    scanner.run(True)
    tp = trainlog_fast.frame(rows.tp, found, "tp", rules.TP_COLS)
    tm = trainlog_fast.frame(rows.tm, found, "tm", rules.TM_COLS)
    # a missing value as None whichever way the column holds it (a categorical's is NaN
    # under pandas 2's astype(object), a text column's None)
    return tuple(repr(df.astype(object).where(df.notna(), None).to_dict("list"))
                 + repr([_kind(d) for d in df.dtypes])
                 for df in (tp, tm)) + (repr(problems), repr(rows.headers))


def _kind(dtype: Any) -> str:
    """A column's dtype; text, categorical (fast) or not (general: pandas 3's str, pandas 2's
    object), as one."""
    text = isinstance(dtype, pd.CategoricalDtype | pd.StringDtype) or str(dtype) == "object"
    return "str" if text else str(dtype)


def _read_here(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the plain lines the fast reader reads."""
    read = [0]
    plain = trainlog_fast.Found._plain_lines

    def spy(self: Any, *args: Any) -> Any:
        out = plain(self, *args)
        read[0] += int(out.sum())
        return out

    monkeypatch.setattr(trainlog_fast.Found, "_plain_lines", spy)
    return read


def test_plain_lines_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    read = _read_here(monkeypatch)
    rng = random.Random(3117)
    for _ in range(150):
        lines = [_plain(rng) if rng.random() < 0.6 else _tqdm(rng)
                 for _ in range(rng.randint(4, 40))]
        data = ("\n".join(lines) + rng.choice(["\n", ""])).encode()
        assert _scan(data, True) == _scan(data, False), data[:3000]
    assert read[0] > 500


@pytest.mark.parametrize("plain", [
    "3: e2e samples_per_sec: 5",  # all steps None: objects
    "3: inner train loop time : 1.5 for 2 epochs, number of global steps: 9, e2e samples_per_sec: 7",
    "3: step 4 loss: 1.5",  # int steps
    "3: loss: 1.5",  # None steps
    "3: epoch 2 loss: 1.5 step 99999999999999999999",  # a step past int64: the scanner's
])
def test_one_kind_of_plain_line(plain: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables of tqdm rows and one kind of plain line: the dtypes of a column that mixes
    the kinds (ints and None) are the general engine's."""
    read = _read_here(monkeypatch)
    tq = "3: \rEpoch 0:  5%|\u2588 | 5/100 [00:01<00:02, 3.5it/s, loss=0.5, v_num=0]"
    for lines in ([plain] * 3, [tq, plain, tq, plain], [plain, tq]):
        data = ("\n".join(lines) + "\n").encode()
        assert _scan(data, True) == _scan(data, False), lines
    assert read[0] > 0 or "9999" in plain
