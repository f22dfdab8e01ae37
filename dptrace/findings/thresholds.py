"""Every threshold a findings rule uses, in one place.

Each is the constant the analysis (or, for two drawer-only highlights, the drawer) already
applies today, re-exported here so that a rule and the table it reads can never disagree:
change a threshold in its analysis module and the finding follows.
"""

from __future__ import annotations

from ..analysis import communication as comm
from ..analysis import horovod as hv
from ..analysis import throughput as thr
from ..analysis import tiles as tl

#: throughput: an instance more than this fraction below its series' median is a straggler
#: (``analysis.throughput.STRAGGLER_THRESHOLD``, counted by ``throughput_summary``)
STRAGGLER_FRACTION: float = thr.STRAGGLER_THRESHOLD
#: throughput: share of each instance's steps dropped as warm-up before comparing
WARMUP_FRACTION: float = thr.WARMUP_FRACTION

#: mpitrace: Allreduces up to this size count as small (``analysis.communication.SMALL_BYTES``)
SMALL_BYTES: int = comm.SMALL_BYTES
#: mpitrace: flag a job when small Allreduces hold more than this share of its MPI time
#: (``analysis.communication.SMALL_SHARE``, the ``dominated`` column of ``small_messages``)
SMALL_SHARE: float = comm.SMALL_SHARE
#: mpitrace: a rank's own file and rank 0's table disagree beyond this (``rank_times``)
TABLE_TOLERANCE_S: float = comm.TABLE_TOLERANCE_S

#: Horovod: a negotiation needs ticks from this many ranks to name a last rank
MIN_RANKS: int = hv.MIN_RANKS
#: Horovod: a rank last to report in at least this share of the compared negotiations is a
#: straggler (the share the Horovod drawer highlights in red, ``reports/horovod_sections.py``
#: ``_stragglers``: ``last_share >= 0.5`` when the file compares more than one rank)
LAST_SHARE: float = 0.5

#: SambaNova: a tile at or above this %idle with no PID is idle (``analysis.tiles.IDLE_PCT``)
IDLE_PCT: float = tl.IDLE_PCT
