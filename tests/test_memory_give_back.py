"""memory.give_back: the pages of a range of a mapped file leave the process's resident size,
and the map still reads the same bytes (they come back from the page cache)."""

from __future__ import annotations

import mmap
import sys

import pytest

from dptrace import memory

MB = 1 << 20


def _rss_file_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssFile:"):
                return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_DONTNEED"),
                    reason="reads /proc/self/status; madvise(MADV_DONTNEED)")
def test_pages_of_a_mapped_file_leave_the_rss_and_read_the_same(tmp_path):
    path = tmp_path / "log.out"
    data = bytes(range(256)) * (16 * MB // 256)
    path.write_bytes(data)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert mm.find(b"\xff\xff") < 0   # touches every page
        before = _rss_file_kb()
        memory.give_back(mm, 1000, len(mm) - 1000)   # starts inside a page: rounded down
        after = _rss_file_kb()
        assert before - after >= 12 * MB // 1024, (before, after)
        assert mm[:] == data   # read again from the page cache, unchanged


def test_anything_but_a_map_is_left_alone():
    buf = b"abc\n" * 10_000
    memory.give_back(buf, 0, len(buf))
    memory.give_back(bytearray(buf), 0, len(buf))
    assert buf == b"abc\n" * 10_000
