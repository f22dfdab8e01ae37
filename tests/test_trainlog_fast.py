"""The fast engine's reader of tqdm lines (:class:`dptrace.formats.trainlog.fast.Found`: the
lines of ``\\r``-separated updates read at once with pyarrow.compute) against the Python one
(the general engine's).

``general._tqdm_updates`` (with ``_Scanner._decode`` and ``_split_prefix`` before it) is
the reference. The fast reader must add exactly its rows for a line, or add nothing and
decline the line (the scanner then reads it in Python). Checked on every real log
(test_engines.py), on the benchmark file when it is there, and on many thousands of generated
and mutated tqdm lines.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import dptrace
from dptrace.formats.trainlog import fast as trainlog_fast
from dptrace.formats.trainlog import general as trainlog
from dptrace.formats.trainlog import rules

HERE = Path(__file__).parent
BENCH = HERE.parent / "benchmarks" / ".data" / "trainlog_300mb_64i_seed0.out"


def _same(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    for table in ("throughput", "train_metrics"):
        pd.testing.assert_frame_equal(a[table], b[table], check_exact=True)
        # bit for bit: assert_frame_equal takes -0.0 for 0.0
        assert repr(a[table].to_dict("list")) == repr(b[table].to_dict("list"))
    assert repr(a.problems) == repr(b.problems)


def _engines_agree(path: Path) -> None:
    """engine="fast" gives what engine="general" gives."""
    _same(dptrace.read_trainlog(path, engine="fast"),
          dptrace.read_trainlog(path, engine="general"))


# the real logs: test_engines.py (every format's engines on every real file)


def test_benchmark_log_same_rows(tmp_path: Path) -> None:
    # the 300 MB benchmark log when a run kept it, else a 20 MB one from the same generator
    path = BENCH
    if not path.exists():
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        import gen_trainlog

        path = tmp_path / "slurm-20mb.out"
        gen_trainlog.generate(path, 20)
    _engines_agree(path)


def _python_line(raw: bytes, line: int, start: int, rows: rules.Rows) -> bool:
    """What ``_Scanner._cr_line`` does before its segment-by-segment reading, for a line
    with a keyword (the scanner reads no other)."""
    if trainlog._SCAN.search(raw + b"\n") is None:
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False  # the fast path must decline: _decode records the bad bytes
    if "\x1b" in text or "<std" in text:
        return False  # ANSI escapes are stripped by _decode; tags are read segment by segment
    line_prefix = trainlog._split_prefix(text)[0]
    try:
        return trainlog._tqdm_updates(text, line_prefix, line, start, rows)
    except Exception:  # noqa: BLE001 - the Python reference may raise: the fast one declines
        return False


def _plain(df: pd.DataFrame) -> dict[str, list[object]]:
    """A frame's columns as lists of Python values (strings, categorical or not, with None
    where missing)."""
    out = {}
    for col in df:
        s = df[col]
        if pd.api.types.is_numeric_dtype(s.dtype):
            out[col] = s.tolist()
        else:
            out[col] = [None if v is None or v is pd.NA or (isinstance(v, float) and v != v)
                        else v for v in s.astype(object)]
    return out


def _compare(raws: list[bytes]) -> tuple[int, int]:
    """Read the lines ``raws`` (one buffer) with the fast reader and, line by line, with
    the Python reference: every line the fast reader reads, Python reads with the very same
    rows; the lines it declines give no rows. Returns (lines read, lines Python reads)."""
    buf = b"\n".join(raws) + b"\n"
    line_starts = np.cumsum([0] + [len(r) + 1 for r in raws])[:-1]
    found = trainlog_fast.Found()
    found.read(buf, 0, len(buf), 1)
    starts = found.lines_read()
    got_tp = trainlog_fast.frame([], found, "tp", rules.TP_COLS)
    got_tm = trainlog_fast.frame([], found, "tm", rules.TM_COLS)
    read = set(np.searchsorted(line_starts, starts).tolist())
    assert np.array_equal(line_starts[sorted(read)], starts)
    want = rules.Rows()
    python_ok = 0
    for k, raw in enumerate(raws):
        rows = rules.Rows()
        ok = _python_line(raw, k + 1, int(line_starts[k]), rows)
        python_ok += ok
        if k in read:
            assert ok is True, raw
            want.tp.extend(rows.tp)
            want.tm.extend(rows.tm)
    for got, rows, cols in ((got_tp, want.tp, rules.TP_COLS), (got_tm, want.tm, rules.TM_COLS)):
        expected = trainlog_fast._records(rows, cols)
        assert len(got) == len(expected)
        g, e = _plain(got), _plain(expected)
        for col in cols:
            assert repr(g[col]) == repr(e[col]), (col, [
                (a, b) for a, b in zip(g[col], e[col], strict=True) if repr(a) != repr(b)][:3])
    return len(read), python_ok


# --- generated lines ---------------------------------------------------------------------------

PREFIXES = ["", " 3: ", "12: ", "[1,2]<stdout>:", "[0,15]<stderr>:", "[default0]:",
            "[worker1]:", "[3] ", "  7: ", "\t"]
DESCS = ["", "Training", "Training: ", "Epoch 3: ", "Epoch 12/100 ", "eval", "Iteration",
         "Validating:", "100%|", "[INFO] Train", "loss 0.5 ", "it/s: ", "12 ", "x" * 250,
         "Step 4 of 9: ", "Data: "]
BLOCKS = " ▏▎▍▌▋▊▉█#"
UNITS = ["it", "s", "B", "samples", "img", "tok", "batch", "steps", "ex", "a_b",
         "x" * 29, "y" * 31, "k", "M", "ks"]
SCALES = ["", "", "", "k", "M", "G", "T"]
PERS = ["s", "s", "s", "it", "step", "sec", "batch", "s" * 31]
MUTATE = "0123456789.,:/?<>[] \t\r=kMGTsie+-_ab%|█٣²\u00b9\x00]"


def _num(rng: random.Random, wild: bool) -> str:
    kind = rng.random() if wild else rng.random() * 0.6
    if kind < 0.5:
        return f"{rng.uniform(0, 100):.{rng.randint(0, 4)}f}"
    if kind < 0.6:
        return str(rng.randint(0, 10**rng.randint(1, 22)))
    if kind < 0.7:
        return f"{rng.uniform(0, 1e6):.3e}"
    if kind < 0.8:
        return rng.choice(["0", "0.00", "-0", "+1.5", ".5", "5.", "5.e3", "1e400", "1e-400",
                           "1e", "1.5E+3", "-2", "00012", "0.1e-2"])
    return rng.choice(["?", "nan", "inf", "1_0", "1..2", "-.", "."])


def _count(rng: random.Random, wild: bool) -> str:
    kind = rng.random() if wild else rng.random() * 0.8
    if kind < 0.7:
        n = str(rng.randint(0, 10**rng.randint(1, 6)))
    elif kind < 0.8:
        n = f"{rng.uniform(0, 100):.{rng.randint(1, 2)}f}{rng.choice('kMGT')}"
    elif kind < 0.9:
        n = rng.choice(["1.5k", "12k", "3M", "0.5", "1e3", "9" * 20, "9" * 18, "1.", "007"])
    else:
        n = rng.choice(["?", "", "x", "1/2", "5k/10k"])
    if not wild:
        return n + rng.choice(["", "/1000", "/16", "/?", "/1.5k", "/12M"])
    total = rng.choice(["", "/1000", "/16", "/?", "/1.5k", "/", "/x", "/12M"])
    return n + total + rng.choice(["", "", "", "it", "samples", "B", "a" * 21])


def _update(rng: random.Random) -> str:
    """One tqdm update; one in four is wild (any of the odd choices)."""
    wild = rng.random() < 0.25
    desc = rng.choice(DESCS)
    if rng.random() < 0.6:
        pct = rng.randint(0, 100)
        width = rng.randint(0, 12)
        bar = "".join(rng.choice(BLOCKS) for _ in range(width))
        desc += f"{pct:3d}%|{bar}| "
    elapsed = rng.choice(["00:01", "0", "1:02:03", "00:00"] + ["x", ""] * wild)
    left = rng.choice(["", "<00:02", "<?", "<1:?:2"] + ["<"] * wild)
    rate = _num(rng, wild)
    sep = rng.choice([", ", ",", ",  ", ", \t"] + [" , "] * wild)
    unit = rng.choice(SCALES) + rng.choice(UNITS[:10] if not wild else UNITS)
    per = rng.choice(PERS[:-1] if not wild else PERS)
    if rng.random() < 0.1:  # seconds per unit
        unit, per = "s", rng.choice(["it", "step", "img"])
    post = ""
    if rng.random() < 0.3:
        pairs = [f"{rng.choice(['loss', 'lr', 'acc', 'v_num', 'Loss X', 'a1'])}="
                 f"{_num(rng, wild)}" for _ in range(rng.randint(1, 3))]
        post = ", " + ", ".join(pairs)
        if wild and rng.random() < 0.3:
            post += rng.choice([", x=abc", " ", "=", ", ]", ", ="])
    if wild and rng.random() < 0.1:
        post += "p" * rng.choice([490, 499, 500, 501, 530])
    blank = rng.choice(["", " ", "  ", "\t"])
    tail = rng.choice(["", "", "", " done", "]", " [extra]", "\x1b"])
    return (f"{rng.choice(PREFIXES) if rng.random() < 0.3 else ''}{desc}{_count(rng, wild)}"
            f"{blank}[{elapsed}{left}{sep}{rate}{rng.choice(['', ' ', '  '])}{unit}/{per}"
            f"{post}]{tail}")


def _line(rng: random.Random) -> str:
    parts = [_update(rng) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        parts.insert(rng.randint(0, len(parts)), "")
    head = rng.choice(["", "", " 3: ", "[1,2]<stdout>:", "plain text ", "loss: 3",
                       "samples/sec", "[x]", "12: ", "1 it/s]"])
    text = head + "\r" + "\r".join(parts) if rng.random() < 0.5 else "\r".join(parts)
    if rng.random() < 0.2:
        text += "\r"
    for _ in range(rng.choice([0, 0, 0, 0, 0, 1, 1, 2, 5])):
        i = rng.randrange(len(text) + 1)
        op = rng.random()
        if op < 0.4:
            text = text[:i] + rng.choice(MUTATE) + text[i + 1:]
        elif op < 0.7:
            text = text[:i] + rng.choice(MUTATE) + text[i:]
        else:
            text = text[:i] + text[i + 1:]
    return text




def test_generated_lines_same_rows() -> None:
    rng = random.Random(20261123)
    read = python_ok = 0
    for _ in range(25):
        lines = []
        for _ in range(2000):
            text = _line(rng)
            if "\r" not in text:  # the fast reader reads lines of \r updates only
                text = "\r" + text
            if rng.random() < 0.3:
                text = rng.choice(PREFIXES) + text
            lines.append(text.replace("\n", " ").encode("utf-8", "surrogatepass"))
        got = _compare(lines)
        read += got[0]
        python_ok += got[1]
    # the fast reader must not reach equality by declining: it declines Unicode digits, dicts
    # after a bar, counts beyond int64, parts beyond their bounds, ANSI escapes, <std tags
    assert read > 5_000
    assert read > 0.75 * python_ok


def test_generated_raw_lines_same_rows() -> None:
    """From the bytes: launcher prefixes, bad UTF-8, ANSI escapes."""
    rng = random.Random(7)
    lines = []
    for _ in range(20_000):
        text = _line(rng)
        if rng.random() < 0.5:
            text = rng.choice(PREFIXES + ["63: ", "1234567: ", "[12345678] ", "[3]\u2003",
                                          "\u00a0 3: ", "[a1]:", "[_9]:", "[ab]:", "[1,2]<stdin>:",
                                          "[1,]<stdout>:", "3:", " [4]\t", "[4]"]) + "\r" + text
        raw = text.replace("\n", " ").encode("utf-8", "surrogatepass")
        if rng.random() < 0.05:
            i = rng.randrange(len(raw) + 1)
            raw = raw[:i] + rng.choice([b"\xff", b"\xe2\x96", b"\x1b[0m", b"\xc3"]) + raw[i:]
        lines.append(raw)
    read, python_ok = _compare(lines)
    print('raw', read, python_ok)
    assert read > 0
    assert read > 0.5 * python_ok


#: UTF-8 at the edges of what Python's strict decoder takes (the C reader decodes a line's
#: bytes itself): the first and last valid sequences of each length and each special lead
#: byte, and what it refuses: overlong forms, surrogates, beyond U+10FFFF, stray or missing
#: continuation bytes, bytes that never start one
UTF8_EDGES = [b"\xc2\x80", b"\xdf\xbf", b"\xc3\xa9", b"\xe0\xa0\x80", b"\xe1\x80\x80",
              b"\xec\xbf\xbf", b"\xed\x80\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
              b"\xf0\x90\x80\x80", b"\xf1\x80\x80\x80", b"\xf3\xbf\xbf\xbf", b"\xf4\x80\x80\x80",
              b"\xf4\x8f\xbf\xbf", b"\xe2\x96\x88", b"\xf0\x9f\x94\xa5",
              b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
              b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
              b"\xf5\x80\x80\x80", b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc3", b"\xe2\x96",
              b"\xf0\x9f\x94", b"\xc3\x28", b"\xe2\x28\xa1", b"\xe2\x82\x28", b"\xf0\x28\x8c\xbc",
              b"\xc3\xa9\xc3", b"\xe2\x96\x88\x80"]




def test_utf8_edges_same_as_python() -> None:
    """The fast reader takes a line's bytes as UTF-8 only where ``bytes.decode("utf-8")``
    does: where each edge case of UTF-8 sits in a tqdm line (its description, bar, postfix,
    after the last update), it reads exactly what Python reads, with the same strings
    (Latin-1, 2- and 4-byte characters alike), and declines the rest."""
    line = ("Epoch 1: {d} 50%|█████{b}     | 5/10 [00:01<00:01,  4.50it/s, loss=0.5, "
            "name={p}]\rEpoch 1: {d} 60%|██████    | 6/10 [00:01<00:01,  4.50it/s, loss=0.4, "
            "name=x]{t}")
    spots = ("d", "b", "p", "t")
    raws, valid = [], []
    for seq in UTF8_EDGES:
        for spot in spots:
            raw = line.format(**{s: "{" + s + "}" for s in spots}).encode()
            for s in spots:
                raw = raw.replace(b"{" + s.encode() + b"}", seq if s == spot else b"")
            raws.append(raw)
            try:
                raw.decode("utf-8")
                valid.append(True)
            except UnicodeDecodeError:
                valid.append(False)
    buf = b"\n".join(raws) + b"\n"
    found = trainlog_fast.Found()
    found.read(buf, 0, len(buf), 1)
    starts = found.lines_read()
    line_starts = np.cumsum([0] + [len(r) + 1 for r in raws])[:-1]
    read = set(np.searchsorted(line_starts, starts).tolist())
    assert not any(k in read for k, ok in enumerate(valid) if not ok)
    got, _ = _compare(raws)
    assert got >= 17 * 3  # the valid sequences, but where a postfix value ends


def _prefixes(texts: list[str]) -> list[str | None]:
    """The launcher prefix the fast reader finds for each line (once per distinct head)."""
    found = trainlog_fast.Found()
    codes = found._prefixes(pa.array(texts, pa.large_string()))
    names = list(found.strings)
    return [None if c < 0 else names[c] for c in codes.tolist()]


def test_line_prefix_same() -> None:
    """The launcher prefix found from a line's head is _split_prefix's, on generated prefixes
    (white space of every kind Python's ``\\s`` takes, long runs of digits and spaces)."""
    rng = random.Random(3)
    pieces = [" ", "\t", "\u2003", "\u00a0", "\x1c", "\x0b", "\u3000", "\x85", "[", "]", ":",
              ": ", ",", "<std", "out>:", "err>:", "diag>:", "dia>:", "<stdout>:", "a", "Z", "_",
              "-", "1", "12", "123456", "1234567", "0", "x1", "\r", "9" * 40, " " * 40, "rank",
              "default", "\u0663"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 8))) for _ in range(20_000)]
    got = _prefixes(texts)
    for text, prefix in zip(texts, got, strict=True):
        assert prefix == trainlog._split_prefix(text)[0], repr(text)


