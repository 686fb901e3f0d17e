"""What the scorecard makes of verdicts the judge could not give: a final score, a Benchmark
Score, a disqualification or a rank that rests on them is unknown and said to be — never the
figure of what happened to be scored, never a pass."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.core.results import MetricResult, TaskResult
from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.report import render_scorecard
from pytest_callqa.engine.scorecard import build_scorecard

from .helpers import TFIDF
from .test_evaluate import FailingJudge, example

EVIDENCE = "evidence_backed_reasoning"
FABRICATION = "fabrication_free_rate"


def scored(model: str, task: str, case: str, score: float | None, *, valid: bool = True,
           blocked: bool = False, cost: float | None = None,
           metrics: dict[str, MetricResult] | None = None) -> TaskResult:
    return TaskResult(task=task, case_id=case, score=score, valid=valid, blocked=blocked,
                      blockers=["response_structure_compliance"] if blocked else [],
                      metrics=dict(metrics or {}), model=model,
                      usage={} if cost is None else {"cost_usd": cost})


def judge_error(model: str, task: str, case: str, metric: str = EVIDENCE, *,
                score: float | None = None, blocker: bool = False, blocked: bool = False,
                cost: float | None = None) -> TaskResult:
    """A result whose ``metric`` the judge could not score: its score unknown unless
    ``score`` is given (a metric outside the task score), ``blocker`` when the metric is a
    blocker by the run's definition (as the evaluation marks it)."""
    result = scored(model, task, case, score, blocked=blocked, cost=cost, metrics={
        metric: MetricResult(value=None, scored=False, judge_error=True,
                             reason="judge error: connection refused",
                             details={"blocker_metric": True} if blocker else {})})
    result.judge_errors = [metric]
    return result


def criterion(value: float | None) -> dict[str, MetricResult]:
    """An instruction_following benchmark verdict, or its judge error (None)."""
    if value is None:
        return {"instruction_following": MetricResult(
            value=None, scored=False, judge_error=True, reason="judge error: timeout")}
    return {"instruction_following": MetricResult(value=value)}


def with_benchmark_error(result: TaskResult) -> TaskResult:
    result.metrics.update(criterion(None))
    result.judge_errors.append("instruction_following")
    return result


def row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(label))


# --- D1: a final score over a task the judge could not score ---------------------------------


def test_a_task_the_judge_could_not_score_at_all_leaves_the_final_scores_unknown() -> None:
    # Before: final B 1.0 from the text task alone, qa missing from the footnote.
    card = build_scorecard([judge_error("m", "qa", f"q{i}") for i in range(5)]
                           + [scored("m", "text", "t", 1.0, metrics=criterion(1.0))])
    model = card.models["m"]
    assert model.tasks["qa"].score is None
    assert model.incomplete_tasks == ["qa"]
    assert (model.final_score_a, model.final_score_b) == (None, None)
    assert (model.final_interval_a, model.final_interval_b) == (None, None)
    # A task with no result at all is still renormalised around, as before.
    assert model.missing_tasks == ["entity", "translation"]
    assert model.benchmark_score == 1.0
    assert model.to_dict()["incomplete_tasks"] == ["qa"]
    text = render_scorecard(card)
    assert row(text, "Final Score (with benchmarks)").split("|")[1].strip() == "—E"
    assert row(text, "Final Score (without benchmarks)").split("|")[1].strip() == "—E"
    assert ("E m: final scores unknown: the judge could not score all of qa (a judge error, "
            "not a model failure; not renormalised around it)") in text


def test_a_task_left_with_fewer_cases_by_judge_errors_leaves_the_finals_unknown() -> None:
    # budget-7b: one invalid case and four judge errors gave qa 0.000 and final B 0.000.
    card = build_scorecard([scored("m", "qa", "q0", None, valid=False, blocked=True)]
                           + [judge_error("m", "qa", f"q{i}") for i in range(1, 5)]
                           + [scored("m", "entity", "e", 0.9)])
    model = card.models["m"]
    assert model.tasks["qa"].score == 0.0  # the task figure stays, marked E (4/5 judge error)
    assert model.incomplete_tasks == ["qa"]
    assert model.final_score_b is None and model.final_interval_b is None
    assert "0.000 (1/5 invalid) E (4/5 judge error) !!" in row(render_scorecard(card), "QA Score")


