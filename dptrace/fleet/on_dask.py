"""The Dask engines of :func:`dptrace.fleet.engines.run_tasks`, and :class:`DaskExecutor`.

Only this module imports Dask, and only inside its functions: the ``dask`` extra is optional
(``pip install 'dptrace[dask]'``: ``dask[distributed]``, and ``dask-jobqueue`` for the batch
schedulers). Engines:

- ``dask``: a :class:`distributed.LocalCluster` of ``workers`` processes with one thread
  each, started for the call and closed after it;
- ``dask://HOST:PORT``: an existing scheduler (``tcp://HOST:PORT``); only this call's
  client is closed after it, and this call's tasks cancelled if it stops early;
- ``slurm``, ``pbs``: a dask-jobqueue ``SLURMCluster``/``PBSCluster`` made from the engine's
  config section (:func:`cluster_kwargs`), scaled by ``adapt`` or ``--workers``, closed after
  the call (its batch jobs cancelled).

Every task is submitted with ``pure=False`` (two equal tasks both run), its result gathered
as it completes (:class:`distributed.as_completed`); a task that raised, or whose workers
died, comes back as that exception (``KilledWorker``: Dask runs a task whose worker died
again elsewhere, up to the scheduler's ``allowed-failures``, 3 by default; the config key
``allowed_failures`` sets it for a cluster started here). A cluster started here has one
thread per worker process and ``worker-saturation`` 1.0 (``worker_saturation``): a worker
holds one task at a time, so a worker's death is charged to the task it ran and to no task
queued behind it. A cluster this module started is closed when the iteration ends, stops
early or is interrupted (Ctrl-C).

A cluster started here runs its workers **without Dask's statistical profiler** (config key
``profile``, default false): the profiler samples the running task's stack every 10 ms and
keeps a tree of the sampled frames per second of work, the last 1,000 seconds of them
(``distributed.admin.low-level-log-length``) twice over (all tasks, and per task name), so a
worker's memory grew by ~1 MiB a second of survey: ~70 KB a run, 242 MiB at 1,000 runs and
624 MiB at 10,000, up to ~1-2 GiB a worker. ``LocalCluster``: the workers start with
``distributed.worker.profile.enabled`` false; ``slurm``/``pbs`` (their workers read the
configuration of the job's environment): a worker plugin (:func:`_quiet_profiler`) stops the
profiler of every worker that joins, those ``adapt`` adds later included. ``profile = true``
keeps it (the dashboard's Profile page). An existing scheduler's workers (``dask://``) are
the user's, left as they are: set ``distributed.worker.profile.enabled: false`` in their Dask
configuration (``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False``) for the same bound.

Inside a Dask worker the loader's process pool cannot start (a worker is a daemonic
process): tasks must load with ``executor="serial"``. One huge input is split over the
cluster the other way round: ``dptrace.load(path, executor=DaskExecutor(client))``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dptrace.fleet.engines import DASK_INSTALL, DASK_URL

T = TypeVar("T")
R = TypeVar("R")

#: keys of an engine's config section that are this module's, not the cluster class's
OWN_KEYS = frozenset({"timeout", "adapt", "jobs", "allowed_failures", "worker_saturation",
                      "start_method", "dashboard_address", "memory_limit", "profile"})
#: the worker plugin's name (registered once per cluster this module starts)
QUIET_PROFILER = "dptrace-quiet-profiler"
#: a worker's periodic callbacks of Dask's statistical profiler (``Worker.__init__``)
PROFILER_CALLBACKS = ("profile", "profile-cycle")
#: the dask-jobqueue class of each batch-scheduler engine (module:class)
JOBQUEUE_CLASSES = {"slurm": "dask_jobqueue:SLURMCluster", "pbs": "dask_jobqueue:PBSCluster"}


def require(what: str = "distributed") -> None:
    """ImportError naming the extra to install, unless ``what`` can be imported."""
    try:
        __import__(what)
    except ImportError as exc:
        raise ImportError(f"this engine needs {what.replace('_', '-')} (not installed: "
                          f"{exc}); install it with: {DASK_INSTALL}") from exc


def run_tasks(fn: Callable[[T], R], tasks: Iterable[T], *, engine: str,
              workers: int | None, config: Mapping[str, Any],
              timeout: float | None) -> Iterator[tuple[T, R | BaseException]]:
    """:func:`dptrace.fleet.engines.run_tasks` on a Dask engine (checked and imported
    before the first task is asked for; the cluster starts on the first ``next``)."""
    require("distributed")
    if engine in JOBQUEUE_CLASSES:
        require("dask_jobqueue")
    return _run(fn, tasks, engine, workers, dict(config), timeout)


def _run(fn: Callable[[T], R], tasks: Iterable[T], engine: str, workers: int | None,
         config: dict[str, Any], timeout: float | None,
         ) -> Iterator[tuple[T, R | BaseException]]:
    from distributed import as_completed

    with _client(engine, workers, config) as client:
        call = _Call(fn, timeout)
        boxes = [_Box(task) for task in tasks]
        futures = client.map(call, boxes, pure=False, key=_prefix(fn))
        task_of = {f.key: box.task for f, box in zip(futures, boxes, strict=True)}
        del boxes
        try:
            for future in as_completed(futures):
                task = task_of.pop(future.key)
                yield task, _outcome(future)
                future.release()
        finally:
            if task_of:   # stopped early: this call's tasks go too
                client.cancel([f for f in futures if f.key in task_of])


def _outcome(future: Any) -> Any:
    """A completed future's result, or the exception it ended with."""
    if future.status == "cancelled":
        from concurrent.futures import CancelledError
        return CancelledError(f"the task was cancelled ({future.key})")
    if future.status == "error":
        return future.exception()
    try:
        return future.result()
    except Exception as exc:   # e.g. a result that does not deserialise here
        return exc


