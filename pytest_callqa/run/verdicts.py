"""The judge's side of the resolver: batches of prepared (model, case) pairs judged, and each
pair's verdicts kept until a test asks for its result.

A batch is judged when a test first asks for one of its pairs, or up front, before the
first test (resolver.py says which). A single process's up-front batch of LLM judge calls
runs on beside the tests (stream.py) once its endpoints are checked: a test waits only for
its own pair's verdicts. While it runs, the terminal belongs to the tests, so the batch's
closing line is held until the last test is done; a run that stops early cancels it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .settings import CallqaCallError, CallqaUsageError, Settings, count, judge_unusable
from .stream import VerdictStream
from .usage import call_delta, kind_totals

if TYPE_CHECKING:
    from ..engine.core.judging import Judge, JudgeVerdict, StreamingJudge
    from ..engine.core.results import TaskResult
    from ..engine.evaluate import Prepared
    from ..engine.llm.transport import ChatRunner
    from .host import Progress
    from .services import Services

# (model, case id, run): run 0 is the only run of a single-run session.
RunKey = tuple[str, str, int]

# How long a run that stopped early waits for its cancelled judge batch to wind down (its
# calls in flight are abandoned at once; this bounds a slow pass over the cache).
INTERRUPT_WAIT_S = 5.0


class PreflightFailed(CallqaUsageError):
    """An endpoint this process was about to call cannot be used; one problem each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class Verdicts:
    """Judges batches of prepared pairs (:meth:`judge`) and keeps their verdicts in
    ``judged`` until each pair is finished; a pair whose judging fails gets its error in
    ``results`` (the resolver's). Shows the calls on ``progress`` while they run."""

    def __init__(self, settings: Settings, services: Services, timings: dict[str, float],
                 results: dict[RunKey, TaskResult | BaseException]) -> None:
        self.settings = settings
        self.services = services
        self.timings = timings
        self.results = results
        self.judged: dict[RunKey, tuple[Prepared, list[JudgeVerdict]]] = {}
        self.progress: Progress | None = None
        # The up-front batch while it runs beside the tests, and the lines it has to show
        # once they are done.
        self._beside: _Beside | None = None
        self._held: list[str] | None = None
        # Set once the judge refused the run's key or model: no later batch sends it again.
        self._refused: CallqaCallError | None = None

    # --- the terminal -------------------------------------------------------------------

    def update(self, done: int, total: int) -> None:
        if self.progress is not None and self._held is None:
            self.progress.update(done, total)

    def start(self, text: str) -> None:
        if self.progress is not None:
            self.progress.start(text)

    def finish(self, text: str) -> None:
        if self.progress is not None:
            if self._held is not None:
                self._held.append(text)
            else:
                self.progress.finish(text)

    # --- batches ------------------------------------------------------------------------

    def judge(self, prepared: Mapping[RunKey, Prepared], *, beside_tests: bool) -> None:
        """Judge every pair of ``prepared`` in one batch. ``beside_tests``: an LLM judge's
        batch goes on while the tests run, once its endpoints are checked (a failed check
        raises :class:`PreflightFailed` here, before any test)."""
        # Loaded with the prepared pairs; named here for the judge phase.
        from ..engine.core.judging import StreamingJudge
        from ..engine.evaluate import judge_batch

        try:
            judge = self.services.judge()
        except Exception as exc:
            for key in prepared:
                self.results[key] = exc
            return
        runner = self.services.built_runner if self.settings.llm_judge else None
        refused = self._refused or _refused_elsewhere(runner)
        if refused is not None:
            # Each batch after a rejected key sent it again: under xdist one per test of the
            # other worker's share (60 requests where one process sent 5).
            for key in prepared:
                self.results[key] = refused
            return
        before = kind_totals(runner, "judge")
        if runner is not None:
            self.start(f"judging {count(len(prepared), 'output')} with "
                       f"{self.settings.judge_model_name} ({self.settings.judge_mode} mode, "
                       f"{self.services.limits_text()})")
        started = time.monotonic()
        if beside_tests and runner is not None and isinstance(judge, StreamingJudge):
            self._beside = _Beside(judge, prepared, runner, started)
            # Started once it is ours to find: the batch's first call may come at once, and
            # its sending() found no batch, so the tests waited for the whole of it.
            self._beside.stream.start()
            self._beside.stream.wait_sending()
            if self._beside.stream.ended:
                self.end_stream()  # answered by the cache, or stopped before any call
            elif self.progress is not None:
                self._held = []
                self.progress.detach()
            return
        try:
            verdicts = judge_batch(judge, list(prepared.values()))
        except Exception as exc:
            if self._failed(judge, runner, prepared, exc):
                return
        else:
            self.judged.update({key: (one, answered) for (key, one), answered in zip(
                prepared.items(), verdicts, strict=True) if key not in self.results})
        if runner is not None:
            self._judged_text(len(prepared), time.monotonic() - started, before, runner)
        _compare_ahead([self.judged[key][0] for key in prepared if key in self.judged])

    def _failed(self, judge: Judge, runner: ChatRunner | None,
                prepared: Mapping[RunKey, Prepared], exc: BaseException) -> bool:
        """Results for the pairs of a judge batch that raised ``exc`` before their verdicts
        were in; whether the batch stopped there (rather than judged them one by one)."""
        # Loaded with the prepared pairs.
        from ..engine.evaluate import judge_batch
        from ..engine.llm.endpoint import CallError

        if isinstance(exc, PreflightFailed):
            raise exc  # nothing was sent; the run stops (or, in a worker, skips its batch)
        if isinstance(exc, CallError):
            # A rejected key or an unknown model: every call would fail the same way.
            error = judge_unusable(exc)
            self._refused = error
            if runner is not None and runner.exchange is not None:
                # Loaded with the runner that had the call refused.
                from ..engine.llm.kept import refuse

                refuse(runner.exchange, str(exc))
            for key in prepared:
                self.results[key] = error
            if runner is not None:
                self.finish(f"judge calls stopped: {exc}")
            return True
        if not isinstance(exc, Exception):
            # The batch was cancelled (the run stopped early): no test will ask for these.
            stopped = CallqaCallError("callqa: the run stopped before the judge's verdicts "
                                      "were in")
            for key in prepared:
                self.results[key] = stopped
            return True
        if len(prepared) == 1:
            self.results[next(iter(prepared))] = exc
            return True
        # One output the judge chokes on must not take its whole batch down: judge the
        # pairs one by one so only that pair's tests report the error.
        for key, one in prepared.items():
            try:
                self.judged[key] = (one, judge_batch(judge, [one])[0])
            except Exception as error:
                self.results[key] = error
        return False

    def _judged_text(self, outputs: int, elapsed: float, before: Mapping[str, float],
                     runner: ChatRunner) -> None:
        self.timings["judge_s"] += elapsed
        self.finish(f"judged {count(outputs, 'output')} in {elapsed:.2f} s: "
                    f"{call_delta(before, kind_totals(runner, 'judge'))}")

    # --- the batch beside the tests -----------------------------------------------------

    @property
    def streaming(self) -> bool:
        """Whether the up-front batch is running beside the tests."""
        return self._beside is not None

    def sending(self) -> None:
        """The endpoints are checked and the first call goes out: the tests may start."""
        if self._beside is not None:
            self._beside.stream.sending()

    def wait_for(self, key: RunKey) -> None:
        """A test's pair while the batch runs beside the tests: once its verdicts are in;
        a pair outside the batch once the batch has ended (one chat runner serves one event
        loop at a time)."""
        if self._beside is None:
            return
        if key in self._beside.prepared:
            self._beside.stream.wait_for(key)
            self._collect()
        else:
            self.end_stream()

    def _collect(self) -> None:
        """Take in the verdicts the batch has handed on; once it has ended, deal with
        what it left."""
        beside = self._beside
        assert beside is not None
        # Read before take(): the batch hands on its last verdicts before it ends, so once
        # ended, take() has them all. Read after, verdicts handed on between the two reads
        # were neither taken nor unhanded(), and their pairs were judged again.
        ended = beside.stream.ended
        ready = beside.stream.take()
        for key, verdicts in ready.items():
            if key not in self.results:
                self.judged[key] = (beside.prepared[key], verdicts)
        _compare_ahead([self.judged[key][0] for key in ready if key in self.judged])
        if ended:
            self._beside = None
            left = {key: beside.prepared[key] for key in beside.stream.unhanded()
                    if key not in self.results and key not in self.judged}
            failure = beside.stream.failure
            if failure is None or not self._failed(beside.judge, beside.runner, left, failure):
                self._judged_text(len(beside.prepared), beside.elapsed, beside.before,
                                  beside.runner)

    def end_stream(self) -> None:
        """Wait for the batch running beside the tests to end, and take in what it left
        (nothing when none runs)."""
        if self._beside is not None:
            self._beside.stream.join()
            self._collect()

    def close(self, *, interrupted: bool = False) -> None:
        """After the last test: the batch beside the tests has ended (``interrupted``, the
        run stopped early: it is cancelled, and not waited for past
        :data:`INTERRUPT_WAIT_S`), so the counters the report reads are final, and the
        lines it held are shown."""
        if self._beside is not None and interrupted:
            self._beside.runner.interrupt()
            self._beside.stream.join(INTERRUPT_WAIT_S)
            if not self._beside.stream.ended:
                self._beside = None  # a daemon thread: it does not hold the exit up
        self.end_stream()
        held, self._held = self._held or [], None
        for text in held:
            self.finish(text)


