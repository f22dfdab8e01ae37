"""One analysis context per report: the named derived tables, each computed once.

A report asks the same questions of the same tables from several places: the throughput
section and the findings both want the job figures; the per-instance table is the base of
the job figures, the summary and the stragglers. :class:`Analyses` holds a Dataset, the
report's options, and every derived table it has been asked for: ``a["throughput.instances"]``
computes the table on first use (from the Dataset and from other derived tables, read the
same way) and keeps it; sections and rules read the same object, so nothing is computed
twice.

Each derived table is declared once, by the format whose tables it reads, in the format's
``analyses`` module (``dptrace/formats/<format>/analyses.py``, or a plug-in's):
:func:`register_derived` with a :class:`Derived` (its name, ``<area>.<table>``, and the
function ``Analyses -> DataFrame | None``: None when the Dataset has nothing for it). The
formats' ``analyses`` modules are imported on the first look-up (:func:`derived`), so no
shared module names a format's tables: those of the formats whose tables the Dataset holds
(:func:`dptrace.formats.reading`), and every format's when a name is not found among them.

Findings judge each run on its own rows (:meth:`Analyses.of_run`): a run's context is made
once per report too, and a Dataset of one run is its own run's context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import formats

if TYPE_CHECKING:
    import pandas as pd

    from .dataset import Dataset

#: a derived table's builder: the context in, the table (or None: nothing for it) out
BuildFn = Callable[["Analyses"], "pd.DataFrame | None"]
#: the default share of each instance's steps dropped as warm-up (``warmup`` option)
WARMUP_FRACTION = 0.1


@dataclass(frozen=True)
class Derived:
    """A named derived table, declared once by the module that knows how to make it."""

    #: ``<area>.<table>``, the name rules and sections read it by (``throughput.instances``)
    name: str
    #: ``Analyses -> DataFrame | None``; it reads the Dataset and other derived tables
    #: through the context, never computes another registered table itself
    build: BuildFn
    #: one line for ``dptrace schema`` and the docs
    doc: str = ""
    #: run-local: each run's rows are what the function makes of that run's rows alone
    #: (it groups by ``run`` first, or never mixes runs). A run's context then takes its
    #: rows of the report's table instead of computing them again (a folder of 1,000 small
    #: runs: one computation, not 1,000)
    per_run: bool = False


_DERIVED: dict[str, Derived] = {}
#: True: every format's ``analyses`` module imported; a set: those of the formats of
#: these tables (:func:`derived`); False: none
_DISCOVERED: bool | frozenset[str] = False
#: the module of a format package that declares its derived tables
FORMAT_ANALYSES = "analyses"


def register_derived(*specs: Derived) -> None:
    """Declare derived tables. Registering a name again from the module that first did it
    (a reloaded module) replaces it; from another module it is an error."""
    for spec in specs:
        old = _DERIVED.get(spec.name)
        if old is not None and _module(old) != _module(spec):
            raise ValueError(f"derived table {spec.name!r} is already registered by "
                             f"{_module(old)}")
        _DERIVED[spec.name] = spec


def _module(spec: Derived) -> str:
    return getattr(spec.build, "__module__", "") or ""


def derived(tables: Iterable[str] | None = None) -> dict[str, Derived]:
    """Every declared derived table by name (the formats' ``analyses`` modules imported on
    first use; one that fails to import costs only its own tables: see
    :data:`dptrace.formats.UNAVAILABLE`). ``tables``: import only the modules of the
    formats that read any of them (:func:`dptrace.formats.reading`); the tables declared
    so far are all returned."""
    global _DISCOVERED
    if _DISCOVERED is not True:
        if tables is None:
            _DISCOVERED = True
            formats.import_parts(FORMAT_ANALYSES)
        else:
            done = _DISCOVERED or frozenset()
            new = frozenset(tables) - done
            if new:
                _DISCOVERED = done | new
                formats.import_parts(FORMAT_ANALYSES, new)
    return _DERIVED


def rediscover() -> None:
    """Look for formats' analyses again (a test that adds a format)."""
    global _DISCOVERED
    _DISCOVERED = False


def of(ds: Dataset, options: Mapping[str, Any]) -> Analyses:
    """The report's context, which :func:`dptrace.reports.model.build` puts in the options
    every section builder gets (``options["analyses"]``); a new one for a builder called
    on its own."""
    a = options.get("analyses")
    if isinstance(a, Analyses) and a.ds is ds:
        return a
    return Analyses(ds, options)


