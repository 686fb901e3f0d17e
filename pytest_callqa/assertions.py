"""Assertion helpers for evaluation tests.

Each failure message is meant to be read in a CI log without opening any file: it names the
model and the case, then lists every failing metric with its observed value, its rating and
threshold, and the reason (the judge's own words for judge metrics), then the blockers and
what could not be scored.

A check that needs a verdict the judge could not give raises
:class:`~pytest_callqa.engine.core.results.JudgeUnavailable` instead of failing, and one that
needs a custom metric whose code raised
:class:`~pytest_callqa.engine.core.results.MetricCodeError`: the plugin reports that test as
an error (the tool failed), never as a failure of the model or a pass. What is known still
decides a check it settles whatever the unknown verdicts: a blocker that fired fails a score
check (its message says what the judge could not score).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest

from .assertion_lines import (
    FAILING,
    apart,
    at_least,
    at_most,
    code_error,
    detail_lines,
    metric_edges,
    metric_line,
    not_evaluated,
    rate_and_limit,
    real_bound,
    signal_types,
    spec_for,
    threshold_text,
    unknown_score,
    value_text,
    value_texts,
    who,
    why_unscored,
)
from .engine.core.metrics import CASE_BAR, DISABLED_THRESHOLD
from .engine.core.results import (
    EvaluationUnavailable,
    JudgeUnavailable,
    MetricCodeError,
    TaskResult,
)
from .engine.core.unicode_text import showable

if TYPE_CHECKING:
    from .engine.core.metrics import MetricSpec

__all__ = [
    "assert_agent_passes",
    "assert_entity_score",
    "assert_extraction_f1",
    "assert_grounded",
    "assert_metric",
    "assert_no_blockers",
    "assert_no_garbled_turns",
    "assert_qa_score",
    "assert_text_score",
    "assert_translation_score",
]

_TITLES = {"qa": "QA", "entity": "Entity", "text": "Text", "translation": "Translation"}
# The conversation family's per-turn metrics, the garbled turn rate's inputs.
_TURN_METRICS = ("intelligibility", "segmentation", "context")


def _lowest_only(result: TaskResult, metric_id: str) -> bool:
    """Whether the value of ``metric_id`` is only the lowest it could be: a garbled turn rate
    beside turn metrics the judge could not score or gave no score for (the evaluation's
    lower bound of a rate the known turns already fail, or a mean of runs over one)."""
    return metric_id == "garbled_turn_rate" and result.task == "conversation" and (
        result.metrics[metric_id].details.get("lower_bound") is True
        or any(result.metrics[mid].judge_error for mid in _TURN_METRICS
               if mid in result.metrics))


def _beyond_lowest(result: TaskResult, metric_id: str, shown: str) -> EvaluationUnavailable:
    """The error of a check a lowest value cannot decide: the rest of it the judge could not
    give, or cannot estimate."""
    so = f"so {metric_id} is only known to be at least {shown}"
    missed = [mid for mid in _TURN_METRICS if mid in result.judge_errors]
    if missed:
        return JudgeUnavailable(showable(f"{result.judge_error_text(missed)}\n  {so}"))
    blank = [mid for mid in _TURN_METRICS
             if mid in result.metrics and result.metrics[mid].value is None]
    return EvaluationUnavailable(showable(
        f"{', '.join(blank) or 'some turn scores'} not scored {who(result)}, {so} (not a "
        "model failure)"))


def _unscored(result: TaskResult, metric_id: str, headline: str,
              lines: list[str]) -> BaseException:
    """What a check of a metric without a value raises. The model's failure when its output
    failed the structure check (nothing else of it was scored); a skip of the test when the
    metric does not apply to the case (no domain term to preserve: nothing to hold to a
    bound); otherwise the tool's error — an estimate the judge cannot make (the heuristic's
    limits) or a custom metric gave none of is missing, which passes nothing and fails no
    model."""
    metric = result.metrics[metric_id]
    if not result.valid:
        return _fail(headline, lines)
    reason = why_unscored(metric)
    if metric.not_applicable:
        return pytest.skip.Exception(showable(
            f"{metric_id} does not apply {who(result)}: {reason}"))
    return EvaluationUnavailable(showable(
        f"{metric_id} could not be estimated {who(result)}, so it cannot be checked (not a "
        f"model failure): {reason}"))


def _nothing_scored(result: TaskResult, what: str) -> BaseException:
    """What a check of a task score none of whose metrics could be scored raises: a skip
    when none of them applies to the case, else the tool's error naming what the judge could
    not estimate — never the model's failure (nothing of it was measured)."""
    missing = [mid for mid in result.not_scored
               if mid != "response_structure_compliance" and mid in result.metrics]
    reasons = "; ".join(f"{mid}: {why_unscored(result.metrics[mid])}" for mid in missing)
    if missing and all(result.metrics[mid].not_applicable for mid in missing):
        return pytest.skip.Exception(showable(
            f"{what} does not apply {who(result)}: {reasons}"))
    return EvaluationUnavailable(showable(
        f"{what} could not be estimated {who(result)}, so it cannot be checked (not a "
        f"model failure): no metric of it could be scored" + (f" ({reasons})" if reasons
                                                              else "")))