def test_a_judge_error_outside_the_task_score_leaves_the_finals_known() -> None:
    # A metric weighing nothing in the task score (its case keeps its score), and a task
    # outside the final score.
    card = build_scorecard([judge_error("m", "entity", "e", "keyword_precision", score=0.8),
                            judge_error("m", "agent", "a")])
    model = card.models["m"]
    assert model.incomplete_tasks == []
    assert model.final_score_b == pytest.approx(0.8)
    assert model.final_interval_b is None  # of one case, nothing to resample
    # Nor is the case counted as left out of the task score: it was not (it said so before).
    assert model.tasks["entity"].judge_error_cases == 0
    text = render_scorecard(card)
    assert row(text, "Entity Score").split("|")[1].strip() == "0.800"
    assert ("E m: entity: judge errors (not scored, not counted against the model) in "
            "keyword_precision ×1\n") in text


def test_incomplete_tasks_are_listed_in_the_final_score_order_then_the_benchmarks() -> None:
    card = build_scorecard([
        judge_error("m", "translation", "t"), with_benchmark_error(judge_error("m", "qa", "q")),
        judge_error("m", "entity", "e")])
    assert card.models["m"].incomplete_tasks == ["qa", "entity", "translation", "benchmarks"]


# --- D4: benchmark criteria the judge could not score ---------------------------------------


def test_a_criterion_the_judge_could_not_score_leaves_the_benchmark_score_unknown() -> None:
    # Before: the criterion showed "—" (the heuristic's "not scored") and the Benchmark Score
    # was the other criteria's, higher than with it.
    exact_fail = {"exact_match": MetricResult(value=0.0)}
    results = [scored("m", "qa", f"q{i}", 0.8, metrics=exact_fail | criterion(None))
               for i in range(2)]
    for r in results:
        r.judge_errors = ["instruction_following"]
    card = build_scorecard(results)
    model = card.models["m"]
    assert model.benchmarks["instruction_following"] == {
        "value": None, "passed": None, "scored_cases": 0, "judge_errors": 2}
    assert model.benchmarks["exact_match"]["judge_errors"] == 0
    assert model.incomplete_tasks == ["benchmarks"]
    assert model.benchmark_score is None and model.final_score_a is None
    assert model.final_interval_a is None
    # Final B weighs no benchmark: it stands.
    assert model.final_score_b == pytest.approx(0.8)
    text = render_scorecard(card)
    assert row(text, "Instruction Following").split("|")[1].strip() == "—E"
    assert row(text, "Benchmark Score").split("|")[1].strip() == "—E"
    assert row(text, "Final Score (with benchmarks)").split("|")[1].strip() == "—E"
    assert row(text, "Final Score (without benchmarks)").split("|")[1].strip() == "0.800"
    assert "E m: benchmarks: judge errors (not scored, not counted against the model) in " \
        "instruction_following ×2" in text
    assert "E m: Benchmark Score and final score A unknown: the judge could not score all " \
        "of benchmarks" in text


def test_a_criterion_partly_scored_is_marked_and_leaves_the_benchmark_score_unknown() -> None:
    results = [scored("m", "qa", "q0", 0.8, metrics=criterion(1.0)),
               with_benchmark_error(scored("m", "qa", "q1", 0.8))]
    model = build_scorecard(results).models["m"]
    assert model.benchmarks["instruction_following"] == {
        "value": 1.0, "passed": True, "scored_cases": 1, "judge_errors": 1}
    assert model.benchmark_score is None and model.final_score_a is None
    text = render_scorecard(build_scorecard(results))
    assert row(text, "Instruction Following").split("|")[1].strip() == "1 (1.000)E"


def test_benchmark_judge_errors_without_a_call_task_leave_nothing_incomplete() -> None:
    # A conversation-only model has no benchmark score and no final score to leave unknown.
    card = build_scorecard([with_benchmark_error(scored("m", "conversation", "c", 0.9))])
    model = card.models["m"]
    assert model.benchmarks["instruction_following"]["judge_errors"] == 1
    assert model.incomplete_tasks == []


