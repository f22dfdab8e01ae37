"""One module per input format. Each registers itself with :func:`dptrace.registry.register`.

Every module here whose name does not start with ``_`` is imported by
:func:`dptrace.registry.parsers`, so a new format is one new file.
"""