def _a_result(value: object, helper: str) -> None:
    """Refuse what is not an evaluation result, naming the fixture that gives one (the
    model's output passed in its place ended in an AttributeError from inside a helper)."""
    __tracebackhide__ = True
    if not isinstance(value, TaskResult):
        raise TypeError(f"{helper} needs an evaluation result (the callqa_result fixture), got "
                        f"{type(value).__name__}" + (" — the model's output, as callqa_output "
                                                     "gives it?" if isinstance(
                                                         value, (dict, list, str)) else ""))


def _fail(headline: str, lines: list[str]) -> AssertionError:
    # A model's text (a keyword, a judge's reason quoting it) may hold escape sequences that
    # would act on the terminal or CI log showing the failure: they are shown escaped.
    return AssertionError(showable("\n".join([headline, *lines])))


def _assert_task_score(
    result: TaskResult, task: str, helper: str, min_score: float | None, allow_blockers: bool
) -> None:
    __tracebackhide__ = True
    _a_result(result, helper)
    if result.task != task:
        right = f"assert_{result.task}_score" if result.task in _TITLES else "assert_metric"
        raise TypeError(
            f"{helper} needs a {task} result, got a result of task {result.task!r} "
            f"{who(result)}; use {right}"
        )
    title = _TITLES[task]
    if min_score is not None:
        min_score = real_bound(helper, "min_score", min_score, (0.0, 1.0))
    if min_score is None:
        if result.pass_bar is None:
            raise TypeError(f"{helper} needs min_score, or a pass_bar for the {task} task in "
                            f"the project's policy ([tool.callqa.tasks.{task}])")
        min_score = result.pass_bar
    if result.score_unknown:
        if result.blocked and not allow_blockers:
            # A blocker that fired fails the check whatever the unknown score would be.
            why = (unknown_score("score", result) if result.incomplete
                   else "no metric of the task score could be scored")
            raise _fail(f"{title} blocker(s) fired {who(result)}: {', '.join(result.blockers)}; "
                        + why, detail_lines(result))
        if result.incomplete:
            raise JudgeUnavailable(showable(result.judge_error_text()))
        raise _nothing_scored(result, f"the {title} score")
    if not result.valid or result.score is None:
        # Three digits, or as many as the bar has: 0.8555 read "0.856", a bar never given.
        bar = f"{min_score:.3f}" if round(min_score, 3) == min_score else f"{min_score:g}"
        raise _fail(f"{title} score invalid {who(result)} (required >= {bar})",
                    detail_lines(result))
    if not at_least(result.score, min_score):
        shown, bar = apart(result.score, min_score)
        raise _fail(f"{title} score {shown} < {bar} {who(result)}",
                    detail_lines(result))
    if result.blocked and not allow_blockers:
        raise _fail(
            f"{title} score {result.score:.3f} >= {min_score:.3f} but blocker(s) fired "
            f"{who(result)}: {', '.join(result.blockers)}",
            detail_lines(result),
        )
    if not allow_blockers:
        # The score passes; a blocker nobody could decide may still disqualify it.
        _blockers_decided(result)


