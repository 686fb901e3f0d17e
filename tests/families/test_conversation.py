"""The conversation family (seed 004): conversion, thresholds, garbled turns, history."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import CaseFileError, load_case_file
from pytest_callqa.engine.tasks.conversation import (
    COMBINED,
    QUALITY_METRICS,
    is_garbled,
    normalize_score,
    segmentation_proxy,
)
from tests.engine.helpers import TFIDF, make_case

from .helpers import ScriptedJudge, write_case

# The seed's example conversation (patient / bot), extended to eight turns.
TRANSCRIPT = [
    {"speaker": "patient", "text": "I have a fever and body aches"},
    {"speaker": "bot", "text": "Tengo fiebre y dolores en el cuerpo"},
    {"speaker": "doctor", "text": "Have you been near anyone sick?"},
    {"speaker": "bot", "text": "¿Ha estado cerca de alguien enfermo?"},
    {"speaker": "patient", "text": "Yes, my son had the flu last week"},
    {"speaker": "bot", "text": "Sí, mi hijo tuvo gripe la semana pasada"},
    {"speaker": "doctor", "text": "Any pain when you urinate?"},
    {"speaker": "bot", "text": "¿Siente dolor al orinar?"},
]
BOT_TURNS = (1, 3, 5, 7)
EXPECTED = {"turns": [{"turn": t, "text": TRANSCRIPT[t - 1]["text"]} for t in BOT_TURNS]}
GOOD = {"turns": [{"turn": t, "text": TRANSCRIPT[t - 1]["text"] + "."} for t in BOT_TURNS]}


def _case(config: dict[str, Any] | None = None, expected: Any = None,
          transcript: Any = None) -> Any:
    return make_case("conversation", EXPECTED if expected is None else expected,
                     config=config, transcript=TRANSCRIPT if transcript is None else transcript)


def _per_turn(scores: dict[int, float]) -> dict[str, float]:
    return {f"turn {t}": s for t, s in scores.items()}


def _judge(intelligibility: dict[int, float] | float = 5,
           segmentation: dict[int, float] | float = 5,
           context: dict[int, float] | float = 5) -> ScriptedJudge:
    def per(value: dict[int, float] | float) -> Any:
        return _per_turn(value) if isinstance(value, dict) else value
    return ScriptedJudge({"intelligibility": per(intelligibility),
                          "segmentation": per(segmentation), "context": per(context)})


def _eval(output: Any = None, judge: Any = None, **case: Any) -> Any:
    return evaluate(_case(**case), GOOD if output is None else output, judge=judge,
                    embedder=TFIDF)


# --- seed 004 tables ---------------------------------------------------------------------------


@pytest.mark.parametrize(("score", "normalized"), [
    (1, 0.00), (2, 0.25), (3, 0.50), (4, 0.75), (5, 1.00)])
def test_score_conversion_table(score: int, normalized: float) -> None:
    assert normalize_score(score) == normalized


def test_threshold_080_means_an_average_of_4_2() -> None:
    assert normalize_score(4.2) == pytest.approx(0.80)
    # Per turn only a 5 clears 0.80 ("scores 1-4 fail the threshold, only 5 passes").
    result = _eval(judge=_judge(intelligibility={1: 5, 3: 4, 5: 3, 7: 1}))
    records = result.metrics["intelligibility"].details["results"]
    assert [r["passed"] for r in records] == [True, False, False, False]


@pytest.mark.parametrize(("scores", "passed"), [
    ({1: 5, 3: 5, 5: 4, 7: 3}, True),     # avg 4.25 -> 81.25 %
    ({1: 5, 3: 4, 5: 4, 7: 4}, True),     # avg 4.25
    ({1: 5, 3: 5, 5: 5, 7: 2}, True),     # avg 4.25
    ({1: 5, 3: 4, 5: 4, 7: 3}, False),    # avg 4.00 -> 75 %
])
def test_metric_passes_at_the_threshold(scores: dict[int, float], passed: bool) -> None:
    metric = _eval(judge=_judge(segmentation=scores)).metrics["segmentation"]
    assert metric.details["passed"] is passed
    assert metric.rating == ("good" if passed else "fail")


def test_exactly_4_2_passes() -> None:
    transcript = [{"speaker": "bot", "text": f"Turn {i}."} for i in range(5)]
    expected = {"turns": [{"turn": i, "text": f"Turn {i}."} for i in range(5)]}
    judge = _judge(context={0: 5, 1: 5, 2: 5, 3: 5, 4: 1})
    result = evaluate(_case(expected=expected, transcript=transcript), expected, judge=judge,
                      embedder=TFIDF)
    context = result.metrics["context"]
    assert context.value == pytest.approx(0.80) and context.details["passed"]


def test_custom_threshold_090_needs_4_6() -> None:
    assert normalize_score(4.6) == pytest.approx(0.90)
    result = _eval(judge=_judge(context={1: 5, 3: 5, 5: 4, 7: 4}),
                   config={"thresholds": {"context": 0.90}})
    context = result.metrics["context"]
    assert context.value == pytest.approx(0.875) and not context.details["passed"]
    assert result.metrics["intelligibility"].details["threshold"] == 0.80


def test_result_details_follow_the_seed() -> None:
    # Three turns scored 5, 5, 4: the seed's 4.67 average, shown as 91.75 %.
    expected = {"turns": [{"turn": t, "text": "x"} for t in (1, 3, 5)]}
    result = evaluate(_case(expected=expected), {"turns": GOOD["turns"][:3]},
                      judge=_judge(intelligibility={1: 5, 3: 5, 5: 4}), embedder=TFIDF)
    details = result.metrics["intelligibility"].details
    assert details["avg_intelligibility_1_5"] == 4.67
    assert details["avg_intelligibility_0_100"] == 91.75
    assert details["evaluations"] == 3
    assert details["threshold"] == 0.80
    assert details["overall_score"] == "91.67%"
    first = details["results"][0]
    assert {k: first[k] for k in ("id", "status", "score_1_5", "score_normalized",
                                  "score_percentage", "passed", "text")} == {
        "id": "turn_1", "status": "evaluated", "score_1_5": 5.0, "score_normalized": 1.0,
        "score_percentage": "100.00%", "passed": True,
        "text": "I have a fever and body aches."}
    assert first["reasoning"] == "scripted intelligibility turn 1"
    for metric_id in ("segmentation", "context"):
        assert f"avg_{metric_id}_1_5" in result.metrics[metric_id].details


def test_task_score_is_the_mean_of_the_three_metrics() -> None:
    result = _eval(judge=_judge(intelligibility=5, segmentation=4, context=3))
    assert result.score == pytest.approx((1.0 + 0.75 + 0.5) / 3)


# --- garbled turns -----------------------------------------------------------------------------


@pytest.mark.parametrize(("scores", "garbled"), [
    ({"intelligibility": 5, "segmentation": 5, "context": 2}, True),
    ({"intelligibility": 1, "segmentation": 5, "context": 5}, True),
    ({"intelligibility": 3, "segmentation": 3, "context": 3}, False),
    ({"intelligibility": 5, "segmentation": None, "context": 4}, False),
])
def test_a_turn_is_garbled_when_any_score_is_at_most_2(scores: dict[str, float | None],
                                                      garbled: bool) -> None:
    assert is_garbled(scores) is garbled


@pytest.mark.parametrize(("n_turns", "passes"), [(10, False), (11, True)])
def test_garbled_turn_rate_passes_below_10_percent(n_turns: int, passes: bool) -> None:
    transcript = [{"speaker": "bot", "text": f"Turn {i}."} for i in range(n_turns)]
    expected = {"turns": [{"turn": i, "text": f"Turn {i}."} for i in range(n_turns)]}
    judge = _judge(context={i: (2 if i == 0 else 5) for i in range(n_turns)})
    result = evaluate(_case(expected=expected, transcript=transcript), expected, judge=judge,
                      embedder=TFIDF)
    rate = result.metrics["garbled_turn_rate"]
    assert rate.value == pytest.approx(1 / n_turns)
    assert rate.details["passed"] is passes
    assert rate.details["garbled_turns"] == [0]


def test_seed_phase_3_scenarios() -> None:
    # UTI context loss: context <= 2 -> garbled. Paddle -> soccer drift: clear and well
    # segmented, context 2-3. A good conversation: all >= 4, garbled rate below 10 %.
    uti = _eval(judge=_judge(context={1: 5, 3: 5, 5: 5, 7: 2}))
    assert uti.metrics["garbled_turn_rate"].details["garbled_turns"] == [7]
    drift = _eval(judge=_judge(intelligibility=4, segmentation=5, context={1: 5, 3: 5, 5: 3,
                                                                        7: 3}))
    assert drift.metrics["garbled_turn_rate"].value == 0.0
    assert not drift.metrics["context"].details["passed"]
    good = _eval(judge=_judge(intelligibility=5, segmentation=4, context=5))
    assert good.metrics["garbled_turn_rate"].details["passed"]


# --- judge replies -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 6, 7, 4.5, -1])
def test_out_of_range_judge_score_becomes_1_with_a_warning(bad: float) -> None:
    result = _eval(judge=_judge(context={1: 5, 3: bad, 5: 5, 7: 5}))
    context = result.metrics["context"]
    record = context.details["results"][1]
    assert record["score_1_5"] == 1.0 and record["flagged"]
    assert "outside the likert5 scale" in record["warning"]
    assert context.details["warnings"] == [f"turn 3: {record['warning']}"]
    assert context.flagged
    assert 3 in result.metrics["garbled_turn_rate"].details["garbled_turns"]


def test_missing_or_empty_text_fails_the_turn_with_score_1() -> None:
    output = {"turns": [GOOD["turns"][0], {"turn": 3, "text": "  "}]}
    judge = _judge()
    result = _eval(output, judge=judge)
    records = result.metrics["intelligibility"].details["results"]
    assert [(r["turn"], r["status"], r["score_1_5"]) for r in records] == [
        (1, "evaluated", 5.0), (3, "failed", 1.0), (5, "failed", 1.0), (7, "failed", 1.0)]
    assert "empty" in records[1]["reasoning"] and "no text" in records[2]["reasoning"]
    # Failed turns are not sent to the judge.
    assert {r.item for r in judge.seen} == {"turn 1"}


def test_separate_mode_asks_three_questions_per_turn() -> None:
    judge = _judge()
    _eval(judge=judge)
    assert len(judge.seen) == 3 * len(BOT_TURNS)
    assert {(r.metric, r.item) for r in judge.seen} == {
        (m, f"turn {t}") for m in QUALITY_METRICS for t in BOT_TURNS}
    assert all(r.scale == "likert5" for r in judge.seen)


def test_first_turn_has_no_history_and_the_window_is_respected() -> None:
    transcript = [{"speaker": "bot" if i % 2 else "user", "text": f"Line {i}."}
                  for i in range(12)]
    expected = {"turns": [{"turn": i, "text": f"Line {i}."} for i in (0, 3, 11)]}
    output = {"turns": [{"turn": 0, "text": "Hello."}, {"turn": 3, "text": "Bot three."},
                        {"turn": 11, "text": "Bot eleven."}]}
    for window, sizes in ((5, [0, 3, 5]), (10, [0, 3, 10]), (2, [0, 2, 2])):
        judge = _judge()
        evaluate(_case(config={"max_history_turns": window}, expected=expected,
                       transcript=transcript), output, judge=judge, embedder=TFIDF)
        context = {r.item: r.focus for r in judge.seen if r.metric == "context"}
        assert [len(context[f"turn {t}"]["history"]) for t in (0, 3, 11)] == sizes
        assert context["turn 0"]["first_turn"] is True
    # The history shows what the bot said, in its own words, up to the turn before.
    history = context["turn 3"]["history"]
    assert [h["turn"] for h in history] == [1, 2]
    judge = _judge()
    evaluate(_case(expected=expected, transcript=transcript), output, judge=judge,
             embedder=TFIDF)
    history = next(r.focus["history"] for r in judge.seen
                   if r.metric == "context" and r.item == "turn 3")
    assert history[0] == {"turn": 0, "speaker": "user", "text": "Hello."}
    intelligibility = next(r for r in judge.seen if r.metric == "intelligibility")
    assert "history" not in intelligibility.focus


# --- combined mode -----------------------------------------------------------------------------


def test_combined_mode_asks_once_per_turn_for_all_three() -> None:
    details = {f"turn {t}": {"intelligibility": 5, "segmentation": 4, "context": 3}
               for t in BOT_TURNS}
    judge = ScriptedJudge({COMBINED: 3}, item_details={COMBINED: details})
    result = _eval(judge=judge, config={"combined": True})
    assert len(judge.seen) == len(BOT_TURNS)
    request = judge.seen[0]
    assert request.metric == COMBINED and request.scale == "likert5"
    for word in ("INTELLIGIBILITY", "SEGMENTATION", "CONTEXT"):
        assert word in request.instructions
    # The three per-turn scores are fields of the verdict the reply schema asks for.
    assert [(name, kind) for name, kind, _ in request.reply_fields] == [
        ("intelligibility", "likert5"), ("segmentation", "likert5"), ("context", "likert5")]
    assert "history" in request.focus
    assert result.metrics["intelligibility"].value == 1.0
    assert result.metrics["segmentation"].value == 0.75
    assert result.metrics["context"].value == 0.5


def test_combined_reply_without_a_metric_scores_it_1_with_a_warning() -> None:
    details = {f"turn {t}": {"intelligibility": 5, "segmentation": 9} for t in BOT_TURNS}
    judge = ScriptedJudge({COMBINED: 4}, item_details={COMBINED: details})
    result = _eval(judge=judge, config={"combined": True})
    context = result.metrics["context"].details["results"][0]
    assert context["score_1_5"] == 1.0 and "no context score" in context["warning"]
    segmentation = result.metrics["segmentation"].details["results"][0]
    assert segmentation["score_1_5"] == 1.0 and "outside" in segmentation["warning"]


# --- the heuristic judge -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "score"), [
    ("I have a fever and body aches.", 5),
    ("i have a fever and body aches.", 4),                       # lower-case start
    ("i have a fever and body aches", 3),                        # two minor issues
    ("I have a fever. and body aches. and a cough.", 2),         # split mid-sentence twice
    ("I have a fever and body aches and my son had the flu last week so I think that "
     "maybe I caught it from him", 2),                           # 24 words, no boundary
    ("I. Have. A. Fever.", 1),                                   # fragments only
    (" ".join(["word"] * 45) + ".", 1),                          # run-on
    ("", 1),
])
def test_segmentation_proxy(text: str, score: int) -> None:
    assert segmentation_proxy(text).score == score


def test_heuristic_judge_scores_segmentation_only() -> None:
    output = {"turns": [{"turn": 1, "text": "I have a fever and body aches."},
                        {"turn": 3, "text": "Have. You. Been. Near."},
                        {"turn": 5, "text": "Yes, my son had the flu last week."},
                        {"turn": 7, "text": "Any pain when you urinate?"}]}
    for config in ({}, {"combined": True}):
        result = _eval(output, judge=HeuristicJudge(), config=config)
        assert not result.metrics["intelligibility"].scored
        assert not result.metrics["context"].scored
        assert result.metrics["segmentation"].value == pytest.approx(0.75)
        assert result.score == pytest.approx(0.75)
        assert result.metrics["garbled_turn_rate"].value == pytest.approx(0.25)
        assert "weights renormalised without: intelligibility, context" in result.notes[0]
        assert "proxy" in result.metrics["segmentation"].details["results"][0]["reasoning"]


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "message"), [
    ("transcript: [{speaker: bot, text: ''}]\nexpected_outcome: {turns: [{turn: 0, text: hi}]}",
     "transcript[0].text: empty turn"),
    ("transcript: []\nexpected_outcome: {turns: [{turn: 0, text: hi}]}",
     "transcript: no turn (every conversation case needs one)"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 3, text: hi}]}",
     "expected_outcome.turns[0].turn: 3 is past the end of the transcript"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: ' '}]}",
     "expected_outcome.turns[0].text: empty turn"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: []}",
     "expected_outcome.turns: no bot turn to evaluate"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: hi}]}"
     "\nconfig: {thresholds: {fluency: 0.9}}", "unknown metric fluency"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: hi}]}"
     "\nconfig: {max_history_turns: -1}", "config.max_history_turns"),
])
def test_bad_cases_are_case_file_errors(tmp_path: Any, body: str, message: str) -> None:
    path = write_case(tmp_path, "id: c1\ntask: conversation\n" + body + "\n")
    with pytest.raises(CaseFileError) as err:
        load_case_file(path)
    assert message in str(err.value)


@pytest.mark.parametrize(("output", "reason"), [
    ({"turns": [{"turn": 2, "text": "Hello."}]}, "turns: turn 2 is not a bot turn"),
    ({"turns": [{"turn": 1, "text": "a"}, {"turn": 1, "text": "b"}]}, "turn 1 given twice"),
    ({"turns": [{"turn": 1}]}, "turns[0].text: Field required"),
    ("Tengo fiebre.", "not valid JSON"),
])
def test_bad_outputs_are_invalid_results(output: Any, reason: str) -> None:
    result = _eval(output, judge=_judge())
    assert not result.valid
    assert reason in (result.metrics["response_structure_compliance"].reason or "")
