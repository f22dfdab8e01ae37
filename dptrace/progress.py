"""Progress within one input, for the loader's progress bar.

The loader reports progress from file to file. A reader that spends seconds on one large
input (a multi-GB training log, a Horovod timeline) also calls :func:`advance` now and then
with how many of the input's bytes it has done; the loader routes that to whoever watches
(:func:`watching`), and nothing happens when nobody does. A context variable carries the
callback, so readers need no extra argument and concurrent loads do not mix.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

#: (bytes done, bytes in all) of the input being read
ByteProgress = Callable[[int, int], None]

_WATCHER: ContextVar[ByteProgress | None] = ContextVar("dptrace_progress", default=None)


def advance(done: int, total: int) -> None:
    """Tell the watcher, if any, that ``done`` of ``total`` bytes of the current input are read."""
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher(done, total)


@contextlib.contextmanager
def watching(fn: ByteProgress | None) -> Iterator[None]:
    """Route :func:`advance` calls made inside the block to ``fn``."""
    token = _WATCHER.set(fn)
    try:
        yield
    finally:
        _WATCHER.reset(token)
