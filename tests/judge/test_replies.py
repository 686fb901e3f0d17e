"""The judge's reply contract, read directly: the schema a reply must follow and what
``parse_reply`` keeps, refuses and says about each verdict."""

from __future__ import annotations

import json

import pytest

from pytest_callqa.engine.core.judging import FOCUS_VIEW, JudgeRequest
from pytest_callqa.engine.judges.replies import (
    Item,
    JudgeReply,
    _RepeatedKeys,
    kept_fields,
    parse_reply,
    reply_schema,
    verdict_fields,
)
from tests.engine.helpers import asked, make_case, question

_EXPECTED = {"questions": [question("Q1", 4)]}
CASE = make_case("qa", _EXPECTED, config=asked(_EXPECTED))


def _item(ident: str, scale: str = "unit", **kwargs) -> Item:
    request = JudgeRequest(case=CASE, task="qa", metric=ident, scale=scale,  # type: ignore[arg-type]
                           instructions="judge it", model_output={}, **kwargs)
    return Item(ident, request)


def _verdict(score, reason: str = "ok", **extra) -> dict:
    return {"score": score, "expected_outcome_reference": "", "model_output_observed": "",
            "reason": reason, **extra}


UNIT, BINARY = _item("faithfulness"), _item("resolved", "binary")


def test_verdict_fields_with_the_full_view_and_a_listed_field() -> None:
    item = _item("m", "likert5", reply_fields=(("failure_code", "code", "why it failed"),))
    assert verdict_fields(item.request) == {
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "expected_outcome_reference": {"type": "string"},
        "model_output_observed": {"type": "string"},
        "reason": {"type": "string"},
        "failure_code": {"type": ["string", "null"]},
    }


def test_a_view_without_the_truth_asks_for_no_reference_to_it() -> None:
    item = _item("m", "ternary", view=FOCUS_VIEW,
                 reply_fields=(("turns", "turns", "where"), ("n", "count", "how many")))
    assert verdict_fields(item.request) == {
        "score": {"type": "number", "enum": [0, 0.5, 1]},
        "model_output_observed": {"type": "string"},
        "reason": {"type": "string"},
        "turns": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "n": {"type": "integer", "minimum": 0},
    }