# --- D3: blockers the judge could not score -------------------------------------------------


def test_a_blocker_the_judge_could_not_score_leaves_the_disqualification_unknown() -> None:
    # Before: Any Blocker "No", no footnote, any_blocker false, ranked as blocker-free.
    card = build_scorecard([judge_error("m", "text", f"t{i}", FABRICATION, score=0.9,
                                        blocker=True) for i in range(5)])
    model = card.models["m"]
    text_task = model.tasks["text"]
    assert (text_task.blocker_unknown_cases, text_task.unknown_blockers) == (5, [FABRICATION])
    assert text_task.disqualification_unknown and not text_task.disqualified
    assert model.any_blocker is None
    assert model.to_dict()["any_blocker"] is None
    assert model.to_dict()["tasks"]["text"]["disqualification_unknown"] is True
    text = render_scorecard(card)
    assert row(text, "Any Blocker Triggered?").split("|")[1].strip() == "Unknown !?"
    assert row(text, "Text Score").split("|")[1].strip().endswith("!?")
    assert ("[!?] m: disqualification for text unknown: 5 of 5 case(s) have a blocker that "
            "could not be decided (fabrication_free_rate: a judge error, a metric's code "
            "error or a metric not estimated, not a model failure), 0 blocked") in text


@pytest.mark.parametrize(("blocked", "undecided", "tolerance", "unknown", "disqualified"), [
    (0, 1, 0, True, False),
    (0, 0, 0, False, False),
    (0, 1, 1, False, False),   # one undecided case stays within a tolerance of one
    (1, 1, 1, True, False),    # at the tolerance: the undecided case could tip it
    (1, 0, 0, False, True),
    (2, 1, 1, False, True),    # known blocked beyond the tolerance: disqualified, known
])
def test_the_disqualification_is_unknown_only_when_undecided_cases_could_tip_it(
        blocked: int, undecided: int, tolerance: int, unknown: bool, disqualified: bool) -> None:
    results = ([scored("m", "qa", f"b{i}", None, valid=False, blocked=True)
                for i in range(blocked)]
               + [judge_error("m", "qa", f"u{i}", "compliance_false_pass_rate", score=0.8,
                              blocker=True) for i in range(undecided)]
               + [scored("m", "qa", "fine", 0.9)])
    card = build_scorecard(results, disqualify_tolerance=tolerance)
    qa = card.models["m"].tasks["qa"]
    assert (qa.disqualification_unknown, qa.disqualified) == (unknown, disqualified)
    # The model is disqualified as its task is; a blocker fired when a case is blocked,
    # within the tolerance or not (before, any_blocker was the disqualification).
    assert card.models["m"].disqualified is (True if disqualified else None if unknown
                                             else False)
    assert card.models["m"].any_blocker is (True if blocked else None if undecided else False)


def test_only_an_undecided_blocker_of_a_case_not_known_blocked_counts() -> None:
    card = build_scorecard([
        # Blocked by another metric: the case is known to be blocked.
        judge_error("m", "qa", "a", "compliance_false_pass_rate", score=None, blocker=True,
                    blocked=True),
        # A judge error on a metric that is no blocker decides no disqualification.
        judge_error("m", "qa", "b", EVIDENCE),
    ])
    qa = card.models["m"].tasks["qa"]
    assert (qa.blocked_cases, qa.blocker_unknown_cases, qa.unknown_blockers) == (1, 0, [])


def test_a_blocker_whose_code_raised_is_undecided_too() -> None:
    raised = MetricResult.not_scored("custom metric raised ValueError: boom", raised="ValueError",
                                     blocker_metric=True)
    card = build_scorecard([scored("m", "qa", "a", 0.9, metrics={"no_pii": raised})])
    qa = card.models["m"].tasks["qa"]
    assert (qa.blocker_unknown_cases, qa.unknown_blockers) == (1, ["no_pii"])
    assert card.models["m"].any_blocker is None


