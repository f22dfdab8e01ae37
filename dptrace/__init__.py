"""dptrace: why does my data-parallel training job run slower than it should?

Public API (importing this module does no parsing work and imports neither pandas nor
rich: the public names load on first use, so ``dptrace --help`` starts at once)::

    ds = dptrace.load(["slurm-123.out", "mpi_profile.*"])   # formats detected
    ds["throughput"]                                          # a pandas DataFrame
    dptrace.throughput_summary(ds["throughput"])             # aggregates per source/metric
    dptrace.report(ds)                                        # a Report: its Sections'
                                                              # tables, figures, to_html()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    "Dataset": ".dataset",
    "DptraceError": ".errors",
    "ParseError": ".errors",
    "Report": ".reports.model",
    "Section": ".reports.model",
    "UnknownFormatError": ".errors",
    "load": ".api",
    "read_horovod": ".api",
    "read_mpitrace": ".api",
    "read_trainlog": ".api",
    "report": ".api",
    "throughput_summary": ".analysis.throughput",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:  # the names as type checkers and editors see them
    from .analysis.throughput import throughput_summary as throughput_summary
    from .api import load as load
    from .api import read_horovod as read_horovod
    from .api import read_mpitrace as read_mpitrace
    from .api import read_trainlog as read_trainlog
    from .api import report as report
    from .dataset import Dataset as Dataset
    from .errors import DptraceError as DptraceError
    from .errors import ParseError as ParseError
    from .errors import UnknownFormatError as UnknownFormatError
    from .reports.model import Report as Report
    from .reports.model import Section as Section


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
        globals()[name] = value   # later lookups skip this function
        return value
    raise AttributeError(f"module 'dptrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
