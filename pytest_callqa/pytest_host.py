"""``PytestHost``: the run's :class:`~pytest_callqa.run.host.Host` over a ``pytest.Config``
— the rootdir, the selection of tests, xdist's worker input, and the project's
``pytest_callqa_*`` hooks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .outcomes import LogRedaction
from .run.gaps import SUITE_NARROWED
from .run.resolver import Interrupted
from .run.settings import display_path
from .selection import OTHER_SHARD_KEY, pair_of

if TYPE_CHECKING:
    from .engine.core.cases import GoldenCase
    from .engine.registry import Registry
    from .engine.scorecard import Scorecard

# The module whose pytest_callqa_generate answers for live models and recorded files.
_OWN_PLUGIN = "pytest_callqa.plugin"
# The keys of an xdist worker's ``workeroutput`` that carry how many evaluation tests it
# deselected, and whether --lf reran failures on record among its tests.
DESELECTED_OUTPUT_KEY = "callqa_deselected"
RERAN_OUTPUT_KEY = "callqa_reran_failures"


class PytestHost:
    """The run's host over a ``pytest.Config``: the three ``pytest_callqa_*`` hooks, the
    rootdir, xdist's worker input, and the selection of tests (with how many evaluation
    tests were deselected: :class:`Deselections`)."""

    def __init__(self, config: pytest.Config, suite_narrowed: bool = False) -> None:
        self.config = config
        # Whether the command line narrowed the models or cases the ini file configures.
        self.suite_narrowed = suite_narrowed
        # Every process that collects (the only one, each xdist worker) sees the
        # deselections; the xdist controller hears of them from its workers.
        self._deselected = Deselections(bool(getattr(config.option, "lf", False)))
        config.pluginmanager.register(self._deselected, "callqa-deselections")
        # The run's keys kept out of pytest's logs, in every process (each makes its host).
        config.pluginmanager.register(LogRedaction(), "callqa-log-redaction")

    @property
    def rootpath(self) -> Path:
        return self.config.rootpath

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    @property
    def run_uid(self) -> str | None:
        workerinput = getattr(self.config, "workerinput", None)
        return None if workerinput is None else str(workerinput["testrunuid"])

    @property
    def selection(self) -> dict[str, Any]:
        option = self.config.option
        selection: dict[str, Any] = {
            "args": sorted(self._rooted(arg) for arg in self.config.args),
            "keyword": option.keyword or "",
            "markexpr": option.markexpr or "",
            "deselect": sorted(option.deselect or ()),
            # What the command asked for; a sharded job's cache decides what --lf found.
            "lf": bool(getattr(option, "lf", False)),
            # --lf that reran failures on record: the tests that failed last time, not the
            # suite (with none among the selected tests, pytest runs every one of them).
            "last_failed": self._deselected.reran_failures,
        }
        if self.suite_narrowed:
            # Absent when not: a whole run's report reads as before.
            selection[SUITE_NARROWED] = True
        if self._deselected.count:
            # Whatever deselected them: -k, --deselect, --lf, an -m narrower than `eval`,
            # --sw resuming, another plugin. Absent when none was: a whole run's report
            # reads as before.
            selection["deselected_eval_tests"] = self._deselected.count
        return selection

    def _rooted(self, arg: str) -> str:
        """A path or node id of the command line with its path relative to the root:
        ``tests``, ``./tests/`` and the absolute path of the directory are one selection,
        whichever directory each CI job starts pytest from."""
        path, separator, rest = arg.partition("::")
        rooted = display_path(self.config.invocation_params.dir / path, self.rootpath)
        return rooted + separator + rest

    def worker_value(self, key: str) -> Any:
        return (getattr(self.config, "workerinput", None) or {}).get(key)

    def generate(self, model: str, case: GoldenCase, run: int) -> Any:
        """The project's answer. A ``pytest.skip`` or ``pytest.xfail`` it raises is its word
        on this pair alone: raised as the pair's :class:`Interrupted`, an error the resolver
        keeps for the pair and each of its tests turns back into that skip (outcomes.py).
        As it came, no ``Exception``, it would stop the batch the pair was asked in and skip
        the test that started it, another pair's, with this pair's reason."""
        try:
            return self.config.hook.pytest_callqa_generate(model=model, case=case,
                                                           config=self.config, run=run)
        except (pytest.skip.Exception, pytest.xfail.Exception) as exc:
            raise Interrupted(model, case.id, exc) from None

    def register_metrics(self, registry: Registry) -> None:
        self.config.hook.pytest_callqa_register_metrics(registry=registry, config=self.config)

    def post_process(self, scorecard: Scorecard) -> None:
        self.config.hook.pytest_callqa_scorecard(scorecard=scorecard, config=self.config)

    @property
    def generates_outputs(self) -> bool:
        """Whether the project implements ``pytest_callqa_generate`` (beside the plugin's own),
        so any model's output may come from it rather than from a recorded file."""
        return any(getattr(impl.plugin, "__name__", None) != _OWN_PLUGIN
                   for impl in self.config.hook.pytest_callqa_generate.get_hookimpls())


class Deselections:
    """A plugin that counts the evaluation tests (those of a (model, case) pair) deselected
    by anything but ``--callqa-shard``, whose split of the pairs is no narrowing of the run.

    Each process that collects counts its own; under xdist each worker hands its count to
    the controller, which collects nothing and keeps the largest (every worker collects and
    deselects the same tests: the report is the same with and without xdist)."""

    def __init__(self, last_failed: bool = False) -> None:
        self.count = 0
        # Whether --lf was given, and whether a failure on record is among the tests
        # collected: only then does pytest narrow the run to them.
        self._last_failed = last_failed
        self.reran_failures = False

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Fires once the collection is final, after --lf kept only the failures. The record
        is read now: a module that failed to collect last time and collects now has had
        its entry replaced by its failing tests' as it was collected."""
        record = getattr(session.config.pluginmanager.get_plugin("lfplugin"), "lastfailed",
                         None)
        if self._last_failed and record:
            # pytest 9 keys the record by a parsed node id, which is not its text.
            failures = set(map(str, record))
            self.reran_failures = any(item.nodeid in failures for item in session.items)

    @pytest.hookimpl
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Fires for each batch of tests a plugin deselects."""
        for item in items:
            model, case_id = pair_of(item)
            if (isinstance(model, str) and isinstance(case_id, str)
                    and not item.stash.get(OTHER_SHARD_KEY, False)):
                self.count += 1

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fires once per process, after the last test: a worker hands on its count."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[DESELECTED_OUTPUT_KEY] = self.count
            workeroutput[RERAN_OUTPUT_KEY] = self.reran_failures

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Fires on the xdist controller as each worker ends (one that crashed hands on
        nothing; the others, or the worker that replaced it, counted the same)."""
        output = getattr(node, "workeroutput", None) or {}
        count = output.get(DESELECTED_OUTPUT_KEY)
        if isinstance(count, int):
            self.count = max(self.count, count)
        self.reran_failures = self.reran_failures or output.get(RERAN_OUTPUT_KEY) is True
