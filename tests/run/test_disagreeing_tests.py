"""Two tests of one (model, case) pair that disagree on whether the judge gave its verdict:
the scorecard and the report take the pair as the judge's error, whichever test's id sorts
first. Under xdist a failed judgement is kept for the other worker (transport.py), so this
needs the key locks to fail (a cache directory the workers cannot write); before, the report
showed the pair scored while one of its tests was the judge's error."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pytest_callqa.engine.core.results import MetricResult, TaskResult
from pytest_callqa.run.spool import packed
from pytest_callqa.run.summary import Summary

SCORED = TaskResult(task="qa", case_id="c", score=0.5, valid=True, blocked=False, blockers=[],
                    metrics={"e": MetricResult(0.5)}, model="m")
UNKNOWN = TaskResult(task="qa", case_id="c", score=None, valid=True, blocked=False,
                     blockers=[], metrics={"e": MetricResult.judge_failed("judge call failed")},
                     model="m", judge_errors=["e"])


@pytest.mark.parametrize("first", [SCORED, UNKNOWN], ids=["scored-sorts-first",
                                                           "error-sorts-first"])
def test_a_pair_one_of_whose_tests_was_the_judges_error_is_unknown(first: TaskResult) -> None:
    other = UNKNOWN if first is SCORED else SCORED
    summary = Summary(*cast(Any, [None] * 5))
    try:
        for test, result in (("test_a", first), ("test_z", other)):
            summary.record(f"test_eval.py::{test}[m-c]",
                           packed({"result": result.to_dict(), "output": {}}))
        [result] = summary.results()
    finally:
        summary.spool.close()
    assert (result.score, result.judge_errors) == (None, ["e"])
    assert result.metrics["e"].judge_error
