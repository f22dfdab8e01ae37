"""The report's format-independent sections (inputs, findings, problems), one module per
subject: each declares its sections with :func:`dptrace.reports.registry.register_section`
and holds their builders.

A format's own sections live in its package, ``dptrace/formats/<format>/sections.py``, with
their drawers (``terminal.py``) and figure functions (``figures.py``): one home per format.

Builders are pure: a Dataset and the report options in, a :class:`~dptrace.reports.model.
Section` of tables (or None) out. Modules here import analysis and the report model only,
never rich or plotly: the rich drawers are in :mod:`dptrace.reports.terminal`, named in the
spec as lazy references.

:func:`dptrace.reports.registry.sections` imports every module of this package (modules
whose name starts with ``_`` are skipped) and every format's ``sections`` module.
"""
