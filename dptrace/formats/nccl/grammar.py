"""The grammar of ``NCCL_DEBUG=INFO`` lines, one pyparsing element per kind of message (each
tested on its own in ``tests/test_nccl_grammar.py``). Lines come here without launcher
prefixes (:mod:`.read` strips ``[1,0]<stderr>:``, ``0: ``, ``[default0]:``, ``[rank0]:``).
Real lines::

    r7i4n1:77231:77231 [0] NCCL INFO NET/IB : Using [0]hfi1_2:1/IB ; OOB ib0:10.148.0.76<0>
    8603225c1c76:3111:3237 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.1.6<0>
    8603225c1c76:3111:3237 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
    x3006c0s1b1n0:1436705:1436705 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v6)
    r7i4n1:77231:77231 [0] NCCL INFO Using network IB
    r7i4n1:77231:77389 [0] NCCL INFO Channel 00 : 3[1c000] -> 4[1a000] [send] via NET/IB/1
    ip-0A23040F:72415:72530 [0] NCCL INFO Channel 00/0 : 15[e000] -> 0[b000] [receive] via
      NET/IBext/0/GDRDMA                                                (one line)
    r7i4n1:77231:77389 [0] NCCL INFO comm 0x7f1c4c002e10 rank 0 nranks 16 cudaDev 0 busId
      1a000 - Init COMPLETE                                             (one line)
    node:123:456 [0] NCCL INFO comm 0x55d rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
    node:123:456 [0] 2345.678901 nccl_net_ofi_init:1444 NCCL TRACE NET/OFI Provider ...

:data:`LINE` splits a line into the process (host, pid, thread, device), the source place
and the level; the message is then matched by the element its first word picks
(:func:`message`). Messages of other shapes are passed over: NCCL prints hundreds of kinds,
and only these say what the report needs (the network, the ranks, the transports, GPUDirect
RDMA). A message that starts like one of these but does not match whole (torn by another
writer, cut) is not read into numbers.
"""

from __future__ import annotations

from typing import Any

import pyparsing as pp

from ...numbers import INT_PATTERN, int_or_error
from . import LINE_PATTERN

#: an integer field, read by :func:`dptrace.numbers.int_or_error`: a field shaped like one
#: matches whatever its value, and a value that is not an int64 (5,000 digits, '2²') comes
#: back as a NumberError for the reader to name (the line keeps its shape)
INT = pp.Regex(INT_PATTERN).set_name("integer").set_parse_action(lambda t: int_or_error(t[0]))
KW = pp.Keyword
REST = pp.Regex(r".*").set_name("rest of line")

#: a whole NCCL line, one regular expression (:data:`dptrace.formats.nccl.LINE_PATTERN`)
LINE = pp.Regex(LINE_PATTERN)
LINE.set_name("NCCL line")

#: ``NCCL version 2.7.8+cuda10.2`` (also printed alone on a line by old versions)
VERSION = KW("NCCL") + KW("version") + pp.Regex(r"\d+\.\d+\.\d+(?:[-.]\d+)?")("version") \
    + pp.Optional(pp.Regex(r"\+\S+"))("build") + pp.StringEnd()
#: ``[0]mlx5_0:1/IB``, ``[0]eth0:10.0.1.6<0>``: one device NCCL's network uses
NET_DEVICE = pp.Regex(r"\[\d+\]\S+")
#: ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>``,
#: ``NET/Socket : Using [0]eth0:10.0.1.6<0>``
NET_USING = (pp.Literal("NET/") + pp.one_of("IB Socket")("net") + pp.Suppress(":")
             + KW("Using") + pp.Group(pp.OneOrMore(NET_DEVICE))("devices")
             + pp.Optional(pp.Suppress(";") + KW("OOB") + pp.Regex(r"\S+")("oob"))
             + pp.StringEnd())
#: ``NET/IB : No device found.``
NET_NONE = pp.Literal("NET/") + pp.one_of("IB Socket")("net") + pp.Suppress(":") \
    + pp.Regex(r"No device found\.?")("none") + pp.StringEnd()
#: ``NET/Plugin: Loaded net plugin AWS Libfabric (v6)``, ``NET/Plugin : Loaded net plugin
#: NCCL RDMA Plugin v8 (v8)``, ``NET/Plugin : Plugin load returned 0 : libnccl-net.so``
PLUGIN_LOADED = pp.Literal("NET/Plugin") + pp.Optional(":") + KW("Loaded") + KW("net") \
    + KW("plugin") + pp.Regex(r".+?(?=\s*\(v\d+\)\s*$|\s*$)")("plugin") + REST
#: ``NET/Plugin : No plugin found (libnccl-net.so), using internal implementation``
PLUGIN_NONE = pp.Literal("NET/Plugin") + pp.Optional(":") + KW("No") + KW("plugin") \
    + KW("found") + REST
#: ``Using network IB``, ``Using network AWS Libfabric``, ``Using network Socket``: the
#: network NCCL chose (NCCL 2.7+)
USING_NETWORK = KW("Using") + KW("network") + pp.Regex(r"\S.*?(?=\s*$)")("network") \
    + pp.StringEnd()
