"""The rule registry: each rule a pure function from derived tables to findings, declared by
the format whose tables it reads.

A format's ``findings`` module (``dptrace/formats/<format>/findings.py``, or a plug-in's)
defines its rules and declares them with :func:`register_rules`: a :class:`Rule` names the
kinds it produces, the derived tables it reads (by name in :mod:`dptrace.analyses`: a rule
runs only when every one of them is there), its place among the rules and the function. A
:class:`FindingsRule` is a rule over the other findings of a run (it runs after them: one
rank named by several sources). :func:`run_rules` runs them all on one run's context. No
module here names a format's table; every kind and its condition is listed in
``docs/findings.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import formats
from . import Finding
from . import thresholds as th

if TYPE_CHECKING:
    from ..analyses import Analyses
    from ..dataset import Dataset


@dataclass(frozen=True)
class Rule:
    """A rule: the kinds it produces, the derived tables it reads (by name, in this order as
    its arguments), and the function. ``order``: its place among every format's rules
    (lower first; the findings table sorts them, this only decides ties of equal rows)."""

    kinds: tuple[str, ...]
    needs: tuple[str, ...]
    fn: Callable[..., list[Finding]]
    order: int = 1000
    #: optional ``candidates(*tables, **thresholds) -> bool``: whether any row of the tables
    #: could make a finding, a test of each row on its own (False over a set of rows means
    #: False over any part of them). :func:`run_rules` asks it once over the report's
    #: tables, which hold every run's rows: where no row anywhere could fire, no run's
    #: context computes or slices the tables for the rule (a folder of 1,000 runs)
    candidates: Callable[..., bool] | None = None


@dataclass(frozen=True)
class FindingsRule:
    """A rule over the findings of one run, run after every :class:`Rule`: ``fn(found,
    analyses, **thresholds) -> findings`` (the whole list, changed). ``kinds``: what it adds."""

    kinds: tuple[str, ...]
    fn: Callable[..., list[Finding]]
    order: int = 1000


_RULES: dict[tuple[str, tuple[str, ...]], Rule] = {}
_POST: dict[tuple[str, tuple[str, ...]], FindingsRule] = {}
#: True: every format's ``findings`` module imported; a set: those of the formats of
#: these tables (:func:`_discover`); False: none
_DISCOVERED: bool | frozenset[str] = False
#: the module of a format package that declares its rules
FORMAT_FINDINGS = "findings"


def _key(rule: Rule | FindingsRule) -> tuple[str, tuple[str, ...]]:
    return (f"{rule.fn.__module__}.{rule.fn.__qualname__}", rule.kinds)


def register_rules(*rules: Rule | FindingsRule) -> None:
    """Declare rules (a module registering the same function again replaces it)."""
    for rule in rules:
        if isinstance(rule, FindingsRule):
            _POST[_key(rule)] = rule
        else:
            _RULES[_key(rule)] = rule


def _discover(tables: Iterable[str] | None = None) -> None:
    """Import the formats' ``findings`` modules: every format's, or (``tables``) those of
    the formats that read any of the tables (:func:`dptrace.formats.reading`)."""
    global _DISCOVERED
    if _DISCOVERED is True:
        return
    if tables is None:
        _DISCOVERED = True
        formats.import_parts(FORMAT_FINDINGS)
        return
    done = _DISCOVERED or frozenset()
    new = frozenset(tables) - done
    if new:
        _DISCOVERED = done | new
        formats.import_parts(FORMAT_FINDINGS, new)


def rediscover() -> None:
    """Look for formats' rules again (a test that adds a format)."""
    global _DISCOVERED
    _DISCOVERED = False


def rules(tables: Iterable[str] | None = None) -> list[Rule]:
    """Every declared rule, in order. ``tables``: only the rules that can fire on a Dataset
    holding these tables: those of the formats that read any of them, and those no
    format declares (a format's rules read its derived tables, which are None without its
    tables: such a rule would not run)."""
    _discover(tables)
    found: Iterable[Rule] = _RULES.values()
    if tables is not None:
        found = [r for r in found if _reads_any(r.fn, tables)]
    return sorted(found, key=lambda r: r.order)


def _reads_any(fn: Callable[..., Any], tables: Iterable[str]) -> bool:
    """Whether ``fn`` is no format's, or one of a format that reads any of ``tables``."""
    fmt = formats.owner(getattr(fn, "__module__", "") or "")
    return fmt is None or fmt in formats.reading(tables)


def findings_rules(tables: Iterable[str] | None = None) -> list[FindingsRule]:
    """Every declared rule over findings, in order (``tables``: as :func:`rules`, with the
    ``findings`` modules a format needs for any Dataset: :data:`dptrace.formats.REPORT_ALWAYS`;
    a rule over findings runs whatever the tables)."""
    _discover(tables)
    return sorted(_POST.values(), key=lambda r: r.order)


def kinds() -> tuple[str, ...]:
    """Every kind a rule can produce, in rule order."""
    return tuple(dict.fromkeys((*(k for r in rules() for k in r.kinds),
                                *(k for r in findings_rules() for k in r.kinds))))


def run_rules(target: Analyses | Dataset, thresholds: Mapping[str, float] | None = None,
              **opts: Any) -> list[Finding]:
    """Every rule whose tables the context has, in order, then the rules over findings.
    ``target``: one run's :class:`~dptrace.analyses.Analyses` (a Dataset is given one, with
    ``opts``). ``thresholds``: overrides by kind, in the unit of the findings' ``threshold``
    column (checked by :func:`.thresholds.parse_overrides`; see :func:`.thresholds.overridable`)."""
    from ..analyses import Analyses

    a = target if isinstance(target, Analyses) else Analyses(target, opts)
    if thresholds is None:
        thresholds = a.options.get("thresholds")
    given = th.parse_overrides(thresholds) if thresholds else {}
    known = th.overridable() if given else {}
    present = a._present

    def kwargs(kinds: tuple[str, ...]) -> dict[str, Any]:
        return {known[k].param: known[k].argument(v) for k, v in given.items() if k in kinds}

    out: list[Finding] = []
    for rule in rules(present):
        if not _may_fire(a, rule, kwargs(rule.kinds)):
            continue
        tables = [a.get(n) for n in rule.needs]
        if all(t is not None for t in tables):
            out.extend(rule.fn(*tables, **kwargs(rule.kinds)))
    for post in findings_rules(present):
        out = post.fn(out, a, **kwargs(post.kinds))
    return out


def _may_fire(a: Analyses, rule: Rule, kwargs: Mapping[str, Any]) -> bool:
    """False when ``a`` is one run's context and no row of the report's tables could make
    ``rule`` fire (its :attr:`Rule.candidates`, asked once per report); True otherwise."""
    if rule.candidates is None or a.parent is None:
        return True
    memo = a.parent.memo.setdefault("findings.candidates", {})
    key = (rule.fn, tuple(sorted(kwargs.items())))
    if key not in memo:
        tables = [a.parent.get(n) for n in rule.needs]
        memo[key] = (any(t is None for t in tables)
                     or bool(rule.candidates(*tables, **kwargs)))
    return bool(memo[key])
