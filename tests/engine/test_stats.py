"""Bootstrap intervals, pass^k and pass@k, mean and standard deviation, the pass rules and
the mean of runs, against figures worked out by hand."""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

from pytest_callqa.engine import stats
from pytest_callqa.engine.core.results import MetricResult, TaskResult
from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.report import render_scorecard
from pytest_callqa.engine.runs import mean_result, metric_specs, rule_passes, run_stats
from pytest_callqa.engine.stats import (
    around,
    bootstrap_mean,
    bootstrap_ratio,
    bootstrap_weighted,
    mean_sd,
    overlaps,
    pass_at_k,
    pass_hat_k,
)


def test_exact_bootstrap_of_five_passes_and_one_failure() -> None:
    # Resampling 6 cases of [1,1,1,1,1,0]: the number of ones j is Binomial(6, 5/6).
    # P(j <= 2) = 0.0087 (< 0.025) and P(j <= 3) = 0.0087 + 20 (5/6)^3 (1/6)^3 = 0.0623, so
    # the 2.5 % quantile is 3/6 = 0.5; P(j <= 5) = 1 - (5/6)^6 = 0.665 < 0.975, so the
    # 97.5 % quantile is 6/6 = 1.
    assert bootstrap_mean([1, 1, 1, 1, 1, 0]) == (0.5, 1.0)
    assert bootstrap_mean([0, 0, 0, 0, 0, 1]) == (0.0, 0.5)


def test_exact_bootstrap_of_two_and_three_cases() -> None:
    # [0, 1]: means 0, 0.5, 1 with probability 1/4, 1/2, 1/4; F(0) = 0.25 reaches 0.025
    # and only F(1) = 1 reaches 0.975.
    assert bootstrap_mean([0.0, 1.0]) == (0.0, 1.0)
    # [0.2, 0.4, 0.9]: the lowest mean (0.2, all three draws the same) has 1/27 = 0.037 >=
    # 0.025; the highest 0.9 also 1/27, so F just below it is 26/27 = 0.963 < 0.975.
    assert bootstrap_mean([0.2, 0.4, 0.9]) == (0.2, 0.9)
    # One case: every resample gives it back, a zero-width interval that estimates nothing.
    assert bootstrap_mean([0.7]) is None


def test_resampled_bootstrap_of_ten_cases() -> None:
    # 10 cases (too many for the exact distribution): j ~ Binomial(10, 0.9) ones.
    # P(j <= 6) = 0.0128, P(j <= 7) = 0.0702 -> 2.5 % quantile 0.7; P(j <= 9) = 0.651 ->
    # 97.5 % quantile 1.0. 2000 seeded draws land on the same grid points.
    assert bootstrap_mean([1.0] * 9 + [0.0]) == (0.7, 1.0)
    values = [0.1 * i for i in range(12)]
    assert bootstrap_mean(values) == bootstrap_mean(values)


def test_a_sampled_interval_is_the_50th_and_1950th_of_2000_draws() -> None:
    # (1 - 0.95) / 2 is 0.025000000000000022: the lower end was the 51st draw, one too high.
    values = np.random.default_rng(7).random(9)
    draws = np.sort(values[np.random.default_rng(stats.SEED).integers(
        0, 9, (stats.RESAMPLES, 9))].mean(axis=1))
    assert bootstrap_mean(list(values)) == (float(draws[49]), float(draws[1949]))


def test_bootstrap_of_no_value_and_non_finite_values() -> None:
    assert bootstrap_mean([]) is None
    assert bootstrap_mean([float("nan")]) is None
    assert bootstrap_mean([float("inf"), 1.0]) is None  # one finite value
    assert bootstrap_mean([float("inf"), 0.0, 1.0]) == (0.0, 1.0)


