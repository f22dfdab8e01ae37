"""The tests' own reading of a Horovod timeline's negotiations, with json (independent of
dptrace's reader): each NEGOTIATE_* interval of a tensor (pid), in file order, with the
rank-ready ticks (the X events named by a rank) inside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def negotiations(timeline: Path) -> Iterator[tuple[int, int, list[tuple[float, int]]]]:
    """(pid, how many negotiations of that pid came before, the (ts, rank) ticks) of each
    negotiation of ``timeline`` (a file Horovod never closed with ']' reads too)."""
    text = timeline.read_text().rstrip().rstrip(",")
    events = json.loads(text if text.endswith("]") else text + "]")
    open_: dict[int, list[tuple[float, int]]] = {}
    seen: dict[int, int] = {}
    for e in events:
        pid = e.get("pid")
        if e.get("ph") == "B" and str(e.get("name", "")).startswith("NEGOTIATE_"):
            open_[pid] = []
        elif e.get("ph") == "X" and pid in open_ and str(e.get("name", "")).isdigit():
            open_[pid].append((e["ts"], int(e["name"])))
        elif e.get("ph") == "E" and pid in open_:
            seen[pid] = seen.get(pid, -1) + 1
            yield pid, seen[pid], open_.pop(pid)
