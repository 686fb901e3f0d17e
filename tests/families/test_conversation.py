"""The conversation family (seed 004): conversion, thresholds, garbled turns, history."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_callqa.engine.core.judging import JudgeVerdict
from pytest_callqa.engine.core.results import JudgeUnavailable
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import CaseFileError, load_case_file
from pytest_callqa.engine.tasks.conversation import (
    COMBINED,
    QUALITY_METRICS,
    is_garbled,
    normalize_score,
)
from pytest_callqa.engine.tasks.conversation_segmentation import segmentation_proxy
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


@pytest.mark.parametrize("text", ["...", "\u200b", "\ufeff", "\U0001f44d", "- ?"])
def test_a_turn_with_no_letter_or_digit_fails_like_an_empty_one(text: str) -> None:
    # str.strip keeps a zero-width space: such a turn went to the judge and the heuristic
    # proxy scored it a perfect 5.
    output = {"turns": [GOOD["turns"][0], *({"turn": t, "text": text} for t in BOT_TURNS[1:])]}
    judge = _judge()
    result = _eval(output, judge=judge)
    records = result.metrics["intelligibility"].details["results"]
    assert [(r["turn"], r["status"], r["score_1_5"]) for r in records] == [
        (1, "evaluated", 5.0), (3, "failed", 1.0), (5, "failed", 1.0), (7, "failed", 1.0)]
    assert "no letter or digit" in records[1]["reasoning"]
    assert {r.item for r in judge.seen} == {"turn 1"}
    offline = _eval({"turns": [{"turn": t, "text": text} for t in BOT_TURNS]},
                    judge=HeuristicJudge())
    assert offline.score == 0.0
    assert offline.metrics["garbled_turn_rate"].value == 1.0


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


def test_a_bot_turn_the_model_left_without_a_reply_is_empty_in_the_history() -> None:
    # The reference's words stood in for it: the judge of turn 3 read "Line 0." as the bot's.
    transcript = [{"speaker": "bot" if i % 2 == 0 else "user", "text": f"Line {i}."}
                  for i in range(4)]
    expected = {"turns": [{"turn": i, "text": f"Line {i}."} for i in (0, 2)]}
    judge = _judge()
    evaluate(_case(expected=expected, transcript=transcript),
             {"turns": [{"turn": 0, "text": " "}, {"turn": 2, "text": "Bot two."}]},
             judge=judge, embedder=TFIDF)
    history = next(r.focus["history"] for r in judge.seen
                   if r.metric == "context" and r.item == "turn 2")
    assert history == [{"turn": 0, "speaker": "bot", "text": " "},
                       {"turn": 1, "speaker": "user", "text": "Line 1."}]


class _FailingOn:
    """A scripted judge that cannot give the verdicts of ``failing`` ((metric, item) pairs):
    judge errors, as the LLM judge gives for a failed call or an unusable reply."""

    name = "failing-on"

    def __init__(self, inner: ScriptedJudge, failing: set[tuple[str, str]]) -> None:
        self.inner = inner
        self.failing = failing

    def judge(self, requests: Any) -> list[JudgeVerdict]:
        return [JudgeVerdict(r.metric, None, "judge call failed: HTTP 503", judge_error=True)
                if (r.metric, r.item) in self.failing else v
                for r, v in zip(requests, self.inner.judge(requests), strict=True)]


def test_a_turn_the_judge_could_not_score_leaves_every_turn_metric_unknown() -> None:
    # Combined: one verdict per turn feeds all three metrics. Before, the turn was skipped and
    # the other three averaged (1.000, 0 % garbled): a number the judge never gave.
    details = {f"turn {t}": {m: 5 for m in QUALITY_METRICS} for t in BOT_TURNS}
    judge = _FailingOn(ScriptedJudge({COMBINED: 5}, item_details={COMBINED: details}),
                       {(COMBINED, "turn 3")})
    result = _eval(judge=judge, config={"combined": True})
    assert result.judge_errors == ["context", "garbled_turn_rate", "intelligibility",
                                   "segmentation"]
    assert result.score is None and result.valid and result.incomplete
    assert not result.renormalised
    for metric_id in QUALITY_METRICS:
        metric = result.metrics[metric_id]
        assert metric.value is None and not metric.scored and metric.judge_error
        assert metric.reason == "judge error: turn 3: judge call failed: HTTP 503"
        assert [r["status"] for r in metric.details["results"]] == [
            "evaluated", "error", "evaluated", "evaluated"]
    assert result.metrics["garbled_turn_rate"].reason == (
        "judge error: the judge could not score turn 3 (context, intelligibility, "
        "segmentation), so whether those turns are garbled is unknown")
    with pytest.raises(JudgeUnavailable, match="intelligibility"):
        result.metric("intelligibility")


def test_a_metric_the_judge_could_not_score_on_one_turn_is_unknown_the_others_stand() -> None:
    judge = _FailingOn(_judge(), {("context", "turn 5")})
    result = _eval(judge=judge)
    context = result.metrics["context"]
    assert context.judge_error and context.value is None
    assert [r["status"] for r in context.details["results"]] == [
        "evaluated", "evaluated", "error", "evaluated"]
    assert result.metrics["intelligibility"].value == 1.0
    assert result.metrics["segmentation"].value == 1.0
    assert result.judge_errors == ["context", "garbled_turn_rate"]
    assert "turn 5 (context)" in (result.metrics["garbled_turn_rate"].reason or "")
    assert result.score is None


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


def test_a_combined_verdict_without_a_metrics_score_is_a_judge_error_not_a_1() -> None:
    # Seed 004 scores an out-of-range score 1; a verdict that gives no score at all for a
    # metric is no verdict on it: unknown, never scored against the model.
    details = {f"turn {t}": {"intelligibility": 5, "segmentation": 9} for t in BOT_TURNS}
    details["turn 3"] = {"intelligibility": 5, "segmentation": 5, "context": 5}
    judge = ScriptedJudge({COMBINED: 4}, item_details={COMBINED: details})
    result = _eval(judge=judge, config={"combined": True})
    context = result.metrics["context"]
    assert context.judge_error and context.value is None and not context.scored
    records = context.details["results"]
    assert [(r["turn"], r["status"]) for r in records] == [
        (1, "error"), (3, "evaluated"), (5, "error"), (7, "error")]
    assert "score_1_5" not in records[0]
    assert records[0]["reasoning"] == "the judge's verdict has no context score"
    assert (context.reason or "").startswith(
        "judge error: turn 1: the judge's verdict has no context score; turn 5: ")
    # An out-of-range score keeps the seed's rule: 1, with a warning.
    segmentation = result.metrics["segmentation"].details["results"][0]
    assert segmentation["score_1_5"] == 1.0 and "outside" in segmentation["warning"]
    assert result.metrics["segmentation"].scored
    # Three of the four turns are known garbled (segmentation out of range, scored 1): the
    # garbled rate fails whatever the unknown context scores are.
    assert result.judge_errors == ["context"]
    assert result.metrics["garbled_turn_rate"].rating == "fail"
    assert result.score is None and result.valid and result.incomplete


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
    ("...", 1),                                                  # no word to segment
    ("\u200b", 1),
    ("\U0001f44d", 1),
])
def test_segmentation_proxy(text: str, score: int) -> None:
    assert segmentation_proxy(text).score == score


GREEK = ("Καλησπέρα σας, πώς μπορώ να σας βοηθήσω σήμερα; Θέλετε να ελέγξω την κατάσταση "
         "της επιστροφής χρημάτων για την παραγγελία σας;")
GEORGIAN = ("გამარჯობა, როგორ შემიძლია დაგეხმაროთ? თქვენი თანხა ხვალ დაბრუნდება. კიდევ რამე "
            "ხომ არ გჭირდებათ?")
HINDI = ("नमस्ते, मैं आपकी मदद ज़रूर करूँगा। कृपया अपना खाता नंबर बताइए ताकि मैं आपके रिफंड "
         "की स्थिति देख सकूँ।")


@pytest.mark.parametrize("text", [
    HINDI,                                                       # danda (19 words)
    "यह पहला वाक्य है॥ यह दूसरा वाक्य है॥",                           # double danda
    "شکریہ، آپ کی رقم کل آپ کے کھاتے میں پہنچ جائے گی۔ کیا میں آپ کی مزید مدد کر سکتا "
    "ہوں؟",                                                      # Urdu full stop, question
    "Շնորհակալություն, ձեր գումարը վաղը կհասնի ձեր հաշվին։ Կարո՞ղ եմ ձեզ այլ բանով "
    "օգնել։",                                                   # Armenian full stop
    "እናመሰግናለን፣ ገንዘብዎ ነገ ወደ ሂሳብዎ ይደርሳል። ሌላ የምረዳዎት ነገር አለ፧",          # Ethiopic
    "We ship to 北京 and 上海 every day of the week.",                  # a few Han letters
    GREEK.replace(";", "\u037e"),                                # Greek question mark
    GREEK,                                                       # typed as ";"
    GEORGIAN,                                                    # caseless Mkhedruli
])
def test_the_proxy_reads_the_sentence_ends_of_other_scripts(text: str) -> None:
    # Before: these ends were unknown, so a correct turn had "no closing punctuation" and,
    # at 15 words or more, "no sentence boundary" (garbled); the Georgian turn's sentences
    # all "started in lower case" (2, garbled).
    check = segmentation_proxy(text)
    assert (check.score, check.issues, check.why_not) == (5, [], None)


def test_a_semicolon_ends_a_sentence_only_in_greek() -> None:
    assert segmentation_proxy(GREEK).sentences == 2
    assert segmentation_proxy("I called twice; nobody answered.").sentences == 1


def test_a_greek_sentence_starting_in_lower_case_is_still_flagged() -> None:
    check = segmentation_proxy("Ευχαριστώ. θα σας καλέσουμε αύριο.")
    assert check.issues == ["one sentence starts in lower case after a boundary"]


@pytest.mark.parametrize("text", [
    "Bonjour ! Comment puis-je vous aider aujourd’hui ?",
    "Bonjour\u202f! Comment puis-je vous aider aujourd’hui\u202f?",
    "Votre remboursement a été validé\u00a0: il arrivera sous trois jours.",
    "Votre forfait s’appelle « Illimité Plus » ; il coûte vingt euros par mois.",
])
def test_french_spacing_before_high_punctuation_is_not_an_issue(text: str) -> None:
    # Before: every such turn had "space before punctuation" and scored 4, below the bar.
    check = segmentation_proxy(text)
    assert (check.score, check.issues) == (5, [])


@pytest.mark.parametrize("text", ["Your refund , as promised, is on its way.",
                                  "Your refund is on its way .",
                                  "Are you sure  ?"])
def test_a_space_no_language_uses_before_punctuation_is_still_flagged(text: str) -> None:
    assert segmentation_proxy(text).issues == ["space before punctuation"]


def test_a_detached_question_mark_is_not_a_word() -> None:
    # Before: the "?" made this 25-word question 26 words, a "long sentence" (2, garbled).
    text = ("Pourriez-vous me confirmer le numéro de votre commande ainsi que l’adresse "
            "électronique que vous avez utilisée lors de votre achat sur notre site mardi "
            "dernier ?")
    check = segmentation_proxy(text)
    assert (check.score, check.longest) == (5, 25)


def test_a_sentence_ending_inside_closing_quotes_is_a_boundary() -> None:
    # Before: one 32-word sentence, "long sentence" (2, garbled); without the quotes, 5.
    text = ('I see the note from our agent saying "we will call you back tomorrow." I am '
            'sorry that this did not happen, and I have now escalated your case to a '
            'supervisor.')
    check = segmentation_proxy(text)
    assert (check.score, check.sentences, check.longest) == (5, 2, 18)


@pytest.mark.parametrize("text", ['"Stop!" he said.', 'The sign said "Closed." so we left.'])
def test_a_quote_followed_by_lower_case_goes_on_in_the_same_sentence(text: str) -> None:
    check = segmentation_proxy(text)
    assert (check.score, check.sentences) == (5, 1)


def test_the_proxy_splits_sentences_at_the_danda() -> None:
    check = segmentation_proxy(HINDI)
    assert (check.sentences, check.longest) == (2, 13)


@pytest.mark.parametrize(("text", "script"), [
    ("สวัสดีครับ ยินดีต้อนรับสู่บริการลูกค้า วันนี้มีอะไรให้ช่วยไหมครับ เงินคืนของคุณจะเข้าบัญชีพรุ่งนี้",
     "Thai"),
    ("ສະບາຍດີ ເງິນຂອງທ່ານຈະເຂົ້າບັນຊີມື້ອື່ນ", "Lao"),
    ("សួស្តី ប្រាក់របស់អ្នកនឹងចូលគណនីនៅថ្ងៃស្អែក។", "Khmer"),
    ("မင်္ဂလာပါ သင့်ငွေကို မနက်ဖြန် သင့်အကောင့်ထဲ ထည့်ပေးပါမယ်။", "Myanmar"),
    ("您好，您的退款明天会到账。还有什么可以帮您的吗？", "Chinese (CJK)"),
    ("iPhone 15 Pro Maxのご注文を確認しました", "Japanese (Hiragana)"),
    ("ｺﾝﾆﾁﾊ ｵｷｬｸｻﾏ ｺﾞﾁｭｳﾓﾝｦ ｶｸﾆﾝｼﾏｼﾀ", "Japanese (Katakana)"),
])
def test_a_turn_in_a_script_without_word_spacing_is_not_scored(text: str, script: str) -> None:
    # Before: Thai, Lao and Khmer turns had "no sentence boundary" (2, garbled) or a made-up 5.
    check = segmentation_proxy(text)
    assert check.score is None
    assert check.why_not == (f"written in {script} script, which puts no spaces between "
                             "words: the proxy counts words by spaces and cannot measure "
                             "its sentences")


def test_the_heuristic_judge_leaves_a_turn_it_cannot_segment_unscored() -> None:
    transcript = [{"speaker": "customer", "text": "Hello."},
                  {"speaker": "bot", "text": "สวัสดีครับ เงินคืนของคุณจะเข้าบัญชีพรุ่งนี้"},
                  {"speaker": "customer", "text": "Thanks."},
                  {"speaker": "bot", "text": "You are welcome."}]
    expected = {"turns": [{"turn": 1, "text": "x"}, {"turn": 3, "text": "x"}]}
    output = {"turns": [{"turn": t, "text": transcript[t]["text"]} for t in (1, 3)]}
    for config in ({}, {"combined": True}):
        result = evaluate(_case(config=config, expected=expected, transcript=transcript),
                          output, judge=HeuristicJudge(), embedder=TFIDF)
        segmentation = result.metrics["segmentation"]
        thai, english = segmentation.details["results"]
        assert thai["status"] == "not_scored" and "score_1_5" not in thai
        assert "written in Thai script" in thai["reasoning"]
        assert english["score_1_5"] == 5.0
        assert segmentation.value == 1.0 and "not scored: turn 1" in (segmentation.reason or "")
        assert result.judge_errors == []


def test_a_hindi_conversation_is_not_called_garbled_by_the_heuristic_judge() -> None:
    # Before: one turn of two scored 2 for segmentation, a garbled turn rate of 50 %.
    transcript = [{"speaker": "customer", "text": "मुझे अपने रिफंड की स्थिति जाननी है।"},
                  {"speaker": "agent", "text": HINDI}]
    expected = {"turns": [{"turn": 1, "text": HINDI}]}
    result = evaluate(_case(expected=expected, transcript=transcript), expected,
                      judge=HeuristicJudge(), embedder=TFIDF)
    assert result.metrics["segmentation"].value == 1.0
    # Segmentation garbles nothing; with the other two scores left out offline, whether the
    # turn is garbled is unknown, not a pass.
    garbled = result.metrics["garbled_turn_rate"]
    assert (garbled.value, garbled.rating, garbled.judge_error) == (None, None, False)


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
    # Wordless references passed str.strip; an output giving one back was a failed turn.
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: '...'}]}",
     "expected_outcome.turns[0].text: empty turn (transcript turn 0): a reference wording "
     "needs a letter or a digit"),
    ('transcript: [{speaker: bot, text: hi}]\n'
     'expected_outcome: {turns: [{turn: 0, text: "\\u200b"}]}',
     "expected_outcome.turns[0].text: empty turn (transcript turn 0)"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: []}",
     "expected_outcome.turns: no bot turn to evaluate"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: hi}]}"
     "\nconfig: {thresholds: {fluency: 0.9}}", "unknown metric fluency"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: hi}]}"
     "\nconfig: {max_history_turns: -1}", "config.max_history_turns"),
    ("transcript: [{speaker: bot, text: hi}]\nexpected_outcome: {turns: [{turn: 0, text: hi}]}"
     "\nconfig: {max_history_turns: 0}", "config.max_history_turns"),
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


def test_a_cases_own_bar_outranks_a_teams_policy_for_that_case() -> None:
    # Intelligibility 0.875 (turn scores 5, 4, 4, 5): the case's 0.90 failed it and its
    # details said passed: False, while a policy's 0.70 re-rated it good. The more specific
    # bar wins; a case that sets none is rated by the policy.
    from pytest_callqa.engine.policy import apply_policy
    from pytest_callqa.engine.registry import default_registry

    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {"intelligibility": {"threshold": 0.7},
                                        "garbled_turn_rate": {"threshold": 0.5}}}, "team.toml")
    judge = _judge(intelligibility={1: 5, 3: 4, 5: 4, 7: 5}, segmentation={1: 2, 3: 5,
                                                                          5: 5, 7: 5})
    own = evaluate(_case(config={"threshold": 0.9, "garbled_rate_threshold": 0.2}), GOOD,
                   judge=judge, embedder=TFIDF, registry=registry).metrics
    assert (own["intelligibility"].rating, own["intelligibility"].details["passed"]) == (
        "fail", False)
    assert own["garbled_turn_rate"].rating == "fail"  # 1 of 4 turns, not below the case's 20%
    policy = evaluate(_case(), GOOD, judge=judge, embedder=TFIDF, registry=registry).metrics
    assert policy["intelligibility"].rating == "good"
    assert policy["garbled_turn_rate"].rating == "good"  # 25 % under the policy's 50 %
    # A case restating the default sets no bar of its own; and whether a rating past the
    # case's bar blocks is still the policy's to say.
    restated = evaluate(_case(config={"threshold": 0.8}), GOOD, judge=judge, embedder=TFIDF,
                        registry=registry).metrics
    assert restated["intelligibility"].rating == "good"
    blocking = default_registry().copy()
    apply_policy(blocking, {"metrics": {"intelligibility": {"blocker": True}}}, "team.toml")
    own = evaluate(_case(config={"threshold": 0.9}), GOOD, judge=judge, embedder=TFIDF,
                   registry=blocking)
    assert (own.metrics["intelligibility"].rating, own.blocked) == ("blocker", True)