def test_values_all_alike_have_no_interval() -> None:
    # Six cases alike: every resample gave them back, [1.0, 1.0], a zero-width interval
    # that set the model apart from any other whose interval did not reach 1.0, as one case
    # did before it was given none.
    assert bootstrap_mean([1.0] * 6) is None
    assert bootstrap_mean([0.9, 0.9, 0.9 + 1e-15]) is None  # the same mean, summed otherwise
    assert bootstrap_mean([0.9, 0.9, 0.91]) is not None
    # A pooled rate whose cases all have one rate (0 of 2, 0 of 3; 1 of 3, 2 of 6) likewise.
    assert bootstrap_ratio([0, 0, 0], [2, 3, 4]) is None
    assert bootstrap_ratio([1, 2], [3, 6]) is None
    # A final score over tasks none of which varies is the zero-width interval again.
    assert bootstrap_weighted([([0.7, 0.7], 0.5), ([0.9, 0.9], 0.3)]) is None
    # One task that varies beside tasks all alike draws one: their cases not differing is
    # evidence, and leaving it out tied a model perfect in several tasks with every other.
    interval = bootstrap_weighted([([0.0, 0.5, 1.0], 0.2), ([0.7, 0.7], 0.5),
                                   ([0.9, 0.9], 0.3)])
    assert interval is not None and interval[0] < interval[1]


def test_pooled_rate_interval() -> None:
    # No denominator at all: no rate, no interval.
    assert bootstrap_ratio([0, 0], [0, 0]) is None
    assert bootstrap_ratio([], []) is None
    assert bootstrap_ratio([1], [2, 3]) is None
    # One case carries every unit: resampling gave back its own rate each time, a zero-width
    # interval that estimates nothing, as for one case alone.
    assert bootstrap_ratio([1] + [0] * 9, [3] + [0] * 9) is None
    assert bootstrap_ratio([1, 0, 0], [3, 0, 2]) == bootstrap_ratio([1, 0], [3, 2])
    low, high = bootstrap_ratio([1, 0, 2, 0, 0, 1, 0, 0, 0, 0], [4] * 10)  # type: ignore[misc]
    assert 0.0 <= low <= 4 / 40 <= high <= 0.3


def test_weighted_interval_of_a_final_score() -> None:
    # The fixed part moves the interval by its weighted value and narrows it by its weight.
    assert bootstrap_weighted([([0.0, 1.0], 0.35), ([0.0, 1.0], 0.35)], fixed=[(1.0, 0.3)]) \
        == pytest.approx((0.3, 1.0))
    # A task without a case is left out, as the point estimate leaves it out.
    assert bootstrap_weighted([([0.0, 1.0], 0.5), ([], 0.5)]) \
        == bootstrap_weighted([([0.0, 1.0], 1.0)])
    assert bootstrap_weighted([([], 1.0)]) is None
    # No task with two cases: nothing varies, so no interval (it was a zero-width one).
    assert bootstrap_weighted([([0.5], 0.5), ([0.9], 0.5)]) is None


def test_a_one_case_task_leaves_the_final_score_without_an_interval() -> None:
    # The one-case tasks were held fixed beside the resampled one: [0.62, 0.82], for a figure
    # whose 0.8 of weight rested on two single cases, as if they were known exactly.
    assert bootstrap_weighted([([0.0, 0.5, 1.0], 0.2), ([0.7], 0.5), ([0.9], 0.3)]) is None
    # Two cases that differ in each: that interval stays.
    assert bootstrap_weighted([([0.0, 0.5, 1.0], 0.2), ([0.6, 0.8], 0.5), ([0.8, 1.0], 0.3)]) \
        is not None


def test_around_and_overlaps() -> None:
    assert around((0.9600000000000001, 0.97), 0.96) == (0.96, 0.97)
    assert around((0.5, 0.6), 0.4) == (0.5, 0.6)
    assert around(None, 0.4) is None
    assert overlaps((0.1, 0.5), (0.5, 0.9))
    assert not overlaps((0.1, 0.4), (0.5, 0.9))
    assert not overlaps(None, (0.5, 0.9))


