"""Judge repeats combined into one verdict: median, majority, failed repeats, the spread."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.judging import JudgeRequest, JudgeVerdict
from pytest_callqa.engine.core.results import TaskResult
from pytest_callqa.engine.judges.repeats import RepeatedJudge, combine, repeat_agreement

CASE = GoldenCase.model_validate({
    "id": "c", "task": "qa", "transcript": [{"speaker": "agent", "text": "Hello."}],
    "config": {"questions": [{"question_id": "Q1", "text": "Greeted?", "type": "PASS_FAIL",
                              "max_score": 1}]},
    "expected_outcome": {"questions": [{"question_id": "Q1", "score": 1, "max_score": 1,
                                        "type": "PASS_FAIL", "reason": "Said hello."}]},
})


def request(scale: str) -> JudgeRequest:
    return JudgeRequest(case=CASE, task="qa", metric="m", scale=scale,  # type: ignore[arg-type]
                        instructions="", model_output={})


def verdicts(*scores: float | None) -> list[JudgeVerdict]:
    return [JudgeVerdict(metric="m", score=s, reason=f"ask {i}", judge_error=s is None,
                         usage={"calls": 1.0}) for i, s in enumerate(scores)]


def test_median_on_ordinal_scales_stays_on_the_scale() -> None:
    # likert5 repeats 2, 5, 4: median 4; spread (5 - 2) / 4 = 0.75 > 0.25.
    found = combine(request("likert5"), verdicts(2.0, 5.0, 4.0), tolerance=0.25)
    assert found.score == 4.0 and found.reason == "ask 2"
    assert found.details == {"judge_repeats": [2.0, 5.0, 4.0], "repeat_spread": 0.75,
                             "repeats_disagree": True}
    assert found.usage == {"calls": 3.0}
    # Two repeats 3 and 4: the lower middle, 3 (on the grid, the cautious one).
    assert combine(request("likert5"), verdicts(4.0, 3.0), tolerance=0.25).score == 3.0
    # On the 0-1 scale the two middles average: (0.4 + 0.6) / 2; spread 0.2 <= 0.25.
    unit = combine(request("unit"), verdicts(0.6, 0.4), tolerance=0.25)
    assert unit.score == pytest.approx(0.5) and not unit.details["repeats_disagree"]


def test_a_verdict_with_counts_keeps_one_ask_whole() -> None:
    # Two asks, 1.0 (10 of 10 facts supported) and 0.5 (5 of 10): the mean, 0.75, was kept
    # beside the first ask's counts, and the rates pooled from them read 10 of 10.
    counted = dataclasses.replace(request("unit"), reply_fields=(
        ("supported", "count", "facts supported"), ("unsupported", "count", "facts not")))
    asks = [dataclasses.replace(v, details={"supported": n, "unsupported": 10 - n})
            for v, n in zip(verdicts(1.0, 0.5), (10, 5), strict=True)]
    found = combine(counted, asks, tolerance=0.25)
    assert found.score == 0.5 and found.reason == "ask 1"
    assert (found.details["supported"], found.details["unsupported"]) == (5, 5)
    assert found.details["judge_repeats"] == [1.0, 0.5]
    # A failed ask that could have moved it still makes it a judge error.
    assert combine(counted, verdicts(0.9, None, 0.8), 0.25).judge_error
    # Whether failed asks could move it is asked of the verdict's own median: of [0, 0] and
    # two failed asks, the lower middle stays 0 whatever they say (one ask's counts kept)...
    kept = combine(counted, verdicts(0.0, 0.0, None, None), 0.25)
    assert (kept.judge_error, kept.score) == (False, 0.0)
    # ... while the mean of the two middles of [0, 0, 1, 1], a verdict without counts, is not.
    assert combine(request("unit"), verdicts(0.0, 0.0, None, None), 0.25).judge_error


def test_majority_on_a_binary_scale() -> None:
    assert combine(request("binary"), verdicts(1.0, 0.0, 1.0), 0.25).score == 1.0
    # A tie is no majority: 0.
    assert combine(request("binary"), verdicts(1.0, 0.0), 0.25).score == 0.0


def test_failed_repeats_are_left_out_and_all_failed_is_a_judge_error() -> None:
    found = combine(request("likert5"), verdicts(None, 3.0, 3.0), 0.25)
    assert found.score == 3.0 and found.details["judge_repeats"] == [None, 3.0, 3.0]
    assert found.details["repeat_spread"] == 0.0
    failed = combine(request("likert5"), verdicts(None, None), 0.25)
    assert failed.judge_error and failed.score is None and failed.usage == {"calls": 2.0}


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.asked: list[JudgeRequest] = []

    def judge(self, requests: Any) -> list[JudgeVerdict]:
        self.asked += requests
        return [JudgeVerdict(metric=r.metric, score=float(r.repeat % 2), reason="")
                for r in requests]


def test_repeated_judge_asks_each_request_k_times() -> None:
    inner = Counting()
    judge = RepeatedJudge(inner, 3, 0.25)
    [found] = judge.judge([request("binary")])
    assert [r.repeat for r in inner.asked] == [0, 1, 2]
    assert len({r.key for r in inner.asked}) == 3
    # Repeats 0, 1, 0: majority 0, spread 1.
    assert found.score == 0.0 and found.details["repeats_disagree"]
    assert judge.name == "counting" and judge.asked is inner.asked
    with pytest.raises(ValueError, match="judge repeats must be >= 1"):
        RepeatedJudge(inner, 0, 0.25)
    with pytest.raises(ValueError, match="repeat tolerance must be >= 0"):
        RepeatedJudge(inner, 2, -0.1)


def test_agreement_per_metric_from_judge_records() -> None:
    steady = combine(request("likert5"), verdicts(4.0, 4.0), 0.25).record("j")
    shaky = combine(request("likert5"), verdicts(1.0, 5.0), 0.25).record("j")
    single = JudgeVerdict(metric="m", score=2.0, reason="").record("j")
    result = TaskResult(task="qa", case_id="c", score=1.0, valid=True, blocked=False,
                        blockers=[], metrics={}, judge_records=[steady, shaky, single])
    assert repeat_agreement([result]) == {
        "m": {"n": 2, "exact": 0.5, "mean_spread": 0.5, "disagree": 1, "failed_asks": 0}}
    assert "repeats" not in single
    # A verdict asked once before the others is passed over, not the end of the result's
    # records; the mean spread is the spreads', within the tolerance or not.
    near = combine(request("likert5"), verdicts(1.0, 2.0), 0.25).record("j")
    result.judge_records = [single, near, steady]
    assert repeat_agreement([result]) == {
        "m": {"n": 2, "exact": 0.5, "mean_spread": 0.125, "disagree": 0, "failed_asks": 0}}


def test_an_ask_that_failed_is_no_disagreement() -> None:
    # One ask of three a server error: the verdict counted as not exact, so an outage read
    # as the judge disagreeing with itself.
    failed = JudgeVerdict(metric="m", score=None, reason="judge call failed: HTTP 500",
                          judge_error=True)
    two_agree = combine(request("likert5"), [*verdicts(4.0, 4.0), failed], 0.25).record("j")
    one_left = combine(request("likert5"), [*verdicts(4.0), failed, failed], 0.25).record("j")
    result = TaskResult(task="qa", case_id="c", score=1.0, valid=True, blocked=False,
                        blockers=[], metrics={}, judge_records=[two_agree, one_left])
    assert two_agree["repeats"] == [4.0, 4.0, None]
    assert repeat_agreement([result]) == {
        "m": {"n": 1, "exact": 1.0, "mean_spread": 0.0, "disagree": 0, "failed_asks": 2}}
    # Nothing two asks scored: no agreement to give.
    alone = TaskResult(task="qa", case_id="c", score=1.0, valid=True, blocked=False,
                       blockers=[], metrics={}, judge_records=[one_left])
    assert repeat_agreement([alone])["m"]["exact"] is None
    # No ask scored: still one verdict with asks that gave no score (it was not counted).
    none = combine(request("likert5"), [failed, failed, failed], 0.25)
    assert none.judge_error and none.record("j")["repeats"] == [None, None, None]
    lost = TaskResult(task="qa", case_id="c", score=1.0, valid=True, blocked=False,
                      blockers=[], metrics={}, judge_records=[two_agree, none.record("j")])
    assert repeat_agreement([lost])["m"]["failed_asks"] == 2


def test_a_requests_key_is_worked_out_once_and_a_repeat_gets_its_own() -> None:
    # A batch asks each request's key several times (to group it, to hand its verdicts on);
    # the hash covers the whole case, so it is kept rather than worked out at every asking.
    asked = request("likert5")
    assert asked.key is asked.key
    repeated = dataclasses.replace(asked, repeat=1)
    assert repeated.key != asked.key
    assert dataclasses.replace(repeated, repeat=0).key == asked.key


def test_failed_asks_that_could_move_the_verdict_make_it_a_judge_error() -> None:
    # Of [5, a server error, 2] the lower middle of what was left, 2, failed a passing
    # model's turn; [1, error, 0] was a tie, 0. Had the failed ask answered, either verdict
    # could have been the other one.
    for scale, scores in (("likert5", (5.0, None, 2.0)), ("binary", (1.0, None, 0.0)),
                          ("unit", (0.9, None, 0.8))):
        found = combine(request(scale), verdicts(*scores), 0.25)
        assert found.judge_error and found.score is None, scale
        assert found.reason == ("ask 1 (1 of 3 asks failed, and the scores of the others do "
                                "not decide the verdict)")
        assert found.details["judge_repeats"] == list(scores)
    # Whatever the failed asks would have said, the others decide: the verdict stands.
    for scale, scores, kept in (("likert5", (5.0, 5.0, None), 5.0),
                                ("likert5", (2.0, 4.0, 4.0, 4.0, None), 4.0),
                                ("binary", (1.0, 1.0, None), 1.0),
                                ("binary", (0.0, 0.0, None), 0.0)):
        assert combine(request(scale), verdicts(*scores), 0.25).score == kept, scores


def test_an_ask_that_stayed_off_the_scale_counts_as_the_scales_lowest() -> None:
    # Of [7.5 (off the 1-5 scale, flagged), 4, 2] the raw 7.5 was the highest, the median 4
    # and the turn clean; the families score an off-scale reply 1, so the median is 2.
    off, four, two = verdicts(7.5, 4.0, 2.0)
    asks = [dataclasses.replace(off, flagged=True), four, two]
    found = combine(request("likert5"), asks, 0.25)
    assert (found.score, found.reason, found.flagged) == (2.0, "ask 2", True)
    assert found.details["judge_repeats"] == [1.0, 4.0, 2.0]
    # The spread is of the scores given on the scale, 4 and 2: (4 - 2) / 4; with the off-scale
    # ask's 1 it read 0.75, beside an agreement that leaves that ask out.
    assert found.details["repeat_spread"] == 0.5
    # Kept by an in-scale ask, the verdict still says one ask was unusable.
    steady = combine(request("likert5"), [asks[0], four, dataclasses.replace(four)], 0.25)
    assert (steady.score, steady.flagged) == (4.0, True)
    assert not combine(request("likert5"), [four, two, two], 0.25).flagged


def test_an_ask_off_the_scale_is_left_out_of_the_agreement() -> None:
    # Before: [7.5 off the 1-5 scale, 1] was recorded [1, 1] and counted an exact agreement,
    # though the judge never said 1 twice.
    off, one, four = verdicts(7.5, 1.0, 4.0)
    off = dataclasses.replace(off, flagged=True)
    alike = combine(request("likert5"), [off, one], 0.25)
    assert alike.details["judge_repeats"] == [1.0, 1.0]
    assert alike.details["repeats_off_scale"] == [0]
    record = alike.record("j")
    assert record["repeats_off_scale"] == [0]
    steady = combine(request("likert5"), [one, dataclasses.replace(one), off], 0.25).record("j")
    assert steady["repeats_off_scale"] == [2]
    result = TaskResult(task="qa", case_id="c", score=1.0, valid=True, blocked=False,
                        blockers=[], metrics={}, judge_records=[record, steady])
    assert repeat_agreement([result]) == {
        "m": {"n": 1, "exact": 1.0, "mean_spread": 0.0, "disagree": 0, "failed_asks": 2}}
    # 5, 5 and one off the scale: the judge agreed with itself, no spread to flag (before:
    # spread 1.0 and repeats_disagree, beside an exact agreement of 1.0 in the header).
    five = verdicts(5.0)[0]
    agreed = combine(request("likert5"), [five, dataclasses.replace(five), off], 0.25)
    assert (agreed.score, agreed.details["repeat_spread"]) == (5.0, 0.0)
    assert not agreed.details["repeats_disagree"]
    assert combine(request("likert5"), [off, dataclasses.replace(off)], 0.25).details[
        "repeat_spread"] == 0.0
    # Asks on the scale keep the record's shape: no off-scale positions.
    assert "repeats_off_scale" not in combine(request("likert5"), [one, four], 0.25).record("j")
    # Where the failed asks could move the verdict, the off-scale one is still named.
    failed = JudgeVerdict(metric="m", score=None, reason="HTTP 500", judge_error=True)
    moved = combine(request("likert5"), [off, failed, four], 0.25)
    assert moved.judge_error and moved.details["repeats_off_scale"] == [0]


def test_what_a_combined_verdict_keeps_of_its_asks() -> None:
    # Every ask failed: the verdict is the first ask's, its usage every ask's.
    asks = [dataclasses.replace(v, details={"status": 500 + i})
            for i, v in enumerate(verdicts(None, None, None))]
    failed = combine(request("likert5"), asks, 0.25)
    assert (failed.reason, failed.usage) == ("ask 0", {"calls": 3.0})
    assert failed.details == {"status": 500, "judge_repeats": [None, None, None]}
    # Failed asks that could move the verdict: their usage is still the whole of it.
    moved = combine(request("likert5"), verdicts(5.0, None, 2.0), 0.25)
    assert moved.judge_error and moved.usage == {"calls": 3.0}
    # A spread at the tolerance is no disagreement; the spread is kept to six places.
    at = combine(request("likert5"), verdicts(1.0, 2.0), 0.25)
    assert at.details["repeat_spread"] == 0.25 and not at.details["repeats_disagree"]
    third = combine(request("unit"), verdicts(0.0, 1 / 3), 0.5)
    assert third.details["repeat_spread"] == 0.333333
