"""The watch loop: poll the inputs, take a snapshot at most once per interval (less often
when the analysis costs more than :data:`CPU_SHARE` of a core), stop when every input is
idle or the Slurm job left the queue."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .follow import Follower
from .snapshot import Live, Snapshot, load_baseline

#: the share of one core a watch may use on average (its reads and its snapshots): the next
#: snapshot waits until the watch's CPU time so far is within this share of the time it has
#: run (and at least an interval after the last one)
CPU_SHARE = 0.09
#: how often the poller thread reads the inputs (s; the interval when it is shorter)
POLL_EVERY = 1.0
#: how often the Slurm queue is asked whether the job still runs (s)
SLURM_EVERY = 30.0


class Watch:
    """One watch of ``paths`` (see :func:`dptrace.watch.watch`)."""

    def __init__(self, paths: Sequence[str], *, interval: float = 5.0,
                 idle_exit: float | None = None, baseline: str | None = None,
                 warmup: float = 0.1, job_id: str | None = None, engine: str = "auto",
                 thresholds: dict[str, float] | None = None, cpu_share: float = CPU_SHARE,
                 poll_thread: bool = True, datasets: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.follower = Follower(paths, engine=engine, clock=clock)
        self.interval, self.idle_exit = max(0.05, interval), idle_exit
        self.clock, self.sleep = clock, sleep
        self.cpu_share = cpu_share
        #: CPU seconds the watch has used (its polls and snapshots, in every thread)
        self.cpu_s = 0.0
        self.poll_thread = poll_thread
        self.poll_every = min(POLL_EVERY, self.interval)
        #: held while the follower is polled or read
        self.lock = threading.Lock()
        self._cpu_lock = threading.Lock()
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()
        self.poll_error: Exception | None = None
        base = load_baseline(baseline) if baseline else None
        self.live = Live(base, warmup=warmup, thresholds=thresholds, interval=self.interval,
                         datasets=datasets)
        self.started = clock()
        self.job_id = job_id
        self._asked = -1e18
        self._gone = False
        #: why the watch ended ("idle", "job left the queue"), or None
        self.ended: str | None = None

    def snapshots(self) -> Iterator[Snapshot]:
        """A snapshot per refresh, then the final one. With ``poll_thread``, a thread polls
        the inputs every :data:`POLL_EVERY` seconds (or interval) meanwhile, so a printer's
        rhythm and the inputs' idleness are seen at that grain however long an analysis
        takes; the snapshots read the follower under the same lock."""
        self._start_poller()
        try:
            due = self.clock()
            while True:
                self._poll()
                if self.clock() >= due:
                    snap = self.live.snapshot(self.follower, self.started, lock=self.lock,
                                              clock=self.clock)
                    self._spent(snap.cost_s)
                    yield snap
                    # not held while the next one is made (its Dataset and the next one's
                    # would be in memory together)
                    del snap
                    # the watch's CPU within its budget: the next snapshot not before the
                    # time at which its CPU so far is cpu_share of its running time
                    due = max(self.clock() + self.interval,
                              self.started + self.cpu_s / self.cpu_share)
                with self.lock:
                    self.ended = self._why_end(self.clock())
                if self.ended:
                    break
                wait = max(0.0, min(self.interval, due - self.clock()))
                self.sleep(wait if self._poller is None else min(wait, self.poll_every))
            yield self.final()
        finally:
            self._stop_poller()

    def final(self) -> Snapshot:
        """The last snapshot: the inputs read to their ends."""
        self._stop_poller()
        self._poll()
        return self.live.snapshot(self.follower, self.started, final=True, lock=self.lock,
                                  clock=self.clock)

    # --- polling ------------------------------------------------------------------------

    def _poll(self) -> None:
        t = time.thread_time()
        with self.lock:
            self.follower.poll()
        self._spent(time.thread_time() - t)

    def _spent(self, cpu: float) -> None:
        with self._cpu_lock:
            self.cpu_s += cpu

    def _start_poller(self) -> None:
        if not self.poll_thread or self._poller is not None:
            return
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll_loop, name="dptrace-watch-poll",
                                        daemon=True)
        self._poller.start()

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.poll_every):
            try:
                self._poll()
            except Exception as exc:   # noqa: BLE001 - seen by the main loop's own poll
                self.poll_error = exc
                return

    def _stop_poller(self) -> None:
        if self._poller is not None:
            self._stop.set()
            self._poller.join()
            self._poller = None

    def _why_end(self, now: float) -> str | None:
        tails = list(self.follower.tails.values())
        last = max((t.last_growth for t in tails), default=self.started)
        if self.idle_exit is not None and now - last >= self.idle_exit:
            return f"every input idle for {self.idle_exit:g} s"
        job = self.job_id or _job_of(tails)
        if job and now - self._asked >= SLURM_EVERY:
            self._asked = now
            self._gone = slurm_gone(job)
        if self._gone:
            return f"Slurm job {job} left the queue"
        return None


def _job_of(tails: list[Any]) -> str | None:
    from ..runs import job_id

    ids = {job_id(t.name)[0] for t in tails} - {None}
    ids_srun = {i for i in ids if i}
    return next(iter(ids_srun)) if len(ids_srun) == 1 else None


def slurm_gone(job: str) -> bool:
    """True when ``squeue`` exists and no longer lists the job (``sacct`` is asked when
    squeue fails); False when neither command exists or they cannot tell."""
    if shutil.which("squeue"):
        try:
            out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                                 text=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        if out.returncode == 0:
            return not out.stdout.strip()
    if shutil.which("sacct"):
        try:
            out = subprocess.run(["sacct", "-n", "-X", "-j", job, "-o", "State"],
                                 capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        state = out.stdout.strip().split()
        return bool(state) and state[0] not in ("RUNNING", "PENDING", "REQUEUED", "SUSPENDED",
                                                "CONFIGURING", "COMPLETING")
    return False
