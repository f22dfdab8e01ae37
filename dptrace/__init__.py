"""dptrace: why does my data-parallel training job run slower than it should?

Public API (importing this module does no parsing work and imports neither pandas nor
rich: the public names load on first use, so ``dptrace --help`` starts at once)::

    ds = dptrace.load(["slurm-123.out", "mpi_profile.*"])   # formats detected
    ds["throughput"]                                          # a pandas DataFrame
    dptrace.throughput_summary(ds["throughput"])             # aggregates per source/metric
    dptrace.report(ds)                                        # a Report: its Sections'
                                                              # tables, figures, to_html()
    dptrace.findings(ds)                                      # what to look at first
    ds.save("run.dptrace"); dptrace.open("run.dptrace")       # Parquet, read back equal
    dptrace.compare(ds_before, ds_after)                      # two runs side by side
    dptrace.scaling({"1": ds1, "2": ds2, "4": ds4})           # speedup and efficiency
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import sys
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import formats as _formats

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    "Dataset": ".dataset",
    "DptraceError": ".errors",
    "ParseError": ".errors",
    "Report": ".reports.model",
    "Section": ".reports.model",
    "UnknownFormatError": ".errors",
    "compare": ".api",
    "findings": ".api",
    "load": ".api",
    "open": ".api",
    "report": ".api",
    "scaling": ".api",
    "throughput_summary": ".formats.trainlog.throughput",
    "survey": ".fleet",
    "Fleet": ".fleet",
    "watch": ".watch",
}
#: ``read_<format>`` for each format package (dptrace/formats/<format>/), made from the
#: registry by :func:`dptrace.api.read_function` on first use
_READERS = {f"read_{name}": ".api" for name in _formats.builtin()}
__all__ = sorted([*_PUBLIC, *_READERS])

if TYPE_CHECKING:  # the names as type checkers and editors see them
    from .api import compare as compare
    from .api import findings as findings
    from .api import load as load
    from .api import open as open
    from .api import report as report
    from .api import scaling as scaling
    from .dataset import Dataset as Dataset
    from .errors import DptraceError as DptraceError
    from .errors import ParseError as ParseError
    from .errors import UnknownFormatError as UnknownFormatError
    from .fleet.api import Fleet as Fleet
    from .fleet.api import survey as survey
    from .formats.trainlog.throughput import throughput_summary as throughput_summary
    from .reports.model import Report as Report
    from .reports.model import Section as Section
    from .watch import watch as watch


@contextlib.contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """The cyclic garbage collector paused while the block runs (imports: importing pandas
    and pyarrow allocates enough container objects for ~150 collections, ~0.05 of ~0.4
    CPU-s, none of which can free anything), enabled again after if it was; with
    ``freeze``, every object made so far is then moved out of the collector's sight
    (:func:`gc.freeze`: for a process of its own, whose modules live as long as it does)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()


def _import_uncollected(module: str) -> types.ModuleType:
    """``module`` imported with the cyclic collector paused (:func:`collector_paused`)."""
    with collector_paused():
        return importlib.import_module(module, __name__)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name) or _READERS.get(name)
    if module is None and name.startswith("read_") and name[5:] in _formats.names():
        module = ".api"   # a format from an entry point (dptrace.formats.ENTRY_POINT_GROUP)
    if module:
        value = getattr(_import_uncollected(module), name)
        if name in _FUNCTIONS:   # `import dptrace.findings.rules as r` looks the module
            value.__name__ = f"{__name__}.{name}"   # up by this name (see _Package)
        globals()[name] = value   # later lookups skip this function
        return value
    raise AttributeError(f"module 'dptrace' has no attribute {name!r}")


class _Package(types.ModuleType):
    """The ``dptrace`` module, whose public names ``findings`` and ``watch`` are the
    functions :func:`dptrace.api.findings` and :func:`dptrace.watch.watch` although
    ``dptrace.findings`` and ``dptrace.watch`` are also packages.

    Importing a submodule makes Python set it as an attribute of its parent: the import
    of the package ``dptrace.findings`` (by the report, say) would replace the function.
    That one assignment is ignored; the package stays in ``sys.modules``, so
    ``from dptrace.findings import rules`` and ``import dptrace.findings.rules as rules``
    work (the latter finds ``sys.modules["dptrace.findings.rules"]`` by the function's
    ``__name__``, ``dptrace.findings``). Patch its modules by object
    (``monkeypatch.setattr(rules, ...)``), not by a dotted string through ``dptrace``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FUNCTIONS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


#: public functions named like a subpackage (see :class:`_Package`)
_FUNCTIONS = frozenset({"findings", "watch"})
sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC, *_READERS])
