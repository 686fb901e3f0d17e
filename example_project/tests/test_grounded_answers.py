"""Answers given from a call must stay grounded in it: no invented prices, dates or claims."""

import pytest

from pytest_callqa import assert_grounded


@pytest.mark.callqa(task="grounding")
def test_answers_are_grounded_in_the_call(callqa_result):
    """PASS, or WARN when an answer is relevant and grounded but leaves part of the question
    open; any hallucination above 0.5 fails."""
    assert_grounded(callqa_result, allow_warn=True)
