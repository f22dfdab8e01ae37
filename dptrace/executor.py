"""Where parse work runs: the loader's executor seam.

The loader (:mod:`dptrace.loader`) owns one :class:`Executor` per load and hands it to each
format's reader; readers never start processes of their own. A reader that can split one
large input into independent pieces (byte ranges of a multi-GB log or timeline) asks the
executor how many ``workers`` there are and maps its piece function over the pieces with
``executor.map``. :class:`Serial` runs everything in this process; :class:`Processes` forks
a pool per map (the pieces' shared state, such as a memory map of the input, is inherited
by the forked workers, so only the piece bounds and the results are pickled). A distributed
engine plugs in here: anything with ``workers`` and ``map`` will do.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs a function over pieces of work, results in the pieces' order."""

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


@dataclass(frozen=True)
class Processes:
    """A pool of ``count`` forked processes per map (fork: the workers inherit what the
    reader prepared, e.g. the memory map of the input, instead of receiving it pickled)."""

    count: int

    @property
    def workers(self) -> int:
        return self.count

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        with ProcessPoolExecutor(self.count, mp_context=mp.get_context("fork")) as pool:
            yield from pool.map(fn, items)


#: how many processes "auto" uses at most: CPU-bound decoding gains from 2 on the 2-core
#: machines this was measured on, and each worker holds its piece's frames
MAX_AUTO_WORKERS = 2

ExecutorArg = Executor | str | int | None


def can_fork() -> bool:
    return "fork" in mp.get_all_start_methods()


def resolve(spec: ExecutorArg = None) -> Executor:
    """The executor that ``spec`` names: None or ``"auto"`` (processes when this machine
    has several cores and can fork, at most :data:`MAX_AUTO_WORKERS`; else serial),
    ``"serial"``, ``"processes"`` (one per core), a number of workers (1: serial), or an
    :class:`Executor` as it is."""
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
