"""The SambaNova sntilestat format's spec: name, tables and sniffing rule, without the
reader (see :mod:`dptrace.formats.trainlog` for why)."""

from __future__ import annotations

from ...registry import Spec, lazy_pattern, looks_binary
from ...sources import Source

HEADER = lazy_pattern(rb"TILE[ \t]+%idle[ \t]+[^\r\n]*")
#: a tile row at a line start; a lone CR starts a line too (CR-only listings, old Mac)
_ROW_AT_LINE_START = lazy_pattern(rb"(?m)(?:^|\r)\s*/XRDU_\d+/RDU_\d+/TILE_\d+\s+\d")


def sniff(source: Source, head: bytes) -> float:
    """Sure when the head holds an sntilestat header or tile rows."""
    if b"%idle" not in head and b"/XRDU_" not in head:  # cheap: most inputs stop here
        return 0.0
    if looks_binary(head):
        return 0.0
    if HEADER.search(head) or _ROW_AT_LINE_START.search(head):
        return 0.95
    return 0.0


SPEC = Spec(
    name="sntilestat",
    description="SambaNova sntilestat tile utilisation: one listing, several, or a `watch` "
                "capture with terminal escapes",
    tables=("tiles",),
    sniff=sniff,
    embeddable=True,
    markers=(rb"%idle", rb"/XRDU_"),
    engines=("fast", "general"),
    reads="SambaNova sntilestat output (one listing, several, or a ``watch`` capture) into "
          "``tiles``",
)
