"""Keyword and topic detection: what the call was about, from the configured lists only."""

import pytest

from pytest_callqa import assert_entity_score, assert_metric

pytestmark = pytest.mark.callqa(task="entity")


def test_entity_score_meets_the_release_bar(callqa_result):
    assert_entity_score(callqa_result, min_score=0.85)


def test_only_configured_entities_are_reported(callqa_result):
    """Dashboards group calls by the configured keywords and topics; anything else is noise."""
    assert_metric(callqa_result, "config_adherence", min=1.0)
