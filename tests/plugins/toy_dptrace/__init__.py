"""A toy format shipped outside dptrace, found through the ``dptrace.formats`` entry point
(tests/test_plugin_format.py installs it into a scratch site directory): every part a format
can declare, in its own package, with no file under ``dptrace/`` naming it.

The input: a ``#toyprof`` header line, then one line per rank,
``rank <r> busy_s <seconds> wait_s <seconds>``.
"""

from __future__ import annotations

from dptrace.registry import Spec, looks_binary
from dptrace.sources import Source


def sniff(source: Source, head: bytes) -> float:
    """Sure of a file that starts with ``#toyprof``."""
    return 0.9 if head.startswith(b"#toyprof") and not looks_binary(head) else 0.0


SPEC = Spec(
    name="toy",
    description="toy per-rank profiles (#toyprof): busy and waiting seconds per rank",
    tables=("toy_ranks",),
    sniff=sniff,
    extensions=(".toy",),
    reads="``#toyprof`` profiles into ``toy_ranks``",
)
