"""Exceptions and the problem record every parser reports into."""

from __future__ import annotations

from dataclasses import dataclass


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
    """Something skipped or suspicious in one input; becomes a row of ``Dataset.problems``."""

    source: str
    message: str
    line: int | None = None
    #: "error" (something skipped), "warning" (suspicious, kept) or "info" (a file of a
    #: directory or glob that no format recognises: skipped on purpose, not a failure)
    severity: str = "warning"
