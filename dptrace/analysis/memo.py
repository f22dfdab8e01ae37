"""Analyses computed once per report.

A report asks the same questions of the same tables from several places: the throughput
section and the findings both want the job figures, the per-instance table is the base of
the job figures, the summary and the stragglers, and each of those finds the warm-up rows
again. On a dense log (millions of rows) each answer takes a second. Within
:func:`per_report` (the report builder enters it), a function decorated with
:func:`memoized` computes its answer once per distinct set of arguments; outside it (a
notebook calling the analysis API), it computes every time, as it always did.

Arguments are told apart by identity for tables and arrays (the report's tables are not
changed while it is built; the memo holds them, so an identity is never reused while it
lives), by value for everything else; a call whose arguments cannot be keyed is computed.
Each caller gets its own copy of a cached table, so one caller's changes never reach
another.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar, overload

import numpy as np
import pandas as pd

F = TypeVar("F", bound=Callable[..., Any])

_MEMO: ContextVar[dict[Any, tuple[Any, Any, Any]] | None] = ContextVar("dptrace_memo",
                                                                         default=None)
#: arguments keyed by identity
_BY_IDENTITY = (pd.DataFrame, pd.Series, pd.Index, np.ndarray)


@contextlib.contextmanager
def per_report() -> Iterator[None]:
    """Within the block, :func:`memoized` functions compute each answer once (nested blocks
    share the outer one's answers)."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def _key(value: Any) -> Any:
    if isinstance(value, _BY_IDENTITY):
        return ("id", type(value).__name__, id(value))
    if isinstance(value, Mapping):
        return ("map", frozenset((_key(k), _key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    hash(value)  # TypeError: not keyable
    return ("value", type(value).__name__, value)


def _copy(value: Any) -> Any:
    if isinstance(value, (pd.DataFrame, pd.Series, np.ndarray)):
        return value.copy()
    return value


@overload
def memoized(fn: F) -> F: ...


@overload
def memoized(*, share: bool = False) -> Callable[[F], F]: ...


def memoized(fn: F | None = None, *, share: bool = False) -> Any:
    """``fn`` answered once per distinct arguments within :func:`per_report`; each caller
    gets a copy of a table answer, or, with ``share=True``, the answer itself (for a table
    that other memoized functions are then asked about: the same object, so their answers
    are found too; its callers only read it)."""
    if fn is None:
        return functools.partial(memoized, share=share)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        memo = _MEMO.get()
        if memo is None:
            return fn(*args, **kwargs)
        try:
            key = (fn.__module__, fn.__qualname__, tuple(_key(a) for a in args),
                   frozenset((k, _key(v)) for k, v in kwargs.items()))
            hash(key)
        except TypeError:
            return fn(*args, **kwargs)
        hit = memo.get(key)
        if hit is None:
            # the arguments are kept with the answer: their identities stay theirs
            hit = memo[key] = (args, kwargs, fn(*args, **kwargs))
        return hit[2] if share else _copy(hit[2])
    return wrapper