@contextlib.contextmanager
def _client(engine: str, workers: int | None, config: dict[str, Any]) -> Iterator[Any]:
    """A client of the engine's cluster; the cluster (when this call started it) and the
    client closed on the way out, whatever the way."""
    import dask
    from distributed import Client

    settings: dict[str, Any] = {"distributed.scheduler.worker-saturation":
                                float(config.get("worker_saturation", 1.0))}
    if "allowed_failures" in config:
        settings["distributed.scheduler.allowed-failures"] = int(config["allowed_failures"])
    profile = _flag(config.get("profile", False), "profile")
    if not profile:   # a LocalCluster's nannies hand this configuration to their workers
        settings["distributed.worker.profile.enabled"] = False
    with contextlib.ExitStack() as stack:
        stack.enter_context(dask.config.set(settings))
        if engine.startswith(DASK_URL):
            address = engine[len(DASK_URL):]
            address = address if "://" in address else "tcp://" + address
            client = stack.enter_context(Client(address))
        else:
            cluster = stack.enter_context(_cluster(engine, workers, config))
            client = stack.enter_context(Client(cluster))
            if not profile and engine in JOBQUEUE_CLASSES:
                # batch jobs' workers read their own environment's configuration
                client.register_plugin(_quiet_profiler(), name=QUIET_PROFILER)
        yield client


def _flag(value: Any, key: str) -> bool:
    """A config section's boolean (TOML's ``true``/``false``; a string that says so)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError(f"{key}: true or false, not {value!r}")


def stop_profiler(worker: Any) -> None:
    """Stop Dask's statistical profiler in ``worker`` (a :class:`distributed.Worker`) and
    drop what it kept: its periodic callbacks (:data:`PROFILER_CALLBACKS`) taken out before
    or after the worker started them, its history emptied."""
    callbacks = getattr(worker, "periodic_callbacks", {})
    for name in PROFILER_CALLBACKS:
        pc = callbacks.pop(name, None)
        if pc is not None:
            pc.stop()
    for name in ("profile_history", "profile_keys_history"):
        with contextlib.suppress(AttributeError):
            getattr(worker, name).clear()


def profiler_state(_: Any = None) -> tuple[tuple[str, ...], int]:
    """In a Dask worker (a task, or ``client.run``): the profiler callbacks it has (of
    :data:`PROFILER_CALLBACKS`) and the profile snapshots it keeps; ``((), 0)`` when the
    profiler is off."""
    from distributed import get_worker

    w = get_worker()
    names = tuple(sorted(set(PROFILER_CALLBACKS) & set(w.periodic_callbacks)))
    return names, len(w.profile_history) + len(w.profile_keys_history)


def _quiet_profiler() -> Any:
    """A :class:`distributed.WorkerPlugin` that runs :func:`stop_profiler` on every worker
    of the cluster, present and to come (defined here, where Dask is imported; Dask sends it
    to the workers by value)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class QuietProfiler(WorkerPlugin):
        def setup(self, worker: Any) -> None:
            stop_profiler(worker)

    return QuietProfiler()


