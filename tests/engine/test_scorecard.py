"""Aggregation into the cross-model scorecard (SPEC 5 and 5.1)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_callqa.engine.core.results import MetricResult, TaskResult
from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.loading import load_cases
from pytest_callqa.engine.report import render_scorecard
from pytest_callqa.engine.scorecard import build_scorecard
from pytest_callqa.engine.stats import IntervalMemo, remembered

from .helpers import TFIDF

EXAMPLE = Path(__file__).parents[2] / "example_project"


def result(model: str, task: str, case: str, score: float | None, *, valid: bool = True,
           blocked: bool = False, run: int = 0, cost: float | None = None,
           metrics: dict[str, MetricResult] | None = None) -> TaskResult:
    return TaskResult(task=task, case_id=case, score=score, valid=valid, blocked=blocked,
                      blockers=["x"] if blocked else [], metrics=metrics or {}, model=model,
                      run=run, usage={} if cost is None else {"cost_usd": cost})


def false_pass(n: int, d: int) -> dict[str, MetricResult]:
    return {"compliance_false_pass_rate": MetricResult(
        value=n / d, details={"numerator": n, "denominator": d})}


def test_false_pass_rate_is_pooled_over_questions_not_averaged() -> None:
    card = build_scorecard([
        result("m", "qa", "a", 0.9, metrics=false_pass(1, 2)),
        result("m", "qa", "b", 0.9, metrics=false_pass(0, 18)),
    ])
    agg = card.models["m"].tasks["qa"].metrics["compliance_false_pass_rate"]
    assert agg.value == pytest.approx(1 / 20)  # not the mean of 0.5 and 0.0
    assert agg.rating == "blocker"


def test_invalid_case_counts_zero_and_is_counted() -> None:
    card = build_scorecard([result("m", "qa", "a", 0.8),
                            result("m", "qa", "b", None, valid=False, blocked=True)])
    qa = card.models["m"].tasks["qa"]
    assert qa.score == pytest.approx(0.4)
    assert (qa.cases, qa.invalid_cases, qa.blocked_cases) == (2, 1, 1)
    assert qa.disqualified and card.models["m"].any_blocker


def test_disqualification_tolerance() -> None:
    results = [result("m", "qa", "a", 0.8, blocked=True), result("m", "qa", "b", 0.8)]
    assert build_scorecard(results).models["m"].tasks["qa"].disqualified
    lenient = build_scorecard(results, disqualify_tolerance=1)
    assert not lenient.models["m"].tasks["qa"].disqualified


def blocker_row(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("Any Blocker"))
    return [cell.strip() for cell in line.split("|")[1:-1]]


def test_a_blocker_within_the_tolerance_fired_and_does_not_rank_the_model_down() -> None:
    # With a tolerance of 1: "Any Blocker Triggered? No" beside "[!] ... 50.0% !!", and the
    # JSON's any_blocker false beside blocked_cases 1.
    results = [result("m", "qa", "a", 0.9, blocked=True), result("m", "qa", "b", 0.9),
               result("n", "qa", "a", 0.5), result("n", "qa", "b", 0.5)]
    strict = build_scorecard(results)
    lenient = build_scorecard(results, disqualify_tolerance=1)
    m = lenient.models["m"]
    assert (m.any_blocker, m.disqualified) == (True, False)
    assert (m.to_dict()["any_blocker"], m.to_dict()["disqualified"]) == (True, False)
    # The tolerance is the blocked cases a model may have before it is disqualified: the rank
    # puts after the others the models a blocker disqualifies, not those within it.
    assert [lenient.models[x].cost_adjusted_rank for x in "mn"] == [1, 2]
    assert [strict.models[x].cost_adjusted_rank for x in "mn"] == [2, 1]
    text = render_scorecard(lenient)
    assert blocker_row(text) == ["Yes (within tolerance) ~", "No"]
    assert ("[!] m: qa: 1 of 2 case(s) blocked, within the disqualify tolerance: not "
            "disqualified, not ranked after the models without a blocker") in text
    assert blocker_row(render_scorecard(strict)) == ["Yes !!", "No"]


@pytest.mark.parametrize(("blocked", "undecided", "cell"), [
    (1, 1, "Yes (disqualification unknown) !?"),  # at the tolerance, one case undecided
    (0, 1, "Unknown (within tolerance)"),  # may have fired, could not disqualify
    (0, 2, "Unknown !?"),
])
def test_the_blocker_row_under_a_tolerance_with_undecided_cases(blocked: int, undecided: int,
                                                                cell: str) -> None:
    undecided_blocker = {"compliance_false_pass_rate": MetricResult(
        value=None, scored=False, judge_error=True, reason="judge error: timeout",
        details={"blocker_metric": True})}
    results = ([result("m", "qa", f"b{i}", None, valid=False, blocked=True)
                for i in range(blocked)]
               + [result("m", "qa", f"u{i}", 0.8, metrics=dict(undecided_blocker))
                  for i in range(undecided)])
    card = build_scorecard(results, disqualify_tolerance=1)
    assert blocker_row(render_scorecard(card)) == [cell]


def test_missing_tasks_are_renormalised_and_named() -> None:
    card = build_scorecard([result("m", "qa", "a", 0.8), result("m", "entity", "b", 0.6)])
    model = card.models["m"]
    assert model.final_score_b == pytest.approx((0.8 * 0.35 + 0.6 * 0.30) / 0.65)
    assert model.missing_tasks == ["text", "translation"]
    assert "renormalised without task(s): text, translation" in render_scorecard(card)


def test_cost_adjusted_rank_and_blockers_rank_last() -> None:
    card = build_scorecard([
        result("cheap", "qa", "a", 0.80, cost=0.001),
        result("pricey", "qa", "a", 0.95, cost=0.010),
        result("blocked", "qa", "a", 0.99, cost=0.0001, blocked=True),
    ])
    cheap, pricey, blocked = (card.models[m] for m in ("cheap", "pricey", "blocked"))
    assert cheap.cost_per_1000_calls == pytest.approx(1.0)
    # Normalised by the cheapest model's cost ($0.10 per 1000 calls, the blocked one).
    assert pricey.cost_efficiency == pytest.approx(0.95 / 100)
    assert cheap.cost_efficiency == pytest.approx(0.80 / 10)
    assert (cheap.cost_adjusted_rank, pricey.cost_adjusted_rank,
            blocked.cost_adjusted_rank) == (1, 2, 3)


def test_models_none_of_whose_tasks_makes_a_final_score_are_not_ranked() -> None:
    # Agent and conversation weigh in no final score: ranked, a suite of them alone was
    # ordered by model name (every final score counted 0), the worst model first.
    card = build_scorecard([result("aardvark", "agent", "a", 0.36),
                            result("zebra", "agent", "a", 1.0),
                            result("zebra", "conversation", "c", 0.9)])
    assert {m: (c.final_score_b, c.cost_adjusted_rank, c.rank_ties)
            for m, c in card.models.items()} == {"aardvark": (None, None, []),
                                                 "zebra": (None, None, [])}
    assert ("not ranked, no task of theirs weighing in a final score — aardvark, zebra"
            in card.notes)
    assert "—" in render_scorecard(card)


def test_zero_cost_model_does_not_divide_by_zero() -> None:
    card = build_scorecard([result("free", "qa", "a", 0.5, cost=0.0),
                            result("paid", "qa", "a", 0.9, cost=0.002)])
    assert card.models["free"].cost_adjusted_rank == 1
    assert card.models["paid"].cost_efficiency is not None


def test_unknown_cost_ranks_by_final_score() -> None:
    card = build_scorecard([result("a", "qa", "x", 0.5), result("b", "qa", "x", 0.9)])
    assert card.models["b"].cost_adjusted_rank == 1
    assert any("cost unknown" in n for n in card.notes)


def test_a_cost_known_for_some_results_only_is_unknown_not_their_mean() -> None:
    # b's second case had no token usage: its cost per 1000 calls was the mean over its
    # first case alone ($0.10), shown as b's whole cost and ranking it first by cost.
    card = build_scorecard([
        result("a", "qa", "x", 0.9, cost=0.01), result("a", "qa", "y", 0.9, cost=0.01),
        result("b", "qa", "x", 0.5, cost=0.0001), result("b", "qa", "y", 0.5),
    ])
    a, b = card.models["a"], card.models["b"]
    assert a.cost_per_1000_calls == pytest.approx(10.0)
    assert b.cost_per_1000_calls is None and b.cost_efficiency is None
    assert [a.cost_adjusted_rank, b.cost_adjusted_rank] == [1, 2]
    assert card.notes == [
        "b: cost unknown: 1 of its 2 results have no cost (their outputs came without both "
        "token counts)", "cost unknown for some model: ranked by final score alone"]
    text = render_scorecard(card)
    assert "by final score alone, a cost being unknown" in text
    assert "b: cost unknown: 1 of its 2 results have no cost" in text


def test_consistency_needs_two_runs() -> None:
    single = build_scorecard([result("m", "qa", "a", 0.9, metrics={
        "exact_match": MetricResult(value=1.0)})])
    assert single.models["m"].benchmarks["consistency"]["value"] is None
    no_layer2 = build_scorecard([result("m", "qa", "a", 0.9)])
    assert no_layer2.models["m"].benchmarks == {}
    assert "STANDARD BENCHMARKS" not in render_scorecard(no_layer2)
    runs = [result("m", "qa", "a", s, run=i) for i, s in enumerate((0.91, 0.90, 0.88))]
    card = build_scorecard(runs)
    consistency = card.models["m"].benchmarks["consistency"]
    mean = (0.91 + 0.90 + 0.88) / 3
    std = (sum((s - mean) ** 2 for s in (0.91, 0.90, 0.88)) / 3) ** 0.5
    assert consistency["value"] == pytest.approx(1 - std / mean)
    assert consistency["passed"] is True
    assert card.models["m"].tasks["qa"].score == pytest.approx(mean)
    assert card.models["m"].tasks["qa"].cases == 1


@pytest.fixture(scope="module")
def example_results() -> list[TaskResult]:
    cases = load_cases(EXAMPLE / "cases")
    items = []
    for model_dir in sorted((EXAMPLE / "outputs").iterdir()):
        for case in cases:
            path = model_dir / f"{case.id}.json"
            if path.exists():
                items.append((case, path.read_text(encoding="utf-8"), model_dir.name))
    return evaluate_many(items, embedder=TFIDF)


def test_example_project_blockers_sit_where_they_were_planted(
        example_results: list[TaskResult]) -> None:
    blocked = {(r.model, r.case_id): r.blockers for r in example_results if r.blocked}
    assert {m for m, _ in blocked} == {"budget-7b"}
    by_case = {c: b for (_, c), b in blocked.items()}
    assert "compliance_false_pass_rate" in by_case["qa-hvb-0091a706-balance-no-verification"]
    assert by_case["qa-abcd-9489-refund-status"] == ["response_structure_compliance"]
    assert by_case["text-hvb-010eaccb-schedule-appointment"] == ["response_structure_compliance"]
    assert {"config_adherence", "fabricated_entity_count"} <= set(
        by_case["entity-sgd-32_00014-expected-funds"])
    assert "missing_sentiment_labels" in by_case["text-abcd-3647-overnight-shipping-cost"]
    assert {"domain_term_preservation", "critical_fact_preservation"} <= set(
        by_case["translation-tico-hi-hay-fever-five-days"])


def test_example_scorecard_orders_models_and_is_order_independent(
        example_results: list[TaskResult]) -> None:
    card = build_scorecard(example_results)
    shuffled = list(example_results)
    random.Random(7).shuffle(shuffled)
    assert json.dumps(build_scorecard(shuffled).to_dict()) == json.dumps(card.to_dict())
    models = card.models
    assert models["budget-7b"].any_blocker
    assert not models["northwind-large"].any_blocker
    assert not models["northwind-mini"].any_blocker
    assert models["northwind-large"].final_score_b > models["northwind-mini"].final_score_b \
        > models["budget-7b"].final_score_b
    assert models["budget-7b"].cost_adjusted_rank == 3
    text = render_scorecard(card)
    for needle in ("QA TASK METRICS", "QA Score", "[!] Compliance False Pass Rate",
                   "Cost-Adjusted Rank",
                   "Any Blocker Triggered?", "[!] budget-7b: disqualified for qa"):
        assert needle in text


def test_results_round_trip_through_builtins(example_results: list[TaskResult]) -> None:
    for r in example_results:
        payload = json.loads(json.dumps(r.to_dict()))
        assert TaskResult.from_dict(payload).to_dict() == payload


def test_flagged_judge_replies_are_marked_in_the_scorecard() -> None:
    # A flagged value is one a family's own seed rule gave an off-scale judge reply.
    flagged = MetricResult(value=0.0, rating="fail", flagged=True, reason="unusable reply")
    card = build_scorecard([result("m", "qa", "a", 0.5,
                                   metrics={"evidence_backed_reasoning": flagged})])
    assert card.models["m"].tasks["qa"].metrics["evidence_backed_reasoning"].flagged == 1
    text = render_scorecard(card)
    row = next(line for line in text.splitlines() if line.startswith("Evidence-Backed"))
    assert "0.000? x" in row
    assert "? m: qa: off-scale judge replies scored by the family's own rule in " \
        "evidence_backed_reasoning ×1" in text


# --- the aggregation rules, against fixed numbers ---------------------------------------


def test_an_invalid_run_counts_zero_in_its_case_mean() -> None:
    card = build_scorecard([
        result("m", "qa", "a", 0.8, run=0),
        result("m", "qa", "a", None, valid=False, blocked=True, run=1),
        result("m", "qa", "b", 0.6),
    ])
    qa = card.models["m"].tasks["qa"]
    # Case a is (0.8 + 0) / 2 = 0.4, not 0.8; the task is (0.4 + 0.6) / 2.
    assert qa.score == pytest.approx(0.5)
    assert (qa.cases, qa.invalid_cases) == (2, 1)


def test_a_pooled_rate_with_nothing_to_count_is_not_scored() -> None:
    # No PASS_FAIL question anywhere: the false-pass rate has no denominator. 0.0 would read
    # "good" for a rate where lower is better.
    nothing = MetricResult.not_scored("n/a: the scorecard has no PASS_FAIL question")
    card = build_scorecard([
        result("m", "qa", "a", 0.9, metrics={"compliance_false_pass_rate": nothing}),
        result("m", "qa", "b", 0.7, metrics={"compliance_false_pass_rate": nothing}),
    ])
    qa = card.models["m"].tasks["qa"]
    agg = qa.metrics["compliance_false_pass_rate"]
    assert agg.value is None and agg.rating is None
    assert agg.scored_cases == 0
    assert qa.not_scored == ["compliance_false_pass_rate"]


def test_a_metric_blocker_in_one_case_of_three_marks_the_aggregate() -> None:
    def accuracy(value: float, *, blocker: bool = False) -> dict[str, MetricResult]:
        return {"question_score_accuracy": MetricResult(value=value, blocker=blocker)}

    card = build_scorecard([
        result("m", "qa", "a", 0.9, metrics=accuracy(1.0)),
        result("m", "qa", "b", 0.9, metrics=accuracy(1.0, blocker=True)),
        result("m", "qa", "c", 0.9, metrics=accuracy(0.97)),
    ])
    agg = card.models["m"].tasks["qa"].metrics["question_score_accuracy"]
    assert agg.value == pytest.approx(0.99)  # "good" by its bands, yet
    assert agg.blocker is True and agg.rating == "blocker"


@pytest.mark.parametrize(("runs", "expected"), [
    ({"a": (0.0, 0.0)}, 1.0),              # always 0: constant, so fully consistent
    ({"a": (0.2, 0.6)}, 0.5),              # mean 0.4, std 0.2: 1 - 0.2 / 0.4
    ({"a": (0.0, 1.0)}, 0.0),              # mean 0.5, std 0.5
    ({"a": (0.0, 0.0), "b": (0.2, 0.6)}, 0.75),
])
def test_consistency_of_fixed_runs(runs: dict[str, tuple[float, ...]],
                                   expected: float) -> None:
    card = build_scorecard([result("m", "qa", case, score, run=i)
                            for case, scores in runs.items()
                            for i, score in enumerate(scores)])
    consistency = card.models["m"].benchmarks["consistency"]
    assert consistency["value"] == pytest.approx(expected)
    assert consistency["scored_cases"] == len(runs)


def test_consistency_counts_an_invalid_run_as_zero() -> None:
    card = build_scorecard([result("m", "qa", "a", 0.6, run=0),
                            result("m", "qa", "a", None, valid=False, run=1)])
    # Runs 0.6 and 0: mean 0.3, std 0.3, so 1 - 0.3 / 0.3 = 0 (not 1.0 for 0.6 alone).
    assert card.models["m"].benchmarks["consistency"]["value"] == pytest.approx(0.0)


def test_consistency_leaves_out_a_run_the_judge_could_not_score() -> None:
    # It counted 0: runs 0.8, (judge error), 0.8 gave 0.29 — a failed benchmark for one
    # error of the tool; and a case left with one scorable run gave 0 rather than nothing.
    unknown = TaskResult(task="qa", case_id="a", score=None, valid=True, blocked=False, blockers=[],
                         metrics={}, model="m", run=1,
                         judge_errors=["evidence_backed_reasoning"])
    card = build_scorecard([result("m", "qa", "a", 0.8, run=0), unknown,
                            result("m", "qa", "a", 0.8, run=2)])
    consistency = card.models["m"].benchmarks["consistency"]
    assert (consistency["value"], consistency["scored_cases"]) == (1.0, 1)
    alone = TaskResult(task="qa", case_id="b", score=None, valid=True, blocked=False, blockers=[],
                       metrics={}, model="m", run=1,
                       judge_errors=["evidence_backed_reasoning"])
    card = build_scorecard([result("m", "qa", "b", 0.9, run=0), alone])
    consistency = card.models["m"].benchmarks["consistency"]
    assert (consistency["value"], consistency["scored_cases"]) == (None, 0)


def test_consistency_leaves_out_a_copy_of_the_first_run() -> None:
    # A recorded output under the offline judge: run 2 is run 1's result again. Counted, it
    # gave a Consistency Score of 1 from no sample, and a Benchmark Score made of it.
    first = result("m", "qa", "a", 0.8, run=0)
    copy = TaskResult.from_dict({**first.to_dict(), "run": 1, "copied_run": True})
    assert copy.copied_run and TaskResult.from_dict(copy.to_dict()).copied_run
    assert "copied_run" not in first.to_dict()
    card = build_scorecard([first, copy])
    consistency = card.models["m"].benchmarks["consistency"]
    assert (consistency["value"], consistency["scored_cases"]) == (None, 0)
    assert card.models["m"].benchmark_score is None
    sampled = build_scorecard([first, copy, result("m", "qa", "a", 0.6, run=2)])
    # Runs 0.8 and 0.6, the copy aside: mean 0.7, std 0.1.
    assert sampled.models["m"].benchmarks["consistency"]["value"] == pytest.approx(1 - 0.1 / 0.7)


def test_no_benchmark_score_without_a_call_task() -> None:
    exact = {"exact_match": MetricResult(value=1.0)}
    card = build_scorecard([result("m", "conversation", "a", 0.9, metrics=exact)])
    model = card.models["m"]
    assert model.benchmarks["exact_match"]["passed"] is True
    assert model.benchmark_score is None and model.final_score_a is None
    assert model.missing_tasks == []
    # The same benchmark beside a call task does count.
    card = build_scorecard([result("m", "conversation", "a", 0.9, metrics=exact),
                            result("m", "qa", "b", 0.5)])
    assert card.models["m"].benchmark_score == pytest.approx(1.0)
    assert card.models["m"].final_score_a == pytest.approx((0.5 * 0.25 + 1.0 * 0.30) / 0.55)


def _run(model: str, case: str, score: float, run: int, cost: float | None, tokens: int, *,
         false_passes: tuple[int, int] | None = None, renormalised: bool = False) -> TaskResult:
    usage = {"input_tokens": float(tokens)} | ({} if cost is None else {"cost_usd": cost})
    return TaskResult(task="qa", case_id=case, score=score, valid=True, blocked=False,
                      blockers=[], metrics=false_pass(*false_passes) if false_passes else {},
                      model=model, run=run, usage=usage, renormalised=renormalised)


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


ALPHA = [_run("alpha", "a", 0.75, 0, 0.002, 100, false_passes=(1, 4)),
         _run("alpha", "a", 0.25, 1, 0.004, 300, false_passes=(0, 4)),
         _run("alpha", "b", 0.8, 0, 0.003, 200, false_passes=(1, 2), renormalised=True)]


def test_the_report_dict_of_a_two_model_run_figure_by_figure() -> None:
    card = build_scorecard([*ALPHA, _run("beta", "a", 0.6, 0, 0.001, 50)]).to_dict()
    # alpha: case a averages its runs (0.5), case b 0.8; the false-pass rate pools 2 of 10;
    # case a's runs (0.75, 0.25) give consistency 1 - 0.25/0.5 = 0.5, under its 0.9 bar, so
    # the benchmark score is 0 and final A = (0.25 × 0.65 + 0.30 × 0) / 0.55.
    # Intervals (exact bootstrap of two cases: a twice, a and b, b twice with 1/4, 1/2, 1/4):
    # qa 0.5 / 0.65 / 0.8 -> [0.5, 0.8]; the pooled rate, case a 1 of 8 and b 1 of 2,
    # 2/16 / 2/10 / 2/4 -> [0.125, 0.5]; final A 0.25 × [0.5, 0.8] / 0.55; the rank compares
    # cost efficiency, final B over alpha's normalised cost 3: [0.5, 0.8] / 3, apart from
    # beta's 0.6: no tie.
    assert _rounded(card) == {
        "models": {
            "alpha": {
                "tasks": {"qa": {
                    "score": 0.65, "interval": [0.5, 0.8], "cases": 2, "invalid_cases": 0,
                    "blocked_cases": 0, "judge_error_cases": 0, "unscored_cases": 0,
                    "blocker_unknown_cases": 0,
                    "unknown_blockers": [], "errored_cases": 0, "no_output_cases": 0,
                    "disqualified": False,
                    "disqualification_unknown": False,
                    "metrics": {"compliance_false_pass_rate": {
                        "value": 0.2, "rating": "blocker", "blocker": False,
                        # Two cases (a scored in both its runs): it counted 3 runs.
                        "scored_cases": 2, "flagged": 0, "judge_errors": 0,
                        "interval": [0.125, 0.5]}},
                    "not_scored": [], "renormalised_cases": 1}},
                "benchmarks": {"consistency": {"value": 0.5, "passed": False,
                                               "scored_cases": 1, "judge_errors": 0}},
                "benchmark_score": 0.0,
                "final_score_a": round(0.1625 / 0.55, 9),
                "final_score_b": 0.65,
                "missing_tasks": ["entity", "text", "translation"],
                "incomplete_tasks": [], "errored_tasks": [], "no_output_tasks": [],
                "cost_per_1000_calls": 3.0,
                "cost_efficiency": round(0.65 / 3.0, 9),
                "cost_adjusted_rank": 2,
                "any_blocker": False,
                "disqualified": False,
                "usage": {"input_tokens": 600.0, "cost_usd": 0.009},
                "final_interval_a": [round(0.125 / 0.55, 9), round(0.2 / 0.55, 9)],
                "final_interval_b": [0.5, 0.8],
                "rank_interval": [round(0.5 / 3, 9), round(0.8 / 3, 9)],
                # beta's one case gives it no interval: nothing tells the two apart.
                "rank_ties": ["beta"],
            },
            "beta": {
                "tasks": {"qa": {
                    "score": 0.6, "interval": None, "cases": 1, "invalid_cases": 0,
                    "blocked_cases": 0, "judge_error_cases": 0, "unscored_cases": 0,
                    "blocker_unknown_cases": 0,
                    "unknown_blockers": [], "errored_cases": 0, "no_output_cases": 0,
                    "disqualified": False,
                    "disqualification_unknown": False,
                    "metrics": {},
                    "not_scored": [], "renormalised_cases": 0}},
                "benchmarks": {},
                "benchmark_score": None,
                "final_score_a": None,
                "final_score_b": 0.6,
                "missing_tasks": ["entity", "text", "translation"],
                "incomplete_tasks": [], "errored_tasks": [], "no_output_tasks": [],
                "cost_per_1000_calls": 1.0,
                "cost_efficiency": 0.6,
                "cost_adjusted_rank": 1,
                "any_blocker": False,
                "disqualified": False,
                "usage": {"input_tokens": 50.0, "cost_usd": 0.001},
                "final_interval_a": None,
                "final_interval_b": None,
                "rank_interval": None,
                "rank_ties": ["alpha"],
            },
        },
        # beta has no Layer 2 figure, so not every model has a final score A
        "rank_basis": "final_score_b",
        "notes": [],
    }


def test_every_model_with_a_final_score_a_ranks_by_it() -> None:
    beta = [_run("beta", "a", 0.6, 0, 0.001, 50), _run("beta", "a", 0.6, 1, 0.001, 50)]
    card = build_scorecard([*ALPHA, *beta])
    assert card.rank_basis == "final_score_a"
    # beta's repeated case is perfectly consistent: benchmark score 1
    assert card.models["beta"].final_score_a == pytest.approx((0.25 * 0.6 + 0.30) / 0.55)
    assert card.models["beta"].cost_efficiency == pytest.approx((0.25 * 0.6 + 0.30) / 0.55)
    assert card.models["alpha"].cost_efficiency == pytest.approx(0.1625 / 0.55 / 3.0)
    assert [card.models[m].cost_adjusted_rank for m in ("alpha", "beta")] == [2, 1]


def test_a_model_without_cost_ranks_everyone_by_final_score_alone() -> None:
    card = build_scorecard([*ALPHA, _run("beta", "a", 0.6, 0, None, 50)])
    assert card.notes == ["cost unknown for some model: ranked by final score alone"]
    assert card.models["beta"].cost_per_1000_calls is None
    assert [card.models[m].cost_efficiency for m in ("alpha", "beta")] == [None, None]
    # by final B: alpha 0.65 before beta 0.6, although beta was cheaper per call above
    assert [card.models[m].cost_adjusted_rank for m in ("alpha", "beta")] == [1, 2]
    # The rank row says so too (before: "by cost efficiency" over a rank that ignored cost),
    # in the terminal and in the HTML report.
    text = render_scorecard(card)
    assert "by final score alone, a cost being unknown (final_score_b)" in text
    assert "by cost efficiency" not in text
    costed = render_scorecard(build_scorecard([*ALPHA, _run("beta", "a", 0.6, 0, 0.001, 50)]))
    assert "by cost efficiency (final_score_b)" in costed


def test_consistency_reads_every_repeated_case_past_a_single_run_one() -> None:
    # case "a" ran once and comes first; "b" ran twice (0.6, 0.2): 1 - 0.2 / 0.4 = 0.5
    card = build_scorecard([result("m", "qa", "a", 0.9),
                            result("m", "qa", "b", 0.6), result("m", "qa", "b", 0.2, run=1)])
    assert card.models["m"].benchmarks["consistency"] == {
        "value": pytest.approx(0.5), "passed": False, "scored_cases": 1, "judge_errors": 0}


def test_an_invalid_run_counts_zero_even_if_it_carries_a_score() -> None:
    # A merged shard report is read back from JSON: an invalid run with a stray score must
    # still count 0, in the task score and in the consistency of its case.
    stray = result("m", "qa", "a", 0.9, valid=False, run=1)
    card = build_scorecard([result("m", "qa", "a", 0.9), stray])
    assert card.models["m"].tasks["qa"].score == pytest.approx(0.45)
    assert card.models["m"].benchmarks["consistency"]["value"] == pytest.approx(0.0)


def test_results_are_kept_in_model_task_case_run_order() -> None:
    given = [result("b", "qa", "a", 0.5), result("a", "qa", "b", 0.5, run=1),
             result("a", "entity", "z", 0.5), result("a", "qa", "b", 0.5)]
    card = build_scorecard(given)
    assert [(r.model, r.task, r.case_id, r.run) for r in card.results] == [
        ("a", "entity", "z", 0), ("a", "qa", "b", 0), ("a", "qa", "b", 1), ("b", "qa", "a", 0)]
    assert card.models["a"].tasks["entity"].task == "entity"


def test_a_task_the_registry_does_not_know_is_aggregated_without_metrics() -> None:
    card = build_scorecard([result("m", "home_made", "a", 0.7)])
    aggregate = card.models["m"].tasks["home_made"]
    assert (aggregate.score, aggregate.metrics) == (pytest.approx(0.7), {})
    assert card.task_order == ["home_made"]


def test_a_model_without_a_final_score_is_not_ranked_beside_one_with_any() -> None:
    # "zeta" only ran the agent family, which has no place in the final score: ranked after
    # alpha, its 1.0 read as lower than alpha's 0.3
    card = build_scorecard([result("alpha", "qa", "a", 0.3), result("zeta", "agent", "a", 1.0)])
    assert card.models["zeta"].final_score_b is None
    assert [card.models[m].cost_adjusted_rank for m in ("alpha", "zeta")] == [1, None]
    assert "not ranked, no task of theirs weighing in a final score — zeta" in card.notes


def test_a_free_model_is_ranked_by_its_final_score_over_the_cost_floor() -> None:
    card = build_scorecard([result("free", "qa", "a", 0.5, cost=0.0),
                            result("paid", "qa", "a", 0.9, cost=0.002)])
    # the free model's normalised cost is 1 (the floor over itself), the paid one's is huge
    assert card.models["free"].cost_efficiency == pytest.approx(0.5)
    assert card.models["paid"].cost_efficiency == pytest.approx(0.9 / (2.0 / 1e-9))
    assert card.models["free"].cost_adjusted_rank == 1


def test_equal_cost_efficiency_is_broken_by_the_higher_final_score() -> None:
    card = build_scorecard([result("cheap", "qa", "a", 0.4, cost=0.001),
                            result("dear", "qa", "a", 0.8, cost=0.002)])
    assert card.models["cheap"].cost_efficiency == pytest.approx(
        card.models["dear"].cost_efficiency)
    assert [card.models[m].cost_adjusted_rank for m in ("cheap", "dear")] == [2, 1]


def test_a_benchmark_metric_absent_from_the_results_does_not_hide_the_ones_after_it() -> None:
    # faithfulness (first in the benchmark order) never ran; exact_match (later) did.
    metrics = {"exact_match": MetricResult(value=1.0)}
    card = build_scorecard([result("m", "qa", "a", 0.8, metrics=metrics),
                            result("m", "qa", "b", 0.6, metrics={
                                "exact_match": MetricResult(value=0.0)})])
    benchmarks = card.models["m"].benchmarks
    assert "faithfulness" not in benchmarks
    assert benchmarks["exact_match"] == {"value": pytest.approx(0.5), "passed": False,
                                         "scored_cases": 2, "judge_errors": 0}
    # Layer 2 ran, so consistency is shown even without repeats: no repeated case, no value
    assert benchmarks["consistency"] == {"value": None, "passed": None, "scored_cases": 0,
                                         "judge_errors": 0}
    assert card.models["m"].benchmark_score == 0.0


def _garbled(numerator: int, denominator: int, *, decided: bool,
             bar: float = 0.1) -> dict[str, MetricResult]:
    counts = {"numerator": numerator, "denominator": denominator, "lower_bound": True,
              "bound_limit": bar}
    return {"garbled_turn_rate": MetricResult(
        value=numerator / denominator, rating="fail", details=counts) if decided
        else MetricResult.not_scored("not scored: the judge gave no score for context",
                                     **counts)}


def test_a_rate_known_only_from_below_is_pooled_over_every_case_or_unknown() -> None:
    # Offline, only cases whose segmentation already fails the garbled rate are decided;
    # pooled over those alone the model's rate was 14.3 % "x", neither its rate nor a
    # bound of it (over all 24 turns it may be as low as 1 in 24).
    undecided = build_scorecard([
        result("m", "conversation", "a", None, metrics=_garbled(1, 7, decided=True)),
        result("m", "conversation", "b", None, metrics=_garbled(0, 8, decided=False)),
        result("m", "conversation", "c", None, metrics=_garbled(0, 9, decided=False))])
    rate = undecided.models["m"].tasks["conversation"].metrics["garbled_turn_rate"]
    assert (rate.value, rate.rating, rate.interval) == (None, None, None)
    # A bound that already fails is the model's failure, at that bound (the mean over the
    # cases of each one's lowest rate: 5 of 7 and 0 of 3).
    failing = build_scorecard([
        result("m", "conversation", "a", None, metrics=_garbled(5, 7, decided=True)),
        result("m", "conversation", "b", None, metrics=_garbled(0, 3, decided=False))])
    rate = failing.models["m"].tasks["conversation"].metrics["garbled_turn_rate"]
    assert (rate.value, rate.rating, rate.interval) == (pytest.approx(5 / 14), "fail", None)
    # Under cases whose own bar is 50 %, the same bound fails nothing: unknown.
    lenient = build_scorecard([
        result("m", "conversation", "a", None, metrics=_garbled(1, 4, decided=False, bar=0.5)),
        result("m", "conversation", "b", None, metrics=_garbled(1, 4, decided=False, bar=0.5))])
    rate = lenient.models["m"].tasks["conversation"].metrics["garbled_turn_rate"]
    assert (rate.value, rate.rating) == (None, None)


def test_a_lower_bound_over_runs_and_cases_and_at_its_bar() -> None:
    # Runs of one case are averaged (3 of 10 and 1 of 10: 0.2), a run without counts is a
    # rate of 0, and a bound exactly at its bar fails it (the rate passes strictly below).
    rows = [result("m", "conversation", "a", None, run=0, metrics=_garbled(3, 10, decided=True)),
            result("m", "conversation", "a", None, run=1, metrics=_garbled(1, 10, decided=False)),
            result("m", "conversation", "b", None, metrics={
                "garbled_turn_rate": MetricResult.not_scored("not scored: no turn")}),
            result("m", "conversation", "c", None, metrics=_garbled(4, 10, decided=True))]
    rate = build_scorecard(rows).models["m"].tasks["conversation"].metrics["garbled_turn_rate"]
    assert (rate.value, rate.rating) == (pytest.approx(0.2), "fail")  # (0.2 + 0 + 0.4) / 3
    at_bar = build_scorecard([result("m", "conversation", "a", None, metrics=_garbled(
        1, 5, decided=False, bar=0.2))])
    rate = at_bar.models["m"].tasks["conversation"].metrics["garbled_turn_rate"]
    assert (rate.value, rate.rating) == (pytest.approx(0.2), "fail")


def test_a_pooled_rate_known_only_from_below_pools_every_case() -> None:
    # A project's pooled metric may give a bound too: its counts are pooled over every case,
    # decided or not, and a blocker's band decides it as a failure's does.
    def bound(numerator: int, denominator: int, scored: bool) -> dict[str, MetricResult]:
        details = {"numerator": numerator, "denominator": denominator, "lower_bound": True,
                   "bound_limit": 0.0}
        return {"compliance_false_pass_rate": MetricResult(
            value=numerator / denominator, rating="blocker", details=details) if scored
            else MetricResult.not_scored("not scored: undecided", **details)}

    # A case the metric gives no counts for adds nothing to either sum.
    card = build_scorecard([result("m", "qa", "a", 0.9, metrics=bound(2, 10, True)),
                            result("m", "qa", "b", 0.9, metrics=bound(0, 30, False)),
                            result("m", "qa", "c", 0.9, metrics={
                                "compliance_false_pass_rate": MetricResult.not_scored(
                                    "n/a: no PASS_FAIL question")})])
    rate = card.models["m"].tasks["qa"].metrics["compliance_false_pass_rate"]
    assert (rate.value, rate.rating) == (pytest.approx(2 / 40), "blocker")
    # Bounds over no unit at all: no rate.
    empty = build_scorecard([result("m", "qa", "a", 0.9, metrics=bound(0, 0, False))])
    assert empty.models["m"].tasks["qa"].metrics["compliance_false_pass_rate"].value is None
    # Pooled, 1 of 40 is in the acceptable band: undecided (averaged, it was 5 %).
    card = build_scorecard([result("m", "qa", "a", 0.9, metrics=bound(1, 10, True)),
                            result("m", "qa", "b", 0.9, metrics=bound(0, 30, False))])
    rate = card.models["m"].tasks["qa"].metrics["compliance_false_pass_rate"]
    assert (rate.value, rate.rating) == (None, None)


def test_every_interval_drawn_is_one_the_scorecard_shows() -> None:
    # A Layer 2 criterion is shown by value and verdict: its interval, resampled over all of
    # a model's cases, was drawn and thrown away (15 s of a 100,000-output run's end).
    rows = [result("m", "qa", f"c{i}", 0.1 * (i % 10), metrics={
        "exact_match": MetricResult(value=float(i % 2)),
        # A pooled criterion: its interval was drawn and thrown away as well.
        "hallucination_rate": MetricResult(value=0.0, details={
            "numerator": i % 4 == 0, "denominator": 3}),
        "compliance_false_pass_rate": MetricResult(value=0.0, details={
            "numerator": i % 3 == 0, "denominator": 2})}) for i in range(12)]
    memo = IntervalMemo()
    with remembered(memo):
        card = build_scorecard(rows)
    qa = card.models["m"].tasks["qa"]
    shown = {qa.interval, qa.metrics["compliance_false_pass_rate"].interval,
             card.models["m"].final_interval_b, card.models["m"].final_interval_a}
    assert set(memo.kept.values()) <= shown
    # The task score's, the pooled rate's and the two final scores'.
    assert memo.drawn == 4
    assert card.models["m"].benchmarks["exact_match"]["value"] == pytest.approx(0.5)


def test_scores_all_alike_have_no_interval_to_miss_their_point_estimate() -> None:
    # Equal scores averaged in another order landed a hair off the score itself: three cases
    # of 1/3 gave the exact bootstrap 0.333333333333 (rounded to 12 places) against a mean
    # of 0.3333333333333333; nine cases of 0.7 resampled gave 0.7 against 0.7000000000000001;
    # nine repeated cases of 0.9 gave final A 0.9545454545454543 against ...545. Cases all
    # alike now have no interval at all (stats.varies), and the final scores weighing them
    # none either.
    thirds = {"question_score_accuracy": MetricResult(value=1 / 3)}
    card = build_scorecard(
        [result("thirds", "qa", c, 1 / 3, metrics=thirds) for c in "abc"]
        + [result("sevens", "qa", f"c{i}", 0.7) for i in range(9)]
        + [result("nines", "qa", f"c{i}", 0.9, run=k) for i in range(9) for k in (0, 1)])

    qa = card.models["thirds"].tasks["qa"]
    assert qa.score == pytest.approx(1 / 3) and qa.interval is None
    assert qa.metrics["question_score_accuracy"].interval is None
    sevens = card.models["sevens"]
    assert sevens.final_score_b == pytest.approx(0.7) and sevens.final_interval_b is None
    nines = card.models["nines"]
    assert nines.final_score_a is not None and nines.final_interval_a is None


def test_the_rank_interval_is_the_final_a_interval_over_the_normalised_cost() -> None:
    # Two cases run twice at 0.5 and 0.7 per model: consistency 1, so final A = (0.25 × 0.6
    # + 0.30) / 0.55 = 0.45 / 0.55 while final B is 0.6. Costs per 1000 calls 2 and 6:
    # normalised by the cheaper, 1 and 3.
    card = build_scorecard([result(m, "qa", case, score, run=k, cost=cost)
                            for m, cost in (("cheap", 0.002), ("dear", 0.006))
                            for case, score in (("x", 0.5), ("y", 0.7)) for k in (0, 1)])
    assert card.rank_basis == "final_score_a"
    cheap, dear = card.models["cheap"], card.models["dear"]
    assert cheap.final_score_a == pytest.approx(0.45 / 0.55)
    assert cheap.final_interval_a is not None and cheap.rank_interval == cheap.final_interval_a
    low, high = cheap.final_interval_a
    assert dear.rank_interval == pytest.approx((low / 3, high / 3))


def test_a_free_models_rank_interval_is_its_final_interval() -> None:
    # Normalised over the cost floor by itself, the free model's cost counts 1.
    card = build_scorecard([result("free", "qa", case, score, cost=0.0)
                            for case, score in (("a", 0.4), ("b", 0.6))]
                           + [result("paid", "qa", case, score, cost=0.002)
                              for case, score in (("a", 0.8), ("b", 1.0))])
    free, paid = card.models["free"], card.models["paid"]
    assert free.rank_interval == free.final_interval_b == pytest.approx((0.4, 0.6))
    assert paid.rank_interval == pytest.approx((0.8 / 2e9, 1.0 / 2e9))
    assert free.rank_ties == []


def test_a_one_case_task_leaves_the_final_score_untold_apart() -> None:
    # The same eight QA cases, and one entity, text and translation case each (65 % of
    # Final B): the one-case tasks were held as if known, [0.826, 0.846] against
    # [0.873, 0.893], and three single cases told the models apart.
    qa = [0.9, 1.0, 0.95, 1.0, 0.9, 1.0, 1.0, 0.95]
    singles = {"entity": (0.80, 0.90), "text": (0.70, 0.75), "translation": (0.80, 0.85)}
    card = build_scorecard(
        [result(m, "qa", f"q{i}", s) for m in "ab" for i, s in enumerate(qa)]
        + [result(m, task, "only", pair[k]) for task, pair in singles.items()
           for k, m in enumerate("ab")])
    a, b = card.models["a"], card.models["b"]
    assert a.tasks["qa"].interval is not None and a.tasks["entity"].interval is None
    assert (a.final_interval_b, b.final_interval_b) == (None, None)
    assert (a.rank_ties, b.rank_ties) == (["b"], ["a"])


def test_a_model_without_a_final_score_ties_with_none() -> None:
    # Only an agent case: no final score B, ranked last; it was "3 (tie 1, 2)", its missing
    # interval read as "too few cases".
    card = build_scorecard([result("a", "qa", c, 0.9) for c in "xy"]
                           + [result("b", "qa", c, 0.5) for c in "xy"]
                           + [result("c", "agent", "z", 0.9)])
    assert card.models["c"].final_score_b is None
    assert card.models["c"].rank_ties == []
    assert "c" not in card.models["a"].rank_ties + card.models["b"].rank_ties


def test_models_of_one_case_each_cannot_be_told_apart() -> None:
    # One case: the bootstrap gave each model a zero-width interval, so 0.9 and 0.91 were
    # ranked as told apart, as far apart as any two models.
    card = build_scorecard([result("a", "qa", "x", 0.9), result("b", "qa", "x", 0.91)])
    a, b = card.models["a"], card.models["b"]
    assert a.final_interval_b is None and a.tasks["qa"].interval is None
    assert (a.rank_ties, b.rank_ties) == (["b"], ["a"])


def test_models_a_model_cannot_be_told_apart_from_are_listed_in_rank_order() -> None:
    # Two cases each, wide apart, so every pair of intervals overlaps; by final score x
    # ranks first, y second, w last, which is not the models' alphabetical order.
    scores = {"w": (0.2, 0.8), "x": (0.3, 0.9), "y": (0.25, 0.85)}
    card = build_scorecard([result(m, "qa", case, s) for m, pair in scores.items()
                            for case, s in zip("ab", pair, strict=True)])
    assert [card.models[m].cost_adjusted_rank for m in "wxy"] == [3, 1, 2]
    assert card.models["y"].rank_ties == ["x", "w"]
    assert card.models["w"].rank_ties == ["x", "y"]


def test_the_model_card_reports_runs_only_of_cases_run_more_than_once() -> None:
    # Case a passed one run of two (flaky); case b ran once, so it has no run statistics.
    card = build_scorecard([
        TaskResult(task="qa", case_id=case, score=score, valid=True, blocked=False,
                   blockers=[], metrics={}, model="m", run=run, usage={}, passed=passed)
        for case, score, run, passed in (("a", 0.9, 0, True), ("a", 0.4, 1, False),
                                         ("b", 0.8, 0, True))])
    assert card.models["m"].to_dict()["runs"] == {
        "runs": 2, "k": 2, "cases": 1, "pass_rate": 0.5, "pass_hat_k": 0.0, "pass_at_k": 1.0,
        "flaky": ["qa/a"]}
    assert "runs" not in build_scorecard([result("m", "qa", "a", 0.9)]).models["m"].to_dict()


def _rated(value: float, rating: str, **details: object) -> MetricResult:
    return MetricResult(value=value, rating=rating, details=dict(details))  # type: ignore[arg-type]


def test_a_metric_cases_rate_by_their_own_threshold_keeps_that_rating_in_the_scorecard() -> None:
    # Before: a conversation case at threshold 0.90 rated 0.875 "fail", and the scorecard
    # re-rated it with the built-in 0.80 threshold as "good" (an agent at pass_threshold 90
    # alike). The cases now bracket the aggregate, as a case's runs bracket their mean.
    from pytest_callqa.engine.evaluate import evaluate
    from tests.families.test_agent import ALL_FIVE, CONFIG, GOOD
    from tests.families.test_agent import _case as agent_case
    from tests.families.test_conversation import GOOD as SPOKEN
    from tests.families.test_conversation import _case as conversation_case
    from tests.families.test_conversation import _judge

    from .helpers import FixedJudge

    strict = evaluate(conversation_case(config={"threshold": 0.90}), SPOKEN,
                      judge=_judge(intelligibility={1: 5, 3: 5, 5: 4, 7: 4}),
                      embedder=TFIDF, model="m")
    assert strict.metrics["intelligibility"].rating == "fail"
    card = build_scorecard([strict])
    assert card.models["m"].tasks["conversation"].metrics["intelligibility"].rating == "fail"
    scores = dict(ALL_FIVE, grounding_fidelity=2, instruction_compliance=2, response_delivery=3)
    agent = evaluate(agent_case(config={**CONFIG, "pass_threshold": 90}), GOOD,
                     judge=FixedJudge(scores), embedder=TFIDF, benchmarks=False, model="m")
    metrics = build_scorecard([agent]).models["m"].tasks["agent"].metrics
    assert metrics["overall_score"].value == pytest.approx(81.0)
    assert metrics["overall_score"].rating == "fail"


def test_cases_of_different_thresholds_rate_their_mean_by_the_worse_neighbour() -> None:
    from pytest_callqa.engine.registry import default_registry
    from pytest_callqa.engine.runs import bracketed_rating

    spec = next(m for m in default_registry().metrics_for("conversation")
                if m.id == "intelligibility")
    # 0.875 failed its case's 0.90; 0.95 is good by any threshold: the mean 0.9125 lies
    # between a fail and a good, and takes the worse.
    cases = [_rated(0.875, "fail", threshold=0.9), _rated(0.95, "good")]
    assert bracketed_rating(spec, cases, 0.9125) == "fail"
    # Rated as the built-in bands rate them: the bands rate the mean.
    assert bracketed_rating(spec, [_rated(0.85, "good"), _rated(0.7, "fail")], 0.775) == \
        spec.rate(0.775)


def test_a_pooled_rate_counts_only_the_scored_cases_that_give_their_counts() -> None:
    # A case whose pooled metric gives no counts (a project's metric) adds nothing to the
    # pooled rate, and a case the metric was not scored on is left out whatever it holds.
    card = build_scorecard([
        result("m", "qa", "a", 0.9, metrics=false_pass(1, 10)),
        result("m", "qa", "b", 0.9, metrics={"compliance_false_pass_rate": MetricResult(
            value=0.5, details={})}),
        result("m", "qa", "c", 0.9, metrics={"compliance_false_pass_rate": MetricResult(
            value=0.9, scored=False, details={"numerator": 9, "denominator": 10})}),
    ])
    agg = card.models["m"].tasks["qa"].metrics["compliance_false_pass_rate"]
    assert agg.value == pytest.approx(0.1) and agg.scored_cases == 2
    # A count the metric leaves out is 0, in the figure and in its resampling alike.
    halves = build_scorecard([
        result("m", "qa", "a", 0.9, metrics=false_pass(1, 10)),
        result("m", "qa", "b", 0.9, metrics={"compliance_false_pass_rate": MetricResult(
            value=0.0, details={"denominator": 10})})])
    halved = halves.models["m"].tasks["qa"].metrics["compliance_false_pass_rate"]
    assert halved.value == pytest.approx(0.05)
    assert halved.interval == pytest.approx((0.0, 0.1))
    # Resampled by case, the case without counts adds nothing either: one case carries
    # every unit, and one case's rate drawn again and again estimates nothing — no interval.
    assert agg.interval is None


def test_a_case_none_of_whose_metrics_was_scored_is_left_out_and_counted_apart() -> None:
    # It counted 0.0 in the task mean, "(1/2 invalid)": a number nobody measured.
    unscored = result("m", "qa", "b", None)
    judge_error = result("m", "qa", "c", None)
    judge_error.judge_errors = ["evidence_backed_reasoning"]
    card = build_scorecard([result("m", "qa", "a", 0.8), unscored, result("m", "qa", "d", 0.6),
                            judge_error])
    agg = card.models["m"].tasks["qa"]
    assert agg.score == pytest.approx(0.7)
    assert (agg.cases, agg.invalid_cases, agg.unscored_cases, agg.judge_error_cases) == (
        4, 0, 1, 1)
    assert agg.to_dict()["unscored_cases"] == 1
    assert "0.700 E (1/4 judge error) (1/4 not scored)" in render_scorecard(card)


def row_cells(text: str, label: str, models: int) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(label))
    return [cell.strip() for cell in line.split(" | ")[1:1 + models]]


def test_a_figure_by_a_band_edge_keeps_the_digits_that_tell_it_from_the_edge() -> None:
    # Rounded to the usual digits, 1/33 read "3.0% !!" beside 3/100's "3.0% ~", 1/99
    # "1.0% ~" under "<= 1%", 189/199 "0.950 ~" under ">= 0.95" and a garbled turn rate of
    # 9.96 % "10.0%", passing "< 10%".
    def case(model: str, false_passes: tuple[int, int], accuracy: float,
             garbled: float) -> list[TaskResult]:
        qa = {**false_pass(*false_passes),
              "question_score_accuracy": MetricResult(value=accuracy)}
        rate = {"garbled_turn_rate": MetricResult(value=garbled)}
        return [result(model, "qa", "q", 0.9, metrics=qa),
                result(model, "conversation", "c", 0.9, metrics=rate)]

    text = render_scorecard(build_scorecard([
        *case("a", (1, 33), 189 / 199, 0.0996), *case("b", (3, 100), 0.95, 0.1),
        *case("c", (1, 99), 0.9, 0.05)]), order=["a", "b", "c"])
    assert row_cells(text, "[!] Compliance False Pass Rate", 3) == ["3.03% !!", "3.0% ~",
                                                                   "1.01% ~"]
    assert row_cells(text, "Question Score Accuracy", 3) == ["0.9497 ~", "0.950", "0.900 ~"]
    assert row_cells(text, "Garbled Turn Rate", 3) == ["9.96%", "10.0% x", "5.0%"]


def test_a_metric_aggregate_counts_cases_not_runs() -> None:
    from pytest_callqa.run.summary import models_section

    # Two cases, three runs each: evidence flagged in run 1 of both, the judge failing it in
    # run 2 of case b; answer relevancy (a benchmark) scored in every run. Before: 6 (5)
    # scored cases, 6 flagged in the footnote, of a task of 2 cases.
    def run(case: str, k: int) -> TaskResult:
        evidence = (MetricResult.judge_failed("timeout") if (case, k) == ("b", 1)
                    else MetricResult(value=0.8, flagged=k == 0))
        return result("m", "qa", case, 0.8, run=k, metrics={
            "evidence_backed_reasoning": evidence,
            "answer_relevancy": MetricResult(value=0.9, flagged=True)})

    card = build_scorecard([run(case, k) for case in "ab" for k in range(3)])
    qa = card.models["m"].tasks["qa"]
    evidence = qa.metrics["evidence_backed_reasoning"]
    assert qa.cases == 2
    assert (evidence.scored_cases, evidence.flagged, evidence.judge_errors) == (2, 2, 1)
    relevancy = card.models["m"].benchmarks["answer_relevancy"]
    assert (relevancy["scored_cases"], relevancy["judge_errors"]) == (2, 0)
    json_metric = models_section(card)["m"]["tasks"]["qa"]["metrics"][
        "evidence_backed_reasoning"]
    assert (json_metric["flagged"], json_metric["judge_errors"]) == (2, 1)
    text = render_scorecard(card)
    assert "rule in evidence_backed_reasoning ×2" in text
    assert "model) in evidence_backed_reasoning ×1" in text
