"""The metric definitions built when a task module is imported, field by field.

These specs are built once at import, before mutmut can switch a mutant on, so mutation
testing cannot check them (their builders carry ``# pragma: no mutate block``); this table
is what notices a changed band, weight, visibility or blocker flag instead. Figures are the
seed's (call-intelligence framework v6, the entity metrics and their 47/29/24 weights).
"""

from __future__ import annotations

import pytest

from pytest_callqa.engine.core.metrics import Bands
from pytest_callqa.engine.registry import builtin_tasks
from pytest_callqa.engine.tasks import entity

_KEYWORD = Bands(good=0.90, acceptable=0.85)
_TOPIC = Bands(good=0.88, acceptable=0.80)

# id, name, scale, threshold, bands, weight, shown, blocker
ENTITY_TABLE = [
    ("keyword_precision", "Keyword Precision", "0-1", ">= 0.90", _KEYWORD, None, False, False),
    ("keyword_recall", "Keyword Recall", "0-1", ">= 0.90", _KEYWORD, None, False, False),
    ("keyword_f1", "Keyword F1", "0-1", ">= 0.90", _KEYWORD, 0.47, True, False),
    ("topic_precision", "Topic Precision", "0-1", ">= 0.88", _TOPIC, None, False, False),
    ("topic_recall", "Topic Recall", "0-1", ">= 0.88", _TOPIC, None, False, False),
    ("topic_f1", "Topic F1", "0-1", ">= 0.88", _TOPIC, 0.29, True, False),
    ("config_adherence", "Configured Entity Compliance", "0-1", ">= 0.95 | < 0.95 blocker",
     Bands(good=1.0, acceptable=0.95, blocker=0.95), 0.24, True, True),
    ("cross_language_match_rate", "Cross-Language Match Rate", "0-1", ">= 0.90",
     Bands(good=0.90), None, True, False),
    ("fabricated_entity_count", "Fabricated Entity Count", "count", "0 | > 2 blocker",
     Bands(good=0, acceptable=2, blocker=2, higher_is_better=False), None, True, True),
    ("response_structure_compliance", "Response Structure Compliance", "0/1", "must = 1",
     Bands(good=1.0, blocker=1.0), None, True, True),
]


def _row(spec):
    return (spec.id, spec.name, spec.scale, spec.threshold, spec.bands, spec.weight,
            spec.shown, spec.blocker)


def test_entity_metric_table_is_the_seeds():
    assert [_row(spec) for spec in entity.METRICS] == ENTITY_TABLE
    assert {spec.task for spec in entity.METRICS} == {"entity"}


def test_precision_and_recall_descriptions_name_their_kind():
    descriptions = {spec.id: spec.description for spec in entity.METRICS}
    assert descriptions["keyword_precision"] == (
        "Detected keywords that are in expected_outcome / all detected keywords.")
    assert descriptions["topic_recall"] == (
        "Expected topics the model detected / all expected topics.")
    assert descriptions["topic_f1"] == "Harmonic mean of topic precision and recall."


@pytest.mark.parametrize("task", sorted(t.name for t in builtin_tasks()))
def test_every_task_has_the_structure_prerequisite(task):
    specs = {t.name: t for t in builtin_tasks()}[task].metrics
    structure = [spec for spec in specs if spec.id == "response_structure_compliance"]
    assert len(structure) == 1
    spec = structure[0]
    assert (spec.task, spec.name, spec.scale, spec.threshold) == (
        task, "Response Structure Compliance", "0/1", "must = 1")
    assert spec.bands == Bands(good=1.0, blocker=1.0)
    assert (spec.blocker, spec.shown, spec.weight, spec.source) == (
        True, True, None, "programmatic")
    assert spec.description == "Output has exactly the task's keys and JSON types (prerequisite)."
