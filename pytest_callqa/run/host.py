"""What a run needs of the program that hosts it: where it runs, whether it is an xdist
worker, and the three extension points a project implements (as pytest hooks, when the host
is the plugin)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..engine.core.cases import GoldenCase
    from ..engine.registry import Registry
    from ..engine.scorecard import Scorecard


class Host(Protocol):
    """The plugin's side of a run (``PytestHost`` adapts a ``pytest.Config``)."""

    @property
    def rootpath(self) -> Path:
        """Paths under it are shown relative to it (stable across machines)."""
        ...

    @property
    def is_worker(self) -> bool:
        """Whether this process is an xdist worker (it only scores; the controller reports)."""
        ...

    @property
    def run_uid(self) -> str | None:
        """An id every xdist worker of one run shares; None outside xdist."""
        ...

    @property
    def selection(self) -> dict[str, Any]:
        """Which of the suite's tests the run was asked for, as its report records it: the
        paths and node ids (relative to the root), ``-k``, ``-m`` and ``--deselect``."""
        ...

    def worker_value(self, key: str) -> Any:
        """A value the xdist controller handed this worker under ``key`` (None outside
        xdist, or when it handed none)."""
        ...

    def generate(self, model: str, case: GoldenCase, run: int) -> Any:
        """The project's answer for ``model`` on ``case`` in ``run``
        (``pytest_callqa_generate``)."""
        ...

    @property
    def generates_outputs(self) -> bool:
        """Whether the project implements ``pytest_callqa_generate``: any model's output may
        then come from it rather than from a recorded file."""
        ...

    def register_metrics(self, registry: Registry) -> None:
        """Let the project add custom metrics (``pytest_callqa_register_metrics``)."""
        ...

    def post_process(self, scorecard: Scorecard) -> None:
        """Let the project change the scorecard in place (``pytest_callqa_scorecard``)."""
        ...


class Progress(Protocol):
    """Shows the up-front calls while they run (the plugin draws it on the terminal)."""

    def start(self, text: str) -> None: ...

    def update(self, done: int, total: int) -> None: ...

    def detach(self) -> None:
        """The calls go on while the tests run: leave the terminal to them until finish."""

    def finish(self, text: str) -> None: ...
