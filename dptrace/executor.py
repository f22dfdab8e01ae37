"""Where parse work runs: the loader's executor seam.

The loader (:mod:`dptrace.loader`) owns one :class:`Executor` per load and hands it to each
format's reader; readers never start processes of their own. A reader that can split one
large input into independent pieces (byte ranges of a multi-GB log or timeline) asks the
executor how many ``workers`` there are and maps its piece function over the pieces with
``executor.map``. :class:`Serial` runs everything in this process; :class:`Processes` forks
a pool per map. A piece is self-contained and picklable: the input's path and the piece's
bounds (and the reader's options), never the input's bytes. A worker forked while the
reader holds the input's memory map reads that map (nothing is mapped again); any other
worker (a spawned process, a Dask worker) maps the file by its path. Content that exists
in the reading process only (a decompressed input in an unlinked temporary file) is split
on a forked pool only, and read in-process on any other executor. A result comes back pickled;
its large array buffers (the columns of a piece's tables) do not go through the pool's
pipe: the worker writes them to a file in shared memory and the parent maps that file and
rebuilds the arrays on it, without a copy (:class:`_Ship`). A distributed engine plugs in
here: anything with ``workers`` and ``map`` will do (tests/test_executor_portable.py runs
the readers' pieces on a spawn-based pool).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs a function over pieces of work, results in the pieces' order. An executor may
    also ``start(fn, item)``: begin ``fn(item)`` beside the caller's own work and return a
    function that waits for its result (the loader reads a large log's companion formats
    that way, see :mod:`dptrace.loader`); one without it runs them in turn."""

    @property
    def workers(self) -> int:
        """How many pieces can run at once (1: splitting an input gains nothing)."""
        ...

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn`` over ``items``; the results in the items' order, each as soon as it and
        those before it are done (readers report progress as pieces finish)."""
        ...


@dataclass(frozen=True)
class Serial:
    """Everything in this process, one piece after another."""

    @property
    def workers(self) -> int:
        return 1

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)

    def start(self, fn: Callable[[T], R], item: T) -> Callable[[], R]:
        """``fn(item)``, run when its result is asked for (here there is nowhere else)."""
        return lambda: fn(item)


@dataclass(frozen=True)
class Processes:
    """A pool of ``count`` forked processes per map (fork: the workers inherit what the
    reader prepared, e.g. the memory map of the input, instead of receiving it pickled)."""

    count: int

    @property
    def workers(self) -> int:
        return self.count

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        with contextlib.ExitStack() as stack:
            where = _ship_dir(stack)
            ship: Callable[[T], Any] = fn if where is None else _Ship(fn, where)
            pool = stack.enter_context(_pool(self.count))
            for result in pool.map(ship, items):
                yield _landed(result)

    def start(self, fn: Callable[[T], R], item: T) -> Callable[[], R]:
        """``fn(item)`` begun now in a forked process of its own, beside what this process
        does next (one more process than :attr:`workers` while both run); the returned
        function waits for the result (shipped as :meth:`map`'s are) and must be called."""
        stack = contextlib.ExitStack()
        try:
            where = _ship_dir(stack)
            pool = stack.enter_context(_pool(1))
            future = pool.submit(fn if where is None else _Ship(fn, where), item)
        except BaseException:
            stack.close()
            raise

        def result() -> R:
            with stack:
                return _landed(future.result())
        return result


#: a result whose large array buffers hold at least this many bytes in all comes back
#: through shared memory; smaller ones through the pool's pipe, as pickles do
SHIP_BYTES = 1 << 20
#: a buffer this large or larger goes to a file of its own; smaller ones ride in the pickle
SHIP_BUFFER_BYTES = 1 << 16
#: where the files go: tmpfs, so they are memory and never written to disk
_SHM = "/dev/shm"


def _ship_dir(stack: contextlib.ExitStack) -> str | None:
    """A directory for this map's shipped results, removed when the map ends; None when
    there is no shared-memory file system to make it in (results then come by the pipe)."""
    if not os.path.isdir(_SHM) or not os.access(_SHM, os.W_OK | os.X_OK):
        return None
    try:
        return stack.enter_context(tempfile.TemporaryDirectory(prefix="dptrace-", dir=_SHM))
    except OSError:
        return None


@dataclass(frozen=True)
class _Shipped:
    """A result pickled with its large buffers out of band: each in a file of its own
    (``paths``, in the pickle's order), or, when they are small in all, beside the pickle
    (``inline``: the pool's pipe carries them as bytes, and the result is pickled once)."""

    data: bytes
    paths: tuple[str, ...] = ()
    inline: tuple[bytearray, ...] = ()


@dataclass(frozen=True)
class _Ship(Generic[T, R]):
    """``fn`` in a worker, its result shipped: pickled (protocol 5), each large buffer of
    its arrays written to a file of its own in ``where`` (a file per buffer: the parent's
    memory of a column goes as soon as that column does)."""

    fn: Callable[[T], R]
    where: str

    def __call__(self, item: T) -> _Shipped:
        result = self.fn(item)
        raws: list[memoryview] = []

        def out_of_band(buffer: pickle.PickleBuffer) -> bool:
            raw = buffer.raw()
            if raw.nbytes < SHIP_BUFFER_BYTES:
                return True   # in the pickle
            raws.append(raw)
            return False

        data = pickle.dumps(result, protocol=5, buffer_callback=out_of_band)
        if sum(r.nbytes for r in raws) < SHIP_BYTES:   # small: by the pipe
            return _Shipped(data, inline=tuple(bytearray(r) for r in raws))
        paths = []
        try:
            for raw in raws:
                fd, path = tempfile.mkstemp(prefix="buffer-", dir=self.where)
                paths.append(path)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(raw)
        except OSError:   # shared memory full: the pipe it is
            for path in paths:
                os.unlink(path)
            return _Shipped(data, inline=tuple(bytearray(r) for r in raws))
        return _Shipped(data, tuple(paths))


def _landed(result: Any) -> Any:
    """A shipped result rebuilt in this process, each buffer in a file on a private map of
    it (the file is removed at once; the array keeps the map and writes to copies of its
    pages); any other result as it is."""
    if not isinstance(result, _Shipped):
        return result
    buffers: list[Any] = list(result.inline)
    try:
        for path in result.paths:
            with open(path, "rb") as fh:
                buffers.append(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY))
    finally:
        for path in result.paths:
            os.unlink(path)
    return pickle.loads(result.data, buffers=buffers)


