"""What NCCL's INFO lines tell the compare and scaling views: the setup rows (version, the
network between nodes, plugin and provider, transports, GPUDirect RDMA, ``NCCL_*`` /
``HOROVOD_*`` variables), and which of them are the network path that ``setup_change``
judges."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ...analysis.compare import Settings, register_settings
from . import compute

#: settings of the setup table whose change is a change of the network path between nodes
NETWORK_SETTINGS = ("NCCL network", "transports", "GPUDirect RDMA", "net plugin",
                    "libfabric provider")


def _rows(table: Callable[[str], pd.DataFrame | None]) -> pd.DataFrame | None:
    return compute.settings(table("nccl_setup"), table("nccl_env"))


register_settings(Settings("nccl", _rows, network=NETWORK_SETTINGS, order=10))
