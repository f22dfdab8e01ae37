"""Giving freed memory back to the operating system between the phases of a large load.

Reading a dense log makes and drops many arrays of millions of rows. glibc's malloc serves
arrays below its (self-raising, up to 32 MB) mmap threshold from its heap, and memory freed
in the middle of the heap stays in the process: the resident size grows by the temporaries
of every phase, and the next phase's peak adds to it (a 200 MB log's load kept ~150 MB of
such holes). :func:`release` hands whole free pages back (``malloc_trim``) where the loader
and the readers finish a phase of that size; elsewhere (no glibc) it does nothing.

The pages of a memory-mapped file a reader has looked at count towards its resident size
too, until the map is closed: :func:`give_back` hands those of a range already read back
to the page cache.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

#: below this many rows a phase's temporaries are too small to be worth a trim (each call
#: walks the heap: about a millisecond)
MIN_ROWS = 100_000

_TRIM: Any = None


def _trim() -> Any:
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:  # the symbols the process has loaded (find_library would run a program:
                # a fork of a process of hundreds of MB)
                _TRIM = ctypes.CDLL(None).malloc_trim
                _TRIM.argtypes, _TRIM.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
                _TRIM = False
    return _TRIM


def release(rows: int = MIN_ROWS) -> None:
    """Return the free pages of the C heap to the system after a phase that handled
    ``rows`` rows (nothing below :data:`MIN_ROWS`)."""
    if rows >= MIN_ROWS:
        trim = _trim()
        if trim:
            trim(0)


def give_back(buf: Any, start: int, end: int) -> None:
    """Hand the pages of ``buf[start:end]`` back to the page cache (``madvise(MADV_DONTNEED)``)
    when ``buf`` is a read-only map of a file: this process's resident size no longer counts
    them, and a later look at a few of its bytes reads them again from the cache. Only for
    a map of a file (an anonymous map would lose its content); anything else: nothing."""
    advise = getattr(buf, "madvise", None)
    if advise is None or not hasattr(mmap, "MADV_DONTNEED"):
        return
    lo = start // mmap.PAGESIZE * mmap.PAGESIZE
    hi = min(end, len(buf))
    if hi > lo:
        advise(mmap.MADV_DONTNEED, lo, hi - lo)