def assert_qa_score(
    result: TaskResult, min_score: float | None = None, *, allow_blockers: bool = False
) -> None:
    """Fail unless the QA result is valid, scores at least ``min_score`` (by default the
    policy's pass bar for the task) and has no blocker."""
    __tracebackhide__ = True
    _assert_task_score(result, "qa", "assert_qa_score", min_score, allow_blockers)


def assert_entity_score(
    result: TaskResult, min_score: float | None = None, *, allow_blockers: bool = False
) -> None:
    """Fail unless the entity result is valid, scores at least ``min_score`` (by default the
    policy's pass bar for the task), has no blocker."""
    __tracebackhide__ = True
    _assert_task_score(result, "entity", "assert_entity_score", min_score, allow_blockers)


def assert_text_score(
    result: TaskResult, min_score: float | None = None, *, allow_blockers: bool = False
) -> None:
    """Fail unless the text result is valid, scores at least ``min_score``, has no blocker."""
    __tracebackhide__ = True
    _assert_task_score(result, "text", "assert_text_score", min_score, allow_blockers)


def assert_translation_score(
    result: TaskResult, min_score: float | None = None, *, allow_blockers: bool = False
) -> None:
    """Fail unless the translation result is valid, scores at least ``min_score``, has no
    blocker."""
    __tracebackhide__ = True
    _assert_task_score(result, "translation", "assert_translation_score", min_score,
                       allow_blockers)


def assert_metric(
    result: TaskResult,
    metric_id: str,
    min: float | None = None,
    max: float | None = None,
) -> None:
    """Fail unless ``metric_id`` was scored and lies within ``[min, max]``.

    Without bounds the metric must not be rated *fail* or *blocker* by its own thresholds;
    one without a rating cannot be checked so (:func:`_unrated`).
    A metric without a value never passes: it fails when the output failed its structure
    check, skips the test when it does not apply, and is otherwise the tool's error
    (:func:`_unscored`).
    """
    __tracebackhide__ = True
    _a_result(result, "assert_metric")
    if not isinstance(metric_id, str):
        raise TypeError(f"assert_metric: metric_id must be a metric's id (a str), got "
                        f"{type(metric_id).__name__} {metric_id!r}")
    given = (("min", min), ("max", max))
    min, max = (None if bound is None else real_bound("assert_metric", name, bound)
                for name, bound in given)
    # The bounds are the test's own: refused whatever the result, before it is read.
    spec = spec_for(result, metric_id)
    if spec is not None:
        # The engine's scales load with the metric's definition.
        from .engine.policy import scale_range

        for name, bound in given:  # as the test wrote them, for the message
            if bound is not None:
                real_bound("assert_metric", name, bound, scale_range(spec))
        _one_sided(metric_id, spec, min, max)
    if min is not None and max is not None and min > max:
        raise ValueError(f"assert_metric: min {min!r} is above max {max!r}: no value passes")
    _not_evaluated(result, metric_id)
    metric = result.metric(metric_id)
    line = metric_line(result, metric_id)
    if metric.details.get("raised"):
        raise MetricCodeError(code_error(result, [metric_id]))
    if not metric.scored or metric.value is None or not math.isfinite(metric.value):
        raise _unscored(result, metric_id, f"{metric_id} was not scored {who(result)}", [line])
    shown = value_text(metric.value, spec, metric_edges(metric, spec))
    # A value that is only the lowest possible one breaks a maximum (and its rating) whatever
    # the rest; whether a minimum it misses, a maximum or a rating it keeps hold, the rest
    # decides.
    lowest = _lowest_only(result, metric_id)
    problems = []
    undecided = False
    if min is not None and not at_least(metric.value, min):
        if lowest:
            undecided = True
        else:
            seen, bar = value_texts(metric.value, min, spec)
            problems.append(f"{metric_id} = {seen} < min {bar}")
    if max is not None:
        if not at_most(metric.value, max):
            seen, bar = value_texts(metric.value, max, spec)
            problems.append(f"{metric_id} = {seen} > max {bar}")
        else:
            undecided = undecided or lowest
    if min is None and max is None:
        if metric.rating is None:
            raise _unrated(result, metric_id, "assert_metric", "min= or max=")
        if metric.rating in FAILING:
            rule = threshold_text(metric, spec)
            threshold = f" (threshold {rule})" if rule is not None else ""
            problems.append(f"{metric_id} = {shown} is rated {metric.rating}{threshold}")
        else:
            undecided = lowest
    if problems:
        raise _fail(f"{'; '.join(problems)} {who(result)}", [line])
    if undecided:
        raise _beyond_lowest(result, metric_id, shown)


