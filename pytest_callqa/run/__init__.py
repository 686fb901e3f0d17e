"""One callqa run in one process, in rooms by job: the case catalogue and model choice
(``catalog``), the engine objects built from the settings (``services``), the outputs and
judge calls (``resolver``), call counters and budget across processes (``usage``), and the
scorecard, header and JSON report (``summary``).

Nothing here imports pytest: the run reaches its host (the plugin) through the small
:class:`~.host.Host` protocol, so it can be driven and tested without a ``pytest.Config``.
"""