def test_pass_hat_k_and_pass_at_k() -> None:
    assert pass_hat_k(2, 3, 3) == 0.0 and pass_at_k(2, 3, 3) == 1.0
    assert pass_hat_k(2, 3, 2) == pytest.approx(1 / 3)  # C(2,2) / C(3,2)
    assert pass_at_k(2, 3, 2) == 1.0                     # 1 - C(1,2) / C(3,2)
    assert pass_hat_k(2, 3, 1) == pytest.approx(2 / 3) == pass_at_k(2, 3, 1)
    assert pass_at_k(1, 4, 2) == pytest.approx(0.5)      # 1 - C(3,2) / C(4,2) = 1 - 3/6
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_at_k(0, 3, 3) == 0.0
    with pytest.raises(ValueError, match="passes=4, runs=3"):
        pass_hat_k(4, 3, 3)
    with pytest.raises(ValueError, match="k=0"):
        pass_at_k(1, 3, 0)


def test_mean_and_sample_standard_deviation() -> None:
    # The seed's example: 0.91, 0.90, 0.88 -> mean 0.896667, squared deviations
    # 0.000178 + 0.000011 + 0.000278 = 0.000467, / 2 -> sd 0.015275.
    mean, sd = mean_sd([0.91, 0.90, 0.88])  # type: ignore[misc]
    assert mean == pytest.approx(0.896667, abs=1e-6) and sd == pytest.approx(0.015275, abs=1e-6)
    # One value has no spread to estimate: 0 read as "perfectly stable".
    assert mean_sd([0.4]) == (0.4, None)
    assert mean_sd([]) is None


def test_pass_rules_and_run_stats() -> None:
    assert not rule_passes("all", [True, False, True])
    assert rule_passes("majority", [True, False, True])
    assert not rule_passes("majority", [True, False])
    assert rule_passes("all", [True, True])
    with pytest.raises(ValueError, match="not decided by run outcomes"):
        rule_passes("mean", [True])
    with pytest.raises(ValueError, match="no run outcome"):
        rule_passes("all", [])
    stats = run_stats([True, False, True])
    assert (stats.pass_rate, stats.pass_hat_k(3), stats.pass_at_k(3), stats.flaky) == (
        pytest.approx(2 / 3), 0.0, 1.0, True)
    assert stats.pass_hat_k(2) == pytest.approx(1 / 3)  # C(2,2) / C(3,2)
    assert not run_stats([False, False]).flaky


def _qa_run(run: int, evidence: MetricResult, *, score: float | None = 0.9,
            valid: bool = True, blockers: tuple[str, ...] = ()) -> TaskResult:
    return TaskResult(task="qa", case_id="c", score=score, valid=valid,
                      blocked=bool(blockers), blockers=list(blockers), model="m", run=run,
                      metrics={"evidence_backed_reasoning": evidence})


def test_the_mean_of_runs_is_rated_by_the_metric_bands() -> None:
    specs = metric_specs(default_registry(), "qa")
    # Evidence-backed reasoning: good at >= 0.90. Runs 0.8 and 1.0 average 0.9: good,
    # though one run alone was not.
    runs = [_qa_run(0, MetricResult(0.8, rating="acceptable")),
            _qa_run(1, MetricResult(1.0, rating="good"), score=0.7)]
    mean = mean_result(runs, specs)
    metric = mean.metrics["evidence_backed_reasoning"]
    assert metric.value == pytest.approx(0.9) and metric.rating == "good"
    assert mean.score == pytest.approx(0.8) and mean.valid


def test_the_mean_of_runs_keeps_judge_errors_and_blockers() -> None:
    specs = metric_specs(default_registry(), "qa")
    error = MetricResult(None, scored=False, judge_error=True, reason="judge call failed")
    mean = mean_result([_qa_run(0, MetricResult(1.0)), _qa_run(1, error, score=None)], specs)
    assert mean.metrics["evidence_backed_reasoning"].judge_error
    assert mean.score is None
    # A blocker the judge could not decide in a run stays one the helpers refuse to pass.
    from pytest_callqa import assert_no_blockers
    from pytest_callqa.engine.core.results import JudgeUnavailable

    undecided = MetricResult(None, scored=False, judge_error=True, reason="judge call failed",
                             details={"blocker_metric": True})
    runs = [_qa_run(0, MetricResult(0.0)), _qa_run(1, undecided, score=None)]
    for run in runs:
        run.judge_errors = ["evidence_backed_reasoning"] if run.run else []
    with pytest.raises(JudgeUnavailable):
        assert_no_blockers(mean_result(runs, specs))
    blocked = mean_result([
        _qa_run(0, MetricResult(1.0)),
        _qa_run(1, MetricResult(1.0, blocker=True), score=None, valid=False,
                blockers=("evidence_backed_reasoning",)),
    ], specs)
    assert blocked.blocked and not blocked.valid and blocked.score is None
    assert blocked.metrics["evidence_backed_reasoning"].rating == "blocker"
    with pytest.raises(ValueError, match="no run to average"):
        mean_result([], specs)


