"""The NCCL debug-log format's tables: ``nccl_setup`` (one row per process that printed
``NCCL INFO`` lines), ``nccl_events`` (warnings, errors and timeouts) and ``nccl_env`` (the
NCCL settings and node layout the log states)."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table

_c = Column

NCCL_SETUP = register_table(Table(
    "nccl_setup",
    "NCCL_DEBUG=INFO lines: one row per process (host and pid of NCCL's 'host:pid:tid [dev]' "
    "prefix) per source: its rank, the network NCCL chose and the transports its channels "
    "use.",
    (
        SOURCE,
        _c("host", "string", "host name of the process, as NCCL prints it"),
        _c("pid", "Int64", "process id"),
        _c("rank", "Int64", "the process's rank: the launcher prefix of its lines, else its "
           "'comm ... rank R' line of the largest communicator, else the per-rank file's "
           "name; null when none says it"),
        _c("rank_from", "string", "which of those gave rank"),
        _c("device", "Int64", "CUDA device of the process ('[3]' of the prefix)"),
        _c("nranks", "Int64", "ranks of the largest communicator it joined ('comm ... nranks')"),
        _c("nodes", "Int64", "nodes of that communicator ('nNodes', NCCL 2.18+); null before"),
        _c("version", "string", "NCCL version ('NCCL version 2.7.8+cuda10.2'; printed by one "
           "process, given to every process of the source)"),
        _c("network", "string", "the network NCCL chose for traffic between nodes: 'Using "
           "network X' (NCCL 2.7+: IB, IBext, Socket, AWS Libfabric, ...), else the last 'NET/IB "
           ": Using' or 'NET/Socket : Using' line, else the NET transport of its channels; null "
           "when none was printed"),
        _c("network_from", "string", "which line gave network"),
        _c("net_devices", "string", "the devices of 'NET/<net> : Using [0]mlx5_0:1/IB ...' "
           "(comma separated)"),
        _c("plugin", "string", "network plugin loaded ('NET/Plugin: Loaded net plugin AWS "
           "Libfabric'); 'none' when NCCL said it found none"),
        _c("provider", "string", "libfabric provider of the OFI plugin ('NET/OFI Selected "
           "Provider is cxi')"),
        _c("transports", "string", "transports of its channel lines, sorted, comma separated: "
           "NET/IB, NET/Socket, P2P/IPC, SHM, ..."),
        _c("net_channels", "Int64", "channel lines through the network (via NET/...)"),
        _c("gdrdma", "boolean", "a channel through the network uses GPUDirect RDMA "
           "('/GDRDMA'); null when no channel line went through the network"),
        _c("coll_channels", "Int64", "'N coll channels' of its last such line"),
        _c("warnings", "Int64", "its NCCL WARN lines"),
        _c("lines", "Int64", "its NCCL lines of the kinds read (version, network, plugin, "
           "comm, channel, settings, warnings)"),
        LINENO,
    ),
    key=("source", "host", "pid"),
), place=51)

NCCL_EVENTS = register_table(Table(
    "nccl_events",
    "NCCL warnings (NCCL WARN lines), errors (ncclSystemError, 'NCCL error') and collective "
    "timeouts caught by PyTorch's NCCL watchdog, one row per line (a rank's timeout once).",
    (
        SOURCE,
        _c("host", "string", "host of the NCCL prefix; null on a PyTorch line"),
        _c("pid", "Int64", "process id of the NCCL prefix; null on a PyTorch line"),
        _c("rank", "Int64", "the rank the line states: the '[Rank R]' of a PyTorch line, "
           "else its launcher prefix; null otherwise (join nccl_setup on host and pid for "
           "the process's rank)"),
        _c("level", "category", "WARN, ERROR"),
        _c("kind", "category", "warn (an NCCL WARN line), error (an NCCL error code), "
           "timeout (a collective the watchdog timed out)"),
        _c("op", "string", "the collective that timed out (OpType=ALLGATHER)"),
        _c("timeout_s", "float64", "the timeout it exceeded: the watchdog's 'Timeout(ms)' "
           "/ 1000. In seconds, not the microseconds of an event's duration: it is a setting "
           "(the process group's timeout, set as a timedelta), not a measured event", "s"),
        _c("message", "string", "the message (at most 300 characters)"),
        LINENO,
    ),
    key=("source", "lineno"),
), place=51)

NCCL_ENV = register_table(Table(
    "nccl_env",
    "What the log states of the job's NCCL settings and layout: NCCL_* variables ('export "
    "NCCL_IB_DISABLE=1', 'NCCL_SOCKET_IFNAME set by environment to hsn') and the node layout "
    "a launcher line gives (mpirun '--host a,b', 'SLURM_NNODES=2', torchrun '--nnodes 2').",
    (
        SOURCE,
        _c("name", "string", "the variable or option: NCCL_SOCKET_IFNAME, SLURM_NNODES, "
           "--host, --nnodes, ..."),
        _c("value", "string", "its value as printed"),
        _c("nodes", "Int64", "nodes it says the job spans (--host: distinct hosts; "
           "SLURM_NNODES, SLURM_JOB_NUM_NODES, --nnodes: the number); null for NCCL_*"),
        LINENO,
    ),
    key=("source", "lineno", "name"),
), place=51)
