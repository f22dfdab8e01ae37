"""Problems the line readers of several formats name the same way (nccl-tests, mpiP,
DeepSpeed comms, MLPerf logs): a number that does not fit its 64-bit column, and records
skipped as torn or cut, named one by one up to :data:`MAX_NOTED` and the rest counted."""

from __future__ import annotations

import math
from typing import Any

from ..errors import Problem

#: a value at or beyond this does not fit an Int64 column
INT64 = 2 ** 63
#: skipped records named one by one in a file; the rest are counted in one more problem
MAX_NOTED = 10


def fits(value: Any, column: str, lineno: int, name: str, problems: list[Problem]) -> Any:
    """``value``, or None (with an error naming the line) when it does not fit its column:
    an integer outside int64, a float that is not finite."""
    if isinstance(value, int) and not -INT64 <= value < INT64 or \
            isinstance(value, float) and not math.isfinite(value):
        problems.append(Problem(name, f"{column} {str(value)[:24]} does not fit a 64-bit "
                                "number: the row is kept, its value is missing", lineno,
                                "error"))
        return None
    return value


def note_skipped(bad: list[tuple[int, str]], name: str, problems: list[Problem],
                 what: str) -> None:
    """One error per skipped record of ``bad`` ((line, message) pairs), up to
    :data:`MAX_NOTED`; the rest in one more ('12 more <what> torn or cut (lines a-b)')."""
    for lineno, msg in bad[:MAX_NOTED]:
        problems.append(Problem(name, msg, lineno, "error"))
    if len(bad) > MAX_NOTED:
        rest = [ln for ln, _ in bad[MAX_NOTED:]]
        problems.append(Problem(name, f"{len(rest)} more {what} torn or cut (lines "
                                f"{rest[0]}-{rest[-1]}): skipped", rest[0], "error"))
