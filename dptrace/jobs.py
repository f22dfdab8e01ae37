"""Which inputs are one job: the grouping behind :func:`dptrace.runs.assign` for the files
found under one directory argument, and for the loose files of a call (files and globs).

A folder often holds the files of several jobs (``examples/data``, a user's ``logs/``, a
parent folder of job folders). Findings link what is in one run, so files are one run only
where something links them:

Units, each surely one job:

1. files that share a job id in their names (``slurm-<id>.out``, ``mpi_profile.<id>.<rank>``,
   PBS ``<name>.o<id>``);
2. the files of one per-rank layout (torchrun ``--log-dir``, mpirun ``--output-filename``,
   ``rank3.log``);
3. a file and its other stream (``x.out`` / ``x.err``, ``stdout`` / ``stderr`` side by side);
4. PyTorch profiler traces of one job: one ``distributedInfo`` world size, distinct ranks and
   overlapping time spans (the traces of one job's ranks, whatever their names);
5. any other file, alone.

Joins, each only where the two sides do not state different world sizes:

6. the one training log without a job id in a directory joins the one job-id unit whose
   files sit there when that unit has no log of its own (``stdout.log`` beside
   ``mpi_profile.<id>.<rank>``);
7. a *companion* unit (files that are not a process's own output: Horovod timelines,
   profiler traces, MPI profiles without a job id, mpiP reports, sntilestat listings,
   NCCL-only logs) joins the one *main* unit of its directory, else of the nearest parent
   directory that has exactly one, up to the argument's directory; there, the one main unit
   anywhere under it. Main units: job-id units, per-rank layouts, and training and MLPerf
   logs with rows of their own (figures, losses; a file whose only line is a launch
   command is no log);
8. nccl-tests output (the system's own benchmark: the reference a job's collectives are
   held against) joins the one other unit of its directory or the nearest parent, whatever
   the world sizes (a test of one node beside a 2-rank job's traces).

Nothing else joins: two training logs with nothing linking them are two jobs, and a
timeline in a folder of several logs is a run of its own. A directory whose files all end
up in one unit is one run, named after the directory, as before.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

#: formats whose files are a process's own output: each such file is a job's main record
MAIN_FORMATS = frozenset({"trainlog", "mllog", "nccltests"})


@dataclass(frozen=True)
class Trace:
    """A PyTorch profiler trace's own statement of its place in the job."""

    rank: int | None
    world_size: int | None
    first_us: float | None
    last_us: float | None


@dataclass
class Facts:
    """What each source's content says of its job, by source index: its formats, its
    trace (PyTorch profiler traces), and, computed only when a join asks, the world sizes
    it states (``worlds``: a function of the source indices)."""

    formats: Mapping[int, frozenset[str]] = field(default_factory=dict)
    traces: Mapping[int, Trace] = field(default_factory=dict)
    #: sources that are a process's own output with rows of its own (a training or MLPerf
    #: log's figures, losses): main units; None: by format alone (:data:`MAIN_FORMATS`)
    mains: frozenset[int] | None = None
    #: ``worlds(members)``: the world sizes stated by each source it covers (the sources
    #: asked for, or more: every source when they are many of them), empty where none; a
    #: source's are those its rows alone state, so a join that asks of a few sources of a
    #: large load has only theirs computed
    worlds: Callable[[Sequence[int]], Mapping[int, frozenset[int]]] | None = None
    _worlds: dict[int, frozenset[int]] = field(default_factory=dict)

    def is_main(self, i: int) -> bool:
        """Source ``i`` is a process's own output (a main unit)."""
        if self.mains is not None:
            return i in self.mains
        return bool(self.formats.get(i, frozenset()) & MAIN_FORMATS)

    def world(self, members: Sequence[int]) -> frozenset[int]:
        """The world sizes the sources ``members`` state (empty: none stated)."""
        if self.worlds is None:
            return frozenset()
        new = [i for i in dict.fromkeys(members) if i not in self._worlds]
        if new:
            self._worlds.update(self.worlds(new))
        out: set[int] = set()
        for i in members:
            out |= self._worlds.get(i, frozenset())
        return frozenset(out)