class Analyses:
    """The derived tables of one Dataset under one set of report options.

    ``a[name]``: the derived table ``name`` (computed on first use, then kept), or None when
    the Dataset has nothing for it; an unknown name is a KeyError. ``a.ds`` is the Dataset,
    ``a.options`` the options (``warmup``, ``thresholds``, and whatever a view adds).
    Tables handed out are the context's own: a caller that changes one copies it first.
    ``tables``: derived tables made elsewhere, by name, handed out as if computed here (the
    caller vouches that each is what its builder would make of ``ds`` and the options)."""

    def __init__(self, ds: Dataset, options: Mapping[str, Any] | None = None,
                 parent: Analyses | None = None, run: str | None = None, *,
                 tables: Mapping[str, pd.DataFrame | None] | None = None) -> None:
        self.ds = ds
        #: the tables the Dataset holds rows of (whose formats' declarations are looked at)
        self._present = tuple(ds.tables)
        #: the report's context when this is one run's (:meth:`of_runs`), and the run
        self.parent, self.run = parent, run
        self.options: dict[str, Any] = {k: v for k, v in (options or {}).items()
                                        if k != "analyses"}
        #: ``tables``: derived tables the caller made (``dptrace watch`` folds the
        #: per-instance table as rows come): taken as they are, never computed
        self._tables: dict[str, pd.DataFrame | None] = dict(tables or {})
        self._busy: set[str] = set()
        self._runs: dict[str, Analyses] | None = None
        #: run-local tables' row positions by run (:meth:`_positions`), found once per table
        self._by_run: dict[str, dict[str, Any] | None] = {}
        #: what the report's readers keep for the report beside the tables (the findings'
        #: rules: which of them no run can make fire), by their own names
        self.memo: dict[str, Any] = {}

    @property
    def warmup(self) -> float:
        """The share of each instance's steps dropped as warm-up."""
        return float(self.options.get("warmup", WARMUP_FRACTION))

    def __getitem__(self, name: str) -> pd.DataFrame | None:
        if name in self._tables:
            return self._tables[name]
        spec = self._spec(name)
        if spec is None:
            raise KeyError(f"no derived table {name!r} (known: {', '.join(sorted(_DERIVED))})")
        if name in self._busy:
            raise RecursionError(f"derived table {name!r} reads itself")
        self._busy.add(name)
        try:
            table = self._of_parent(name) if spec.per_run else None
            if table is None:
                table = spec.build(self)
        finally:
            self._busy.discard(name)
        self._tables[name] = table
        return table

    def _of_parent(self, name: str) -> pd.DataFrame | None:
        """A run-local table's rows of this run, from the report's table; None (compute it)
        when this is no run's context or the run has no rows there."""
        if self.parent is None or self.run is None:
            return None
        positions = self.parent._positions(name)
        mine = None if positions is None else positions.get(self.run)
        if mine is None:
            return None
        whole = self.parent[name]
        assert whole is not None   # (it has positions)
        return whole.iloc[mine].reset_index(drop=True)

    def _positions(self, name: str) -> dict[str, Any] | None:
        """The row positions of each run in this context's table ``name`` (one grouping per
        table, not one scan of the whole table per run: a folder of 1,000 runs); None when
        it has no such table or no ``run`` column."""
        if name not in self._by_run:
            whole = self[name]
            if whole is None or "run" not in whole.columns:
                self._by_run[name] = None
            else:
                groups = whole.groupby(whole["run"].astype("object"), sort=False).indices
                self._by_run[name] = {str(run): pos for run, pos in groups.items()}
        return self._by_run[name]

    def _spec(self, name: str) -> Derived | None:
        """The declaration of ``name``: among those of the formats whose tables the Dataset
        holds, else among every format's (None: nobody declared it)."""
        spec = derived(self._present).get(name)
        return spec if spec is not None else derived().get(name)

    def get(self, name: str) -> pd.DataFrame | None:
        """``a[name]``, or None for a name nobody declared."""
        return self[name] if name in self._tables or self._spec(name) is not None else None

    def table(self, name: str) -> pd.DataFrame:
        """The Dataset's table ``name`` (empty, with its columns, when it has none)."""
        return self.ds[name]

    def has(self, name: str) -> bool:
        """Whether the Dataset holds rows of its table ``name``."""
        return name in self.ds.tables and not self.ds[name].empty

    def computed(self) -> Iterator[str]:
        """The names computed so far (for tests and profiles)."""
        return iter(list(self._tables))

    def of_runs(self) -> dict[str, Analyses]:
        """One context per run, each over that run's rows only (the findings judge each run
        on its own): made once; a Dataset of one run (or none) is its own run's context."""
        if self._runs is None:
            ids = self.ds.run_ids
            if len(ids) <= 1:
                self._runs = {ids[0] if ids else "": self}
            else:
                self._runs = {run: Analyses(part, self.options, self, run)
                              for run, part in self.ds.by_run().items()}
        return self._runs
