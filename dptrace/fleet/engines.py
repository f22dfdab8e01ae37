"""Where a fleet's tasks run: one function over many tasks, on an engine (issue 33, item 3).

:func:`run_tasks` is the one entry point. It yields ``(task, result)`` pairs as the tasks
complete (not in the tasks' order), where ``result`` is what ``fn(task)`` returned or the
exception it raised: a task's failure is a value, never an exception of :func:`run_tasks`
(only a bad argument, a missing optional dependency or a cluster that cannot start raise).

Engines (``engine=``):

- ``"serial"``: every task in this process, in turn.
- ``"processes"``: a pool of ``workers`` processes built here on :mod:`multiprocessing` (no
  dependency). Each worker runs one task at a time, so a worker that dies (a segfault, the
  kernel's OOM killer) costs exactly its task, which comes back as :class:`WorkerDied`, and
  a new worker takes its place; a task over its ``timeout`` has its worker killed and comes
  back as :class:`TimeoutError`. The start method is multiprocessing's default for the
  platform, or ``config["start_method"]`` (``fork``, ``forkserver``, ``spawn``): ``fn`` and
  the tasks must be picklable (under ``fork`` ``fn`` is inherited, not pickled).
- ``"auto"``: ``processes`` when there is more than one task and more than one worker,
  else ``serial``.
- ``"dask"``, ``"dask://HOST:PORT"``, ``"slurm"``, ``"pbs"``: Dask (:mod:`dptrace.fleet.on_dask`,
  the ``dask`` extra: ``pip install 'dptrace[dask]'``).

A task that parses inputs itself must load with ``executor="serial"``: a Dask worker is a
daemonic process and cannot start the loader's process pool (and on the ``processes``
engine the pool's workers already use the cores). To spread *one* huge input over a Dask
cluster instead, give the loader :class:`dptrace.fleet.on_dask.DaskExecutor` (also importable
from here): ``dptrace.load(path, executor=DaskExecutor(client))``.

``timeout`` (seconds per task) is the one option every engine takes: under ``serial`` it is
an interval timer (``SIGALRM``, main thread of a POSIX process only) that raises
:class:`TimeoutError` inside the task; on Dask the task runs in a thread of the worker that
is abandoned when the time is up (a Python thread cannot be killed: the Dask worker keeps
computing it in the background until it ends).
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import multiprocessing.connection
import os
import pickle
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: the engines :func:`run_tasks` knows (``dask://HOST:PORT`` besides)
ENGINES = ("auto", "serial", "processes", "dask", "slurm", "pbs")
#: the prefix of an existing Dask scheduler's address
DASK_URL = "dask://"
#: how to get the optional engines, named in the error when they are missing
DASK_INSTALL = "pip install 'dptrace[dask]'"
#: seconds a killed worker gets to end after SIGTERM before SIGKILL
KILL_GRACE_S = 2.0


class WorkerDied(RuntimeError):
    """The process running a task died before answering (killed by a signal: a segfault,
    the OOM killer; or ``os._exit``). The task's result; the survey goes on."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (its ``__cause__``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def run_tasks(fn: Callable[[T], R], tasks: Iterable[T], *, engine: str = "auto",
              workers: int | None = None, config: Mapping[str, Any] | str | os.PathLike[str]
              | None = None, timeout: float | None = None,
              ) -> Iterator[tuple[T, R | BaseException]]:
    """``fn`` over ``tasks`` on ``engine``: ``(task, result or exception)`` as each completes.

    ``workers``: processes (``processes``, ``dask``; with ``slurm``/``pbs`` and no ``adapt``,
    the workers to scale to); default the machine's cores. ``config``: the engine's settings,
    a mapping or a TOML file whose ``[tool.dptrace.fleet.<engine>]`` table is read for the
    engine ``auto`` chose (:func:`engine_config`; the Dask cluster engines read theirs from
    it, ``processes`` its ``start_method``). ``timeout``: seconds per task, a
    :class:`TimeoutError` result past it (also ``config["timeout"]``).
    Closing the iterator early (or Ctrl-C) stops the workers and, for a cluster this call
    started, the cluster.
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers: at least 1, not {workers!r}")
    if engine == "auto":
        n = workers if workers is not None else (os.cpu_count() or 1)
        head, tasks = _peek(tasks, 2)
        engine = "processes" if n > 1 and len(head) > 1 else "serial"
    settings = engine_config(config, _section(engine))
    if timeout is None and settings.get("timeout") is not None:
        timeout = float(settings["timeout"])
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout: a number of seconds above 0, not {timeout!r}")
    if engine == "serial":
        return _serial(fn, tasks, timeout)
    if engine == "processes":
        return _processes(fn, tasks, workers or os.cpu_count() or 1, timeout,
                          settings.get("start_method"))
    if engine in ("dask", "slurm", "pbs") or engine.startswith(DASK_URL):
        from dptrace.fleet import on_dask  # the optional dependency: imported only here
        return on_dask.run_tasks(fn, tasks, engine=engine, workers=workers,
                                 config=settings, timeout=timeout)
    raise ValueError(f"engine must be one of {', '.join(ENGINES)} or {DASK_URL}HOST:PORT, "
                     f"not {engine!r}")


def __getattr__(name: str) -> Any:
    """``DaskExecutor`` from :mod:`dptrace.fleet.on_dask`, imported when first asked for."""
    if name == "DaskExecutor":
        from dptrace.fleet.on_dask import DaskExecutor
        return DaskExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- configuration ------------------------------------------------------------------------

#: the table of a TOML file (pyproject.toml or one of its own) that holds engine sections
CONFIG_TABLE = ("tool", "dptrace", "fleet")


def _section(engine: str) -> str:
    return "dask" if engine.startswith(DASK_URL) else engine


def engine_config(config: Mapping[str, Any] | str | os.PathLike[str] | None,
                  engine: str) -> dict[str, Any]:
    """The settings of ``engine``: ``config`` itself when it is a mapping, or the table
    ``[tool.dptrace.fleet.<engine>]`` of the TOML file it names (``--engine-config FILE``;
    a file without that table gives no settings). Keys a cluster engine does not find here
    come from Dask's own configuration (``jobqueue.slurm``, ``jobqueue.pbs``)."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    path = Path(config)
    table: Any = _read_toml(path)
    for key in (*CONFIG_TABLE, engine):
        if not isinstance(table, Mapping):
            raise ValueError(f"{path}: {'.'.join(CONFIG_TABLE)} is not a table")
        table = table.get(key, {})
    if not isinstance(table, Mapping):
        raise ValueError(f"{path}: {'.'.join((*CONFIG_TABLE, engine))} is not a table")
    return dict(table)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10: the dask extra brings tomli
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ImportError(f"reading {path} on Python 3.10 needs tomli: "
                              f"{DASK_INSTALL}") from None
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _peek(items: Iterable[T], n: int) -> tuple[list[T], Iterable[T]]:
    """The first ``n`` of ``items`` and an iterable of all of them (those included)."""
    if isinstance(items, (list, tuple, range)):
        return list(items[:n]), items
    it = iter(items)
    head = list(itertools.islice(it, n))
    return head, itertools.chain(head, it)