@dataclass
class Unit:
    """Sources that are one job for sure (rules 1-5), then the joins (6-7)."""

    members: list[int]
    kind: str                      # "job", "ranks", "trace", "file"
    key: str                       # job id, per-rank root, or the first member's path
    home: str                      # the directory holding its files (absolute)
    main: bool
    system: bool = False           # nccl-tests output: the system's reference (rule 8)

    @property
    def first(self) -> int:
        """Its first source that was read (the one it is named after)."""
        return min(self.members[:self.read] if self.read else self.members)

    read: int = 0                  # members before this were read (set once grouped)


#: a file's other stream: the same name with 'err' for 'out' (x.out/x.err, stdout/stderr,
#: run.stdout.log/run.stderr.log)
_STREAM = re.compile(r"(?<![A-Za-z])(std)?err(?![A-Za-z])")


def _stream_key(path: str) -> str:
    d, base = os.path.split(path)
    return os.path.join(d, _STREAM.sub(lambda m: (m.group(1) or "") + "out", base))


def group(paths: Sequence[str], members: Sequence[int], root: str,
          job_of: Callable[[str], str | None], rank_root: Callable[[str], str | None],
          facts: Facts | None) -> list[Unit]:
    """The jobs of the sources ``members`` (indices into ``paths``) found under ``root``
    (see the module's docstring), each a :class:`Unit`, in order of their first source."""
    facts = facts or Facts()
    units: list[Unit] = []
    by_key: dict[tuple[str, str], Unit] = {}
    loose: list[int] = []
    inert: list[int] = []
    for i in members:
        if facts.formats and not facts.formats.get(i):
            inert.append(i)    # nothing read from it (skipped, unknown): placed last
            continue
        path = os.path.abspath(paths[i].split("::")[0])
        jid = job_of(paths[i])
        # a trace states its rank and world itself: its name's 'rank3' is not a layout
        rr = rank_root(paths[i]) if jid is None and i not in facts.traces else None
        if jid is not None:
            key = ("job", jid)
        elif rr is not None:
            key = ("ranks", rr)
        else:
            loose.append(i)
            continue
        u = by_key.get(key)
        if u is None:
            u = by_key[key] = Unit([], key[0], key[1], os.path.dirname(path), True)
            units.append(u)
        u.members.append(i)
        d = os.path.dirname(path)
        if d != u.home:   # thousands of rank files share one directory: no path walk each
            u.home = _common_dir(u.home, d)
    for u in units:
        if u.kind == "ranks":
            u.home = u.key
    units.extend(_loose_units(paths, loose, facts))
    units = _join(units, root, facts)
    for u in units:
        u.read = len(u.members)
    _place_inert(units, inert, paths, root)
    units.sort(key=lambda u: u.first)
    return units


def _place_inert(units: list[Unit], inert: list[int], paths: Sequence[str],
                 root: str) -> None:
    """Files nothing was read from (a README, a script beside the data) make no run: each
    goes with the one unit of its directory or the nearest parent that has one, else with
    the first unit (alone, they are one unit of their own)."""
    if not inert:
        return
    if not units:
        first = os.path.abspath(paths[inert[0]].split("::")[0])
        units.append(Unit(list(inert), "file", first, os.path.dirname(first), False))
        return
    root = os.path.abspath(root)
    homes = _Homes(units)
    for i in inert:
        d = os.path.dirname(os.path.abspath(paths[i].split("::")[0]))
        target = _nearest_from(d, homes, root, anywhere=False)
        (target or min(units, key=lambda u: u.first)).members.append(i)


def _common_dir(a: str, b: str) -> str:
    try:
        return os.path.commonpath([a, b])
    except ValueError:   # different drives
        return a


