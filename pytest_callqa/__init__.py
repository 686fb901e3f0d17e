"""pytest-callqa: LLM evaluation of call-intelligence features as ordinary pytest tests.

The public names are resolved lazily: ``import pytest_callqa`` (which pytest does when it
loads the plugin) must not pull numpy, scikit-learn or openai into every test session.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "GoldenCase": "pytest_callqa.engine.cases",
    "Turn": "pytest_callqa.engine.cases",
    "CaseFileError": "pytest_callqa.engine.cases",
    "load_cases": "pytest_callqa.engine.cases",
    "load_case_file": "pytest_callqa.engine.cases",
    "evaluate": "pytest_callqa.engine.evaluate",
    "evaluate_many": "pytest_callqa.engine.evaluate",
    "TaskResult": "pytest_callqa.engine.results",
    "MetricResult": "pytest_callqa.engine.results",
    "build_scorecard": "pytest_callqa.engine.scorecard",
    "Scorecard": "pytest_callqa.engine.scorecard",
    "render_scorecard": "pytest_callqa.engine.report",
    "MetricSpec": "pytest_callqa.engine.registry",
    "Bands": "pytest_callqa.engine.registry",
    "default_registry": "pytest_callqa.engine.registry",
    "Judge": "pytest_callqa.engine.judges.base",
    "JudgeRequest": "pytest_callqa.engine.judges.base",
    "JudgeVerdict": "pytest_callqa.engine.judges.base",
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
    from .engine.cases import CaseFileError, GoldenCase, Turn, load_case_file, load_cases
    from .engine.embeddings import Embedder, get_embedder
    from .engine.evaluate import evaluate, evaluate_many
    from .engine.judges.base import Judge, JudgeRequest, JudgeVerdict
    from .engine.judges.heuristic import HeuristicJudge
    from .engine.registry import Bands, MetricSpec, default_registry
    from .engine.report import render_scorecard
    from .engine.results import MetricResult, TaskResult
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
