"""Transcript translation for the clinics we serve: Spanish and Hindi patients, English staff."""

import pytest

from pytest_callqa import assert_metric, assert_translation_score

pytestmark = pytest.mark.callqa(task="translation")


def test_translation_score_meets_the_release_bar(callqa_result):
    assert_translation_score(callqa_result, min_score=0.9)


def test_temperatures_and_durations_survive_translation(callqa_result):
    """A fever of 102 that becomes 101, or two days that become two weeks, changes a triage."""
    assert_metric(callqa_result, "critical_fact_preservation", min=0.97)


@pytest.mark.callqa(task="translation", tags=["hindi"])
def test_hindi_keeps_medical_terms_as_patients_say_them(callqa_result):
    assert_metric(callqa_result, "domain_term_preservation", min=0.95)