def _loose_units(paths: Sequence[str], loose: list[int], facts: Facts) -> list[Unit]:
    """Rules 3-5 for the files without a job id or a per-rank layout."""
    out: list[Unit] = []
    streams: dict[str, Unit] = {}
    traces: list[tuple[Trace, int]] = []
    for i in loose:
        path = os.path.abspath(paths[i].split("::")[0])
        tr = facts.traces.get(i)
        if tr is not None:
            traces.append((tr, i))
            continue
        main = facts.is_main(i)
        system = not main and "nccltests" in facts.formats.get(i, frozenset())
        key = _stream_key(path)
        u = streams.get(key)
        if u is not None and u.home == os.path.dirname(path):
            u.members.append(i)
            u.main = u.main or main
            u.system = u.system and system and not u.main
            continue
        u = Unit([i], "file", path, os.path.dirname(path), main, system)
        streams[key] = u
        out.append(u)
    out.extend(_trace_units(paths, traces))
    return out


def _trace_units(paths: Sequence[str], traces: list[tuple[Trace, int]]) -> list[Unit]:
    """Rule 4: traces of one world size, distinct ranks and overlapping spans are one job
    (taken in order of their start; a trace that states no rank or world stays alone)."""
    groups: list[tuple[Unit, set[int], int, float | None, float | None]] = []
    out: list[Unit] = []
    order = sorted(traces, key=lambda t: (t[0].first_us is None, t[0].first_us or 0.0, t[1]))
    for tr, i in order:
        path = os.path.abspath(paths[i].split("::")[0])
        placed = False
        if tr.rank is not None and tr.world_size is not None:
            for k, (u, ranks, world, lo, hi) in enumerate(groups):
                if world != tr.world_size or tr.rank in ranks or len(ranks) >= world:
                    continue
                if not _overlap(lo, hi, tr.first_us, tr.last_us):
                    continue
                u.members.append(i)
                u.home = _common_dir(u.home, os.path.dirname(path))
                ranks.add(tr.rank)
                if lo is not None and tr.first_us is not None:
                    lo = min(lo, tr.first_us)
                if hi is not None and tr.last_us is not None:
                    hi = max(hi, tr.last_us)
                groups[k] = (u, ranks, world, lo, hi)
                placed = True
                break
        if placed:
            continue
        u = Unit([i], "trace", path, os.path.dirname(path), False)
        out.append(u)
        if tr.rank is not None and tr.world_size is not None:
            groups.append((u, {tr.rank}, tr.world_size, tr.first_us, tr.last_us))
    return out


def _overlap(lo: float | None, hi: float | None, a: float | None, b: float | None) -> bool:
    """Spans overlap, or one is unknown."""
    if lo is None or hi is None or a is None or b is None:
        return True
    return a <= hi and lo <= b


def _compatible(a: Unit, b: Unit, facts: Facts) -> bool:
    wa, wb = facts.world(a.members), facts.world(b.members)
    return not (wa and wb and not (wa & wb))


def _has_log(u: Unit, facts: Facts) -> bool:
    return any(facts.is_main(i) for i in u.members)


def _merge(into: Unit, other: Unit) -> None:
    into.members.extend(other.members)
    into.main = into.main or other.main


