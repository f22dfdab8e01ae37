"""The fast engine's reading of tqdm updates by shape (:func:`.fast._segment_spans`) against
Python's ``rules.TQDM_SEGMENT.fullmatch`` of each update, group by group.

A segment's shape is its text with each ASCII digit made '0'; the regex runs once per shape
and its spans are used for every segment of that shape. These cases sit where that could go
wrong: segments of one shape with different digits, bounds counted in characters with
multi-byte text before them, digits that are not ASCII, groups that take no part.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from dptrace.formats.trainlog import fast, rules

BLOCKS = "\u2588\u258f\u258e\u258d\u258c\u258b\u258a\u2589"


def _spans_as_python(segments: list[str]) -> None:
    flat = pa.array(segments, pa.large_string())
    shapes = fast._segment_spans(flat)
    ok, data = shapes.matched, shapes.data
    raw = data.to_pybytes()
    offsets = np.frombuffer(flat.buffers()[1], np.int64)
    every = np.arange(len(segments))
    spans = {name: shapes.span(name, every) for name in fast._GROUPS}
    for i, text in enumerate(segments):
        m = rules.TQDM_SEGMENT.fullmatch(text)
        assert bool(ok[i]) == (m is not None), text
        if m is None:
            continue
        for name in fast._GROUPS:
            lo, hi = spans[name][0][i], spans[name][1][i]
            got = raw[lo:hi].decode()
            assert got == (m[name] or ""), (text, name)
            assert offsets[i] <= lo <= hi <= offsets[i + 1]


def _segment(rng: random.Random) -> str:
    desc = rng.choice(["", "Epoch 12: ", "Training 3: ", "caf\u00e9 7 ", "\u00e9" * rng.randint(
        230, 245), "x" * rng.randint(230, 245), "[rank3]: 4 ", "\u0663 ", "Step 1/2 "])
    if rng.random() < 0.6:
        pct = rng.randint(0, 100)
        desc += f"{pct:3d}%|" + "".join(rng.choice(BLOCKS) for _ in range(rng.randint(0, 10))) + "| "
    count = rng.choice(["1", "99", str(rng.randint(0, 10**6)), "1.5k", "12M", "7", "9" * 25])
    total = rng.choice(["", "/1000", "/?", "/1.5k", "/" + str(rng.randint(1, 10**4))])
    alpha = rng.choice(["", "", "it", "a" * 20, "a" * 21])
    rate = rng.choice(["?", "1", "21.25", "0", "3.", ".5", "1e5", "-2.5e-3", str(rng.random())])
    unit = rng.choice(["it", "s", "samples", "B", "x" * 30, "x" * 31])
    per = rng.choice(["s", "it", "y" * 30, "y" * 31])
    post = rng.choice(["", ", loss=0.642, v_num=0", ", loss=" + str(rng.random()), ", " + "p" * 499,
                       ", " + "p" * 500])
    tail = rng.choice(["", "", " done", "]", " {'a': 1}", "\u2588"])
    return (f"{desc}{count}{total}{alpha}{rng.choice(['', ' ', chr(9)])}[00:0{rng.randint(0, 9)}"
            f"<00:1{rng.randint(0, 9)}, {rate}{rng.choice(['', 'k'])}{unit}/{per}{post}]{tail}")


def test_shapes_give_pythons_match() -> None:
    rng = random.Random(31)
    segments = [_segment(rng) for _ in range(6000)]
    # the same shapes with other digits, one after the other
    segments += [s.replace("1", "7") for s in segments[:500]]
    _spans_as_python(segments)


def test_bounds_in_characters() -> None:
    # TQDM_SEGMENT's pre is at most 240 characters: multi-byte ones count once
    for n in (239, 240, 241):
        for ch in ("x", "\u00e9", "\u2588", "\U0001f600"):
            pre = ch * n
            _spans_as_python([f"{pre}5/9 [00:01<00:02, 3.0it/s]",
                              f"{pre}15/19 [00:01<00:02, 13.0it/s, loss=1]"])


def test_no_rate_and_odd_numbers() -> None:
    _spans_as_python(["0/9 [00:00<?, ?it/s]", "5/9 [00:01<00:02, 3.0it/s]",
                      "\u0663/9 [00:01<00:02, 3.0it/s]", "5/9 [00:01<00:02, \u0663it/s]",
                      "Epoch 0: 5 [0, 1s/it]", "", "no bar here", "1 [2, 3a/s]x{'a'"])
