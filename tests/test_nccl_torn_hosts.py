"""A torn line adds nothing (issue 29, 2.4): in the real 2-node, 8-rank Polaris DDP log
(NCCL over sockets), line 57 reads 'x3006c0sn0:849780:849942 [2] NCCL INFO Channel 03/0 ...':
process 849780 of host x3006c0s25b0n0 whose prefix lost '25b0' to another writer. It is
that process, not a ninth one on a third host."""

from __future__ import annotations

from pathlib import Path

import dptrace

LOG = (Path(__file__).parent / "fixtures" / "compare_setup"
       / "polaris_resnet50_ddp_2n8gpu_socket_2025-06-26.log")


def _check(ds: dptrace.Dataset) -> None:
    setup = ds["nccl_setup"]
    assert len(setup) == 8                     # 'comm ... nRanks 8': ranks 0-7
    assert sorted(setup["rank"].tolist()) == list(range(8))
    assert sorted(set(setup["host"])) == ["x3006c0s1b1n0", "x3006c0s25b0n0"]
    run = ds.runs.iloc[0]
    assert (run["world_size"], run["nodes"]) == (8, 2)
    # NCCL 2.20 states the nodes in a second comm line: 'comm 0x... rank 6 nRanks 8 nNodes 2'
    assert set(setup["nodes"]) == {2}
    # the torn line's channel counts to its process (rank 6: '6[2] -> 4[0]')
    six = setup[setup["rank"] == 6].iloc[0]
    assert six["host"] == "x3006c0s25b0n0" and six["pid"] == 849780


def test_a_torn_prefix_is_its_process_not_a_new_host():
    _check(dptrace.load(LOG))


def test_a_torn_prefix_seen_before_its_process_is_folded_into_it(tmp_path):
    lines = LOG.read_text().split("\n")
    torn = lines.pop(56)
    assert torn.startswith("x3006c0sn0:849780:")
    moved = tmp_path / "torn_first.log"
    moved.write_text("\n".join([torn, *lines]))
    _check(dptrace.load(moved))


def test_two_hosts_with_one_pid_stay_two_processes(tmp_path):
    """pids are per node: the same pid on another host whose name is not the first's with
    characters lost is another process."""
    text = ("nodeA:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - "
            "Init COMPLETE\n"
            "nodeB:100:100 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 - "
            "Init COMPLETE\n")
    f = tmp_path / "two.log"
    f.write_text(text)
    assert len(dptrace.load(f)["nccl_setup"]) == 2