def _join(units: list[Unit], root: str, facts: Facts) -> list[Unit]:
    """Rules 6 and 7."""
    root = os.path.abspath(root)
    jobs_in: dict[str, list[Unit]] = {}
    logs_in: dict[str, list[Unit]] = {}
    for u in units:
        if u.kind == "job":
            jobs_in.setdefault(u.home, []).append(u)
        elif u.main:
            logs_in.setdefault(u.home, []).append(u)
    gone: set[int] = set()
    for home, near in jobs_in.items():   # 6: a job's profiles and the one log beside them
        logs = logs_in.get(home, [])
        if len(near) == 1 and len(logs) == 1 and not _has_log(near[0], facts) \
                and _compatible(near[0], logs[0], facts):
            _merge(near[0], logs[0])
            gone.add(id(logs[0]))
    units = [u for u in units if id(u) not in gone]
    mains = _Homes([u for u in units if u.main])
    for u in units:   # 7: companions join the one main unit of the nearest directory
        if u.main or u.system:
            continue
        target = _nearest(u, mains, root)
        if target is not None and _compatible(target, u, facts):
            _merge(target, u)
            gone.add(id(u))
    units = [u for u in units if id(u) not in gone]
    jobs_ = _Homes([u for u in units if not u.system])
    for u in units:   # 8: nccl-tests output, the system's reference, joins the one job near
        if not u.system:   # it, whatever its world (a test of one node beside a job of 2)
            continue
        target = _nearest(u, jobs_, root)
        if target is not None:
            _merge(target, u)
            gone.add(id(u))
    return [u for u in units if id(u) not in gone]


class _Homes:
    """Units by their home directory, looked up, not scanned, once per file placed (a
    folder of 20,000 job folders, each with a README or a timeline: 20,000 lookups, not
    400 million comparisons). Their homes must not change while it is used."""

    def __init__(self, units: Sequence[Unit]) -> None:
        self.units = list(units)
        self.by_home: dict[str, list[Unit]] = {}
        for u in self.units:
            self.by_home.setdefault(u.home, []).append(u)
        self._under: dict[str, list[Unit]] = {}

    def under(self, root: str) -> list[Unit]:
        """The units homed in ``root`` or below it."""
        if root not in self._under:
            self._under[root] = [m for m in self.units if _under(m.home, root)]
        return self._under[root]


def _nearest(u: Unit, mains: _Homes, root: str) -> Unit | None:
    """The one unit of ``mains`` homed in ``u``'s directory, else in the nearest parent
    that has exactly one, up to ``root``; there, the one of ``mains`` anywhere under it."""
    return _nearest_from(u.home, mains, root, anywhere=True)


def _nearest_from(d: str, units: _Homes, root: str, *, anywhere: bool) -> Unit | None:
    """The one of ``units`` homed in directory ``d``, else in the nearest parent that has
    exactly one (none where a directory on the way has several), up to ``root``; there,
    with ``anywhere``, the one of ``units`` anywhere under it."""
    while True:
        here = units.by_home.get(d, [])
        if len(here) == 1:
            return here[0]
        if len(here) > 1:
            return None
        if d == root or not _under(d, root):
            under = units.under(root) if anywhere else []
            return under[0] if len(under) == 1 else None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def crowded_homes(units: Sequence[Unit]) -> frozenset[str]:
    """The directories that hold the homes of more than one of ``units`` (their own or a
    subdirectory's): each unit's home (absolute) and every parent of it counted once per
    unit, a walk up each home, not a comparison of every unit with every other (20,000
    job folders: 20,000 walks, not 400 million path comparisons)."""
    count: dict[str, int] = {}
    for u in units:
        d = u.home
        while True:
            count[d] = count.get(d, 0) + 1
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return frozenset(d for d, k in count.items() if k > 1)


def label(u: Unit, units: Sequence[Unit], root: str, paths: Sequence[str],
          crowded: frozenset[str] | None = None) -> str:
    """The label of a unit among the several found under ``root``: the job folder's path
    (relative to ``root``) when the unit is the only one in it, else ``job <id>`` for a job
    id, else the path of its first file. ``crowded``: :func:`crowded_homes` of ``units``
    (computed here when not given; pass it when labelling every unit of a directory)."""
    root = os.path.abspath(root)
    if crowded is None:
        crowded = crowded_homes(units)
    if u.home != root and _under(u.home, root) and u.home not in crowded:
        return os.path.relpath(u.home, root).replace(os.sep, "/")
    if u.kind == "job":
        return f"job {u.key}"
    path = os.path.abspath(paths[u.first].split("::")[0])
    rel = os.path.relpath(path, root) if _under(path, root) else os.path.basename(path)
    return rel.replace(os.sep, "/")