def test_a_known_disqualification_outweighs_an_unknown_one() -> None:
    card = build_scorecard([
        scored("m", "qa", "a", None, valid=False, blocked=True),
        judge_error("m", "text", "t", FABRICATION, score=0.9, blocker=True),
        scored("n", "qa", "a", 0.5)])
    model = card.models["m"]
    assert model.tasks["text"].disqualification_unknown
    assert model.any_blocker is True
    # Known to be disqualified, it is ranked, after the model without a blocker.
    assert (model.cost_adjusted_rank, card.models["n"].cost_adjusted_rank) == (2, 1)


# --- D2: the rank of a model whose ranking basis is unknown ---------------------------------


def test_a_model_whose_final_score_is_unknown_is_not_ranked() -> None:
    # Before: its unknown final counted 0, so it ranked last (rank 3) and lost its tie.
    card = build_scorecard([
        judge_error("unknown", "qa", "a", cost=0.001), scored("unknown", "entity", "e", 0.9,
                                                               cost=0.001),
        scored("good", "qa", "a", 0.9, cost=0.002), scored("fair", "qa", "a", 0.6, cost=0.002),
    ])
    unknown, good, fair = (card.models[m] for m in ("unknown", "good", "fair"))
    assert unknown.cost_adjusted_rank is None and unknown.to_dict()["cost_adjusted_rank"] is None
    assert (unknown.cost_efficiency, unknown.rank_interval, unknown.rank_ties) == (None, None, [])
    assert (good.cost_adjusted_rank, fair.cost_adjusted_rank) == (1, 2)
    # Cost is normalised among the ranked models: the cheaper unranked one sets no scale.
    assert good.cost_efficiency == pytest.approx(0.9)
    assert card.notes == [
        "not ranked, what it would be ranked on being unknown — unknown: final score B "
        "unknown (the judge could not score all of qa)"]
    assert row(render_scorecard(card), "Cost-Adjusted Rank").split("|")[3].strip() == "—"


def test_a_model_whose_disqualification_is_unknown_is_not_ranked_nor_tied() -> None:
    # Its final score is known and overlaps the other's, but it may be disqualified.
    card = build_scorecard([
        judge_error("maybe", "qa", "a", "compliance_false_pass_rate", score=0.8, blocker=True),
        scored("maybe", "qa", "b", 0.6), scored("sure", "qa", "a", 0.7),
        scored("sure", "qa", "b", 0.7)])
    maybe, sure = card.models["maybe"], card.models["sure"]
    assert maybe.final_score_b == pytest.approx(0.7)
    assert maybe.cost_adjusted_rank is None and maybe.rank_interval is None
    assert (sure.cost_adjusted_rank, sure.rank_ties) == (1, [])
    assert card.notes[-1].endswith(
        "maybe: disqualification unknown (a blocker could not be decided in qa)")


def test_an_unknown_final_score_a_keeps_the_basis_and_leaves_the_model_unranked() -> None:
    # A judge failure in one model's benchmarks must not switch everyone to final score B.
    card = build_scorecard([
        scored("a", "qa", "x", 0.6, metrics=criterion(1.0)),
        with_benchmark_error(scored("b", "qa", "x", 0.9))])
    assert card.rank_basis == "final_score_a"
    assert card.models["a"].cost_adjusted_rank == 1
    assert card.models["b"].cost_adjusted_rank is None
    assert card.notes[-1].endswith(
        "b: final score A unknown (the judge could not score all of benchmarks)")


def test_the_note_names_what_leaves_each_model_unranked() -> None:
    # Ranked on final score B ("plain" has no Layer 2): the benchmarks weigh nothing in it.
    card = build_scorecard([
        with_benchmark_error(judge_error("both", "qa", "x")),
        judge_error("both", "text", "t", FABRICATION, score=0.9, blocker=True),
        scored("plain", "qa", "x", 0.5)])
    assert card.rank_basis == "final_score_b"
    assert card.models["both"].incomplete_tasks == ["qa", "benchmarks"]
    assert card.notes[-1].endswith(
        "both: final score B unknown (the judge could not score all of qa), "
        "disqualification unknown (a blocker could not be decided in text)")


def test_with_every_model_unranked_no_cost_note_is_made() -> None:
    card = build_scorecard([judge_error("a", "qa", "x"), judge_error("b", "qa", "x")])
    assert [c.cost_adjusted_rank for c in card.models.values()] == [None, None]
    assert len(card.notes) == 1 and card.notes[0].startswith("not ranked")


