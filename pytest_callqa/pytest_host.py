"""``PytestHost``: the run's :class:`~pytest_callqa.run.host.Host` over a ``pytest.Config``
— the rootdir, the selection of tests, xdist's worker input, and the project's
``pytest_callqa_*`` hooks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .run.settings import display_path

if TYPE_CHECKING:
    from .engine.core.cases import GoldenCase
    from .engine.registry import Registry
    from .engine.scorecard import Scorecard

# The module whose pytest_callqa_generate answers for live models and recorded files.
_OWN_PLUGIN = "pytest_callqa.plugin"


class PytestHost:
    """The run's host over a ``pytest.Config``: the three ``pytest_callqa_*`` hooks, the
    rootdir, and xdist's worker input."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # Read at configure time: --lf adds this run's failures to the record as they come.
        lastfailed = getattr(config.pluginmanager.get_plugin("lfplugin"), "lastfailed", None)
        self._failures_on_record = bool(lastfailed)

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
        return {
            "args": sorted(self._rooted(arg) for arg in self.config.args),
            "keyword": option.keyword or "",
            "markexpr": option.markexpr or "",
            "deselect": sorted(option.deselect or ()),
            # --lf with failures on record: the tests that failed last time, not the suite
            # (with none, pytest runs every test).
            "last_failed": bool(getattr(option, "lf", False) and self._failures_on_record),
        }

    def _rooted(self, arg: str) -> str:
        """A path or node id of the command line with its path relative to the root:
        ``tests``, ``./tests/`` and the absolute path of the directory are one selection,
        whichever directory each CI job starts pytest from."""
        path, separator, rest = arg.partition("::")
        rooted = display_path(self.config.invocation_params.dir / path, self.rootpath)
        return rooted + separator + rest

    def worker_value(self, key: str) -> Any:
        return (getattr(self.config, "workerinput", None) or {}).get(key)

    def generate(self, model: str, case: GoldenCase) -> Any:
        return self.config.hook.pytest_callqa_generate(model=model, case=case,
                                                       config=self.config)

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