def _unrated(result: TaskResult, metric_id: str, helper: str, bounds: str) -> BaseException:
    """What a check by the rating of a metric that has none raises (it passed every value): a
    skip when the project's policy disabled the metric (not rated, not gated), else the
    test's own error, asking for the bounds to hold its value to."""
    metric = result.metrics[metric_id]
    if metric.details.get("threshold") == DISABLED_THRESHOLD:
        return pytest.skip.Exception(showable(
            f"{metric_id} is disabled by the project's policy, so it has no rating to check "
            f"{who(result)}; give {bounds} to check its value"))
    rule = threshold_text(metric, spec_for(result, metric_id))
    return ValueError(showable(
        f"{helper}: {metric_id} {who(result)} has no rating"
        f"{f' (threshold {rule})' if rule else ''}, so a check without bounds would pass "
        f"any value of it; give {bounds}"))


def _one_sided(metric_id: str, spec: MetricSpec, low: float | None,
               high: float | None) -> None:
    """Refuse a lone ``min`` on a lower-is-better metric: ``min=0.5`` on a hallucination
    rate (a threshold as DeepEval reads one, the highest value that passes) would pass every
    output from half hallucinated to wholly and fail the clean ones. With ``max`` beside it,
    it is a range and stands (a test that a bad output is caught)."""
    if spec.bands is None or spec.bands.higher_is_better or low is None or high is not None:
        return
    raise ValueError(
        f"assert_metric: {metric_id} is lower-is-better (threshold {spec.threshold}), so "
        f"min={low!r} alone passes every higher value, the worst ones included; bound it "
        f"with max=, or give min and max for a range")


def _blockers_decided(result: TaskResult) -> None:
    """Raise the tool's error when no blocker is known to have fired but one could not be
    decided: a blocker the judge could not score, one whose code raised, or one no estimate
    was made of may have fired."""
    __tracebackhide__ = True
    # Whether a metric is a blocker is the run's definition (its policy), recorded on the
    # metric by the evaluation.
    unknown = [mid for mid in result.judge_errors
               if mid in result.metrics and result.metrics[mid].details.get("blocker_metric")]
    if unknown:
        raise JudgeUnavailable(showable(result.judge_error_text(unknown)))
    broken = [mid for mid, m in result.metrics.items()
              if m.details.get("raised") and m.details.get("blocker_metric")]
    if broken:
        raise MetricCodeError(code_error(result, broken))
    # The rest the evaluation marks: a blocker left without an estimate (the heuristic judge
    # cannot make one; a custom metric returned none).
    unestimated = [f"{mid}: {why_unscored(m)}" for mid, m in result.metrics.items()
                   if m.details.get("blocker_metric") and not m.scored]
    if unestimated:
        raise EvaluationUnavailable(showable(
            f"whether a blocker fired {who(result)} is unknown (not a model failure): "
            f"{'; '.join(unestimated)}"))


