"""dptrace: why does my data-parallel training job run slower than it should?

Public API (importing this module does no parsing work)::

    ds = dptrace.load(["slurm-123.out", "mpi_profile.*"])   # formats detected
    ds["throughput"]                                          # a pandas DataFrame
    dptrace.throughput_summary(ds["throughput"])             # aggregates per source/metric
    dptrace.report(ds)                                        # tables, figures, to_html()
"""

from .analysis.throughput import throughput_summary
from .api import load, read_horovod, read_mpitrace, read_trainlog, report
from .dataset import Dataset
from .errors import DptraceError, ParseError, UnknownFormatError

__all__ = [
    "Dataset",
    "DptraceError",
    "ParseError",
    "UnknownFormatError",
    "load",
    "read_horovod",
    "read_mpitrace",
    "read_trainlog",
    "report",
    "throughput_summary",
]
__version__ = "0.1.0"
