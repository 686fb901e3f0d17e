"""QA scorecards: the model fills in the supervisor's call-review form.

Only the QA golden cases reach these tests (`pytestmark` below); each runs once per model.
"""

import pytest

from pytest_callqa import assert_metric, assert_qa_score

pytestmark = pytest.mark.callqa(task="qa")


def test_qa_score_meets_the_release_bar(callqa_result):
    """Question accuracy (70%), score gap (20%) and evidence-backed reasons (10%)."""
    assert_qa_score(callqa_result, min_score=0.85)


@pytest.mark.callqa(task="qa", tags=["verification"])
def test_identity_verification_questions_are_never_passed_by_mistake(callqa_result):
    """Calls where verification mattered: a falsely passed compliance question is a finding a
    supervisor would miss, so not one is tolerated."""
    assert_metric(callqa_result, "compliance_false_pass_rate", max=0.0)