def assert_no_blockers(result: TaskResult) -> None:
    """Fail when any blocker metric fired for this output (the model is disqualified)."""
    __tracebackhide__ = True
    _a_result(result, "assert_no_blockers")
    if not result.blocked:
        _blockers_decided(result)
        return
    count = len(result.blockers)
    raise _fail(
        f"{count} blocker{'s' if count != 1 else ''} {who(result)} ({result.task}): "
        + ", ".join(result.blockers),
        [metric_line(result, mid) for mid in result.blockers if mid in result.metrics]
        + [f"  note: {note}" for note in result.notes],
    )


def _require_task(result: TaskResult, task: str, helper: str) -> None:
    __tracebackhide__ = True
    _a_result(result, helper)
    if result.task != task:
        raise TypeError(f"{helper} needs a result of task {task!r}, got one of task "
                        f"{result.task!r} {who(result)}")
    if not result.valid:
        raise _fail(f"{task} result invalid {who(result)}", detail_lines(result))


def assert_agent_passes(
    result: TaskResult, *, min_overall: float | None = None, allow_blockers: bool = False
) -> None:
    """Fail unless the agent's overall score (0–100) reaches ``min_overall``, by default the
    case's ``pass_threshold`` (75 unless the case sets it), or for a case that sets none the
    team's policy's threshold on ``overall_score`` when it has one. Each failing metric is
    listed with its failure code and the turns where the judge saw the problem."""
    __tracebackhide__ = True
    if min_overall is not None:
        min_overall = real_bound("assert_agent_passes", "min_overall", min_overall, (0.0, 100.0))
    _require_task(result, "agent", "assert_agent_passes")
    lines = []
    for mid, metric in result.metrics.items():
        if metric.rating in FAILING and mid not in ("overall_score", "passed"):
            code = metric.details.get("failure_code")
            turns = metric.details.get("turns")
            extra = "".join([f" [failure_code {code}]" if code else "",
                             f" [turns {', '.join(map(str, turns))}]" if turns else ""])
            lines.append(metric_line(result, mid) + extra)
    if result.blockers:
        lines.append(f"  blockers: {', '.join(result.blockers)}")
    # What the judge could not score is unknown, not renormalised away.
    unscored = [mid for mid, m in result.metrics.items() if not m.scored and not m.judge_error]
    if unscored:
        lines.append(f"  not scored (weights renormalised): {', '.join(unscored)}")
    if "overall_score" in result.judge_errors and result.blocked and not allow_blockers:
        # A blocker that fired fails the check whatever the unknown overall score would be.
        raise _fail(f"agent blocker(s) fired {who(result)}: {', '.join(result.blockers)}; "
                    + unknown_score("overall score", result), lines)
    overall = result.metric("overall_score")
    threshold = min_overall if min_overall is not None else float(
        overall.details.get("pass_threshold", 75.0))
    # A team's policy set a bar on the overall score of a case that set none of its own: its
    # rating decides, as the scorecard's (the recorded pass_threshold is the default 75). A
    # policy that only disabled the metric or set its tolerance sets no bar.
    recorded = overall.details.get("threshold")
    built_in = spec_for(result, "overall_score")
    policy = (recorded if min_overall is None and not overall.details.get(CASE_BAR)
              and recorded not in (None, DISABLED_THRESHOLD)
              and (built_in is None or recorded != built_in.threshold) else None)
    if overall.value is None:
        if result.blocked and not allow_blockers:
            raise _fail(f"agent blocker(s) fired {who(result)}: {', '.join(result.blockers)}; "
                        "no metric of the overall score could be scored", lines)
        raise _unscored(result, "overall_score",
                        f"agent overall score not scored < {threshold:g} {who(result)}", lines)
    if policy is not None and overall.rating in FAILING:
        raise _fail(f"agent overall score {overall.value:.1f} is not within the policy's "
                    f"threshold ({policy}) {who(result)}", lines)
    if policy is None and not at_least(overall.value, threshold):
        shown, bar = f"{overall.value:.1f}", f"{threshold:g}"
        if float(shown) >= threshold:
            # Rounded up to the bar, the headline would state "75.0 < 75".
            shown, bar = apart(overall.value, threshold, 2)
        raise _fail(f"agent overall score {shown} < {bar} {who(result)}",
                    lines)
    if result.blocked and not allow_blockers:
        bar = f"within the policy's threshold ({policy})" if policy else f">= {threshold:g}"
        raise _fail(f"agent overall score {overall.value:.1f} {bar} but blocker(s) "
                    f"fired {who(result)}: {', '.join(result.blockers)}", lines)
    if not allow_blockers:
        _blockers_decided(result)


