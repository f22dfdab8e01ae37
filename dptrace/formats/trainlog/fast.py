"""The trainlog format's fast engine: lines of tqdm updates read in C.

A physical line made only of ``\\r``-separated tqdm updates, which dominate large logs, is
read by a small C extension (``_tqdm_fast.c``, built by ``pip install`` when a compiler is
there): it adds exactly the rows of the general engine's :func:`.general._tqdm_updates`, or
adds nothing and declines the line, which the general engine then reads. :data:`_FAST` is
its entry point (None: not built, or ``DPTRACE_PURE_PYTHON`` set); ``engine="fast"`` and
``"auto"`` hand it to the scanner, ``"general"`` does not.
"""

from __future__ import annotations

import os
from typing import Any

from . import general, rules
from .general import CrLine


def _load_fast() -> CrLine | None:
    """The fast path of :meth:`.general._Scanner._cr_line` in C (``_tqdm_fast.c``), or None.

    ``cr_line(raw, whole_start, line, start, rows)`` decodes the line, finds its launcher
    prefix and adds the very rows :func:`.general._tqdm_updates` adds, or adds nothing and returns
    False when unsure (or for bytes that are not UTF-8, ANSI escapes, ``<std`` tags); the
    Python code then reads the line. None when the extension was not built (no compiler at
    install) or when the environment sets ``DPTRACE_PURE_PYTHON`` (to anything but ``0`` or
    nothing), read at import.
    """
    if os.environ.get("DPTRACE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _tqdm_fast  # type: ignore[attr-defined]
    except ImportError:
        return None
    configure_fast(_tqdm_fast)
    fast: CrLine = _tqdm_fast.cr_line
    return fast


def configure_fast(module: Any) -> None:
    """Hand the C module the caches and the Python helpers it calls on cache misses, for
    ``1.5k`` counts, postfixes and an unmatched first segment."""
    module.configure(general._PRE, general._pre_info, general._UNIT, rules.rate_unit,
                     rules._tqdm_count, rules.postfix_pairs, general._SCAN_TEXT.search)


_FAST = _load_fast()
