"""The fast engine (aligned reader, searches confined to the lines between rows) gives what
the general engine (line by line) gives, also on captures built to trip it up; the real
files are compared in test_engines.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import dptrace
from dptrace.formats.sntilestat import fast as fixed
from dptrace.formats.sntilestat import gaps as scan
from dptrace.formats.sntilestat import read as sntilestat

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import bench_sntilestat as bench  # noqa: E402

BASE = "".join(bench.screen(k) for k in range(16))
CMD = bench.CMD


def _variants() -> dict[str, str]:
    lf = BASE.replace("\r\n", "\n")
    return {
        "crlf": BASE,
        "lf": lf,
        "no escapes": lf.replace("\x1b[H\x1b[2J", ""),
        "no final newline": lf.rstrip("\n"),
        "idle row last, no newline": lf + "/XRDU_3/RDU_1/TILE_7 100.0   0.0    0.0    0.0    0.0"
                                          "      0.0",
        "short owner last": lf + "/XRDU_0/RDU_0/TILE_0   8.0  91.6    0.3    0.1    0.0      0.0 1",
        "integer percentages": lf.replace("    0.0      0.0", "      0        0"),
        "Every in a command": lf.replace(CMD, "x Every 2.0s: y h9: Mon Apr 17 10:00:00 2023", 5),
        "header in a command": lf.replace(CMD, "TILE  %idle %exec %hbm", 3),
        "row id in a command": lf.replace(CMD, "run /XRDU_0 x", 3),
        "row id between rows": lf.replace("\n\nTILE", "\n  /XRDU_0 junk\nTILE", 2),
        "row after a carriage return": BASE.replace("\r\n/XRDU_1/RDU_0/TILE_0",
                                                    "\r/XRDU_1/RDU_0/TILE_0", 2),
        "stamp without year": BASE.replace("2023\r\n", "\r\n", 3),
        "stamp wrapped": lf.replace("sntilestat ", "sntilestat\n", 4),
        "elision": lf.replace("\n/XRDU_2/RDU_0/TILE_0", "\n  ...  \n/XRDU_2/RDU_0/TILE_0", 2),
        "elision in a command": lf.replace(CMD, "...", 4),
        "no header": lf.replace(bench.HEADER, ""),
        "two headers": lf.replace(bench.HEADER, bench.HEADER + " ", 1),
        "tabs and trailing blanks": lf.replace("  vsastry", "\tvsastry", 7)
                                      .replace(CMD + "\n", CMD + "   \n", 9),
        "utf-8 user": lf.replace("vsastry", "üseré", 9),
        "long commands": lf.replace(CMD, CMD * 9, 9),
        "bad number": lf.replace(" 0.3    0.1", " 0.3    x.1", 1),
        "bad pid": lf.replace(" 2750330  vsastry", " 27503x0  vsastry", 4),
        "pid only": lf.replace("  vsastry " + CMD, "", 9),
        "two-digit tile": lf.replace("/XRDU_3/RDU_1/TILE_7 ", "/XRDU_3/RDU_1/TILE_17", 3),
    }


VARIANTS = _variants()


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_fast_engine_matches_general_engine(name, tmp_path):
    path = tmp_path / "capture.txt"
    path.write_bytes(VARIANTS[name].encode("utf-8"))
    fast = dptrace.read_sntilestat(path, engine="fast")
    general = dptrace.read_sntilestat(path, engine="general")
    assert_frame_equal(fast["tiles"], general["tiles"])
    assert_frame_equal(fast.sources, general.sources)
    assert_frame_equal(fast.problems, general.problems)


def test_quick_route_is_taken_on_a_plain_capture(monkeypatch):
    taken = []
    original = sntilestat._quick

    def spy(buf, lines, name, problems):
        taken.append(original(buf, lines, name, problems) is not None)
        return None

    def quick(buf):
        lines = fixed.row_lines(np.frombuffer(buf, dtype=np.uint8), b"/XRDU_")
        return sntilestat._quick(buf, lines, "x", [])

    monkeypatch.setattr(sntilestat, "_quick", spy)
    buf = VARIANTS["crlf"].encode()
    quick(buf)
    assert taken == [True]
    for word in ("Every in a command", "header in a command", "row id between rows"):
        taken.clear()
        quick(VARIANTS[word].encode())
        assert taken == [False], word


def test_gap_searches_equal_whole_file_searches():
    buf = VARIANTS["stamp wrapped"].encode() + VARIANTS["crlf"].encode()
    lines = fixed.row_lines(np.frombuffer(buf, dtype=np.uint8), b"/XRDU_")
    gaps = scan.Gaps.between(buf, *lines[:2])
    assert sorted(set(sntilestat._HEADER.findall(gaps.text))) == \
        sorted(set(sntilestat._HEADER.findall(buf)))
    every = gaps.positions(b"Every")
    assert every.tolist() == [m.start() for m in re.finditer(rb"Every", buf)]
    assert scan.findall_at(sntilestat._WATCH, buf, every) == sntilestat._WATCH.findall(buf)


def test_percentages_by_digit_arithmetic_equal_float():
    values = [f"{v / 10:.1f}" for v in range(0, 10001, 7)]
    rows = "".join(f"/XRDU_0/RDU_0/TILE_{i % 8} {v:>5} {v:>5} {v:>6} {v:>6} {v:>6} {v:>8}\n"
                   for i, v in enumerate(values))
    buf = (bench.HEADER + "\n" + rows).encode()
    arr = np.frombuffer(buf, dtype=np.uint8)
    found = fixed.read(buf, bench.HEADER.encode(), fixed.row_lines(arr, b"/XRDU_"))
    assert found is not None
    expected = np.array([float(v) for v in values])
    for col in ("idle_pct", "exec_pct", "pload_pct", "quiesce_pct"):
        assert np.array_equal(found[0][col], expected), col


def test_owner_tails_are_grouped_exactly():
    tails = ["", " 1  a b", " 1  a b ", " 1  a bc", " 12 a b", " 1  a b" + "x" * 40,
             " 1  a b" + "x" * 39 + "y"]
    rows = "".join(f"/XRDU_0/RDU_0/TILE_{i % 8}   0.0 100.0    0.0    0.0    0.0      0.0{t}\n"
                   for i, t in enumerate(tails * 3))
    buf = (bench.HEADER + "\n" + rows).encode()
    arr = np.frombuffer(buf, dtype=np.uint8)
    found = fixed.read(buf, bench.HEADER.encode(), fixed.row_lines(arr, b"/XRDU_"))
    assert found is not None
    data, distinct = found
    assert len(distinct) == len(tails)  # trailing blanks are kept apart, then stripped
    commands = [None if v is pd.NA else v for v in data["command"][:len(tails)]]
    assert commands == \
        [None, "b", "b", "bc", "b", "b" + "x" * 40, "b" + "x" * 39 + "y"]