def assert_no_garbled_turns(result: TaskResult, *, max_rate: float | None = None) -> None:
    """Fail when the share of garbled turns (any score <= 2 of 5) is not below ``max_rate``;
    by default the metric's own rule, passing below 10 %. Lists each garbled turn. A rate
    known only from below (the judge missed some turns' verdicts) fails when its lowest
    value already does; otherwise the check is the judge's error."""
    __tracebackhide__ = True
    if max_rate is not None:
        max_rate = real_bound("assert_no_garbled_turns", "max_rate", max_rate, (0.0, 1.0))
        if max_rate == 0:
            # The rate must be below the bound, and no rate is below 0: every result failed,
            # as the model's failure.
            raise ValueError("assert_no_garbled_turns: no rate is below a max_rate of 0, so "
                             "the check could never pass; to allow no garbled turn at all, "
                             "use assert_metric(result, 'garbled_turn_rate', max=0)")
    _require_task(result, "conversation", "assert_no_garbled_turns")
    rate = result.metric("garbled_turn_rate")
    if rate.value is None:
        raise _unscored(result, "garbled_turn_rate",
                        f"garbled_turn_rate was not scored {who(result)}",
                        [metric_line(result, "garbled_turn_rate")])
    if max_rate is None and rate.rating is None:
        raise _unrated(result, "garbled_turn_rate", "assert_no_garbled_turns", "max_rate=")
    # By default the metric's rating decides: the case's limit, a policy's threshold, or for
    # a mean of runs the bands that rated them.
    passed = (rate.rating not in FAILING if max_rate is None
              else not at_least(rate.value, max_rate))
    bound = max_rate if max_rate is not None else rate.details.get("threshold", 0.10)
    lowest = _lowest_only(result, "garbled_turn_rate")
    if passed and lowest:
        # Only the lowest possible rate passes: the turns the judge missed decide.
        spec = spec_for(result, "garbled_turn_rate")
        edges = metric_edges(rate, spec) + ((max_rate,) if max_rate is not None else ())
        raise _beyond_lowest(result, "garbled_turn_rate", value_text(rate.value, spec, edges))
    if passed:
        return
    lines = [metric_line(result, "garbled_turn_rate")]
    for turn in rate.details.get("turns", []):
        if isinstance(turn, dict) and turn.get("garbled"):
            lines.append(f"  turn {turn.get('turn')}: {turn.get('scores', turn)}")
    lines.extend(metric_line(result, mid) for mid in _TURN_METRICS
                 if mid in result.metrics and result.metrics[mid].rating in FAILING)
    shown, limit = rate_and_limit(rate.value, bound)
    raise _fail(f"garbled turn rate {'at least ' if lowest else ''}{shown} is not {limit} "
                f"{who(result)}", lines)


