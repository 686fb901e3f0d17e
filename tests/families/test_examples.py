"""The example project's agent, conversation, extraction and grounding cases and outputs."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.core.results import TaskResult
from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import load_cases
from pytest_callqa.engine.scorecard import build_scorecard
from tests.engine.helpers import TFIDF

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
FAMILIES = ("agent", "conversation", "extraction", "grounding")
MODELS = ("northwind-large", "northwind-mini", "budget-7b")


@pytest.fixture(scope="module")
def results() -> list[TaskResult]:
    cases = [c for c in load_cases(EXAMPLE / "cases") if c.task in FAMILIES]
    items = [(c, (EXAMPLE / "outputs" / m / f"{c.id}.json").read_text(encoding="utf-8"), m)
             for c in cases for m in MODELS]
    return evaluate_many(items, judge=HeuristicJudge(embedder=TFIDF), embedder=TFIDF)


def _by(results: list[TaskResult]) -> dict[tuple[str, str], list[TaskResult]]:
    grouped: dict[tuple[str, str], list[TaskResult]] = defaultdict(list)
    for r in results:
        grouped[(r.task, r.model or "")].append(r)
    return grouped


def test_every_family_has_three_cases_with_a_source(results: list[TaskResult]) -> None:
    cases = [c for c in load_cases(EXAMPLE / "cases") if c.task in FAMILIES]
    for family in FAMILIES:
        mine = [c for c in cases if c.task == family]
        assert len(mine) >= 3, family
        for case in mine:
            assert case.source and case.tags and case.id.startswith(family + "-")
    attribution = (EXAMPLE / "cases" / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for case in cases:
        assert f"`{case.id}`" in attribution, case.id


def test_every_output_is_scored_and_has_usage(results: list[TaskResult]) -> None:
    assert len(results) == 3 * len({r.case_id for r in results})
    for model in MODELS:
        usage = json.loads((EXAMPLE / "outputs" / model / "_usage.json").read_text())
        for r in results:
            assert {"prompt_tokens", "completion_tokens"} <= set(usage[r.case_id])
    for r in results:
        assert r.metrics["response_structure_compliance"].value == 1.0, (r.case_id, r.model)
        assert r.valid, (r.case_id, r.model, r.notes)


def test_models_rank_as_designed(results: list[TaskResult]) -> None:
    grouped = _by(results)
    for family in FAMILIES:
        means = [sum(r.score or 0.0 for r in grouped[(family, m)]) / 3 for m in MODELS]
        assert means[0] > means[1] > means[2], (family, means)


def test_the_budget_model_trips_each_familys_failure_modes(results: list[TaskResult]) -> None:
    budget = _by(results)
    agent = budget[("agent", "budget-7b")]
    assert all(r.metrics["passed"].value == 0.0 for r in agent)
    codes = {r.metrics[m].details.get("failure_code") for r in agent
             for m in ("tool_routing", "parameter_extraction") if r.metrics[m].scored}
    assert {"wrong_tool_selected", "fabricated_parameter"} <= codes
    conversation = budget[("conversation", "budget-7b")]
    assert all((r.metrics["garbled_turn_rate"].value or 0.0) > 0.10 for r in conversation)
    extraction = budget[("extraction", "budget-7b")]
    assert all(r.metrics["degenerate_scores"].value == 1.0 for r in extraction)
    grounding = budget[("grounding", "budget-7b")]
    assert all(r.metrics["grounding_verdict"].details["verdict"] == "FAIL" and r.blocked
               for r in grounding)


def test_each_family_is_its_own_scorecard_section(results: list[TaskResult]) -> None:
    card = build_scorecard(results)
    assert card.task_order == list(FAMILIES)
    large: Any = card.models["northwind-large"]
    assert set(large.tasks) == set(FAMILIES)
    # The Final Score formulas weight only the call-intelligence tasks.
    assert large.final_score_b is None and large.missing_tasks == []
