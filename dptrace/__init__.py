"""dptrace: why does my data-parallel training job run slower than it should?

Public API (importing this module does no parsing work)::

    ds = dptrace.load(["slurm-123.out", "mpi_profile.*"])   # formats detected
    ds["throughput"]                                          # a pandas DataFrame
    dptrace.throughput_summary(ds["throughput"])             # aggregates per source/metric
"""

from .analysis.throughput import throughput_summary
from .api import load, read_mpitrace, read_trainlog
from .dataset import Dataset
from .errors import DptraceError, ParseError, UnknownFormatError

__all__ = [
    "Dataset",
    "DptraceError",
    "ParseError",
    "UnknownFormatError",
    "load",
    "read_mpitrace",
    "read_trainlog",
    "throughput_summary",
]
__version__ = "0.1.0"
