"""Exceptions and the problem record every parser reports into."""

from __future__ import annotations

from dataclasses import dataclass

#: Longest problem message kept whole. A longer one (a parser quoting a 2 MB line) is cut to
#: this many characters plus a marker saying how many were left out: a message is read by a
#: person, and every face (terminal, JSON, HTML, CSV) shows it whole. Set
#: ``dptrace.errors.MAX_MESSAGE_CHARS`` to change it (read when each Problem is made).
MAX_MESSAGE_CHARS = 500
#: Characters of an input line that a parser quotes in a message (see :func:`quote`).
QUOTE_CHARS = 200


def shorten(text: str, limit: int | None = None) -> str:
    """``text`` cut to ``limit`` characters (default :data:`MAX_MESSAGE_CHARS`) with a
    visible marker: ``'abc… [1,998,000 more characters]'``; unchanged when it fits."""
    limit = MAX_MESSAGE_CHARS if limit is None else max(int(limit), 0)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def quote(line: str, limit: int | None = None) -> str:
    """``repr`` of an input line for a message, sliced *before* formatting (a huge line is
    never copied whole into a string): ``'MPI_Bogus xxxx'… [1,999,990 more characters]``."""
    limit = QUOTE_CHARS if limit is None else max(int(limit), 0)
    if len(line) <= limit:
        return repr(line)
    return f"{line[:limit]!r}… [{len(line) - limit:,} more characters]"


class DptraceError(Exception):
    """Base class of every error dptrace raises on purpose."""


class UnknownFormatError(DptraceError):
    """No parser recognised the input (or several did equally well)."""


class ParseError(DptraceError):
    """A region of an input could not be parsed.

    Carries the source and, where known, the 1-based line and column.
    """

    def __init__(self, message: str, source: str = "", line: int | None = None,
                 col: int | None = None) -> None:
        self.source, self.line, self.col, self.message = source, line, col, message
        super().__init__(self.location() + message)

    def location(self) -> str:
        """``path:line:col: `` prefix, as compilers print it (empty when unknown)."""
        parts = [p for p in (self.source, self.line, self.col) if p not in ("", None)]
        return ":".join(str(p) for p in parts) + (": " if parts else "")


@dataclass(frozen=True)
class Problem:
    """Something skipped or suspicious in one input; becomes a row of ``Dataset.problems``.

    A message longer than :data:`MAX_MESSAGE_CHARS` is cut, with a marker (:func:`shorten`).
    """

    source: str
    message: str
    line: int | None = None
    #: "error" (something skipped), "warning" (suspicious, kept) or "info" (a file of a
    #: directory or glob that no format recognises: skipped on purpose, not a failure)
    severity: str = "warning"

    def __post_init__(self) -> None:
        if isinstance(self.message, str) and len(self.message) > MAX_MESSAGE_CHARS:
            object.__setattr__(self, "message", shorten(self.message))