# --- serial -------------------------------------------------------------------------------

def _serial(fn: Callable[[T], R], tasks: Iterable[T],
            timeout: float | None) -> Iterator[tuple[T, R | BaseException]]:
    if timeout is not None and (not hasattr(signal, "setitimer")
                                or threading.current_thread() is not threading.main_thread()):
        raise ValueError("a timeout on the serial engine needs the main thread of a POSIX "
                         "process (SIGALRM): use engine='processes'")
    return _serial_run(fn, tasks, timeout)


def _serial_run(fn: Callable[[T], R], tasks: Iterable[T],
                timeout: float | None) -> Iterator[tuple[T, R | BaseException]]:
    for task in tasks:
        try:
            with _alarm(timeout):
                result: R | BaseException = fn(task)
        except Exception as exc:   # the task's failure is its result
            result = exc
        yield task, result


class _Alarm(TimeoutError):
    pass


@contextlib.contextmanager
def alarm(seconds: float, error: Callable[[], BaseException]) -> Iterator[None]:
    """``error()`` raised in the block after ``seconds`` (SIGALRM, so in the main thread
    of a process), the previous handler and timer restored after."""
    def ring(signum: int, frame: Any) -> None:
        raise error()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def _alarm(timeout: float | None) -> Iterator[None]:
    """A :class:`TimeoutError` raised in the block after ``timeout`` seconds (SIGALRM)."""
    if timeout is None:
        yield
        return
    with alarm(timeout, lambda: _Alarm(f"the task ran over its timeout of {timeout:g} s")):
        yield