def test_a_run_without_a_value_leaves_the_mean_unknown_unless_the_metric_does_not_apply(
        ) -> None:
    specs = metric_specs(default_registry(), "qa")
    # Run 3's output failed its structure check: the mean of runs 1 and 2 alone (1.0) passed
    # assert_metric(min=0.95) under --callqa-pass-rule mean, beside a QA score of 0.665.
    broken = MetricResult.not_scored("not scored: the output failed the structure check")
    runs = [_qa_run(0, MetricResult(1.0)), _qa_run(1, MetricResult(1.0)),
            _qa_run(2, broken, score=None, valid=False, blockers=("structure",))]
    mean = mean_result(runs, specs)
    metric = mean.metrics["evidence_backed_reasoning"]
    assert not metric.scored and metric.value is None and not mean.valid
    assert metric.reason == ("not scored: the mean of the runs is unknown, run 3 scored no "
                             "value (the output failed the structure check)")
    from pytest_callqa import assert_metric

    with pytest.raises(AssertionError, match="evidence_backed_reasoning was not scored"):
        assert_metric(mean, "evidence_backed_reasoning", min=0.95)
    # A run the metric does not apply to adds nothing to the mean, and takes nothing away.
    absent = MetricResult.not_scored("n/a: no tool call expected and none made")
    mean = mean_result([_qa_run(0, MetricResult(0.8)), _qa_run(1, absent)], specs)
    assert mean.metrics["evidence_backed_reasoning"].value == pytest.approx(0.8)
    # A blocker no estimate was made of in one run is unknown in the mean.
    unknown = MetricResult.not_scored("not scored: the heuristic judge cannot estimate it",
                                      blocker_metric=True)
    from pytest_callqa import assert_no_blockers
    from pytest_callqa.engine.core.results import EvaluationUnavailable

    with pytest.raises(EvaluationUnavailable, match="whether a blocker fired"):
        assert_no_blockers(mean_result([_qa_run(0, MetricResult(1.0)), _qa_run(1, unknown)],
                                       specs))


def _garbled_run(run: int, garbled: int, turns: int = 10) -> TaskResult:
    rate = garbled / turns
    metric = MetricResult(rate, rating="good" if rate < 0.05 else "fail",
                          details={"threshold": 0.05, "passed": rate < 0.05,
                                   "numerator": garbled, "denominator": turns})
    return TaskResult(task="conversation", case_id="c", score=0.9, valid=True,
                      blocked=False, blockers=[], model="m", run=run,
                      metrics={"garbled_turn_rate": metric})


def test_the_mean_of_runs_keeps_what_every_run_gave_alike() -> None:
    # Before: the mean kept only {"runs": ...}, so assert_no_garbled_turns (which reads
    # "passed") failed every mean, and assert_agent_passes fell back to a threshold of 75
    # whatever the case configured.
    from pytest_callqa import assert_no_garbled_turns

    specs = metric_specs(default_registry(), "conversation")
    alike = mean_result([_garbled_run(0, 0), _garbled_run(1, 0)], specs)
    details = alike.metrics["garbled_turn_rate"].details
    assert details == {"threshold": 0.05, "passed": True, "numerator": 0, "denominator": 10,
                       "runs": [0.0, 0.0]}
    assert_no_garbled_turns(alike)
    # Runs that differ keep the case's limit but not their own verdicts or counts: the
    # limit decides on the mean (0.06 is not below the case's 5 %, though under the
    # metric's default 10 %).
    differing = mean_result([_garbled_run(0, 0), _garbled_run(1, 2)], specs)
    details = differing.metrics["garbled_turn_rate"].details
    assert details == {"threshold": 0.05, "runs": [0.0, 0.2]}
    with pytest.raises(AssertionError, match=r"garbled turn rate 10\.0% is not below 5%"):
        assert_no_garbled_turns(differing)
    assert_no_garbled_turns(differing, max_rate=0.15)