def assert_extraction_f1(
    result: TaskResult, min_f1: float, *, signal: str | None = None
) -> None:
    """Fail unless the extraction F1 — the mean over signal types, or one ``signal`` type's
    (e.g. ``"entities"``) — is at least ``min_f1``."""
    __tracebackhide__ = True
    min_f1 = real_bound("assert_extraction_f1", "min_f1", min_f1, (0.0, 1.0))
    _require_task(result, "extraction", "assert_extraction_f1")
    metric_id = "signal_f1" if signal is None else f"{signal}_f1"
    if metric_id not in result.metrics:
        _not_evaluated(result, metric_id)
        # Standard library, loaded for a mistyped signal type only.
        import difflib

        known = signal_types(result)
        close = difflib.get_close_matches(str(signal), known, n=1)
        raise KeyError(f"no signal type {signal!r} in this extraction result {who(result)}"
                       + (f"; did you mean {close[0]!r}?" if close else "")
                       + f" (evaluated: {', '.join(known) or 'none'})")
    metric = result.metric(metric_id)
    if metric.value is not None and at_least(metric.value, min_f1):
        return
    # The checked metric's own line first, whatever its rating ("acceptable" listed none).
    lines = [metric_line(result, metric_id)] + [
        metric_line(result, mid) for mid, m in result.metrics.items()
        if mid != metric_id and mid.endswith("_f1") and m.rating in FAILING]
    if metric.value is None:
        raise _unscored(result, metric_id, f"extraction {metric_id} not scored < {min_f1:.3f} "
                        f"{who(result)}", lines)
    shown, bar = apart(metric.value, min_f1)
    raise _fail(f"extraction {metric_id} {shown} < {bar} {who(result)}",
                lines)


def _not_evaluated(result: TaskResult, metric_id: str) -> None:
    """Skip a check of a metric of the result's task that this case's evaluation left out, as
    one that does not apply skips (a signal type the case does not evaluate has no F1 to hold
    to a bound; it was a bare KeyError). An id that is no metric of the task is left to the
    KeyError naming the closest one: a typo is the test's error."""
    __tracebackhide__ = True
    spec = spec_for(result, metric_id)
    if metric_id not in result.metrics and spec is not None and spec.task == result.task:
        raise pytest.skip.Exception(not_evaluated(result, metric_id))


_VERDICT_OF_RATING = {"good": "PASS", "acceptable": "WARN"}


def assert_grounded(result: TaskResult, *, allow_warn: bool = False) -> None:
    """Fail unless the grounding verdict is PASS (or WARN with ``allow_warn``), naming the
    rule that decided it: hallucination > 0.5, relevance < 0.1, completeness < 0.6. An
    undecided verdict (the claims of an answer not in English) is the tool's error."""
    __tracebackhide__ = True
    _require_task(result, "grounding", "assert_grounded")
    verdict_metric = result.metric("grounding_verdict")
    if verdict_metric.value is None and result.valid:
        # Undecided (a hallucination the tool could not check): neither a pass nor the
        # model's failure.
        raise _unscored(result, "grounding_verdict",
                        f"grounding verdict not scored {who(result)}",
                        [metric_line(result, "grounding_verdict")])
    # A mean of runs whose verdicts differ has no verdict of its own: its value's rating
    # reads as one, as the scorecard reads it (PASS 1.0, WARN from 0.5).
    verdict = str(verdict_metric.details.get(
        "verdict", _VERDICT_OF_RATING.get(str(verdict_metric.rating), "FAIL")))
    if verdict == "PASS" or (allow_warn and verdict == "WARN"):
        if result.blocked:
            # In one run a blocker (hallucination over the case's limit) makes the verdict
            # FAIL; a mean of runs that reads as passing still holds a run's blocker.
            raise _fail(f"grounding verdict {verdict} but blocker(s) fired {who(result)}: "
                        f"{', '.join(result.blockers)}",
                        [metric_line(result, mid) for mid in result.blockers
                         if mid in result.metrics])
        _blockers_decided(result)
        return
    lines = [metric_line(result, mid) for mid in ("hallucination", "relevance", "completeness")
             if mid in result.metrics]
    raise _fail(f"grounding verdict {verdict} {who(result)}: {verdict_metric.reason}", lines)