#: ``NET/OFI Selected Provider is cxi (found 4 nics)``: the libfabric provider of the OFI
#: plugin (efa, cxi, verbs, tcp ...)
OFI_PROVIDER = pp.Literal("NET/OFI") + KW("Selected") + KW("Provider") + KW("is") \
    + pp.Regex(r"[\w;+\-]+")("provider") + REST
#: ``comm 0x7f1c4c002e10 rank 0 nranks 16 cudaDev 0 busId 1a000 - Init COMPLETE`` and NCCL
#: 2.18+ ``comm 0x55d rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0``
COMM = (KW("comm") + pp.Regex(r"0x[0-9a-fA-F]+|\(nil\)")("comm") + KW("rank") + INT("rank")
        + pp.CaselessKeyword("nranks") + INT("nranks")
        + pp.Optional(KW("nNodes") + INT("nodes"))
        + pp.Optional(KW("localRanks") + INT("local_ranks")) + REST("rest"))
#: ``Channel 00/0 : 0[1a000] -> 8[1a000] [send] via NET/IB/0/GDRDMA``,
#: ``Channel 01 : 3[1c000] -> 0[1a000] via P2P/IPC``, ``... via SHM/direct/direct``,
#: ``... [receive] via NET/AWS Libfabric/0/GDRDMA``: the channel, the two ranks (each with
#: its bus id in brackets), the direction and the transport. One regular expression: a job
#: prints hundreds of these per process, all different (the reader runs :attr:`CHANNEL.re`)
CHANNEL = pp.Regex(
    r"Channel (?P<channel>\d+(?:/\d+)?) : (?P<src>\d+)\[[^\]]*\] -> (?P<dst>\d+)\[[^\]]*\]"
    r"(?: (?P<direction>\[(?:send|receive)\]))? via (?P<via>\S+(?: \S+)*)\s*$")
CHANNEL.set_name("channel line")
#: ``2 coll channels, 2 nvls channels, 2 p2p channels, 2 p2p channels per peer``
CHANNELS = INT("coll") + KW("coll") + KW("channels") + REST
#: ``NCCL_SOCKET_IFNAME set by environment to hsn``
SET_BY_ENV = pp.Regex(r"NCCL_[A-Z0-9_]+")("name") + KW("set") + KW("by") \
    + KW("environment") + KW("to") + pp.Regex(r".*?(?=\s*$)")("value") + pp.StringEnd()

#: the element a message's first word picks
BY_FIRST_WORD: dict[str, tuple[tuple[str, pp.ParserElement], ...]] = {
    "NCCL": (("version", VERSION),),
    "NET/IB": (("net_using", NET_USING), ("net_none", NET_NONE)),
    "NET/Socket": (("net_using", NET_USING), ("net_none", NET_NONE)),
    "NET/Plugin": (("plugin_loaded", PLUGIN_LOADED), ("plugin_none", PLUGIN_NONE)),
    "NET/Plugin:": (("plugin_loaded", PLUGIN_LOADED), ("plugin_none", PLUGIN_NONE)),
    "Using": (("using_network", USING_NETWORK),),
    "NET/OFI": (("ofi_provider", OFI_PROVIDER),),
    "comm": (("comm", COMM),),
}


def parse_line(element: pp.ParserElement, line: str) -> pp.ParseResults | None:
    """``element`` matched against the whole of ``line``; None when it does not match."""
    try:
        return element.parse_string(line, parse_all=True)
    except pp.ParseException:
        return None


def message(text: str) -> tuple[str, dict[str, Any]] | None:
    """The kind and fields of an INFO message this grammar reads, else None. Answers are
    kept (:data:`_SEEN`): a log repeats the same messages for every process and step."""
    if text.startswith("Channel "):   # all different: not kept
        return _message(text)
    got = _SEEN.get(text, _NOT_SEEN)
    if got is _NOT_SEEN:
        if len(_SEEN) >= MAX_SEEN:
            _SEEN.clear()
        got = _SEEN[text] = _message(text)
    return got  # type: ignore[return-value]


#: messages read so far and their answers (at most MAX_SEEN, then forgotten)
_SEEN: dict[str, tuple[str, dict[str, Any]] | None] = {}
_NOT_SEEN = object()
MAX_SEEN = 50_000


def _message(text: str) -> tuple[str, dict[str, Any]] | None:
    if text.startswith("Channel "):
        m = CHANNEL.re.match(text)
        return None if m is None else ("channel", m.groupdict())
    words = text.split(None, 1)
    if not words:
        return None
    first = words[0]
    candidates = BY_FIRST_WORD.get(first)
    if candidates is None:
        if first[:1].isdigit():
            candidates = (("channels", CHANNELS),)
        elif first.startswith("NCCL_"):
            candidates = (("set_by_env", SET_BY_ENV),)
        else:
            return None
    for kind, element in candidates:
        parsed = parse_line(element, text)
        if parsed is not None:
            return kind, parsed.as_dict()
    return None