# --- through the evaluation, as a run meets them ---------------------------------------------


def test_a_judge_down_for_a_blocker_through_the_evaluation() -> None:
    # The text family's fabrication check is a judge-scored blocker weighted into the task.
    ids = ["text-abcd-3647-overnight-shipping-cost", "text-abcd-3695-promo-code-expiry"]
    items = [(*example(cid), model) for cid in ids for model in ("down", "up")]
    down = evaluate_many([i for i in items if i[2] == "down"],
                         judge=FailingJudge({FABRICATION}), embedder=TFIDF)
    up = evaluate_many([i for i in items if i[2] == "up"], judge=FailingJudge(set()),
                       embedder=TFIDF)
    card = build_scorecard(down + up)
    model = card.models["down"]
    assert model.tasks["text"].blocker_unknown_cases == 2
    assert model.any_blocker is None
    assert "text" in model.incomplete_tasks and model.final_score_b is None
    assert model.cost_adjusted_rank is None
    assert card.models["up"].cost_adjusted_rank == 1


def test_the_note_lists_every_unranked_model_and_every_task_that_leaves_it_so() -> None:
    # Two models unranked, one for two incomplete tasks and two undecided disqualifications:
    # each reason and each task named, apart (mutation testing found the lists unchecked).
    card = build_scorecard([
        judge_error("a", "qa", "x"), judge_error("a", "entity", "e"),
        judge_error("a", "text", "t", FABRICATION, score=0.9, blocker=True),
        judge_error("a", "translation", "r", "critical_fact_preservation", score=0.9,
                    blocker=True),
        judge_error("b", "qa", "x"), scored("plain", "qa", "x", 0.5)])
    assert [c.cost_adjusted_rank for c in card.models.values()] == [None, None, 1]
    assert card.notes[-1] == (
        "not ranked, what it would be ranked on being unknown — a: final score B unknown "
        "(the judge could not score all of qa, entity), disqualification unknown (a blocker "
        "could not be decided in text, translation); b: final score B unknown (the judge "
        "could not score all of qa)")


def test_a_pair_whose_test_errored_leaves_the_model_unranked_not_clean() -> None:
    # A live model's generation failed on its blocked case: computed from the results that
    # existed, the model had no blocker, a higher final score and rank 1 — the outage read
    # as a clean run. The errored pair may have been blocked, and its score is unknown.
    results = [scored("m1", "qa", "a", 0.6), scored("m1", "qa", "b", 0.6),
               scored("gen", "qa", "a", 0.9)]
    clean = build_scorecard(results)
    assert clean.models["gen"].cost_adjusted_rank == 1 and clean.models["gen"].any_blocker is False
    card = build_scorecard(results, errored=[("gen", "qa", "b")])
    gen, m1 = card.models["gen"], card.models["m1"]
    qa = gen.tasks["qa"]
    assert (qa.score, qa.cases, qa.blocker_unknown_cases, qa.disqualification_unknown) == (
        0.9, 1, 1, True)
    assert (gen.any_blocker, gen.final_score_b, gen.cost_adjusted_rank) == (None, None, None)
    assert gen.incomplete_tasks == gen.errored_tasks == ["qa"]
    assert m1.cost_adjusted_rank == 1
    assert ("not ranked, what it would be ranked on being unknown — gen: final score B unknown "
            "(a test errored in qa), disqualification unknown (a blocker could not be decided "
            "in qa)") in card.notes
    assert ("E gen: final scores unknown: a test errored in qa (a failure of the tool, not a "
            "model failure; not renormalised around it)") in render_scorecard(card)
    # Not "1 of 1 case(s) have a blocker that could not be decided (: a judge error…)": the
    # errored case is not among the task's scored ones, and no judge failed.
    assert qa.errored_cases == 1
    assert ("[!?] gen: disqualification for qa unknown: 1 case(s) whose test errored (blocked "
            "or not is unknown: a failure of the tool, not of the model), 0 blocked"
            ) in render_scorecard(card)
    # A task known to disqualify the model stays disqualified whatever the errored case held.
    blocked = build_scorecard([scored("gen", "qa", "a", 0.0, valid=False, blocked=True)],
                              errored=[("gen", "qa", "b")])
    assert blocked.models["gen"].any_blocker is True


