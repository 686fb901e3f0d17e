"""The release gate: what any model must meet on every golden case before it ships.

Each test here runs once per (model, golden case); `pytest -m eval` selects them. Whether a
test passes or fails, its result lands in the scorecard printed at the end of the run.
"""

from pytest_callqa import assert_no_blockers


def test_no_blocker_fires(callqa_result):
    """A blocker disqualifies a model for the task, whatever its average: a compliance question
    passed that the agent failed, an entity that was never configured, a critical fact lost in
    translation, an answer our parser cannot read."""
    assert_no_blockers(callqa_result)


def test_golden_case_says_where_it_comes_from(callqa_case):
    """Golden cases are the truth every model is measured against: each one names its source
    (and licence) so a reviewer can trace a disputed expected_outcome back to the call."""
    assert callqa_case.source, f"{callqa_case.id} has no source"
    assert callqa_case.tags, f"{callqa_case.id} has no tags"
