"""Unit conversion of a number read from an input, exact to what the input printed.

The data model's time columns follow one rule (docs/data-model.md, "Units"): a total over
many events is in seconds (``_s``), one event's duration or a timestamp in microseconds
(``_us``). Inputs that print milliseconds are converted when read, by a power of ten applied
to the decimal the number was printed as, not to its binary float: mpiP's mean call of
``0.0138`` ms is ``13.8`` us (the float nearest 13.8), where ``0.0138 * 1000`` is
``13.799999999999999``. Converting back (:func:`scaled` with the opposite exponent, for a
display in the input's unit) gives the printed value again.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ..numbers import NumberError

#: exponents of ten between the units of time
MS_TO_US = 3
MS_TO_S = -3
US_TO_MS = -3
S_TO_MS = 3


def scaled(value: Any, exponent: int) -> Any:
    """``value`` x 10^``exponent``, rounded once from the shortest decimal that reads back as
    ``value`` (its ``repr``): an int is scaled exactly and then rounded once to a float. None,
    a NaN, an infinity and anything that is not a number pass unchanged (the reader's checks
    name them)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return value
        if exponent >= 0 and value.is_integer() and abs(value) * 10.0 ** exponent < 2.0 ** 53:
            return value * 10.0 ** exponent       # exact: a whole number times a power of 10
    return float(Decimal(repr(value) if isinstance(value, float) else value).scaleb(exponent))


def scaled_or_error(value: Any, exponent: int) -> Any:
    """:func:`scaled`, or a :class:`~dptrace.numbers.NumberError` naming the printed value
    when it is finite and the scaled one is not (1e306 ms is no float of microseconds): the
    reader's ``fit`` then names the field and its line."""
    out = scaled(value, exponent)
    if isinstance(out, float) and not math.isfinite(out) and isinstance(value, int | float) \
            and not isinstance(value, bool) and math.isfinite(value):
        return NumberError(repr(value), f"x 10^{exponent} does not fit a 64-bit float")
    return out