def test_reply_schema_is_strict_one_key_per_metric() -> None:
    schema = reply_schema([UNIT, _item("q", "rubric0_5")])
    assert schema["type"] == "object"
    assert schema["required"] == ["faithfulness", "q"]
    assert schema["additionalProperties"] is False
    unit = schema["properties"]["faithfulness"]
    assert unit["type"] == "object" and unit["additionalProperties"] is False
    assert unit["required"] == ["score", "expected_outcome_reference", "model_output_observed",
                                "reason"]
    assert unit["properties"]["score"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert schema["properties"]["q"]["properties"]["score"] == {
        "type": "integer", "enum": [0, 1, 2, 3, 4, 5]}


def test_kept_fields_takes_listed_and_diagnostic_fields_top_level_over_nested() -> None:
    item = _item("m", reply_fields=(("missing_facts", "count", "facts left out"),))
    reply = JudgeReply.model_validate(_verdict(
        0.5, failure_code="F2", tone="warm", missing_facts=3,
        details={"turns": [1, 2], "missing_facts": 9, "other": 1}))
    assert kept_fields(reply, item.request) == {
        "failure_code": "F2", "missing_facts": 3, "turns": [1, 2]}
    flat = JudgeReply.model_validate(_verdict(0.5, details="not an object", turns=[4]))
    assert kept_fields(flat, item.request) == {"turns": [4]}


def test_the_asked_for_shape_is_parsed() -> None:
    reply = json.dumps({"faithfulness": _verdict(0.75), "resolved": _verdict(1)})
    parsed = parse_reply(reply, [UNIT, BINARY])
    assert (parsed.problems, parsed.general, parsed.off_scale) == ({}, [], {})
    assert {k: (r.metric, r.score) for k, r in parsed.replies.items()} == {
        "faithfulness": ("faithfulness", 0.75), "resolved": ("resolved", 1)}
    assert parsed.all_problems() == []


@pytest.mark.parametrize("reply", [
    {"verdicts": [{"metric": "faithfulness", **_verdict(0.5)},
                  {"metric": "resolved", **_verdict(0)}]},
    {"verdicts": {"faithfulness": _verdict(0.5), "resolved": _verdict(0)}},
    [{"metric": "faithfulness", **_verdict(0.5)}, {"metric": "resolved", **_verdict(0)}],
])
def test_the_other_shapes_models_write_are_read_too(reply) -> None:
    parsed = parse_reply(json.dumps(reply), [UNIT, BINARY])
    assert parsed.all_problems() == []
    assert {k: r.score for k, r in parsed.replies.items()} == {"faithfulness": 0.5,
                                                              "resolved": 0}


def test_a_single_metric_reply_may_be_the_bare_verdict_under_any_name() -> None:
    parsed = parse_reply(json.dumps({"metric": "Faithfulness", **_verdict(0.25)}), [UNIT])
    assert parsed.all_problems() == []
    assert parsed.replies["faithfulness"].score == 0.25


@pytest.mark.parametrize(("content", "general"), [
    ("not json at all", ["the reply is not valid JSON: output is not valid JSON (Expecting "
                         "value at char 0): 'not json at all'"]),
    ('"a string"', ["the reply must be an object with one verdict per metric id, keyed by the "
                    "id, got str"]),
    ('{"verdicts": 3}', ["'verdicts' must be a list of objects"]),
])
def test_replies_of_the_wrong_shape_say_what_was_wanted(content, general) -> None:
    parsed = parse_reply(content, [UNIT, BINARY])
    assert parsed.general == general
    assert parsed.replies == {}
    if general[0].startswith("the reply is not valid JSON"):
        assert parsed.problems == {}
    else:
        assert parsed.problems == {"faithfulness": ["no verdict for metric 'faithfulness'"],
                                   "resolved": ["no verdict for metric 'resolved'"]}


@pytest.mark.parametrize(("score", "message", "off"), [
    (1.5, "score 1.5 for metric 'faithfulness' is not valid on the unit (0–1) scale: expected "
          "a number from 0.0 to 1.0 (continuous; 1.0 = fully correct)", 1.5),
    ("high", "score 'high' for metric 'faithfulness' is not valid on the unit (0–1) scale: "
             "expected a number from 0.0 to 1.0 (continuous; 1.0 = fully correct)", None),
    (True, "score True for metric 'faithfulness' is not valid on the unit (0–1) scale: "
           "expected a number from 0.0 to 1.0 (continuous; 1.0 = fully correct)", None),
])
def test_a_score_off_the_scale_is_refused_and_kept_aside_when_numeric(score, message,
                                                                      off) -> None:
    parsed = parse_reply(json.dumps({"faithfulness": _verdict(score)}), [UNIT])
    assert parsed.replies == {}
    assert parsed.problems == {"faithfulness": [message]}
    assert parsed.off_scale == ({} if off is None else {"faithfulness": off})


def test_binary_scores_name_their_scale() -> None:
    parsed = parse_reply(json.dumps({"resolved": _verdict(0.5)}), [BINARY])
    assert parsed.problems == {"resolved": [
        "score 0.5 for metric 'resolved' is not valid on the binary (0–1) scale: expected "
        "exactly 0 or 1 (1 = criterion met at or above its threshold, 0 = not met)"]}
    assert parsed.off_scale == {"resolved": 0.5}


def test_two_verdicts_for_one_metric_trust_neither() -> None:
    reply = [{"metric": "faithfulness", **_verdict(0.5)},
             {"metric": "faithfulness", **_verdict(0.9)},
             {"metric": "resolved", **_verdict(1)}]
    parsed = parse_reply(json.dumps(reply), [UNIT, BINARY])
    assert parsed.problems == {"faithfulness": ["two verdicts for metric 'faithfulness'"]}
    assert list(parsed.replies) == ["resolved"]


REPEATED = ["the reply repeats a key of the verdict for metric 'faithfulness', so which value "
            "it meant is unknown"]
_OK = '"resolved": {"score": 1, "expected_outcome_reference": "", "model_output_observed": "", ' \
      '"reason": "ok"}'
_FIELDS = '"expected_outcome_reference": "", "model_output_observed": "", "reason": "ok"'


@pytest.mark.parametrize("content", [
    # a metric id twice among verdicts keyed by id (json.loads keeps the last)
    f'{{"faithfulness": {{"score": 0.1, {_FIELDS}}}, '
    f'"faithfulness": {{"score": 0.9, {_FIELDS}}}, {_OK}}}',
    # the same inside "verdicts"
    f'{{"verdicts": {{"faithfulness": {{"score": 0.1, {_FIELDS}}}, '
    f'"faithfulness": {{"score": 0.9, {_FIELDS}}}, {_OK}}}}}',
    # a score given twice in a verdict keyed by its id
    f'{{"faithfulness": {{"score": 0.1, "score": 0.9, {_FIELDS}}}, {_OK}}}',
    # ... and in a listed verdict
    f'[{{"metric": "faithfulness", "score": 0.1, "score": 0.9, {_FIELDS}}}, '
    f'{{"metric": "resolved", "score": 1, {_FIELDS}}}]',
    # a key twice deeper in a verdict, among its details (a combined verdict's per-metric
    # scores may sit there): missed before when more than one metric was asked for
    f'{{"faithfulness": {{"score": 0.5, {_FIELDS}, "details": {{"x": 5, "x": 1}}}}, {_OK}}}',
    f'{{"faithfulness": {{"score": 0.5, {_FIELDS}, '
    f'"details": {{"turns": [[{{"x": 5, "x": 1}}]]}}}}, {_OK}}}',
    f'[{{"metric": "faithfulness", "score": 0.5, {_FIELDS}, "details": {{"x": 5, "x": 1}}}}, '
    f'{{"metric": "resolved", "score": 1, {_FIELDS}}}]',
])
def test_a_key_given_twice_leaves_its_verdict_untrusted(content: str) -> None:
    parsed = parse_reply(content, [UNIT, BINARY])
    assert parsed.problems == {"faithfulness": REPEATED}
    assert list(parsed.replies) == ["resolved"]
    assert parsed.replies["resolved"].score == 1


def test_one_verdict_given_bare_with_a_field_twice_is_untrusted() -> None:
    parsed = parse_reply(f'{{"score": 0.1, "score": 0.9, {_FIELDS}}}', [UNIT])
    assert parsed.replies == {}
    assert parsed.problems == {"faithfulness": REPEATED}


def test_repeated_keys_elsewhere_leave_the_verdicts_alone() -> None:
    # A list as a verdict's metric (unhashable) and a repeated key of no verdict asked for.
    content = (f'[{{"metric": ["faithfulness"], "metric": "faithfulness", "score": 0.5, '
               f'{_FIELDS}}}, {{"metric": "tone", "score": 1, "score": 0, {_FIELDS}}}, '
               f'{{"metric": "resolved", "score": 1, {_FIELDS}}}]')
    parsed = parse_reply(content, [UNIT, BINARY])
    assert parsed.problems == {"faithfulness": REPEATED}
    assert parsed.general == ["verdict for unknown metric 'tone'"]
    assert list(parsed.replies) == ["resolved"]


def test_a_repeated_key_of_a_verdict_not_asked_for_leaves_the_others_alone() -> None:
    # With several metrics asked for, a repeated key is charged to the verdict it is in.
    content = (f'[{{"metric": "tone", "score": 1, "score": 0, {_FIELDS}}}, '
               f'{{"metric": "faithfulness", "score": 0.5, {_FIELDS}}}, '
               f'{{"metric": "resolved", "score": 1, {_FIELDS}}}]')
    parsed = parse_reply(content, [UNIT, BINARY])
    assert parsed.problems == {}
    assert parsed.general == ["verdict for unknown metric 'tone'"]
    assert list(parsed.replies) == ["faithfulness", "resolved"]


def test_an_object_with_a_repeated_key_is_kept_while_the_reply_is_read() -> None:
    # Known by its id: kept alive, so that no later object of the reply (the earlier value
    # of a repeated key is dropped) can be given its id and be taken for it.
    keys = _RepeatedKeys([UNIT, BINARY])
    flagged = keys.pairs_hook([("k", 1), ("k", 2)])
    assert keys.pairs_hook([("k", 1)]) == {"k": 1}
    assert keys._flagged == {id(flagged): flagged}


def test_a_verdict_for_a_metric_not_asked_is_reported() -> None:
    reply = [{"metric": "tone", **_verdict(0.5)}, {"metric": "faithfulness", **_verdict(1)},
             {"metric": "resolved", **_verdict(1)}]
    parsed = parse_reply(json.dumps(reply), [UNIT, BINARY])
    assert parsed.general == ["verdict for unknown metric 'tone'"]
    assert sorted(parsed.replies) == ["faithfulness", "resolved"]


def test_a_malformed_verdict_is_charged_to_its_metric_or_to_the_reply() -> None:
    reply = [{"metric": "faithfulness", "score": 0.5},
             {"metric": "nobody", "score": 1},
             {"metric": "resolved", **_verdict(1)}]
    parsed = parse_reply(json.dumps(reply), [UNIT, BINARY])
    assert parsed.problems == {"faithfulness": ["malformed verdict (reason: Field required)"]}
    assert parsed.general == ["malformed verdict (reason: Field required)"]
    assert list(parsed.replies) == ["resolved"]
    assert parsed.all_problems() == ["malformed verdict (reason: Field required)",
                                     "malformed verdict (reason: Field required)"]


def test_a_malformed_single_verdict_is_charged_to_the_one_metric() -> None:
    parsed = parse_reply(json.dumps([{"metric": "x", "reason": ["not", "text"]}]), [UNIT])
    assert parsed.problems == {"faithfulness": [
        "malformed verdict (reason: Input should be a valid string)"]}
    assert parsed.general == []
    non_object = parse_reply(json.dumps([3]), [UNIT])
    assert non_object.problems == {"faithfulness": [
        "malformed verdict (verdict: Input should be a valid dictionary or instance of "
        "JudgeReply)"]}



def test_every_field_error_of_a_verdict_is_listed() -> None:
    parsed = parse_reply(json.dumps([{"metric": 5, "score": 1}]), [UNIT])
    assert parsed.problems == {"faithfulness": [
        "malformed verdict (metric: Input should be a valid string; reason: Field required)"]}


def test_verdicts_keyed_by_id_that_are_not_objects_are_malformed() -> None:
    parsed = parse_reply(json.dumps({"verdicts": {"faithfulness": 3}}), [UNIT])
    assert parsed.problems == {"faithfulness": [
        "malformed verdict (verdict: Input should be a valid dictionary or instance of "
        "JudgeReply)"]}
    assert parsed.replies == {}


# --- scores a request lists among its reply fields ---------------------------------------

_PER_METRIC = (("clarity", "likert5", "the clarity score"),
               ("context", "likert5", "the context score"),
               ("unsupported", "count", "facts unsupported"))
COMBINED = _item("turn_quality", "likert5", reply_fields=_PER_METRIC,
                 keeps_out_of_range=True)


def _combined(**fields) -> str:
    # The listed count, given unless a test says otherwise: scores are what is checked.
    fields.setdefault("unsupported", 0)
    return json.dumps({"turn_quality": _verdict(4, **fields)})


@pytest.mark.parametrize("fields", [
    {"clarity": 4, "context": 5},
    {"details": {"clarity": 4, "context": 5}},
    {"clarity": 4, "details": {"context": 5}},
    # Off its scale, a listed score is the family's to rule on (seed 004: 1, with a warning).
    {"clarity": 9, "context": 0.5},
])
def test_a_verdict_giving_every_listed_score_is_usable(fields) -> None:
    parsed = parse_reply(_combined(**fields), [COMBINED])
    assert parsed.all_problems() == []
    assert list(parsed.replies) == ["turn_quality"]


@pytest.mark.parametrize(("fields", "missing"), [
    ({"clarity": 4}, "context"),
    ({"clarity": 4, "context": None}, "context"),
    ({"clarity": "4", "context": 5}, "clarity"),
    ({"clarity": True, "context": 5}, "clarity"),
    ({"clarity": float("nan"), "context": 5}, "clarity"),
    ({}, "clarity, context"),
])
def test_a_verdict_without_a_listed_score_is_unusable(fields, missing) -> None:
    # Before: usable, and the family scored the absent score 1 without asking again.
    parsed = parse_reply(_combined(**fields), [COMBINED])
    assert parsed.replies == {}
    assert parsed.problems == {"turn_quality": [
        f"the verdict for metric 'turn_quality' gives no number for {missing}, which the "
        "metric asks for"]}
    assert parsed.off_scale == {}


@pytest.mark.parametrize("count", [0, 3, 3.0, 10 ** 6])
def test_a_verdict_giving_a_whole_count_is_usable(count) -> None:
    parsed = parse_reply(_combined(clarity=4, context=5, unsupported=count), [COMBINED])
    assert parsed.all_problems() == []


@pytest.mark.parametrize("count", [None, -3, True, 1.5, "2", float("nan"), 10 ** 400])
def test_a_verdict_without_a_whole_count_is_unusable(count) -> None:
    # Before: a count of -3 made a hallucination rate of -300 % that rated "good", and a
    # missing one was rebuilt from the score, rounded (half a fact unsupported: none).
    fields = {"clarity": 4, "context": 5}
    if count is not None:
        fields["unsupported"] = count
    content = json.dumps({"turn_quality": _verdict(4, **fields)})
    parsed = parse_reply(content, [COMBINED])
    assert parsed.replies == {}
    assert parsed.problems == {"turn_quality": [
        "the verdict for metric 'turn_quality' gives no whole count >= 0 for unsupported, "
        "which the metric asks for"]}


def test_a_verdict_without_two_counts_names_both() -> None:
    item = _item("faithfulness", "unit", reply_fields=(
        ("supported", "count", "facts supported"), ("unsupported", "count", "facts not")))
    parsed = parse_reply(json.dumps({"faithfulness": _verdict(0.5)}), [item])
    assert parsed.problems == {"faithfulness": [
        "the verdict for metric 'faithfulness' gives no whole count >= 0 for supported, "
        "unsupported, which the metric asks for"]}


def test_an_off_scale_verdict_without_a_listed_score_has_both_problems() -> None:
    parsed = parse_reply(json.dumps({"turn_quality": _verdict(7, clarity=4, unsupported=0)}),
                         [COMBINED])
    assert parsed.replies == {}
    assert parsed.problems["turn_quality"][1].startswith(
        "the verdict for metric 'turn_quality' gives no number for context")
    assert len(parsed.problems["turn_quality"]) == 2
    assert parsed.off_scale == {"turn_quality": 7.0}


_FACTS = (("supported", "count", "facts supported"), ("unsupported", "count", "facts not"))
_USED = (("relevant_used", "count", "pieces used that are needed"),
         ("referenced", "count", "pieces used"))


@pytest.mark.parametrize(("fields", "score", "counts", "problem"), [
    # Every fact unsupported, scored 1.0: the hallucination rate (pooled from the counts)
    # failed while the score passed, and the blocker it feeds was not raised.
    (_FACTS, 1.0, {"supported": 0, "unsupported": 3},
     "score 1.0 is not the share its counts give (supported 0 of 3: 0.00)"),
    (_FACTS, 0.81, {"supported": 3, "unsupported": 1},
     "score 0.81 is not the share its counts give (supported 3 of 4: 0.75)"),
    (_USED, 1.0, {"relevant_used": 0, "referenced": 5},
     "score 1.0 is not the share its counts give (relevant_used 0 of 5: 0.00)"),
    (_USED, 1.0, {"relevant_used": 6, "referenced": 5}, "relevant_used 6 is more than "
     "referenced (5)"),
])
def test_a_score_its_own_counts_contradict_is_unusable(fields, score, counts, problem) -> None:
    item = _item("faithfulness", "unit", reply_fields=fields)
    parsed = parse_reply(json.dumps({"faithfulness": _verdict(score, **counts)}), [item])
    assert parsed.replies == {}
    assert parsed.problems == {"faithfulness": [
        f"the verdict for metric 'faithfulness' contradicts itself: {problem}"]}


@pytest.mark.parametrize(("fields", "score", "counts"), [
    (_FACTS, 0.7, {"supported": 2, "unsupported": 1}),  # 2 of 3, rounded by the judge
    (_FACTS, 0.05, {"supported": 0, "unsupported": 1}),  # the tolerance's edge, inside it
    # 3 of 4 rounded either way: 0.8 - 0.75 is a hair over 0.05 in floating point.
    (_FACTS, 0.8, {"supported": 3, "unsupported": 1}),
    (_FACTS, 0.7, {"supported": 3, "unsupported": 1}),
    (_USED, 0.4, {"relevant_used": 7, "referenced": 20}),
    (_FACTS, 1.0, {"supported": 0, "unsupported": 0}),  # no fact: nothing unsupported
    (_USED, 1.0, {"relevant_used": 0, "referenced": 0}),
    (_USED, 0.6, {"relevant_used": 3, "referenced": 5}),
])
def test_a_score_its_counts_agree_with_is_usable(fields, score, counts) -> None:
    item = _item("faithfulness", "unit", reply_fields=fields)
    parsed = parse_reply(json.dumps({"faithfulness": _verdict(score, **counts)}), [item])
    assert parsed.all_problems() == []


_TEN_FACTS = {"facts": [f"fact {n}" for n in range(10)]}


@pytest.mark.parametrize(("score", "counts", "problem"), [
    # One fact of the ten judged, unsupported, scored 0.0: the fabrication-free rate read
    # 0.0, the hallucination rate 1 of 10 and the pooled fabrication-free rate 9 of 10.
    (0.0, {"supported": 0, "unsupported": 1}, "supported 0 + unsupported 1 is 1, not the 10 "
     "facts listed"),
    (1.0, {"supported": 12, "unsupported": 0}, "supported 12 + unsupported 0 is 12, not the "
     "10 facts listed"),
])
def test_fact_counts_that_do_not_add_up_to_the_facts_listed_are_unusable(
        score, counts, problem) -> None:
    item = _item("faithfulness", "unit", reply_fields=_FACTS, focus=_TEN_FACTS)
    parsed = parse_reply(json.dumps({"faithfulness": _verdict(score, **counts)}), [item])
    assert parsed.replies == {}
    assert parsed.problems == {"faithfulness": [
        f"the verdict for metric 'faithfulness' contradicts itself: {problem}"]}


@pytest.mark.parametrize(("focus", "score", "counts"), [
    (_TEN_FACTS, 0.9, {"supported": 9, "unsupported": 1}),
    ({"facts": []}, 1.0, {"supported": 0, "unsupported": 0}),
    # Counts of pieces the focus does not list one by one are checked against the score only.
    ({"claims": ["a", "b"]}, 0.6, {"supported": 3, "unsupported": 2}),
])
def test_fact_counts_that_add_up_to_the_facts_listed_are_usable(focus, score, counts) -> None:
    item = _item("faithfulness", "unit", reply_fields=_FACTS, focus=focus)
    parsed = parse_reply(json.dumps({"faithfulness": _verdict(score, **counts)}), [item])
    assert parsed.all_problems() == []


def test_a_combined_score_that_is_not_the_lowest_of_its_scores_is_unusable() -> None:
    # Asked for the lowest of the three as its score: 1 beside 5, 5, 5 ("garbled and
    # unintelligible") scored all three 5, a clean turn, with no flag.
    parsed = parse_reply(json.dumps({"turn_quality": _verdict(
        1, "Turn is garbled.", clarity=5, context=5, unsupported=0)}), [COMBINED])
    assert parsed.replies == {}
    assert parsed.problems == {"turn_quality": [
        "the verdict for metric 'turn_quality' contradicts itself: score 1 is not the lowest "
        "of its scores (5)"]}
    # A field off the scale is the family's to rule on (1, with a warning), as before.
    off_grid = parse_reply(json.dumps({"turn_quality": _verdict(
        4, clarity=4.5, context=5, unsupported=0)}), [COMBINED])
    assert off_grid.all_problems() == []


@pytest.mark.parametrize("score", [0, 9, 4.5])
def test_a_combined_score_off_the_scale_over_scores_on_it_is_a_contradiction(score) -> None:
    # Before: refused as off the scale with its fields unread, then taken for all three
    # scores: 0 beside 5, 5, 5 scored the turn 1, 1, 1.
    parsed = parse_reply(json.dumps({"turn_quality": _verdict(
        score, clarity=5, context=5, unsupported=0)}), [COMBINED])
    assert parsed.replies == {} and parsed.off_scale == {}
    assert parsed.problems == {"turn_quality": [
        f"the verdict for metric 'turn_quality' contradicts itself: score {score} is not the "
        "lowest of its scores (5)"]}


def test_a_combined_score_off_the_scale_beside_a_score_off_it_is_usable() -> None:
    # The lowest as written: each score is the family's to rule on (1, with a warning, for
    # the one off the scale alone).
    parsed = parse_reply(json.dumps({"turn_quality": _verdict(
        0, clarity=5, context=0, unsupported=0)}), [COMBINED])
    assert parsed.all_problems() == []
    assert parsed.replies["turn_quality"].model_extra["context"] == 0