def test_a_task_every_case_of_which_errored_is_unknown_not_missing() -> None:
    # Renormalised away as a task the model was never asked, it raised the final score; then
    # left out of the model's tasks, it read "n/a" (never asked), with no undecided mark.
    card = build_scorecard([scored("gen", "qa", "a", 0.9)],
                           errored=[("gen", "entity", "e1"), ("gen", "entity", "e2")])
    gen = card.models["gen"]
    assert "entity" not in gen.missing_tasks
    entity = gen.tasks["entity"]
    assert (entity.score, entity.cases, entity.errored_cases, entity.blocker_unknown_cases,
            entity.disqualification_unknown) == (None, 0, 2, 2, True)
    assert (gen.final_score_b, gen.any_blocker, gen.incomplete_tasks) == (
        None, None, ["entity"])
    assert any("disqualification unknown (a blocker could not be decided in entity)" in note
               for note in card.notes)
    text = render_scorecard(card)
    # Unknown because both its cases errored, marked E as the markdown marks it.
    assert row(text, "Entity Score").split("|")[1].strip() == "— E (2 test errored) !?"
    assert ("[!?] gen: disqualification for entity unknown: 2 case(s) whose test errored "
            "(blocked or not is unknown: a failure of the tool, not of the model), 0 blocked"
            ) in text


def test_a_model_every_pair_of_which_errored_keeps_its_column_unknown() -> None:
    # Every pair of beta errored: beta was missing from the scorecard, alpha ranked 1 as if
    # beta had never run, and every report lost beta's column.
    results = [scored("alpha", "qa", "a", 0.9), scored("alpha", "entity", "e", 0.8)]
    card = build_scorecard(results, errored=[("beta", "qa", "a"), ("beta", "entity", "e")])
    beta = card.models["beta"]
    assert set(beta.tasks) == {"qa", "entity"}
    assert all(a.score is None and a.errored_cases == 1 and a.disqualification_unknown
               for a in beta.tasks.values())
    assert (beta.final_score_a, beta.final_score_b, beta.any_blocker, beta.cost_adjusted_rank,
            beta.incomplete_tasks) == (None, None, None, None, ["qa", "entity"])
    assert card.models["alpha"].cost_adjusted_rank == 1
    assert ("not ranked, what it would be ranked on being unknown — beta: final score B "
            "unknown (a test errored in qa, entity), disqualification unknown (a blocker "
            "could not be decided in entity, qa)") in card.notes
    assert row(render_scorecard(card), "Any Blocker Triggered?").split("|")[2].strip() == (
        "Unknown !?")


def test_a_model_every_pair_of_which_has_no_output_keeps_the_rank_basis() -> None:
    # With no result of its own, beta had no benchmarks: ranked by final score A before, the
    # run switched to final score B because beta's tool failed.
    results = [scored("alpha", "qa", "a", 0.9, metrics=criterion(1.0))]
    assert build_scorecard(results).rank_basis == "final_score_a"
    card = build_scorecard(results, no_output=[("beta", "qa", "a")])
    beta = card.models["beta"]
    assert card.rank_basis == "final_score_a"
    assert (beta.incomplete_tasks, beta.no_output_tasks) == (
        ["qa", "benchmarks"], ["qa", "benchmarks"])
    assert (beta.final_score_a, card.models["alpha"].cost_adjusted_rank) == (None, 1)


def test_a_pair_that_errored_outside_the_final_score_tasks_names_its_task() -> None:
    # The reason read "a blocker could not be decided in " with nothing after it.
    card = build_scorecard([scored("gen", "qa", "a", 0.9), scored("m1", "qa", "a", 0.8)],
                           errored=[("gen", "conversation", "c1")])
    gen = card.models["gen"]
    assert (gen.any_blocker, gen.cost_adjusted_rank, gen.errored_tasks) == (
        None, None, ["conversation"])
    assert gen.final_score_b is not None and gen.incomplete_tasks == []
    assert ("not ranked, what it would be ranked on being unknown — gen: disqualification "
            "unknown (a blocker could not be decided in conversation)") in card.notes
    assert "final scores unknown" not in render_scorecard(card)


