"""The NCCL debug-line grammar (dptrace.formats.nccl.grammar), one element at a time, on
real lines (from ../shared/realdata: bigscience, Polaris, Azure MLPerf, the TF per-rank
logs) and on damaged ones that must not match."""

from __future__ import annotations

import pytest

from dptrace.formats.nccl import grammar as g


def test_line_splits_process_device_place_level_and_message():
    r = g.parse_line(g.LINE, "8603225c1c76:3111:3237 [0] misc/ibvwrap.cc:63 NCCL WARN Failed "
                             "to open libibverbs.so[.1]")
    assert r is not None
    assert (r["host"], r["pid"], r["tid"], r["device"]) == ("8603225c1c76", "3111", "3237", "0")
    assert (r["place"], r["level"]) == ("misc/ibvwrap.cc:63", "WARN")
    assert r["message"] == "Failed to open libibverbs.so[.1]"


def test_line_with_a_timestamp_and_a_function_place():
    r = g.parse_line(g.LINE, "x3006c0s1b1n0:1436705:1436705 [0] 2345.678901 "
                             "nccl_net_ofi_init:1444 NCCL TRACE NET/OFI Provider cxi")
    assert r is not None and r["stamp"] == "2345.678901" and r["level"] == "TRACE"
    assert r["place"] == "nccl_net_ofi_init:1444"


@pytest.mark.parametrize("line", [
    "NCCL INFO Using network IB",                                  # no process
    "r7i4n1:77231 [0] NCCL INFO Using network IB",                 # no thread
    "r7i4n1:77231:77231 NCCL INFO Using network IB",               # no device
    "r7i4n1:77231:77231 [0] NCCL DEBUG Using network IB",          # not a level
])
def test_line_rejects_lines_without_the_whole_prefix(line):
    assert g.parse_line(g.LINE, line) is None


def _msg(text):
    got = g.message(text)
    assert got is not None, text
    return got


def test_net_ib_using_lists_the_devices_and_the_oob_interface():
    kind, r = _msg("NET/IB : Using [0]hfi1_2:1/IB [1]hfi1_0:1/IB [2]hfi1_3:1/IB [3]hfi1_1:1/IB "
                   "; OOB ib0:10.148.0.76<0>")
    assert kind == "net_using" and r["net"] == "IB"
    assert r["devices"] == ["[0]hfi1_2:1/IB", "[1]hfi1_0:1/IB", "[2]hfi1_3:1/IB",
                            "[3]hfi1_1:1/IB"]
    assert r["oob"] == "ib0:10.148.0.76<0>"


def test_net_socket_using():
    kind, r = _msg("NET/Socket : Using [0]eth0:10.0.1.6<0>")
    assert (kind, r["net"], r["devices"]) == ("net_using", "Socket", ["[0]eth0:10.0.1.6<0>"])


def test_net_ib_without_devices():
    assert _msg("NET/IB : No device found.")[0] == "net_none"


def test_plugins_loaded_and_missing():
    kind, r = _msg("NET/Plugin: Loaded net plugin AWS Libfabric (v6)")
    assert (kind, r["plugin"]) == ("plugin_loaded", "AWS Libfabric")
    kind, r = _msg("NET/Plugin : Loaded net plugin NCCL RDMA Plugin v8 (v8)")
    assert (kind, r["plugin"]) == ("plugin_loaded", "NCCL RDMA Plugin v8")
    assert _msg("NET/Plugin : No plugin found (libnccl-net.so), using internal "
                "implementation")[0] == "plugin_none"
    assert g.message("NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.") is None


@pytest.mark.parametrize(("text", "network"), [
    ("Using network IB", "IB"), ("Using network IBext", "IBext"),
    ("Using network Socket", "Socket"), ("Using network AWS Libfabric", "AWS Libfabric"),
])
def test_using_network(text, network):
    assert _msg(text) == ("using_network", {"network": network})


def test_ofi_provider():
    assert _msg("NET/OFI Selected Provider is cxi (found 4 nics)")[1]["provider"] == "cxi"


def test_comm_lines_old_and_new():
    kind, r = _msg("comm 0x7f1c4c002e10 rank 3 nranks 16 cudaDev 3 busId 1c000 - Init COMPLETE")
    assert (kind, r["rank"], r["nranks"]) == ("comm", 3, 16) and "nodes" not in r
    kind, r = _msg("comm 0x562079afbfb0 rank 1 nRanks 8 nNodes 2 localRanks 4 localRank 1 "
                   "MNNVL 0")
    assert (r["rank"], r["nranks"], r["nodes"], r["local_ranks"]) == (1, 8, 2, 4)
    assert g.message("comm 0x7f1c rank three nranks 16") is None


@pytest.mark.parametrize(("text", "src", "dst", "via"), [
    ("Channel 00 : 3[1c000] -> 4[1a000] [send] via NET/IB/1", 3, 4, "NET/IB/1"),
    ("Channel 00/0 : 15[e000] -> 0[b000] [receive] via NET/IBext/0/GDRDMA", 15, 0,
     "NET/IBext/0/GDRDMA"),
    ("Channel 01/0 : 1[1] -> 5[1] [send] via NET/AWS Libfabric/1/GDRDMA", 1, 5,
     "NET/AWS Libfabric/1/GDRDMA"),
    ("Channel 00/0 : 3[3] -> 0[0] via P2P/CUMEM/read", 3, 0, "P2P/CUMEM/read"),
])
def test_channel_lines(text, src, dst, via):
    kind, r = _msg(text)
    assert (kind, r["src"], r["dst"], r["via"]) == ("channel", str(src), str(dst), via)


def test_channel_line_without_its_transport_does_not_match():
    assert g.message("Channel 00 : 3[1c000] -> 4[1a000] [send] via") is None
    assert g.message("Channel 00 : 3[1c000] -> [send] via NET/IB/1") is None


def test_coll_channels_and_settings():
    assert _msg("2 coll channels, 2 p2p channels, 2 p2p channels per peer")[1]["coll"] == 2
    assert _msg("NCCL_SOCKET_IFNAME set by environment to hsn")[1] == {
        "name": "NCCL_SOCKET_IFNAME", "value": "hsn"}


def test_version():
    assert _msg("NCCL version 2.20.5+cuda12.4")[1] == {"version": "2.20.5",
                                                      "build": "+cuda12.4"}
    # a version line another writer ran into: not a version
    assert g.message("NCCL version 2.10.3+cuda11.3azwus2f200000DQ:22476:22476 [2] NCCL "
                     "INFO Bootstrap") is None


def test_other_messages_are_passed_over():
    for text in ("Bootstrap : Using ib0:10.148.0.76<0>", "Connected all rings",
                 "threadThresholds 8/8/64 | 32/8/64 | 8/8/512", ""):
        assert g.message(text) is None