def test_white_space_class_is_pythons() -> None:
    """fast._WS (RE2) holds exactly the characters Python's ``\\s`` matches in a text."""
    import re
    import sys

    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)
    python = {c for c in every if re.match(r"\s", c)}
    ws = pa.array([c for c in every], pa.large_string())
    hit = pc.match_substring_regex(ws, f"^[{trainlog_fast._WS}]$").to_numpy(zero_copy_only=False)
    assert {c for c, h in zip(every, hit, strict=True) if h} == python


def test_declines_unicode_digits_and_long_counts() -> None:
    ok = "Training:  50%|█████     | 5/10 [00:01<00:01,  4.50it/s]"
    for text, accepts in [(ok, True), (ok.replace("5/10", "٥/10"), False),
                          (ok + " ²", True), (ok.replace("5/10", "9" * 19 + "/10"), False),
                          (ok.replace("4.50", "4" * 400), True),  # inf, as Python reads it
                          (ok.replace("it/s]", "it/s, loss=1=2]"), True),  # as _POSTFIX reads it
                          (ok.replace("it/s]", "it/s, loss=0.5, v_num=0]"), True)]:
        buf = ("3: \r" + text + "\n").encode()
        found = trainlog_fast.Found()
        found.read(buf, 0, len(buf), 1)
        starts = found.lines_read()
        assert bool(len(starts)) is accepts, text
        assert (sum(len(c["lineno"]) for c in found.tp) > 0) is accepts
        read, _ = _compare([buf[:-1]])
        assert read == accepts


def test_megatron_continuation_lines_left_to_the_scanner() -> None:
    """A line after a Megatron iteration line may be joined to it (``_continuation``): the
    fast reader leaves the 3 lines after one to the scanner."""
    upd = "3: \rEpoch 0: 5/10 [00:01<00:01, 4.50it/s]"
    buf = ("iteration 5 | elapsed time per iteration (ms): 12.5 | x\n"
           + "\n".join([upd] * 5) + "\n").encode()
    found = trainlog_fast.Found()
    found.read(buf, 0, len(buf), 1)
    starts = found.lines_read()
    line_starts = [0] + [i + 1 for i, b in enumerate(buf) if b == 10][:-1]
    assert starts.tolist() == line_starts[4:]