def test_the_mean_of_runs_keeps_the_agents_configured_pass_threshold() -> None:
    from pytest_callqa import assert_agent_passes

    def run(number: int, overall: float) -> TaskResult:
        metric = MetricResult(overall, rating="good",
                              details={"pass_threshold": 60.0, "passed": True})
        return TaskResult(task="agent", case_id="c", score=overall / 100, valid=True,
                          blocked=False, blockers=[], model="m", run=number,
                          metrics={"overall_score": metric})

    mean = mean_result([run(0, 64.0), run(1, 66.0)], metric_specs(default_registry(), "agent"))
    assert mean.metrics["overall_score"].details["pass_threshold"] == 60.0
    assert_agent_passes(mean)


def test_a_mean_over_a_lower_bound_is_a_lower_bound() -> None:
    bound = _garbled_run(0, 3)
    bound.metrics["garbled_turn_rate"].details["lower_bound"] = True
    mean = mean_result([bound, _garbled_run(1, 3)], metric_specs(default_registry(),
                                                                 "conversation"))
    assert mean.metrics["garbled_turn_rate"].details["lower_bound"] is True


def _grounding_run(run: int, metric_id: str, metric: MetricResult) -> TaskResult:
    return TaskResult(task="grounding", case_id="c", score=0.5, valid=True, blocked=False,
                      blockers=[], model="m", run=run, metrics={metric_id: metric})


def test_the_mean_of_runs_a_case_rated_by_its_own_bands_keeps_their_rating() -> None:
    # The case lets hallucination up to 0.9 pass as "acceptable"; the metric's own bands
    # block above 0.5. Before: three runs at 0.8, each acceptable, averaged to a "blocker".
    specs = metric_specs(default_registry(), "grounding")
    runs = [_grounding_run(i, "hallucination", MetricResult(0.8, rating="acceptable"))
            for i in range(3)]
    metric = mean_result(runs, specs).metrics["hallucination"]
    assert (metric.rating, metric.blocker) == ("acceptable", False)
    # Runs of two ratings under bands the metric's spec does not know: the mean gets the
    # worse of the two runs around it.
    mixed = [_grounding_run(0, "hallucination", MetricResult(0.7, rating="good")),
             _grounding_run(1, "hallucination", MetricResult(0.8, rating="acceptable"))]
    assert mean_result(mixed, specs).metrics["hallucination"].rating == "acceptable"


def test_a_mean_of_differing_grounding_verdicts_reads_as_its_rating() -> None:
    # Before: no shared "verdict" detail read as FAIL, though every run passed or warned.
    from pytest_callqa import assert_grounded

    specs = metric_specs(default_registry(), "grounding")
    runs = [_grounding_run(i, "grounding_verdict",
                           MetricResult(value, rating=rating, details={"verdict": verdict}))
            for i, (value, rating, verdict) in enumerate(
                [(1.0, "good", "PASS"), (1.0, "good", "PASS"), (0.5, "acceptable", "WARN")])]
    mean = mean_result(runs, specs)
    assert "verdict" not in mean.metrics["grounding_verdict"].details
    assert_grounded(mean, allow_warn=True)
    with pytest.raises(AssertionError, match="grounding verdict WARN"):
        assert_grounded(mean)


def _scored(model: str, scores: list[float], run: int = 0,
            passed: list[bool | None] | None = None) -> list[TaskResult]:
    return [TaskResult(task="qa", case_id=f"c{i}", score=s, valid=True, blocked=False,
                       blockers=[], metrics={}, model=model, run=run,
                       passed=None if passed is None else passed[i])
            for i, s in enumerate(scores)]


