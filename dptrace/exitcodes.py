"""The exit codes of the ``dptrace`` command, in one place (documented in ``dptrace --help``
and the README). :func:`dptrace.reports.model.exit_code` picks one for a Dataset; the CLI
turns 0 and 1 into :data:`EXIT_FINDINGS` under ``--fail-on``."""

#: every input was parsed (files inside a directory that no format recognises are skipped
#: with a note and do not count)
EXIT_OK = 0
#: partial: the report was written, but an input or part of one was skipped
EXIT_PARTIAL = 1
#: usage error (bad option, unknown --format, an output that cannot be written)
EXIT_USAGE = 2
#: failure: no input gave any data
EXIT_FAILURE = 3
#: ``--fail-on warning|critical``: the report was written and holds a finding of that
#: severity or worse (for CI pipelines of training jobs); it replaces 0 and 1, never 2 or 3
EXIT_FINDINGS = 4