class _Beside:
    """The up-front judge batch of ``prepared`` to run beside the tests (stream.py), once
    its stream is started."""

    def __init__(self, judge: StreamingJudge, prepared: Mapping[RunKey, Prepared],
                 runner: ChatRunner, started: float) -> None:
        # Loaded with the prepared pairs.
        from ..engine.evaluate import judge_batch_as_ready

        self.judge = judge
        self.prepared = dict(prepared)
        self.runner = runner
        self.before = kind_totals(runner, "judge")
        self.elapsed = 0.0
        items = list(self.prepared.values())

        def batch(on_ready: Callable[[int, list[JudgeVerdict]], None]) -> None:
            try:
                judge_batch_as_ready(judge, items, on_ready)
            finally:
                self.elapsed = time.monotonic() - started

        self.stream: VerdictStream[RunKey] = VerdictStream(list(self.prepared), batch)


def _refused_elsewhere(runner: ChatRunner | None) -> CallqaCallError | None:
    """The refusal another xdist worker of the run kept (none outside xdist)."""
    if runner is None or runner.exchange is None:
        return None
    # Loaded with the runner.
    from ..engine.llm.kept import refusal

    message = refusal(runner.exchange)
    return None if message is None else judge_unusable(message)


def _compare_ahead(judged: list[Prepared]) -> None:
    """A judged batch's text comparisons in a few passes rather than one per test (see
    ``prefetch_similarities``). One that fails here fails again when its pair is finished,
    and is reported there, for that pair's tests alone: the batch only loses the head
    start."""
    if len(judged) > 1:
        # Loaded with the prepared pairs.
        from ..engine.evaluate import prefetch_similarities

        with contextlib.suppress(Exception):
            prefetch_similarities(judged)
