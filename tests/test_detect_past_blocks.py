"""registry._past: the deep markers looked for past the first DEEP_BYTES, a block at a time
and with the C library's memmem, find what one ``mmap.find`` from ``start`` finds: a marker
cut by a block's end, one in a later block, one just before ``start`` that ends past it,
one that is not there; and the same without memmem."""

from __future__ import annotations

import mmap

import pytest

from dptrace import registry, sources

MARKERS = (b"Comm. Op", b":::MLLOG", b"NCCL INFO", b"not in the file")


def _file(tmp_path, block):
    line = b"12: Epoch 0:  18%|##   | 188/1000 [00:08<00:38, 21.25it/s, loss=0.642]\n"
    body = bytearray(line * (5 * block // len(line)))
    # a marker across the end of the second block, one in the fourth, one at start - 3
    cut = 2 * block - 4
    body[cut:cut + 8] = b"Comm. Op"
    body[4 * block + 100:4 * block + 108] = b":::MLLOG"
    start = block + 3
    body[start - 3:start - 3 + 9] = b"NCCL INFO"
    path = tmp_path / "slurm.out"
    path.write_bytes(bytes(body))
    return path, start


def _reference(path, start):
    out = {}
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for m in MARKERS:
            at = mm.find(m, max(start - len(m), 0))
            if at >= 0:
                line = mm.rfind(b"\n", 0, at) + 1
                out[m] = bytes(mm[line:line + sources.HEAD_BYTES])
    return out


@pytest.mark.parametrize("memmem", [True, False], ids=["memmem", "find"])
def test_past_finds_what_one_find_finds(tmp_path, monkeypatch, memmem):
    block = 1 << 16
    monkeypatch.setattr(registry, "_PAST_BLOCK", block)
    if not memmem:
        monkeypatch.setattr(registry, "_MEMMEM", [None])
    elif registry._memmem() is None:
        pytest.skip("no memmem in this C library")
    path, start = _file(tmp_path, block)
    src = sources.expand([str(path)])[0][0]
    want = _reference(path, start)
    assert set(want) == {b"Comm. Op", b":::MLLOG", b"NCCL INFO"}
    assert registry._past(src, list(MARKERS), start) == want
    for m in MARKERS:  # one at a time too
        assert registry._past(src, [m], start) == {k: v for k, v in want.items() if k == m}
