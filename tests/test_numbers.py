"""dptrace.numbers: one parser per kind of number field (issue 30): ASCII digits only, the
digit count bounded before int(), int64 (or the column's) range, floats finite."""

from __future__ import annotations

import pickle
import re

import pytest

from dptrace.errors import Problem
from dptrace.numbers import (
    FLOAT_PATTERN,
    INT_PATTERN,
    NumberError,
    check_float,
    check_int,
    fit,
    float_or_error,
    int_or_error,
    note,
    parse_count,
    parse_float,
    parse_int,
)


@pytest.mark.parametrize("text, value", [
    ("0", 0), ("12", 12), (" 12 ", 12), ("-1", -1), ("+7", 7),
    ("9223372036854775807", 2 ** 63 - 1), ("-9223372036854775808", -(2 ** 63)),
    ("0" * 30 + "1", 1),   # leading zeros are not digits of the value
])
def test_parse_int_reads_ascii_integers(text: str, value: int) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize("text, reason", [
    ("9" * 5000, "has 5,000 digits: does not fit a 64-bit number"),   # no 4300 ValueError
    ("99999999999999999999", "has 20 digits: does not fit a 64-bit number"),
    ("9223372036854775808", "does not fit a 64-bit number"),
    ("-9223372036854775809", "does not fit a 64-bit number"),
    ("1²", "is not a number ('²' is not a digit 0-9)"),   # '²'.isdigit() is True
    ("²", "is not a number ('²' is not a digit 0-9)"),
    ("٣", "is not a number ('٣' is not a digit 0-9)"),    # int('٣') would be 3
    ("0x7f", "is not a number ('x' is not a digit 0-9)"),
    ("", "is not a number"),
])
def test_parse_int_refuses_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(NumberError) as e:
        parse_int(text)
    assert e.value.reason == reason
    assert len(str(e.value)) < 120   # a 5,000-digit field is not quoted whole


def test_parse_count_and_ranges() -> None:
    assert parse_count("3") == 3
    with pytest.raises(NumberError, match="is negative"):
        parse_count("-5")
    with pytest.raises(NumberError, match=r"out of range \(0..10\)"):
        parse_int("11", lo=0, hi=10)


@pytest.mark.parametrize("text, value", [("1.5", 1.5), (".5", 0.5), ("1e-5", 1e-5),
                                         ("-3", -3.0), ("6.29e+08", 6.29e8)])
def test_parse_float_reads_finite_numbers(text: str, value: float) -> None:
    assert parse_float(text) == value


@pytest.mark.parametrize("text, reason", [
    ("1e999", "is not finite"), ("nan", "is not finite"), ("-inf", "is not finite"),
    ("Infinity", "is not finite"), ("1.5²", "is not a number ('²' is not a digit 0-9)"),
    ("9" * 5000, "is 5,000 characters long: not a number"),
])
def test_parse_float_refuses_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(NumberError) as e:
        parse_float(text)
    assert e.value.reason == reason


def test_check_int_and_float_of_decoded_json_numbers() -> None:
    assert check_int(5) == 5 and check_int(3.0) == 3
    for bad, reason in ((2 ** 63, "does not fit"), (-(2 ** 63) - 1, "does not fit"),
                        (10 ** 5000, "does not fit"), (1e300, "does not fit"),
                        (float("nan"), "not finite"), (1.5, "not a whole number"),
                        ("7", "not a number"), (True, "not a number")):
        with pytest.raises(NumberError, match=reason):
            check_int(bad)
    assert check_float(3) == 3.0
    with pytest.raises(NumberError, match="does not fit"):
        check_float(10 ** 400)
    with pytest.raises(NumberError, match="not finite"):
        check_float(float("inf"))


def test_patterns_match_every_number_shaped_field_whole() -> None:
    """A field shaped like a number matches whatever its value (so a row keeps its shape and
    its bad value is named), and never the start of a longer field."""
    rx = re.compile(INT_PATTERN)
    for text in ("12", "-1", "1²", "٣", "9" * 5000, "12abc"):
        assert rx.match(text).group() == text
    for text in ("0.25", "1e+04", "abc", "[0]"):
        assert rx.match(text) is None
    assert rx.match("2(factor)").group() == "2"
    fx = re.compile(FLOAT_PATTERN)
    for text in ("1.5", "1e999", "nan", "NaN", "-inf", "1.5²", ".5"):
        assert fx.match(text).group() == text
    assert fx.match("N/A") is None


def test_or_error_and_fit_name_the_column_and_line() -> None:
    assert int_or_error("3") == 3 and float_or_error("2.5") == 2.5
    err = int_or_error("9" * 5000)
    assert isinstance(err, NumberError)
    pickle.loads(pickle.dumps(err))   # results of a worker cross a process boundary
    found: list[Problem] = []
    assert fit(err, "count", 17, "f.log", found) is None
    assert fit(2 ** 63, "size", 18, "f.log", found) is None
    assert fit(float("inf"), "busbw", 19, "f.log", found) is None
    assert fit(-1, "rank", 20, "f.log", found, lo=0) is None
    assert fit(5, "count", 21, "f.log", found) == 5 and fit(None, "x", 1, "f", found) is None
    assert [(p.line, p.severity) for p in found] == [(17, "error"), (18, "error"),
                                                     (19, "error"), (20, "error")]
    assert found[0].message.startswith("count '99999") and "5,000 digits" in found[0].message
    assert found[1].message == ("size 9223372036854775808 does not fit a 64-bit number: the "
                                "row is kept, its value is missing")
    assert found[2].message.startswith("busbw inf is not finite")
    assert found[3].message.startswith("rank -1 is negative")


def test_note_caps_the_problems_of_a_file() -> None:
    found = [Problem("f", "count x is not a number: ...", k, "error") for k in range(1, 26)]
    out: list[Problem] = []
    note(found, "f", out)
    assert len(out) == 11 and out[-1].line == 11 and "15 more" in out[-1].message
    assert "lines 11-25" in out[-1].message
