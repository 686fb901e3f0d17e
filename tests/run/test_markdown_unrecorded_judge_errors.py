"""The PR summary's count of judge errors takes in those no failed verdict of the judge
stands behind: a combined verdict that gave no score for one of its metrics, a custom metric
that gave no value on an output the judge could not wholly score. Their figures are marked E
like the others', and the terminal's footnotes count them."""

from __future__ import annotations

from typing import Any

from pytest_callqa.engine.core.metrics import MetricSpec
from pytest_callqa.engine.core.results import TaskResult
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.tasks.conversation import COMBINED
from pytest_callqa.run.markdown import render_markdown
from pytest_callqa.run.settings import count
from tests.engine.helpers import TFIDF, make_case
from tests.engine.test_evaluate import FailingJudge, example
from tests.families.helpers import ScriptedJudge
from tests.families.test_conversation import BOT_TURNS, EXPECTED, GOOD, TRANSCRIPT

from .test_markdown_judge_errors import report_of


def judge_error_line(text: str) -> str | None:
    return next((line for line in text.splitlines() if line.startswith("⚠️ Judge errors")),
                None)


def as_reported(results: list[TaskResult]) -> dict[str, Any]:
    """The results' report, with the ``judge_errors`` section the JSON report (and the merge)
    gives it: the judge records of failed verdicts, the outputs left out of task scores."""
    return report_of(results, judge_errors={
        "verdicts": sum(1 for r in results for rec in r.judge_records if rec.get("judge_error")),
        "outputs_without_task_score": sum(1 for r in results if r.incomplete)})


def without_context_scores() -> TaskResult:
    """A conversation judged in combined mode by a judge whose verdicts give no context
    score: every verdict was given, none failed, and the task score is unknown."""
    details = {f"turn {t}": {"intelligibility": 5, "segmentation": 5} for t in BOT_TURNS}
    judge = ScriptedJudge({COMBINED: 5}, item_details={COMBINED: details})
    case = make_case("conversation", EXPECTED, config={"combined": True},
                     transcript=TRANSCRIPT)
    result = evaluate(case, GOOD, judge=judge, embedder=TFIDF, model="m")
    assert "context" in result.judge_errors and result.incomplete
    assert not any(rec.get("judge_error") for rec in result.judge_records)
    return result


def copying_an_unknown_score() -> TaskResult:
    """A text output whose highlight_correctness verdict failed, with a custom metric that
    copies the task score the failure left unknown."""
    registry = default_registry().copy()
    registry.register_metric(MetricSpec(
        id="score_copy", task="text", name="Score copy", description="the task score",
        scale="0-1", threshold=">= 0.5"), lambda case, output, result: result.score)
    case, output = example("text-abcd-3647-overnight-shipping-cost")
    result = evaluate(case, output, judge=FailingJudge({"highlight_correctness"}),
                      embedder=TFIDF, model="m", registry=registry)
    assert result.judge_errors == ["highlight_correctness", "score_copy", "summary_score"]
    return result


def test_judge_errors_without_a_failed_verdict_are_not_left_out_of_the_summary() -> None:
    # Before: no judge-error line at all (the JSON's verdict count is 0), though the JSON
    # counts the output left out of its task score and its conversation cell is marked E.
    result = without_context_scores()
    text = render_markdown(as_reported([result]))
    assert judge_error_line(text) == (
        "⚠️ Judge errors: 0 verdicts the judge could not give; 1 output left out of task "
        "scores. A failure of the tool, not of the models: the figures they touch are marked "
        f"E. In all, judge errors left {count(len(result.judge_errors), 'metric result')} in "
        "1 output unknown.")


def test_a_custom_metric_the_judges_gap_left_unknown_is_counted() -> None:
    # Before: "1 verdicts the judge could not give" alone, as if one figure were unknown.
    copied, conversation = copying_an_unknown_score(), without_context_scores()
    text = render_markdown(as_reported([copied, conversation]))
    line = judge_error_line(text)
    assert line is not None
    unknown = len(copied.judge_errors) + len(conversation.judge_errors)
    assert line.endswith(f" In all, judge errors left {unknown} metric results in 2 outputs "
                         "unknown.")
    assert line.startswith("⚠️ Judge errors: 1 verdict the judge could not give; 2 outputs "
                           "left out of task scores.")


def test_the_terminal_header_counts_them_too() -> None:
    # Before: no "judge errors" line in the scorecard's header when no failed verdict stood
    # behind the unknown figures.
    from pytest_callqa.run.gaps import judge_error_lines

    result = without_context_scores()
    assert judge_error_lines([result]) == [
        "judge errors: 0 verdicts the judge could not give (shown as E); 1 output left out of "
        "task scores, and the tests that needed them reported as errors, not as model "
        f"failures; in all, {count(len(result.judge_errors), 'metric result')} left unknown"]
    copied = copying_an_unknown_score()
    assert judge_error_lines([copied])[0].startswith(
        "judge errors: 1 verdict the judge could not give (shown as E); 1 output left out")
    assert judge_error_lines([copied])[0].endswith("in all, 3 metric results left unknown")


def test_the_summary_counts_one_output_and_one_model_in_the_singular() -> None:
    text = render_markdown(as_reported([without_context_scores()]))
    assert "1 output scored, 1 model" in text.splitlines()[2]