def test_scorecard_intervals_and_rank_ties() -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    card = build_scorecard(_scored("a", [1, 1, 1, 1, 1, 0]) + _scored("b", [1] * 6)
                           + _scored("c", [0.1, 0, 0, 0, 0, 0]))
    a, b, c = (card.models[m] for m in "abc")
    # The hand-worked example above, as the task's interval.
    assert a.tasks["qa"].interval == (0.5, 1.0)
    # Six cases alike show no spread: no interval, as for one case.
    assert b.tasks["qa"].interval is None and b.final_interval_b is None
    # Ranked by final score alone (no cost): b, a, c. a's interval reaches b's value, and b
    # has none to tell it apart by: ties; c's is apart from a's, but not from b's.
    assert [m.cost_adjusted_rank for m in (b, a, c)] == [1, 2, 3]
    assert a.final_interval_b == (0.5, 1.0) and a.rank_interval == a.final_interval_b
    assert b.rank_ties == ["a", "c"] and a.rank_ties == ["b"] and c.rank_ties == ["b"]
    assert card.to_dict()["models"]["a"]["tasks"]["qa"]["interval"] == [0.5, 1.0]
    assert card.to_dict()["models"]["b"]["final_interval_b"] is None


def test_a_model_whose_cases_all_score_alike_is_not_told_apart_by_its_interval() -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    # "same" scores 0.9 in every case, "near" 0.01 below with an interval short of 0.9:
    # the zero-width [0.9, 0.9] ranked them apart, where one case of 0.9 would have tied.
    card = build_scorecard(_scored("same", [0.9] * 6)
                           + _scored("near", [0.89, 0.5, 0.8, 0.85, 0.89, 0.89]))
    same, near = card.models["same"], card.models["near"]
    assert near.rank_interval is not None and near.rank_interval[1] < 0.9
    assert same.rank_interval is None
    assert same.rank_ties == ["near"] and near.rank_ties == ["same"]


def test_scorecard_run_statistics() -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    # Three cases over two runs: c0 passes both, c1 one of two (flaky), c2 neither.
    results = (_scored("m", [0.9, 0.8, 0.2], run=0, passed=[True, True, False])
               + _scored("m", [0.9, 0.4, 0.2], run=1, passed=[True, False, False]))
    card = build_scorecard(results)
    summary = card.models["m"].runs_summary()
    assert summary == {"runs": 2, "k": 2, "cases": 3, "pass_rate": pytest.approx(0.5),
                       "pass_hat_k": pytest.approx(1 / 3), "pass_at_k": pytest.approx(2 / 3),
                       "flaky": ["qa/c1"]}
    # Consistency = 1 - std/mean per case (population std, as the scorecard always had):
    # c0 1, c1 1 - 0.2/0.6 = 0.6667, c2 1 -> mean 0.8889.
    consistency = card.models["m"].benchmarks["consistency"]
    assert consistency["value"] == pytest.approx(0.888889, abs=1e-6)
    assert consistency["passed"] is False
    single = build_scorecard(_scored("m", [0.9]))
    assert single.models["m"].runs_summary() is None
    assert "runs" not in single.to_dict()["models"]["m"]


def test_a_copy_of_the_first_run_is_no_run_of_the_run_statistics() -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    # c0's runs 2 and 3 are copies of run 1 (a recorded output under the offline judge):
    # counted, they made pass^3 1.0 from one sample. c1 was sampled three times.
    results = _scored("m", [1, 1], run=0, passed=[True, True])
    for run in (1, 2):
        results += _scored("m", [1, 0], run=run, passed=[True, False])
        results[-2].copied_run = True
    summary = build_scorecard(results).models["m"].runs_summary()
    assert summary is not None
    assert (summary["cases"], summary["k"], summary["flaky"]) == (1, 3, ["qa/c1"])
    assert summary["pass_rate"] == pytest.approx(1 / 3)
    copies = [r for r in results if r.case_id == "c0"]
    assert build_scorecard(copies).models["m"].runs_summary() is None


