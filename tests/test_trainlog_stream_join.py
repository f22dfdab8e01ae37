"""instances.StreamJoin: the parts of a table joined one after another (what join_streams
folds over a parallel read's ranges, and what ``dptrace watch`` can keep between passes). A
part looked at without ``commit`` (the line being written of a growing file) leaves the join
as it was: the parts after it get what they get without the look."""

from __future__ import annotations

import numpy as np
from test_watch_join import _log

from dptrace.formats.trainlog import instances, read


def _infos(data: bytes, cuts: list[int]) -> tuple[list[dict], list[int]]:
    """Each range's throughput info (its finishing in a worker) and the newlines before it."""
    bounds = [0, *cuts, len(data)]
    infos, lines, before = [], [], 0
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        part = read._finish_range(data, "log", read._scan_range(data, "log", a, b, b == len(data)))
        assert isinstance(part, read._Done)
        infos.append(part.info["throughput"])
        lines.append(before)
        before += part.newlines
    return infos, lines


def _cuts(data: bytes, k: int) -> list[int]:
    starts = [i + 1 for i in range(len(data)) if data[i] == 10][:-1]
    return [starts[len(starts) * j // k] for j in range(1, k)]


def test_looking_without_commit_changes_nothing() -> None:
    data = _log()
    for k in (2, 3, 5):
        infos, lines = _infos(data, _cuts(data, k))
        plain = instances.join_streams(infos, lines)
        join = instances.StreamJoin()
        for i, (info, before) in enumerate(zip(infos, lines, strict=True)):
            if i + 1 < len(infos):   # the next part peeked at first, then forgotten
                join.add(infos[i + 1], lines[i + 1], commit=False)
            off, rep = join.add(info, before)
            assert np.array_equal(off, plain[0][i]) and np.array_equal(rep, plain[1][i])


def test_repeats_across_cuts_found() -> None:
    """The log's end-of-run copies and redrawn series lines fall on both sides of some cut:
    the join flags rows of later parts (else the join would have nothing to do here)."""
    data = _log()
    found = 0
    for k in (2, 3, 5, 8):
        infos, lines = _infos(data, _cuts(data, k))
        found += sum(len(r) for r in instances.join_streams(infos, lines)[1][1:])
    assert found