@contextlib.contextmanager
def _cluster(engine: str, workers: int | None, config: dict[str, Any]) -> Iterator[Any]:
    if engine == "dask":
        from distributed import LocalCluster
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
            dashboard_address=config.get("dashboard_address", ":0"), silence_logs=logging.ERROR,
            **({"memory_limit": config["memory_limit"]} if "memory_limit" in config else {}),
            **({"local_directory": config["local_directory"]}
               if "local_directory" in config else {}))
    elif engine in JOBQUEUE_CLASSES:
        cluster = jobqueue_cluster(engine, config)
        if config.get("adapt"):
            cluster.adapt(**dict(config["adapt"]))
        elif workers:
            cluster.scale(n=workers)
        else:
            cluster.scale(jobs=int(config.get("jobs", 1)))
    else:
        raise ValueError(f"not a Dask engine: {engine!r}")
    try:
        yield cluster
    finally:
        cluster.close()


# --- batch schedulers ---------------------------------------------------------------------

def cluster_kwargs(engine: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The dask-jobqueue cluster's keyword arguments from an engine's config section: its
    keys as the cluster class spells them (``job_extra_directives``; the ``-`` of Dask's
    YAML spelling is accepted too), but this module's own keys (:data:`OWN_KEYS`). What the
    section leaves out, dask-jobqueue takes from Dask's config (``jobqueue.<engine>``), with
    one exception: with ``cores`` and no ``processes`` anywhere, each core gets a worker
    process of one thread (parsing is pure-Python work: threads would share one GIL)."""
    import dask

    kwargs = {key.replace("-", "_"): value for key, value in config.items()
              if key.replace("-", "_") not in OWN_KEYS}
    cores = kwargs.get("cores", dask.config.get(f"jobqueue.{engine}.cores", None))
    if ("processes" not in kwargs and cores
            and dask.config.get(f"jobqueue.{engine}.processes", None) is None):
        kwargs["processes"] = int(cores)
    return kwargs


def jobqueue_cluster(engine: str, config: Mapping[str, Any], **extra: Any) -> Any:
    """The dask-jobqueue cluster of ``engine`` (``slurm``, ``pbs``) for ``config``, started
    (its scheduler runs in this process; no job is submitted until it is scaled)."""
    require("dask_jobqueue")
    import importlib

    module, name = JOBQUEUE_CLASSES[engine].split(":")
    cls = getattr(importlib.import_module(module), name)
    return cls(**cluster_kwargs(engine, config), **extra)


def _prefix(fn: Callable[..., Any]) -> str:
    """The name of ``fn``'s tasks on the Dask dashboard: ``dptrace-<function>``."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return f"dptrace-{name}"


# --- in the worker ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Box(Generic[T]):
    """A task as one opaque argument: Dask would otherwise look inside tuples, lists and
    dicts (a tuple with a callable first is a task of its graph)."""

    task: T


@dataclass(frozen=True)
class _Call(Generic[T, R]):
    """``fn`` on a boxed task, in a Dask worker; with a ``timeout``, ``fn`` runs in a thread
    of its own and a :class:`TimeoutError` is the result when it is not done in time (the
    thread is left to finish in the background: a Python thread cannot be stopped)."""

    fn: Callable[[T], R]
    timeout: float | None = None

    def __call__(self, box: _Box[T]) -> R:
        if self.timeout is None:
            return self.fn(box.task)
        outcome: list[Any] = []

        def target() -> None:
            try:
                outcome.append((True, self.fn(box.task)))
            except BaseException as exc:   # noqa: BLE001 (re-raised in the caller)
                outcome.append((False, exc))

        thread = threading.Thread(target=target, name="dptrace-fleet-task", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if not outcome:
            raise TimeoutError(f"the task ran over its timeout of {self.timeout:g} s (its "
                               "thread goes on in the Dask worker until it ends)")
        ok, value = outcome[0]
        if ok:
            return value
        raise value


# --- the loader's executor on a Dask cluster ------------------------------------------------

@dataclass(frozen=True)
class DaskExecutor:
    """The loader's :class:`dptrace.executor.Executor` on a Dask cluster: a reader's pieces
    of one large input run on the cluster's workers (``client``: a
    :class:`distributed.Client`), the results in the pieces' order. The pieces must be
    self-contained (``(path, start, end)``: the workers read the input themselves, so it
    must be on a file system they share)."""

    client: Any

    @property
    def workers(self) -> int:
        """The cluster's threads now (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        futures = self.client.map(_Call(fn), [_Box(item) for item in items], pure=False,
                                  key=_prefix(fn))
        try:
            for future in futures:
                yield future.result()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def start(self, fn: Callable[[T], R], item: T) -> Callable[[], R]:
        """``fn(item)`` begun on the cluster now; the returned function waits for it."""
        future = self.client.submit(_Call(fn), _Box(item), pure=False,
                                    key=f"{_prefix(fn)}-{uuid.uuid4().hex}")
        return future.result