def test_pass_hat_k_and_pass_at_k_are_of_one_k_over_cases_with_fewer_known_runs() -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    # c0 passes runs 1 and 2 of 3; c1 passes run 1, fails run 2, and run 3's outcome is
    # unknown (the tool failed in it). At k = 2, the fewest known runs: c0 C(2,2)/C(3,2)
    # = 1/3 and 1 - C(1,2)/C(3,2) = 1; c1 0 and 1. Before, c0 was taken at k = 3 (pass^k 0)
    # and c1 at k = 2, a pass^k of 0 named k = 3.
    results = (_scored("m", [1, 1], run=0, passed=[True, True])
               + _scored("m", [1, 0], run=1, passed=[True, False])
               + _scored("m", [0, 0], run=2, passed=[False, None]))
    summary = build_scorecard(results).models["m"].runs_summary()
    assert summary is not None
    assert (summary["runs"], summary["k"]) == (3, 2)
    assert summary["pass_hat_k"] == pytest.approx(1 / 6)
    assert summary["pass_at_k"] == pytest.approx(1.0)
    assert summary["pass_rate"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    rows = render_scorecard(build_scorecard(results)).splitlines()
    assert any(re.match(r"k +\| +2 \| fewest known runs of a case", row) for row in rows)


def _whole_draw(values: list[float], reduce: str) -> np.ndarray:
    """Every resample drawn at once and reduced at once: what the blocks must equal."""
    data = np.asarray(values)
    picks = np.random.default_rng(stats.SEED).integers(
        0, len(data), size=(stats.RESAMPLES, len(data)))
    return getattr(data[picks], reduce)(axis=1)


def test_resamples_in_blocks_give_the_figures_of_one_whole_draw(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "_BLOCK", 1001 * 7)  # blocks of 7 rows, the last one short
    values = np.random.default_rng(7).random(1001).tolist()
    weights = np.random.default_rng(8).integers(0, 3, 1001).astype(float).tolist()
    tail = (1.0 - stats.LEVEL) / 2
    assert stats.bootstrap_mean(values) == stats._sample_interval(
        _whole_draw(values, "mean"), tail)
    # A case without units (weight 0) is left out of a pooled rate's resampling.
    carried = [(v, w) for v, w in zip(values, weights, strict=True) if w]
    assert stats.bootstrap_ratio(values, weights) == stats._sample_interval(
        _whole_draw([v for v, _ in carried], "sum") / _whole_draw([w for _, w in carried],
                                                                    "sum"), tail)
    assert stats.bootstrap_weighted([(values, 1.0)]) == stats._sample_interval(
        _whole_draw(values, "mean"), tail)


def test_a_large_case_set_is_resampled_in_bounded_memory() -> None:
    # 20,000 cases: the whole draw held 2,000 x 20,000 indices and values (640 MB).
    values = np.random.default_rng(9).random(20_000).tolist()
    tracemalloc.start()
    try:
        assert stats.bootstrap_mean(values) is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20


def test_figures_over_as_many_cases_share_their_draws_and_keep_their_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    values = np.random.default_rng(3).random(30).tolist()
    others = np.random.default_rng(4).random(30).tolist()
    fewer = values[:29]
    weights = [float(i % 3 + 1) for i in range(30)]
    alone = [bootstrap_mean(values), bootstrap_mean(others), bootstrap_mean(fewer),
             bootstrap_ratio(values, weights), bootstrap_mean(values, seed=5)]
    plain = build_scorecard(_many_models()).to_dict()
    drawn: list[int] = []
    draw = stats.resample_blocks
    monkeypatch.setattr(stats, "resample_blocks", lambda rng, n, resamples=stats.RESAMPLES:
                        drawn.append(n) or draw(rng, n, resamples))
    with stats.remembered(None):
        shared = [bootstrap_mean(values), bootstrap_mean(others), bootstrap_mean(fewer),
                  bootstrap_ratio(values, weights), bootstrap_mean(values, seed=5)]
        # Another number of cases, then another seed: drawn again.
        assert drawn == [30, 29, 30, 30]
        assert build_scorecard(_many_models()).to_dict() == plain
    assert shared == alone
    # Outside the block, every figure draws its own; a draw larger than a block is not kept.
    drawn.clear()
    bootstrap_mean(values)
    bootstrap_mean(values)
    monkeypatch.setattr(stats, "_KEPT_BYTES", 30 * stats.RESAMPLES * 2 - 1)
    with stats.remembered(None):
        bootstrap_mean(values)
        bootstrap_mean(values)
    assert drawn == [30] * 4


def test_a_kept_draw_is_the_same_indices_in_narrow_integers_and_cannot_be_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for n, narrow in ((3_000, np.uint16), (2**16, np.uint16), (2**16 + 1, np.uint32)):
        monkeypatch.setattr(stats, "_BLOCK", n * 7)  # blocks of 7 rows, the last one short
        with stats.remembered(None):
            kept = list(stats.seeded_blocks(11, n, resamples=20))
        drawn = list(stats.resample_blocks(np.random.default_rng(11), n, resamples=20))
        assert [len(b) for b in kept] == [7, 7, 6]
        assert all(b.dtype == narrow and not b.flags.writeable for b in kept)
        assert all(np.array_equal(a, b) for a, b in zip(kept, drawn, strict=True))
        assert max(int(b.max()) for b in kept) >= n - n // 100
    # What is handed out unkept is the generator's own, wide draw.
    assert next(iter(stats.seeded_blocks(11, 3_000, resamples=20))).dtype == np.int64


def _many_models() -> list[TaskResult]:
    # Twenty cases a model: intervals are resampled (numpy), not worked out exactly.
    return (_scored("a", [(i % 7) / 6 for i in range(20)])
            + _scored("b", [(i % 3) / 2 for i in range(20)]))


def test_a_memo_gives_a_rebuilt_scorecard_the_same_intervals_without_drawing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_callqa.engine.scorecard import build_scorecard

    plain = build_scorecard(_many_models()).to_dict()
    first = stats.IntervalMemo()
    with stats.remembered(first):
        drawn = build_scorecard(_many_models()).to_dict()
    assert drawn == plain
    assert first.drawn == len(first.kept) > 0 and first.found == {}

    def no_draw(*args: object) -> None:
        raise AssertionError("an interval the memo holds was drawn again")

    for name in ("_bootstrap_mean", "_bootstrap_ratio", "_bootstrap_weighted"):
        monkeypatch.setattr(stats, name, no_draw)
    again = stats.IntervalMemo(first.kept)
    with stats.remembered(again):
        assert build_scorecard(_many_models()).to_dict() == plain
    assert again.drawn == 0 and again.kept == first.kept
    # Outside the block, nothing is remembered.
    with pytest.raises(AssertionError, match="drawn again"):
        bootstrap_mean([0.1, 0.2, 0.3])


def test_a_memo_keys_an_interval_by_its_figures_in_order_and_its_parameters() -> None:
    memo = stats.IntervalMemo()
    values = [(i % 5) / 4 for i in range(12)]
    with stats.remembered(memo):
        first = bootstrap_mean(values)
        assert bootstrap_mean(values) == first and memo.drawn == 1
        # Resampling picks positions: the same figures in another order are another draw.
        bootstrap_mean(list(reversed(values)))
        bootstrap_mean(values, level=0.9)
        bootstrap_mean(values, seed=1)
        bootstrap_ratio(values, [1.0] * 12)
        bootstrap_weighted([(values, 1.0)])
    assert memo.drawn == 6 and len(memo.kept) == 6
    assert memo.kept[next(iter(memo.kept))] == first == bootstrap_mean(values)


def test_no_value_needs_no_memo_entry() -> None:
    memo = stats.IntervalMemo()
    with stats.remembered(memo):
        assert bootstrap_mean([]) is None and bootstrap_ratio([], []) is None
        assert bootstrap_weighted([([], 1.0)]) is None
    assert memo.kept == {} and memo.drawn == 0


def test_a_memo_takes_numpy_numbers_for_the_level_and_the_seed() -> None:
    values = [(i % 5) / 4 for i in range(12)]
    plain = bootstrap_mean(values, level=0.9, seed=5)
    memo = stats.IntervalMemo()
    with stats.remembered(memo):
        assert bootstrap_mean(values, level=np.float64(0.9), seed=np.int64(5)) == plain
        assert bootstrap_mean(values, level=0.9, seed=5) == plain
    assert memo.drawn == 1