def test_a_pair_without_an_output_leaves_the_model_unranked_not_clean() -> None:
    # beta gave no output for the case alpha's output was blocked on: read as never asked,
    # beta had no blocker, the higher final score and rank 1, above the model that answered.
    results = [scored("alpha", "qa", "a", 0.9),
               scored("alpha", "qa", "b", 0.0, valid=False, blocked=True),
               scored("beta", "qa", "a", 0.9)]
    card = build_scorecard(results, no_output=[("beta", "qa", "b")])
    beta = card.models["beta"]
    qa = beta.tasks["qa"]
    assert (qa.cases, qa.blocker_unknown_cases, qa.no_output_cases, qa.errored_cases,
            qa.disqualification_unknown) == (1, 1, 1, 0, True)
    assert (beta.any_blocker, beta.final_score_b, beta.cost_adjusted_rank) == (None, None, None)
    assert (beta.incomplete_tasks, beta.no_output_tasks, beta.errored_tasks) == (
        ["qa"], ["qa"], [])
    assert card.models["alpha"].cost_adjusted_rank == 1
    assert ("not ranked, what it would be ranked on being unknown — beta: final score B "
            "unknown (an output is missing in qa), disqualification unknown (a blocker could "
            "not be decided in qa)") in card.notes
    text = render_scorecard(card)
    assert ("E beta: final scores unknown: an output is missing in qa (not evaluated: neither "
            "a pass nor a failure; not renormalised around it)") in text
    assert ("[!?] beta: disqualification for qa unknown: 1 case(s) without an output (blocked "
            "or not is unknown: not evaluated, not a pass), 0 blocked") in text
    assert "test errored" not in text and "judge could not score" not in text


def test_a_model_with_no_output_for_any_case_of_a_task_is_not_renormalised_around_it() -> None:
    card = build_scorecard([scored("gen", "qa", "a", 0.9)], no_output=[("gen", "entity", "e")],
                           errored=[("gen", "qa", "b")])
    gen = card.models["gen"]
    assert "entity" not in gen.missing_tasks and gen.final_score_b is None
    assert (gen.errored_tasks, gen.no_output_tasks, gen.any_blocker) == (["qa"], ["entity"], None)
    assert ("gen: final score B unknown (a test errored in qa; an output is missing in entity), "
            "disqualification unknown (a blocker could not be decided in entity, qa)"
            ) in card.notes[-1]


def test_with_no_model_ranked_the_rank_row_says_so_not_that_a_cost_is_unknown() -> None:
    # Every cost known, every final score unknown: the row read "by final score alone, a
    # cost being unknown" over a rank column of dashes.
    card = build_scorecard([judge_error("a", "qa", "x", cost=0.001),
                            judge_error("b", "qa", "x", cost=0.002)])
    assert [c.cost_adjusted_rank for c in card.models.values()] == [None, None]
    assert all(c.cost_per_1000_calls is not None for c in card.models.values())
    assert row(render_scorecard(card), "Cost-Adjusted Rank").endswith(
        "| no model ranked, what each would be ranked on (final_score_b) being unknown")


def test_a_task_missing_cases_whose_test_errored_or_without_an_output_is_marked_e() -> None:
    # The task score read "1.000 !?" and the metric "1.000", as if every case were in them;
    # the markdown summary alone said "1.000 E (1 test errored)".
    metrics = {EVIDENCE: MetricResult(value=1.0)}
    results = [scored(model, "qa", case, 1.0, metrics=dict(metrics))
               for model, case in (("alpha", "a"), ("alpha", "b"), ("alpha", "c"),
                                   ("beta", "a"))]
    card = build_scorecard(results, errored=[("beta", "qa", "b")],
                           no_output=[("beta", "qa", "c")])
    text = render_scorecard(card)
    cells = [cell.strip() for cell in row(text, "QA Score").split("|")[1:3]]
    assert cells == ["1.000", "1.000 E (1 test errored; 1 no output) !?"]
    cells = [cell.strip() for cell in row(text, "Evidence-Backed Reasoning").split("|")[1:3]]
    assert cells == ["1.000", "1.000E"]
