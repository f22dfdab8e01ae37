"""Findings from NCCL's own lines (``analysis.nccl.overview``, one row per run): the network
NCCL chose between nodes, GPUDirect RDMA, and NCCL's errors and timeouts.

The classic cause of a slow multi-node data-parallel job is NCCL falling back to TCP
sockets: the InfiniBand verbs library is missing in the container, the fabric's plugin is
not loaded, or ``NCCL_IB_DISABLE`` is set. NCCL then says ``NET/Socket : Using [0]eth0`` (and
``Using network Socket``) and carries on, several times slower (ALCF Polaris: a ResNet-50
DDP job on 2 nodes reached about 2,000 images/s over sockets, 4,800 with the libfabric
plugin). On one node sockets carry nothing (NVLink, PCIe and shared memory do), so the rule
needs to know the job spans nodes."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...findings import Evidence, Finding, ev
from ...findings.rules import Rule, register_rules


def _na(v: Any) -> bool:
    return v is None or (not isinstance(v, str) and bool(pd.isna(v)))


def _evidence(r: Any) -> Evidence:
    """The overview row of the run (one per run): ``nccl.overview run=R``."""
    return ev("nccl.overview", run=r["run"])


_SOCKET_HINT = ("Make NCCL use the fabric: check that the InfiniBand verbs library and HCA "
                "are visible in the job's container (libibverbs, /dev/infiniband), that "
                "NCCL_IB_DISABLE is not set, and on Slingshot or EFA systems that the "
                "libfabric plugin (aws-ofi-nccl) is on LD_LIBRARY_PATH; NCCL_SOCKET_IFNAME "
                "only picks which interface the sockets use.")


def nccl_socket_fallback(overview: pd.DataFrame) -> list[Finding]:
    """Processes whose NCCL network is TCP sockets: critical on a job of several nodes, a
    warning when the nodes are unknown (one node: sockets carry nothing, no finding)."""
    out = []
    for _, r in overview.iterrows():
        n = int(r["socket_processes"] or 0)
        if not n:
            continue
        nodes = None if _na(r["nodes"]) else int(r["nodes"])
        if nodes is not None and nodes <= 1:
            continue
        ranks = None if _na(r["socket_ranks"]) else str(r["socket_ranks"])
        who = (f"{n} process(es)" if ranks is None else
               f"ranks {ranks}" if "," in ranks else f"rank {ranks}")
        verb = "use" if ranks is None or "," in ranks else "uses"
        dev = "" if _na(r["socket_devices"]) else f" (NET/Socket on {r['socket_devices']})"
        why = "" if _na(r["first_warning"]) else f" NCCL warned: {r['first_warning']}"
        if nodes is not None:
            out.append(Finding(
                "critical", "nccl_socket_fallback", "job", f"run {r['run']}",
                f"NCCL fell back to TCP sockets between nodes: {who} of this {nodes}-node job "
                f"{verb} the Socket network{dev}, not InfiniBand or a fabric plugin, so every "
                f"gradient allreduce crosses nodes over TCP.{why}",
                _evidence(r), _SOCKET_HINT,
                value=float(n), threshold=0.0))
        else:
            out.append(Finding(
                "warning", "nccl_socket_fallback", "job", f"run {r['run']}",
                f"NCCL uses TCP sockets for traffic between nodes on {who}{dev}; the inputs "
                f"do not say whether the job spans nodes (on one node this is harmless).{why}",
                _evidence(r), _SOCKET_HINT,
                value=float(n), threshold=0.0))
    return out


def nccl_mixed_networks(overview: pd.DataFrame) -> list[Finding]:
    """Processes of one run on different networks (some on IB, some on sockets)."""
    out = []
    for _, r in overview.iterrows():
        nets = [] if _na(r["networks"]) else str(r["networks"]).split(", ")
        if len(nets) > 1:
            out.append(Finding(
                "warning", "nccl_mixed_networks", "job", f"run {r['run']}",
                f"NCCL chose different networks on different processes of one job: "
                f"{r['networks']} (network x processes); collectives run at the pace of the "
                "slowest.",
                _evidence(r), "Nodes differ in their fabric setup (drivers, plugin, "
                "environment): compare the NCCL lines of the processes named in the NCCL "
                "section.", value=float(len(nets)), threshold=1.0))
    return out


def nccl_no_gdrdma(overview: pd.DataFrame) -> list[Finding]:
    """A multi-node job whose channels through the network never use GPUDirect RDMA
    (no ``/GDRDMA`` on any ``via NET/...`` channel): data bounces through host memory."""
    out = []
    for _, r in overview.iterrows():
        net, gdr = int(r["net_processes"] or 0), int(r["gdrdma_processes"] or 0)
        nodes = None if _na(r["nodes"]) else int(r["nodes"])
        if not net or gdr or (nodes is not None and nodes <= 1):
            continue
        if int(r["socket_processes"] or 0) == int(r["processes"] or 0):
            continue           # sockets never do GPUDirect: the fallback finding says it
        out.append(Finding(
            "info", "nccl_no_gdrdma", "job", f"run {r['run']}",
            f"None of the {net} process(es) whose channels go through the network "
            f"({r['networks'] or '?'}) uses GPUDirect RDMA: data between nodes is staged "
            "through host memory.",
            _evidence(r),
            "Expected on some fabrics (Omni-Path, older drivers); elsewhere check the "
            "nvidia-peermem (nv_peer_mem) module and NCCL_NET_GDR_LEVEL.",
            value=0.0, threshold=0.0))
    return out


def nccl_errors(overview: pd.DataFrame) -> list[Finding]:
    """Collectives the watchdog timed out, and NCCL error codes: the job hung or died in
    communication."""
    out = []
    for _, r in overview.iterrows():
        t, e = int(r["timeouts"] or 0), int(r["errors"] or 0)
        if t:
            ms = "" if _na(r["timeout_s"]) else f" after {float(r['timeout_s']):,.0f} s"
            op = "" if _na(r["timeout_ops"]) else f" {r['timeout_ops']}"
            out.append(Finding(
                "critical", "nccl_timeout", "job", f"run {r['run']}",
                f"NCCL collectives timed out on {t} rank(s) (ranks {r['timeout_ranks']}):"
                f"{op} did not complete{ms}, and PyTorch's watchdog took the processes down.",
                _evidence(r),
                "A rank never joined the collective (it crashed or hung earlier, see its "
                "log), or the network between nodes is broken: check the NCCL network "
                "chosen (NCCL section) and NCCL's warnings before the timeout.",
                value=float(t), threshold=0.0))
        if e:
            out.append(Finding(
                "critical", "nccl_error", "job", f"run {r['run']}",
                f"NCCL reported {e} error(s); the first: {r['first_error']}",
                _evidence(r),
                "An NCCL error ends the collective and usually the job: read the NCCL WARN "
                "lines before it (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET).",
                value=float(e), threshold=0.0))
    return out


register_rules(
    Rule(("nccl_socket_fallback",), ("nccl.overview",), nccl_socket_fallback, 270),
    Rule(("nccl_mixed_networks",), ("nccl.overview",), nccl_mixed_networks, 280),
    Rule(("nccl_no_gdrdma",), ("nccl.overview",), nccl_no_gdrdma, 290),
    Rule(("nccl_timeout", "nccl_error"), ("nccl.overview",), nccl_errors, 300),
)
