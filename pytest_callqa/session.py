"""The state of one callqa run in one process: the rooms of :mod:`pytest_callqa.run`, put
together once per process and kept in ``config.stash`` by the plugin.

Only light modules are imported here (settings, outputs and the stdlib-only engine pieces):
the engine proper (pydantic, numpy, openai...) is loaded when a run first needs a golden case.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from .run.catalog import Catalog
from .run.resolver import Resolver
from .run.services import Services
from .run.settings import CallqaUsageError, Settings
from .run.summary import Summary
from .run.usage import Usage
from .run.verdicts import PreflightFailed

if TYPE_CHECKING:
    from .run.host import Host, Progress

# How long xdist workers take, once collected, to load the judge's client and send their
# first requests: ~0.4 s on a 2-core machine (benchmarks/judge_throughput.py).
WORKERS_PREPARE_S = 0.5


class CallqaSession:
    """One run in one process: which cases and models (``catalog``), the engine objects
    (``services``), outputs and verdicts (``resolver``), call counters and budget
    (``usage``), and what the run reports at its end (``summary``)."""

    def __init__(self, host: Host, settings: Settings) -> None:
        self.host = host
        self.settings = settings
        self.catalog = Catalog(settings, host)
        self.services = Services(settings, host, on_progress=self._on_progress,
                                 before_send=self._before_send)
        self.catalog.labels = self.services.label_registry
        self.resolver = Resolver(settings, host, self.catalog, self.services)
        self.usage = Usage(settings, self.catalog, self.services, self.resolver.timings)
        self.summary = Summary(settings, host, self.catalog, self.services, self.usage)
        self._sending = False
        self._preload: threading.Thread | None = None
        self._preload_now = threading.Event()
        self._read_ahead_asked = False
        self._reading_cases: threading.Thread | None = None

    @property
    def is_worker(self) -> bool:
        return self.host.is_worker

    @property
    def progress(self) -> Progress | None:
        return self.resolver.verdicts.progress

    @progress.setter
    def progress(self, progress: Progress | None) -> None:
        self.resolver.verdicts.progress = progress

    def preload_in_background(self, *, after_s: float = 0.0) -> None:
        """Import what the end of the run needs (:meth:`Summary.preload`) in a daemon thread
        (an interrupted run must not wait for it), once per process: ``after_s`` seconds
        from now, or sooner if :meth:`preload_now` comes first."""
        if after_s <= 0:
            self._preload_now.set()
        if self._preload is None:
            self._preload = threading.Thread(target=self._preload_after, args=(after_s,),
                                             name="callqa-preload", daemon=True)
            self._preload.start()

    def finish_preload(self) -> None:
        """Wait for a preload or a read of the cases under way (:meth:`preload_in_background`,
        :meth:`read_cases_ahead`): the end of the run imports the same modules and reads the
        same cases, and a module the thread had half imported when a test harness running
        pytest in-process put ``sys.modules`` back (pytester) was a KeyError in the thread.
        The wait costs what the work would."""
        self._preload_now.set()
        for thread in (self._preload, self._reading_cases):
            if thread is not None:
                thread.join()

    def preload_once_workers_send(self) -> None:
        """The xdist controller's preload, when its first worker has collected: not at once,
        as the workers are still loading the judge's client and preparing their first
        requests on every core (the imports would delay those requests as much). It waits
        :data:`WORKERS_PREPARE_S`, or until a first test ends."""
        self.preload_in_background(after_s=WORKERS_PREPARE_S)

    def read_cases_ahead(self) -> None:
        """Fires on the xdist controller with each evaluation test's report: the first time,
        in a run whose workers wait on a model server, read the golden cases in a daemon
        thread (the report quotes them; reading them builds their task families, which the
        scorecard reads). Otherwise the controller, which collects nothing, reads them after
        the last test, while its workers' own ends share the cores with it. Not in a run
        judged offline, whose workers keep both cores busy and where, at 100,000 outputs,
        the controller would hold every case's reference for the whole run; not before an
        evaluation has reported (a run of other tests reads no case file); once only."""
        if self._read_ahead_asked:
            return
        # Decided once: the controller of a 100,000-test run gets as many reports.
        self._read_ahead_asked = True
        if self.catalog.loaded or not self._workers_wait_on_servers():
            return
        self._reading_cases = threading.Thread(target=self._read_cases,
                                               name="callqa-read-cases", daemon=True)
        self._reading_cases.start()

    def _read_cases(self) -> None:
        # Nothing is lost when this fails: the end of the run reads the cases itself, and
        # deals with a bad catalogue in the main thread as it would have.
        with contextlib.suppress(Exception):
            self.catalog.files()

    def _workers_wait_on_servers(self) -> bool:
        if self.settings.llm_judge:
            return True
        try:
            return bool(self.catalog.live_models())
        except CallqaUsageError:
            return False  # the workers report the bad models table

    def preload_now(self) -> None:
        """Cut short the wait of a preload started with a delay (nothing without one)."""
        self._preload_now.set()

    def _preload_after(self, after_s: float) -> None:
        self._preload_now.wait(after_s)
        self.summary.preload()

    def resolve_up_front(self, *, controller: bool) -> None:
        """Before the first test: the local judge's server is started (by the only process
        or the xdist controller), then the controller checks every endpoint the run may call
        before its workers send anything, by the configuration alone (it collects nothing),
        or this process sends its share of the calls (:meth:`Resolver.resolve_up_front`).
        Raises :class:`PreflightFailed`, or :class:`CallqaUsageError` for a server that
        did not start."""
        if self.settings.local_judge and not self.is_worker and self.resolver.pending:
            self.services.local_info()
        if not controller:
            self.resolver.resolve_up_front()
            return
        settings = self.settings
        if settings.preflight and (settings.llm_judge or self.catalog.live_models()):
            problems = self.services.preflight(self.catalog.live_models())
            if problems:
                raise PreflightFailed(problems)

    def _on_progress(self, done: int, total: int) -> None:
        self.resolver.on_progress(done, total)
        if self._sending and not self.is_worker:
            # The first reply is in and the rest of the batch is mostly waiting on the
            # server: the scorecard's imports fit in that wait instead of following the
            # last test. Not before: they would delay the first requests as much.
            self.preload_in_background()

    def _before_send(self) -> None:
        self.resolver.check_endpoints()
        self._sending = True


__all__ = ["CallqaSession"]
