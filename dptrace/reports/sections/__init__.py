"""The report's sections, one module per subject: each declares its sections with
:func:`dptrace.reports.registry.register_section` and holds their builders.

Builders are pure: a Dataset and the report options in, a :class:`~dptrace.reports.model.
Section` of tables (or None) out. Modules here import analysis and the report model only,
never rich or plotly: the rich drawers are in :mod:`dptrace.reports.terminal`, the figure
functions in ``dptrace/reports/figures*.py``, both named in the spec as lazy references.

:func:`dptrace.reports.registry.sections` imports every module of this package, so a new
section is a new module here (modules whose name starts with ``_`` are skipped).
"""
