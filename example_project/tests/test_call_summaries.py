"""Call summaries: per-sentence sentiment, the call's purpose and highlights, the emotion mix."""

import pytest

from pytest_callqa import assert_metric, assert_text_score

pytestmark = pytest.mark.callqa(task="text")


def test_text_score_meets_the_release_bar(callqa_result):
    """Sentiment 30%, summary 50%, emotion 20%."""
    assert_text_score(callqa_result, min_score=0.85)


def test_summary_states_why_the_customer_called(callqa_result):
    """The call purpose feeds routing reports: at least a partial match (0.5) is required."""
    assert_metric(callqa_result, "call_intent_match", min=0.5)


def test_summaries_carry_no_contact_details(callqa_result):
    """A metric of our own, registered in conftest.py: summaries are shared widely, so phone
    numbers and e-mail addresses must not be copied into them."""
    assert_metric(callqa_result, "summary_has_no_contact_details", min=1.0)
