"""pytest-callqa: LLM evaluation of call-intelligence features as ordinary pytest tests.

The public names are resolved lazily: ``import pytest_callqa`` (which pytest does when it
loads the plugin) must not pull numpy, scikit-learn or openai into every test session.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    "GoldenCase": "pytest_callqa.engine.core.cases",
    "Turn": "pytest_callqa.engine.core.cases",
    "CaseFileError": "pytest_callqa.engine.loading",
    "load_cases": "pytest_callqa.engine.loading",
    "load_case_file": "pytest_callqa.engine.loading",
    "evaluate": "pytest_callqa.engine.evaluate",
    "evaluate_many": "pytest_callqa.engine.evaluate",
    "TaskResult": "pytest_callqa.engine.core.results",
    "MetricResult": "pytest_callqa.engine.core.results",
    "JudgeUnavailable": "pytest_callqa.engine.core.results",
    "MetricCodeError": "pytest_callqa.engine.core.results",
    "build_scorecard": "pytest_callqa.engine.scorecard",
    "Scorecard": "pytest_callqa.engine.scorecard",
    "render_scorecard": "pytest_callqa.engine.report",
    "MetricSpec": "pytest_callqa.engine.core.metrics",
    "Bands": "pytest_callqa.engine.core.metrics",
    "default_registry": "pytest_callqa.engine.registry",
    "Judge": "pytest_callqa.engine.core.judging",
    "JudgeRequest": "pytest_callqa.engine.core.judging",
    "JudgeVerdict": "pytest_callqa.engine.core.judging",
    "HeuristicJudge": "pytest_callqa.engine.judges.heuristic",
    "get_embedder": "pytest_callqa.engine.embeddings",
    "Embedder": "pytest_callqa.engine.embeddings",
    "assert_qa_score": "pytest_callqa.assertions",
    "assert_entity_score": "pytest_callqa.assertions",
    "assert_text_score": "pytest_callqa.assertions",
    "assert_translation_score": "pytest_callqa.assertions",
    "assert_metric": "pytest_callqa.assertions",
    "assert_no_blockers": "pytest_callqa.assertions",
    "assert_agent_passes": "pytest_callqa.assertions",
    "assert_no_garbled_turns": "pytest_callqa.assertions",
    "assert_extraction_f1": "pytest_callqa.assertions",
    "assert_grounded": "pytest_callqa.assertions",
    "ModelOutput": "pytest_callqa.outputs",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .assertions import (
        assert_agent_passes,
        assert_entity_score,
        assert_extraction_f1,
        assert_grounded,
        assert_metric,
        assert_no_blockers,
        assert_no_garbled_turns,
        assert_qa_score,
        assert_text_score,
        assert_translation_score,
    )
    from .engine.core.cases import GoldenCase, Turn
    from .engine.core.judging import Judge, JudgeRequest, JudgeVerdict
    from .engine.core.metrics import Bands, MetricSpec
    from .engine.core.results import JudgeUnavailable, MetricCodeError, MetricResult, TaskResult
    from .engine.embeddings import Embedder, get_embedder
    from .engine.evaluate import evaluate, evaluate_many
    from .engine.judges.heuristic import HeuristicJudge
    from .engine.loading import CaseFileError, load_case_file, load_cases
    from .engine.registry import default_registry
    from .engine.report import render_scorecard
    from .engine.scorecard import Scorecard, build_scorecard
    from .outputs import ModelOutput


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_callqa' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