#: how many processes "auto" uses at most: CPU-bound decoding gains from 2 on the 2-core
#: machines this was measured on, and each worker holds its piece's frames
MAX_AUTO_WORKERS = 2

ExecutorArg = Executor | str | int | None


def can_fork() -> bool:
    """Whether this process can start a forked pool: the platform forks, and this process
    is not daemonic (a Dask worker, a process-pool worker: those may have no children)."""
    import multiprocessing as mp

    return "fork" in mp.get_all_start_methods() and not mp.current_process().daemon


def resolve(spec: ExecutorArg = None) -> Executor:
    """The executor that ``spec`` names: None or ``"auto"`` (processes when this machine
    has several cores and can fork, at most :data:`MAX_AUTO_WORKERS`; else serial),
    ``"serial"``, ``"processes"`` (one per core), a number of workers (1: serial), or an
    :class:`Executor` as it is. Inside a daemonic process (a Dask or pool worker) every
    pool is serial: such a process may start no children."""
    if spec is None or spec == "auto":
        n = min(MAX_AUTO_WORKERS, os.cpu_count() or 1)
        return Processes(n) if n > 1 and can_fork() else Serial()
    if spec == "serial":
        return Serial()
    if spec == "processes":
        n = os.cpu_count() or 1
        return Processes(n) if n > 1 and can_fork() else Serial()
    if isinstance(spec, bool):
        raise TypeError("executor: a number of workers, 'auto', 'serial', 'processes' or an "
                        "Executor, not a bool")
    if isinstance(spec, int):
        if spec < 1:
            raise ValueError(f"executor: at least 1 worker, not {spec}")
        return Processes(spec) if spec > 1 and can_fork() else Serial()
    if isinstance(spec, str):
        raise ValueError(f"executor must be 'auto', 'serial', 'processes' or a number of "
                         f"workers, not {spec!r}")
    return spec


def _pool(workers: int) -> Any:
    """A forking process pool of ``workers`` (multiprocessing and concurrent.futures
    imported here: a report that reads in one process never imports them, ~5-8 ms)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"))