# --- processes ----------------------------------------------------------------------------

#: a worker that waits this long for a task checks that its parent still lives
PARENT_CHECK_S = 1.0


class _Stop:
    """The message that ends a worker (a forked worker holds copies of the pipes' ends, so
    a closed pipe alone may never reach it as end of file)."""

    def __reduce__(self) -> str:
        return "_STOP"


_STOP = _Stop()
#: a worker's first message: it has started and waits for tasks
_READY = "ready"
#: workers that die before they are ready, in a row, before the pool gives up (the function
#: cannot be imported in a spawned process, say): an error of the call, not of a task
START_FAILURES = 3


def _worker_main(conn: mp.connection.Connection, fn: Callable[[Any], Any]) -> None:
    """A pool worker: :data:`_READY` once started, then tasks from ``conn`` until it
    closes or says :data:`_STOP`, one answer per task. The answer is ``(True, pickled
    result)`` or ``(False, pickled (exception, traceback text))``; an exception that cannot
    be pickled (or unpickled) is replaced by one that can."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    parent = os.getppid()
    try:
        conn.send(_READY)   # started (spawned: imports done): a task's clock can start
    except (EOFError, OSError):
        return
    while True:
        try:
            while not conn.poll(PARENT_CHECK_S):
                if os.getppid() != parent:   # the parent is gone (killed): so are we
                    return
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is _STOP:
            return
        try:
            answer = (True, pickle.dumps(fn(task), protocol=pickle.HIGHEST_PROTOCOL))
        except BaseException as exc:   # noqa: BLE001 (a task's SystemExit is its result too)
            answer = (False, _pickled_error(exc))
        try:
            conn.send(answer)
        except (EOFError, OSError):
            return


def _pickled_error(exc: BaseException) -> bytes:
    """``(exc, its traceback as text)`` pickled; an exception that does not survive a
    pickle round trip (a custom ``__init__``, a lock inside) travels as a RuntimeError
    naming its type and message."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        data = pickle.dumps((exc, text))
        pickle.loads(data)
        return data
    except BaseException:   # noqa: BLE001
        return pickle.dumps((RuntimeError(f"{type(exc).__name__}: {exc}"), text))


@dataclass
class _Slot:
    """One worker process of the pool and the task it runs (None: idle)."""

    process: Any
    conn: Any
    task: Any = None
    busy: bool = False
    ready: bool = False
    deadline: float | None = None
    started: float = field(default=0.0)


class _Pool:
    """``workers`` processes running ``fn``, one task each at a time, replaced when they
    die or run over the timeout."""

    def __init__(self, fn: Callable[[Any], Any], workers: int, start_method: str | None):
        self.fn = fn
        self.ctx: Any = mp.get_context(start_method)
        self.slots: list[_Slot] = []
        self.start_failures = 0
        for _ in range(workers):
            self.slots.append(self._start())

    def _start(self) -> _Slot:
        parent, child = self.ctx.Pipe(duplex=True)
        process = self.ctx.Process(target=_worker_main, args=(child, self.fn),
                                   name="dptrace-fleet-worker", daemon=False)
        process.start()
        child.close()
        return _Slot(process, parent)

    def replace(self, slot: _Slot) -> None:
        self._stop(slot)
        self.slots[self.slots.index(slot)] = self._start()

    def _stop(self, slot: _Slot) -> None:
        with contextlib.suppress(OSError, ValueError):
            slot.conn.close()
        if slot.process.is_alive():
            slot.process.terminate()
            slot.process.join(KILL_GRACE_S)
            if slot.process.is_alive():
                slot.process.kill()
        slot.process.join()

    def close(self) -> None:
        """Every worker stopped: idle ones are told to end, busy ones are killed."""
        for slot in self.slots:
            with contextlib.suppress(OSError, ValueError):
                if not slot.busy:
                    slot.conn.send(_STOP)
                slot.conn.close()
        end = time.monotonic() + KILL_GRACE_S
        for slot in self.slots:
            if slot.busy:
                slot.process.terminate()
            slot.process.join(max(0.0, end - time.monotonic()))
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join()


