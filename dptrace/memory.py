"""Giving freed memory back to the operating system between the phases of a large load.

Reading a dense log makes and drops many arrays of millions of rows. glibc's malloc serves
arrays below its (self-raising, up to 32 MB) mmap threshold from its heap, and memory freed
in the middle of the heap stays in the process: the resident size grows by the temporaries
of every phase, and the next phase's peak adds to it (a 200 MB log's load kept ~150 MB of
such holes). :func:`release` hands whole free pages back (``malloc_trim``) where the loader
and the readers finish a phase of that size; elsewhere (no glibc) it does nothing.

The same phases write each new array of millions of rows once: :func:`small_pages` keeps
numpy from asking the kernel for transparent huge pages for them (``madvise``), which
where the kernel compacts memory to find them (``defrag`` set to ``madvise``, the common
default) made a 200 MB log's join of its ranges take 0.33 s instead of 0.20 s.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, cast

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


#: the environment variable numpy reads for its huge-page advice: set, it is the user's choice
HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"


def _hugepage_switch() -> Callable[[bool], bool] | None:
    """numpy's ``_set_madvise_hugepage`` (it returns the value it replaces), or None."""
    for where in ("numpy._core.multiarray", "numpy.core.multiarray"):   # numpy 2, 1
        try:
            module = importlib.import_module(where)
        except ImportError:
            continue
        switch = getattr(module, "_set_madvise_hugepage", None)
        if switch is not None:
            return cast(Callable[[bool], bool], switch)
    return None


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Within the block, numpy's new arrays are not advised to the kernel as huge pages
    (numpy's documented global state, restored after; left as it is when the user set
    ``$NUMPY_MADVISE_HUGEPAGE``, or where this numpy has no such switch)."""
    switch = None if HUGEPAGE_ENV in os.environ else _hugepage_switch()
    if switch is None:
        yield
        return
    before = switch(False)
    try:
        yield
    finally:
        switch(before)
