"""Hooks that a project's ``conftest.py`` (or another plugin) implements to extend callqa.

They are added to pytest's hook relay by the plugin's ``pytest_addhooks``, so an
implementation is written like any pytest hook (marked optional, so that a run with the
plugin switched off, ``-p no:callqa``, still loads the conftest)::

    @pytest.hookimpl(optionalhook=True)
    def pytest_callqa_generate(model, case, config):
        if model == "my-live-model":
            return my_client.run(case.task, case.transcript_text)
        return None  # fall back to the recorded outputs
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .engine.core.cases import GoldenCase
    from .engine.registry import Registry
    from .engine.scorecard import Scorecard


@pytest.hookspec(firstresult=True)
def pytest_callqa_generate(model: str, case: GoldenCase, config: pytest.Config,
                           run: int) -> Any:
    """Return ``model``'s output for golden ``case``, or None to let the next implementation try.

    ``run`` is which of ``--callqa-runs N``'s runs the output is for (0 the first; an
    implementation may leave the argument out): with N > 1 a project that implements the hook
    is asked once per run, so an output it generates is sampled N times, as a live model's
    is (one output copied to every run measured no consistency).

    Called once per process for each (model, case) pair — and run — a test needs, before any of its
    results are scored; pairs are asked for in batches: with the LLM judge, before the first
    test, every pair of the run (an xdist worker: the pairs of its share of the cases, then
    those of another share's case when a test of it comes); for a live model, all of its
    pairs at once; otherwise all pairs at the first evaluation test
    without xdist, and pair by pair in a worker. The first non-None answer wins; the
    plugin's own implementation runs last: for a
    live model (``name=model@base_url`` in ``callqa_models``) it has the built-in generator
    produce the output, together with every other pending pair's, and otherwise reads the
    recorded file ``<callqa_outputs>/<model>/<case.id>.json``. Return the raw text the model
    produced (non-JSON text is scored, not rejected), a parsed JSON value, or a
    :class:`pytest_callqa.ModelOutput` to report token usage or cost with it.
    """


@pytest.hookspec
def pytest_callqa_register_metrics(registry: Registry, config: pytest.Config) -> None:
    """Register custom metrics on the session's ``registry`` with ``registry.register_metric``.

    Called once per process (the controller and every xdist worker), before the first golden
    case is scored and before ``--callqa-metrics`` lists the metrics. A custom metric is
    computed after a task's own metrics, shown in the scorecard and the JSON report, and not
    weighted into the task score.
    """


@pytest.hookspec
def pytest_callqa_scorecard(scorecard: Scorecard, config: pytest.Config) -> None:
    """Post-process the cross-model ``scorecard`` in place before it is printed and written.

    Called once, on the controller, at the end of a run that evaluated something: what an
    implementation changes (notes, extra models' cards...) is what the terminal and the JSON
    report show.
    """