def _processes(fn: Callable[[T], R], tasks: Iterable[T], workers: int, timeout: float | None,
               start_method: str | None) -> Iterator[tuple[T, R | BaseException]]:
    it = iter(tasks)
    pending: deque[T] = deque()
    exhausted = False
    pool: _Pool | None = None
    try:
        head = list(itertools.islice(it, workers))
        if not head:
            return
        pending.extend(head)
        pool = _Pool(fn, len(head), start_method)   # no more workers than tasks
        while True:
            for slot in pool.slots:   # every idle worker that is ready gets the next task
                if slot.busy or not slot.ready:
                    continue
                if not pending and not exhausted:
                    try:
                        pending.append(next(it))
                    except StopIteration:
                        exhausted = True
                if not pending:
                    break
                task = pending.popleft()
                try:
                    slot.conn.send(task)
                except (pickle.PicklingError, TypeError, AttributeError) as exc:
                    yield task, exc   # the task cannot travel to a worker
                    continue
                except (BrokenPipeError, OSError):   # died while idle: a new one, same task
                    pending.appendleft(task)
                    pool.replace(slot)
                    continue
                slot.task, slot.busy = task, True
                slot.started = time.monotonic()
                slot.deadline = slot.started + timeout if timeout is not None else None
            if exhausted and not pending and not any(s.busy for s in pool.slots):
                return
            yield from _collect(pool, timeout)
    finally:
        if pool is not None:
            pool.close()


def _collect(pool: _Pool, timeout: float | None) -> Iterator[tuple[Any, Any]]:
    """Wait for the next answer of a busy worker, a worker's death, a deadline or a new
    worker's readiness; yield the tasks that ended."""
    waits: dict[Any, _Slot] = {}
    for slot in pool.slots:
        if slot.busy or not slot.ready:
            waits[slot.conn] = slot
            waits[slot.process.sentinel] = slot
    deadlines = [s.deadline for s in pool.slots if s.busy and s.deadline is not None]
    wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
    ready = mp.connection.wait(list(waits), wait_s)
    done: set[int] = set()
    for obj in ready:
        slot = waits[obj]
        if id(slot) in done:
            continue
        done.add(id(slot))
        answer = None
        with contextlib.suppress(EOFError, OSError):
            if slot.conn.poll():
                answer = slot.conn.recv()
        if not slot.ready:
            _started(pool, slot, answer)
            continue
        task = slot.task
        slot.task, slot.busy, slot.deadline = None, False, None
        if answer is None:   # the process ended without answering
            slot.process.join(KILL_GRACE_S)
            code = slot.process.exitcode
            pool.replace(slot)
            yield task, WorkerDied(_death(code))
            continue
        yield task, _answer(answer)
    if deadlines:
        now = time.monotonic()
        for slot in list(pool.slots):
            if slot.busy and slot.deadline is not None and now >= slot.deadline:
                task = slot.task
                slot.task, slot.busy, slot.deadline = None, False, None
                pool.replace(slot)
                yield task, TimeoutError(f"the task ran over its timeout of {timeout:g} s "
                                         "(its worker was killed)")


def _started(pool: _Pool, slot: _Slot, message: Any) -> None:
    """A new worker's first message (or its death before it): ready, or replaced; too
    many deaths in a row before readiness stop the call."""
    if message == _READY:
        slot.ready = True
        pool.start_failures = 0
        return
    slot.process.join(KILL_GRACE_S)
    code = slot.process.exitcode
    pool.start_failures += 1
    if pool.start_failures >= START_FAILURES:
        raise RuntimeError(f"the process pool's workers die as they start ({_death(code)}, "
                           f"{pool.start_failures} in a row): can they import the task's "
                           "function? (under spawn and forkserver it must be importable)")
    pool.replace(slot)


def _answer(answer: tuple[bool, bytes]) -> Any:
    """A worker's answer as the task's result: its value or its exception."""
    ok, data = answer
    try:
        value = pickle.loads(data)
    except Exception as exc:   # a result that pickles but does not unpickle
        return TypeError(f"the task's result cannot be unpickled: {type(exc).__name__}: {exc}")
    if ok:
        return value
    err, text = value
    err.__cause__ = RemoteTraceback(text)
    return err


def _death(code: int | None) -> str:
    """What a worker's exit code says about its death."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = (" (the kernel's OOM killer sends SIGKILL)"
                if -code == getattr(signal, "SIGKILL", None) else "")
        return f"the worker running this task was killed by {name}{hint}"
    return f"the worker running this task exited (exit code {code}) without a result"
