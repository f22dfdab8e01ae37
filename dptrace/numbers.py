"""Numbers read from text: one parser per kind of field, used by every line reader.

A field of an input is only a number of its column when it is one:

* an integer (:func:`parse_int`, :func:`parse_count`) is an optional sign and ASCII digits
  ``0-9`` only (``str.isdigit()`` is True for ``'²'``, ``'٣'`` and other Unicode digits, and
  ``int()`` reads some of them: ``int('٣')`` is 3), at most :data:`MAX_INT_DIGITS`
  significant digits (checked *before* ``int()``, which refuses more than 4,300 digits with
  a ``ValueError`` and spends quadratic time below that), within the column's range: int64
  unless the field says less (a count is never negative);
* a float (:func:`parse_float`) is a decimal number in ASCII, at most :data:`MAX_FLOAT_CHARS`
  characters, and finite (``1e999``, ``inf`` and ``nan`` are not a value of any column).

A field that is not raises :class:`NumberError`, whose ``reason`` says what is wrong with
it (``'²' is not a digit 0-9``, ``has 5,000 digits: does not fit a 64-bit number``, ``is not
finite``); a reader turns it into a :class:`~dptrace.errors.Problem` naming the file and line
(:func:`fit`), and the value, or the record it identifies, is what is lost, never the file.
The pyparsing grammars use :data:`INT_PATTERN` / :data:`FLOAT_PATTERN` with
:func:`int_or_error` / :func:`float_or_error` as parse actions: a field shaped like a number
matches whatever its value, so a row keeps its shape, and its bad value comes back as the
:class:`NumberError` (not raised) for the reader to name.

This module is core: it imports nothing of dptrace but :mod:`dptrace.errors`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .errors import Problem

INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1
#: significant digits an int64 can have (9,223,372,036,854,775,807 has 19)
MAX_INT_DIGITS = 19
#: characters of a float field read at most (a double has 17 significant digits; a longer
#: field is damage, and ``float()`` of a megabyte of digits costs time for nothing)
MAX_FLOAT_CHARS = 400
#: characters of a bad field quoted in a message
SHOW_CHARS = 24

#: a character that is a digit to a reader that does not know better: ASCII and other
#: decimal digits (``\d``), superscripts and subscripts (``'²'``: ``str.isdigit()`` is True)
_DIGITISH = "\\d\u00b2\u00b3\u00b9\u2070-\u2079\u2080-\u2089"
#: a character class of :data:`_DIGITISH`: what a reader's "does this look like a row"
#: test should take for a digit, so a row with '¹' is named, not passed over
DIGIT = f"[{_DIGITISH}]"
#: a field shaped like an integer, valid or not: a sign, a digit of any script, then letters
#: and digits, and not followed by a letter, digit or '.' (so not the start of ``0.25`` or
#: ``1e+04``): '12', '-1', '1²', '٣', '12abc' and a 5,000-digit run all match
INT_PATTERN = rf"[-+]?[{_DIGITISH}][^\W_]*(?![\w.+-])"
#: a field shaped like a float, valid or not: decimal digits of any script, with a point and
#: an exponent, or nan/inf/infinity in any case
FLOAT_PATTERN = (rf"[-+]?(?:(?:[{_DIGITISH}]+\.?[{_DIGITISH}]*|\.[{_DIGITISH}]+)"
                 rf"(?:[eE][-+]?[{_DIGITISH}]+)?|(?i:nan|inf(?:inity)?))(?![\w.])")

_ASCII_INT = re.compile(r"[-+]?[0-9]+\Z")
_ASCII_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
_NOT_FINITE = re.compile(r"[-+]?(?:nan|inf(?:inity)?)\Z", re.IGNORECASE)


def show(text: str) -> str:
    """A field as a message quotes it: whole up to :data:`SHOW_CHARS` characters, else its
    start and its length (``'99999999999999999999…' (5,000 characters)``); quoted only when
    it holds blanks or characters that do not print."""
    if text.startswith("<an integer of about "):
        return text
    if len(text) <= SHOW_CHARS:
        plain = text.isprintable() and not any(c.isspace() for c in text) and text
        return text if plain else repr(text)
    return f"{text[:SHOW_CHARS]!r}… ({len(text):,} characters)"


class NumberError(ValueError):
    """A field that is not a number of its column; ``reason`` says why (a phrase that follows
    the field: ``'1²' is not a number ('²' is not a digit 0-9)``)."""

    def __init__(self, text: str, reason: str) -> None:
        self.text, self.reason = text, reason
        super().__init__(f"{show(text)} {reason}")

    def __reduce__(self) -> tuple[Any, ...]:   # results cross process boundaries
        return (NumberError, (self.text, self.reason))


def _not_digit(digits: str) -> str:
    bad = next((c for c in digits if not "0" <= c <= "9"), "")
    return f"is not a number ({bad!r} is not a digit 0-9)" if bad else "is not a number"


def _range_reason(value: int, lo: int, hi: int) -> str:
    if not INT64_MIN <= value <= INT64_MAX:
        return "does not fit a 64-bit number"
    if value < lo and lo == 0:
        return "is negative"
    return f"is out of range ({lo:,}..{hi:,})"


def parse_int(text: str, *, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """The integer ``text`` states (ASCII digits, an optional sign, surrounding blanks
    ignored), within ``lo..hi`` (int64 by default); else :class:`NumberError`."""
    s = text.strip()
    if not _ASCII_INT.match(s):
        digits = s[1:] if s[:1] in "+-" else s
        raise NumberError(text, _not_digit(digits))
    digits = s.lstrip("+-").lstrip("0")
    if len(digits) > MAX_INT_DIGITS:   # before int(): no 4,300-digit ValueError, no cost
        raise NumberError(text, f"has {len(digits):,} digits: does not fit a 64-bit number")
    value = int(s)
    if not lo <= value <= hi:
        raise NumberError(text, _range_reason(value, lo, hi))
    return value


def parse_count(text: str, *, hi: int = INT64_MAX) -> int:
    """A count, size, rank, pid or other integer that is never negative (``0..hi``)."""
    return parse_int(text, lo=0, hi=hi)


def parse_float(text: str) -> float:
    """The finite float ``text`` states in ASCII decimal notation; else :class:`NumberError`
    (``1e999``, ``inf``, ``nan``: not finite)."""
    s = text.strip()
    if len(s) > MAX_FLOAT_CHARS:
        raise NumberError(text, f"is {len(s):,} characters long: not a number")
    if _NOT_FINITE.match(s):
        raise NumberError(text, "is not finite")
    if not _ASCII_FLOAT.match(s):
        raise NumberError(text, _not_digit(s.lstrip("+-").replace(".", "").replace("e", "")
                                           .replace("E", "").replace("-", "")
                                           .replace("+", "")))
    value = float(s)
    if not math.isfinite(value):
        raise NumberError(text, "is not finite")
    return value


def check_int(value: Any, *, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """An integer already decoded (a JSON number) checked like :func:`parse_int`: within
    ``lo..hi``; an integral float is taken as its integer. Else :class:`NumberError`."""
    if isinstance(value, NumberError):
        raise value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NumberError(str(value)[:SHOW_CHARS * 2], "is not a number")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NumberError(repr(value), "is not finite")
        if not value.is_integer():
            raise NumberError(repr(value), "is not a whole number")
        if not INT64_MIN <= value < 2.0 ** 63:
            raise NumberError(repr(value), "does not fit a 64-bit number")
        value = int(value)
    if not lo <= value <= hi:
        raise NumberError(_int_text(value), _range_reason(value, lo, hi))
    return value


def _int_text(value: int) -> str:
    """``str(value)``, or its length for an integer too long to print (a 5,000-digit int
    cannot be turned into text: ``str()`` has the same limit as ``int()``)."""
    try:
        return str(value)
    except ValueError:
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"


def check_float(value: Any) -> float:
    """A number already decoded, as a finite float; else :class:`NumberError`."""
    if isinstance(value, NumberError):
        raise value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NumberError(str(value)[:SHOW_CHARS * 2], "is not a number")
    try:
        f = float(value)
    except OverflowError:
        raise NumberError(_int_text(int(value)), "does not fit a 64-bit float") from None
    if not math.isfinite(f):
        raise NumberError(repr(value), "is not finite")
    return f


def int_or_error(text: str) -> int | NumberError:
    """:func:`parse_int` that returns the error instead of raising it (a parse action:
    the row keeps its shape, the reader names the bad field)."""
    try:
        return parse_int(text)
    except NumberError as exc:
        return exc


def float_or_error(text: str) -> float | NumberError:
    """:func:`parse_float` that returns the error instead of raising it."""
    try:
        return parse_float(text)
    except NumberError as exc:
        return exc


def errors_in(values: dict[str, Any]) -> list[tuple[str, NumberError]]:
    """The fields of ``values`` (a parsed record) that hold a :class:`NumberError`."""
    return [(k, v) for k, v in values.items() if isinstance(v, NumberError)]


KEPT = "the row is kept, its value is missing"
SKIPPED = "the row is skipped"


def fit(value: Any, column: str, lineno: int | None, name: str, problems: list[Problem],
        *, lo: int = INT64_MIN, hi: int = INT64_MAX, outcome: str = KEPT) -> Any:
    """``value`` as its column holds it, or None with an error naming the column, what is
    wrong and the line (``count '1²' is not a number ('²' is not a digit 0-9): the row is
    kept, its value is missing``): a :class:`NumberError` from a parse action, an integer
    outside ``lo..hi`` (int64 by default), a float that is not finite. Other values (None,
    text) pass unchanged."""
    try:
        if isinstance(value, NumberError):
            raise value
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            return check_int(value, lo=lo, hi=hi)
        if isinstance(value, float):
            return check_float(value)
    except NumberError as exc:
        problems.append(Problem(name, f"{column} {exc}: {outcome}", lineno, "error"))
        return None
    return value


#: number problems named one by one in a file; the rest are counted in one more
MAX_NOTED = 10


def note(found: list[Problem], name: str, problems: list[Problem]) -> None:
    """The number problems ``found`` in one file (by :func:`fit`) added to ``problems``: the
    first :data:`MAX_NOTED` one by one, the rest counted in one more (a file with a bad
    field on every line costs one message per kind, not a million)."""
    problems.extend(found[:MAX_NOTED])
    rest = found[MAX_NOTED:]
    if rest:
        lines = [p.line for p in rest if p.line is not None]
        where = f" (lines {min(lines)}-{max(lines)})" if lines else ""
        problems.append(Problem(name, f"{len(rest)} more numbers that are not values of "
                                f"their column{where}: each made missing or its record "
                                "skipped", min(lines) if lines else None, "error"))
