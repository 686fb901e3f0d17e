"""Judge calibration statistics and human labels: kappa against scikit-learn, Spearman against
scipy and a hand-worked example, agreement and bias by hand; labels checked at load."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from pytest_callqa.engine.calibration import (
    agreement,
    calibrate,
    calibration_lines,
    cohen_kappa,
    confusion,
    incomplete,
    label_problems,
    label_scale,
    mean_bias,
    outcome,
    spearman,
    verdict,
)
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.metrics import CASE_BAR
from pytest_callqa.engine.core.results import MetricResult, TaskResult
from pytest_callqa.engine.loading import CaseFileError, load_case_file
from pytest_callqa.engine.registry import default_registry

from .helpers import make_case

# People and a judge on a three-level ordinal scale (0, 0.5, 1 as categories 0, 1, 2).
HUMAN_3 = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 2]
JUDGE_3 = [0, 1, 0, 1, 2, 0, 2, 2, 1, 2, 0, 2]


def test_kappa_by_hand() -> None:
    """People 0 0 1 1, judge 0 1 1 1: observed 3/4, chance (2·1 + 2·3)/16 = 1/2, so
    kappa = (0.75 − 0.5) / (1 − 0.5) = 0.5."""
    assert cohen_kappa([0, 0, 1, 1], [0, 1, 1, 1], 2, weighted=False) == pytest.approx(0.5)
    assert confusion([0, 0, 1, 1], [0, 1, 1, 1], 2) == [[1, 1], [0, 2]]


def test_unweighted_kappa_matches_scikit_learn() -> None:
    """Confusion [[3,1,0],[1,1,1],[0,1,4]], marginals 4 3 5 on both sides: observed 8/12,
    chance 50/144, kappa = (96 − 50) / (144 − 50) = 46/94."""
    ours = cohen_kappa(HUMAN_3, JUDGE_3, 3, weighted=False)
    assert confusion(HUMAN_3, JUDGE_3, 3) == [[3, 1, 0], [1, 1, 1], [0, 1, 4]]
    assert ours == pytest.approx(cohen_kappa_score(HUMAN_3, JUDGE_3))
    assert ours == pytest.approx(46 / 94)


def test_linear_weighted_kappa_matches_scikit_learn() -> None:
    """Weighted disagreement: four pairs one step apart = 4. Chance: one step apart
    (4·3 + 3·4 + 3·5 + 5·3)/12 = 54/12, two steps 2·(4·5 + 5·4)/12 = 80/12; kappa =
    1 − 4 / (134/12) = 86/134."""
    ours = cohen_kappa(HUMAN_3, JUDGE_3, 3, weighted=True)
    assert ours == pytest.approx(cohen_kappa_score(HUMAN_3, JUDGE_3, weights="linear"))
    assert ours == pytest.approx(86 / 134)


def test_weighted_kappa_counts_an_unused_middle_category() -> None:
    """Four bands, nobody used the second: the distances stay those of the scale, as
    scikit-learn's with the full list of labels."""
    human, judge = [0, 0, 2, 3, 3, 3, 2], [0, 2, 2, 3, 2, 3, 3]
    ours = cohen_kappa(human, judge, 4, weighted=True)
    assert ours == pytest.approx(cohen_kappa_score(human, judge, labels=[0, 1, 2, 3],
                                                   weights="linear"))
    assert ours != pytest.approx(cohen_kappa_score([0, 0, 1, 2, 2, 2, 1],
                                                   [0, 1, 1, 2, 1, 2, 2], weights="linear"))


def test_kappa_is_undefined_when_every_pair_is_in_one_category() -> None:
    assert cohen_kappa([1, 1, 1], [1, 1, 1], 2, weighted=False) is None
    assert cohen_kappa([], [], 2, weighted=True) is None
    # A judge that always answers the same, against people who do not: kappa 0, defined.
    assert cohen_kappa([0, 1, 0, 1], [1, 1, 1, 1], 2, weighted=False) == pytest.approx(0.0)


def test_spearman_by_hand_and_against_scipy() -> None:
    """x 1 2 3 4, y 1 3 2 4: squared rank differences 0 1 1 0, so
    rho = 1 − 6·2 / (4·15) = 0.8."""
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    human = [0.0, 0.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.0]
    judge = [0.1, 0.4, 0.4, 0.9, 1.0, 0.2, 0.9, 0.0]
    assert spearman(human, judge) == pytest.approx(spearmanr(human, judge).statistic)


def test_spearman_undefined_for_a_constant_side_or_one_pair() -> None:
    assert spearman([1.0, 1.0, 1.0], [0.2, 0.5, 0.9]) is None
    assert spearman([1.0], [1.0]) is None
    with pytest.raises(ValueError, match="3 values against 2"):
        spearman([1, 2, 3], [1, 2])


def test_agreement_and_bias_by_hand() -> None:
    """Categories agree on 3 of 4 pairs; judge − people = 0.1, 0, −0.5, 0.2: mean −0.05."""
    assert agreement([0, 1, 2, 2], [0, 1, 1, 2]) == pytest.approx(0.75)
    assert mean_bias([1.0, 0.5, 1.0, 0.0], [1.1, 0.5, 0.5, 0.2]) == pytest.approx(-0.05)
    assert agreement([], []) is None
    assert mean_bias([], []) is None
    # Lower is better: a judge giving higher values than people is stricter.
    assert mean_bias([0.0, 0.1], [0.4, 0.3], higher_is_better=False) == pytest.approx(-0.3)


def test_bias_is_above_zero_for_a_lenient_judge_whatever_the_direction() -> None:
    # The judge saw more hallucination than people (stricter), yet the bias was +0.425,
    # which the docs read as "more lenient".
    people, judge = [0.0, 0.0, 0.1, 0.0], [0.4, 0.5, 0.6, 0.3]
    cases = [GoldenCase.model_validate({"id": f"c{i}", "task": "grounding",
                                        "expected_outcome": {},
                                        "human_labels": {"hallucination": h}})
             for i, h in enumerate(people)]
    specs = {"grounding": default_registry().metrics_for("grounding")}

    def bias(values: list[float]) -> object:
        results = [_result(f"c{i}", {"hallucination": MetricResult(v)}, task="grounding")
                   for i, v in enumerate(values)]
        return calibrate(results, cases, specs, "human")["hallucination"]["bias"]

    assert bias(judge) == pytest.approx(-0.425)
    assert bias([0.0, 0.0, 0.0, 0.0]) == pytest.approx(0.025)


def _spec(task: str, metric: str):  # type: ignore[no-untyped-def]
    return default_registry().metric(task, metric)


def test_label_scales_of_grid_rubric_and_banded_metrics() -> None:
    intent = label_scale(_spec("text", "call_intent_match"))
    assert not isinstance(intent, str)
    assert intent.categories == ("0", "0.5", "1") and intent.weighted
    assert [intent.category(v) for v in (0.0, 0.5, 1.0)] == [0, 1, 2]
    rubric = label_scale(_spec("agent", "tool_routing"))
    assert not isinstance(rubric, str)
    assert rubric.categories == ("0", "1", "2", "3", "4", "5")
    assert rubric.problem(2.5) == "2.5 is not a whole number (whole numbers 0–5)"
    # Bands good 1.0, acceptable 0.98, blocker 0.97: four ordered categories.
    fabrication = label_scale(_spec("text", "fabrication_free_rate"))
    assert not isinstance(fabrication, str)
    assert fabrication.categories == ("blocker", "fail", "acceptable", "good")
    assert [fabrication.category(v) for v in (0.5, 0.975, 0.99, 1.0)] == [0, 1, 2, 3]
    # Two bands (good 1): two categories, unweighted.
    emotion = label_scale(_spec("text", "dominant_emotion_correctness"))
    assert not isinstance(emotion, str) and not emotion.weighted
    assert "no rating bands" in str(label_scale(_spec("text", "summary_score")))


def _labelled(task: str, labels: dict[str, object]) -> GoldenCase:
    return GoldenCase.model_validate({"id": "c", "task": task, "expected_outcome": {},
                                      "human_labels": labels})


def test_label_problems_name_the_metric_and_the_scale() -> None:
    specs = default_registry().metrics_for("text")
    problems = label_problems(_labelled("text", {
        "call_intent_match": 0.7, "fabrication_free_rate": 1.5, "faithfulness": 1,
        "summary_score": 0.5, "dominant_emotion_correctness": 1}), specs)
    assert problems[0] == ("human_labels.call_intent_match: 0.7 is not one of 0/0.5/1, the "
                           "scale of call_intent_match (0/0.5/1)")
    assert problems[1].startswith("human_labels.fabrication_free_rate: 1.5 is outside "
                                  "numbers 0–1")
    assert problems[2].startswith("human_labels.faithfulness: task 'text' has no metric "
                                  "'faithfulness' (known: call_intent_match,")
    assert problems[3].startswith("human_labels.summary_score: summary_score takes no label:")
    assert len(problems) == 4


def test_loader_names_file_case_and_metric_of_a_bad_label(tmp_path: Path) -> None:
    good = make_case("text", _text_expected()).model_dump(mode="json")
    bad_type = {**good, "id": "typed", "human_labels": {"call_intent_match": "yes"}}
    bad_bool = {**good, "id": "boolean", "human_labels": {"call_intent_match": True}}
    bad_key = {**good, "id": "keyed", "human_labels": {
        "call_intent_match": {"value": 1, "who": "me"}}}
    off_scale = {**good, "id": "off", "human_labels": {"call_intent_match": {"value": 2}}}
    path = tmp_path / "labels.json"
    import json

    path.write_text(json.dumps([bad_type, bad_bool, bad_key, off_scale]), encoding="utf-8")
    with pytest.raises(CaseFileError) as caught:
        load_case_file(path)
    problems = caught.value.problems
    assert str(path) in str(caught.value)
    assert problems[0] == ("case[0].human_labels.call_intent_match.value: Value error, a label "
                           "must be a number on the metric's scale, got str 'yes'")
    assert problems[1] == ("case[1].human_labels.call_intent_match.value: Value error, a label "
                           "must be a number on the metric's scale, got bool True")
    assert problems[2] == ("case[2].human_labels.call_intent_match.who: Extra inputs are not "
                           "permitted")
    assert problems[3] == ("case[3].human_labels.call_intent_match: 2 is outside 0/0.5/1, the "
                           "scale of call_intent_match (0/0.5/1)")


def test_a_label_with_labeler_and_note_loads_and_stays_out_of_dumps(tmp_path: Path) -> None:
    good = make_case("text", _text_expected()).model_dump(mode="json")
    path = tmp_path / "ok.json"
    import json

    path.write_text(json.dumps({**good, "human_labels": {
        "call_intent_match": {"value": 0.5, "labeler": "QA team", "note": "partly"},
        "fabrication_free_rate": 1}}), encoding="utf-8")
    [case] = load_case_file(path)
    assert case.human_labels["call_intent_match"].labeler == "QA team"
    assert case.human_labels["fabrication_free_rate"].value == 1.0
    # The judge's inputs and the cache keys are built from dumps: labels never reach them.
    assert "human_labels" not in case.model_dump(mode="json")


def _text_expected() -> dict[str, object]:
    return {"sentiment": [], "summary": {"call_purpose": "refund", "highlights": [],
                                         "call_extracted_info": {}}, "emotion": {}}


def _result(case_id: str, metrics: dict[str, MetricResult], model: str = "human",
            task: str = "text") -> TaskResult:
    return TaskResult(task=task, case_id=case_id, score=None, valid=True, blocked=False,
                      blockers=[], metrics=metrics, model=model)


def test_calibrate_pairs_labels_with_scores_and_counts_what_it_leaves_out() -> None:
    cases = [GoldenCase.model_validate({
        "id": f"c{i}", "task": "text", "expected_outcome": {},
        "human_labels": {"call_intent_match": label}})
        for i, label in enumerate([1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 0.0])]
    results = [
        _result("c0", {"call_intent_match": MetricResult(1.0)}),
        _result("c1", {"call_intent_match": MetricResult(0.5)}),
        _result("c2", {"call_intent_match": MetricResult(0.5)}),
        _result("c3", {"call_intent_match": MetricResult(1.0)}),
        _result("c4", {"call_intent_match": MetricResult.not_scored("no key word")}),
        _result("c5", {"call_intent_match": MetricResult(None, scored=False,
                                                         judge_error=True)}),
        # c6 has no result for the labelled model: another model's does not count.
        _result("c6", {"call_intent_match": MetricResult(0.0)}, model="other"),
    ]
    found = calibrate(results, cases, {"text": default_registry().metrics_for("text")},
                      "human")
    entry = found["call_intent_match"]
    assert entry["n"] == 4 and entry["labels"] == 7
    assert entry["left_out"] == {"not_scored": 1, "judge_error": 1, "code_error": 0,
                                 "not_evaluated": 1, "case_bar": 0}
    assert entry["not_evaluated_why"] == {"whose tests were not selected": 1}
    assert entry["pairs"] == [[1.0, 1.0], [0.0, 0.5], [0.5, 0.5], [1.0, 1.0]]
    assert entry["cases"] == ["c0", "c1", "c2", "c3"]
    assert entry["agreement"] == pytest.approx(0.75)
    assert entry["bias"] == pytest.approx(0.125)
    assert entry["confusion"] == [[0, 1, 0], [0, 1, 0], [0, 0, 2]]
    assert entry["kappa"] == pytest.approx(cohen_kappa_score([0, 1, 2, 2], [1, 1, 2, 2],
                                                             weights="linear"))
    assert entry["weights"] == "linear"


def test_labels_of_a_metric_the_case_rated_by_its_own_bar_are_left_out() -> None:
    # Before: a grounding case with hallucination_fail_above 0.2 had its 0.5 blocked by the
    # run, but calibration sorted it by the metric's default bands (acceptable), as the
    # people's 0.1: a disagreement the run showed counted as agreement, and the gate passed.
    cases = [GoldenCase.model_validate({
        "id": f"g{i}", "task": "grounding", "expected_outcome": {},
        "human_labels": {"hallucination": label}}) for i, label in enumerate([0.0, 0.1])]
    results = [
        _result("g0", {"hallucination": MetricResult(0.0)}, task="grounding"),
        _result("g1", {"hallucination": MetricResult(0.5, rating="blocker", blocker=True,
                                                     details={CASE_BAR: True})},
                task="grounding"),
    ]
    found = calibrate(results, cases, {"grounding": default_registry().metrics_for(
        "grounding")}, "human")
    entry = found["hallucination"]
    assert entry["n"] == 1 and entry["pairs"] == [[0.0, 0.0]]
    assert entry["left_out"]["case_bar"] == 1
    lines = calibration_lines(found, judge="heuristic", model="human", min_kappa=0.6)
    assert ("  hallucination: left out of n: 1 rated by the case's own bar (not the metric's "
            "bands) (of 2 labels)") in lines


def test_labels_of_a_metric_the_policy_left_unrated_are_counted_not_dropped() -> None:
    # Before: a policy that switched fabrication_free_rate off made its labels vanish, and a
    # calibration it failed read as a pass with no word of them.
    import dataclasses

    cases = [GoldenCase.model_validate({
        "id": f"c{i}", "task": "text", "expected_outcome": {},
        "human_labels": {"call_intent_match": 1.0, "fabrication_free_rate": 0.0}})
        for i in range(3)]
    results = [_result(f"c{i}", {"call_intent_match": MetricResult(1.0),
                                 "fabrication_free_rate": MetricResult(1.0)})
               for i in range(3)]
    specs = [dataclasses.replace(spec, bands=None, scale="0-1")
             if spec.id == "fabrication_free_rate" else spec
             for spec in default_registry().metrics_for("text")]
    found = calibrate(results, cases, {"text": specs}, "human")
    entry = found["fabrication_free_rate"]
    assert (entry["labels"], entry["n"], entry["kappa"]) == (3, 0, None)
    assert entry["left_out"]["not_rated"] == 3
    assert "no rating bands" in entry["not_rated"]
    lines = calibration_lines(found, judge="heuristic", model="human", min_kappa=0.6)
    assert ("  fabrication_free_rate: left out of n: 3 not rated (of 3 labels)" in lines)
    assert any(line.startswith("  fabrication_free_rate: not compared: ") for line in lines)


def test_a_metric_id_labelled_in_two_tasks_is_keyed_by_task() -> None:
    cases = [GoldenCase.model_validate({"id": f"{task}-1", "task": task, "expected_outcome": {},
                                        "human_labels": {"response_structure_compliance": 1}})
             for task in ("qa", "text")]
    results = [_result(f"{task}-1", {"response_structure_compliance": MetricResult(1.0)},
                       task=task) for task in ("qa", "text")]
    specs = {t: default_registry().metrics_for(t) for t in ("qa", "text")}
    assert sorted(calibrate(results, cases, specs, "human")) == [
        "qa.response_structure_compliance", "text.response_structure_compliance"]


def test_with_repeated_runs_the_first_run_is_compared_whatever_the_order() -> None:
    # Keyed by case alone, the last run read won: the same results in reverse order gave
    # a kappa of 1.0 instead of -0.67.
    labels = [1.0, 0.0, 0.5, 1.0, 0.0, 0.5]
    cases = [GoldenCase.model_validate({
        "id": f"c{i}", "task": "text", "expected_outcome": {},
        "human_labels": {"call_intent_match": label}}) for i, label in enumerate(labels)]
    results = []
    for run, shift in ((0, 0.0), (1, 0.0), (2, 0.5)):
        for i, label in enumerate(labels):
            result = _result(f"c{i}", {"call_intent_match": MetricResult(
                (label + shift) % 1.5)})
            result.run = run
            results.append(result)
    specs = {"text": default_registry().metrics_for("text")}
    forward = calibrate(results, cases, specs, "human")["call_intent_match"]
    backward = calibrate(list(reversed(results)), cases, specs, "human")["call_intent_match"]
    assert forward == backward
    assert forward["kappa"] == pytest.approx(1.0) and forward["n"] == 6


def test_a_kappa_exactly_at_the_bar_passes() -> None:
    # 3/5 computes as 0.5999999999999999: it failed a bar of 0.6 as "kappa 0.60 < 0.6".
    human, judge = [1, 0, 0, 1, 0, 1, 0, 2, 0, 2], [2, 2, 0, 1, 0, 2, 0, 2, 0, 2]
    kappa = cohen_kappa(human, judge, 3, weighted=True)
    assert kappa == pytest.approx(0.6) and kappa < 0.6
    assert verdict({"m": {"kappa": kappa, "n": 10}}, 0.6) == []
    assert verdict({"m": {"kappa": 0.599, "n": 10}}, 0.6) == [
        "m: kappa 0.599 < 0.6 on 10 pairs"]


def test_verdict_gates_on_kappa_and_on_an_empty_calibration() -> None:
    entries = {"a": {"n": 10, "kappa": 0.55}, "b": {"n": 8, "kappa": 0.9},
               "c": {"n": 0, "kappa": None}, "d": {"n": 3, "kappa": None}}
    assert verdict(entries, 0.5) == [
        "d: kappa undefined on 3 pairs (people and judge put every pair in the same "
        "category): add labelled items of other categories"]
    assert verdict(entries, 0.6)[0] == "a: kappa 0.55 < 0.6 on 10 pairs"
    # The default bar is 0.6: a metric at 0.6 passes, one below does not.
    assert verdict({"a": {"n": 4, "kappa": 0.6}}) == []
    assert verdict({"c": {"n": 0, "kappa": None}}, 0.0) == [
        "no labelled output was scored: nothing to calibrate (check the labelled model's "
        "outputs and that the judge scores these metrics)"]


def test_calibration_lines_show_each_metric_and_the_verdict() -> None:
    cases = [GoldenCase.model_validate({"id": f"c{i}", "task": "text", "expected_outcome": {},
                                        "human_labels": {"dominant_emotion_correctness": h}})
             for i, h in enumerate([1, 0, 1, 0])]
    results = [_result(f"c{i}", {"dominant_emotion_correctness": MetricResult(j)})
               for i, j in enumerate([1.0, 0.0, 1.0, 1.0])]
    found = calibrate(results, cases, {"text": default_registry().metrics_for("text")},
                      "human")
    lines = calibration_lines(found, judge="heuristic", model="human", min_kappa=0.6)
    # Observed 3/4, chance (2·1 + 2·3)/16 = 1/2: kappa 0.5, below 0.6.
    row = next(line for line in lines if line.startswith("dominant_emotion_correctness "))
    assert row.split() == ["dominant_emotion_correctness", "text", "4", "0", "0.75", "0.50",
                           "none", "0.58", "0.250"]
    assert lines[-1] == ("callqa calibration: FAIL — dominant_emotion_correctness: kappa 0.50 "
                         "< 0.6 on 4 pairs")
    assert "  dominant_emotion_correctness: confusion, rows people / columns judge [0 1]: " \
           "0: 1 1; 1: 0 2" in lines


EXAMPLE_SET = Path(__file__).parents[2] / "example_project" / "calibration"
SHARED_DATA = Path(__file__).parents[3] / "shared" / "data"


def test_the_example_calibration_set_loads_with_traceable_labels() -> None:
    from pytest_callqa.engine.loading import load_cases

    cases = load_cases(EXAMPLE_SET / "cases")
    labels = [(c.id, m, label) for c in cases for m, label in c.human_labels.items()]
    assert len(cases) == 100 and len(labels) == 140
    per_metric: dict[str, list[float]] = {}
    for _, metric, label in labels:
        per_metric.setdefault(metric, []).append(label.value)
    assert {m: (len(v), sorted(set(v))) for m, v in per_metric.items()} == {
        "call_intent_match": (40, [0.0, 0.5, 1.0]),
        "fabrication_free_rate": (40, [0.0, 1.0]),
        "sentence_meaning_accuracy": (60, [0.0, 1.0]),
    }
    assert all(label.labeler and label.note for _, _, label in labels)
    assert all((EXAMPLE_SET / "outputs" / "human" / f"{c.id}.json").is_file() for c in cases)


def test_the_committed_set_is_what_the_script_builds(tmp_path: Path) -> None:
    if not (SHARED_DATA / "dialogues.jsonl").is_file():
        pytest.skip(f"the shared data the set is built from is not at {SHARED_DATA}")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "build_calibration_set", Path(__file__).parents[2] / "tools" / "build_calibration_set.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.build(SHARED_DATA, tmp_path) == 140
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    for rel in built:
        assert (tmp_path / rel).read_bytes() == (EXAMPLE_SET / rel).read_bytes(), rel
    committed = sorted(p.relative_to(EXAMPLE_SET)
                       for folder in ("cases", "outputs", "licenses")
                       for p in (EXAMPLE_SET / folder).rglob("*") if p.is_file())
    assert built == committed


def test_bands_set_out_of_order_still_give_every_value_a_category() -> None:
    """A policy's blocker above its acceptable bar: no value is rated 'fail', so the scale has
    no such category; 0.95 (below the blocker 0.97) is blocker, 0.98 acceptable."""
    from pytest_callqa.engine.core.metrics import Bands, MetricSpec

    spec = MetricSpec(id="m", task="text", name="M", description="", scale="0-1",
                      threshold="", bands=Bands(good=1.0, acceptable=0.9, blocker=0.97))
    scale = label_scale(spec)
    assert not isinstance(scale, str)
    assert scale.categories == ("blocker", "acceptable", "good")
    assert [scale.category(v) for v in (0.95, 0.98, 1.0)] == [0, 1, 2]
    lower = MetricSpec(id="n", task="text", name="N", description="", scale="rate",
                       threshold="", bands=Bands(good=0.1, acceptable=0.3, blocker=0.2,
                                                 higher_is_better=False))
    odd = label_scale(lower)
    assert not isinstance(odd, str)
    assert odd.categories == ("blocker", "acceptable", "good")
    # 0.25 is above the blocker 0.2: rated blocker; 0.15 acceptable; 0.05 good.
    assert [odd.category(v) for v in (0.25, 0.15, 0.05)] == [0, 1, 2]


def _judged(judge: list[MetricResult]) -> dict[str, dict[str, object]]:
    """A calibration of call_intent_match: people 1, 0, 1, 0 against ``judge``."""
    cases = [GoldenCase.model_validate({"id": f"c{i}", "task": "text", "expected_outcome": {},
                                        "human_labels": {"call_intent_match": h}})
             for i, h in enumerate([1.0, 0.0, 1.0, 0.0])]
    results = [_result(f"c{i}", {"call_intent_match": m}) for i, m in enumerate(judge)]
    return calibrate(results, cases, {"text": default_registry().metrics_for("text")}, "human")


JUDGE_ERROR = MetricResult(value=None, scored=False, judge_error=True, reason="judge error")


def test_labels_left_out_for_judge_errors_make_the_calibration_incomplete() -> None:
    # Every label a judge error: it passed ("a metric the judge scored on none of its
    # labels ... not failed"), though the judge answered none of them.
    down = _judged([JUDGE_ERROR] * 4)
    assert verdict(down) == []
    assert incomplete(down) == [
        "call_intent_match: 4 of 4 labels left out for judge errors (the judge could not "
        "answer them): its agreement on them is unknown"]
    assert outcome(down) == "incomplete"
    lines = calibration_lines(down, judge="openai", model="human", min_kappa=0.6)
    assert lines[-2:] == [
        "callqa calibration: INCOMPLETE — call_intent_match: 4 of 4 labels left out for judge "
        "errors (the judge could not answer them): its agreement on them is unknown",
        "callqa calibration: incomplete — not a pass: judge errors left labels out; run it "
        "again once the judge answers"]
    # Perfect agreement on the labels it answered does not make up for the one it did not.
    one = _judged([MetricResult(1.0), MetricResult(0.0), MetricResult(1.0), JUDGE_ERROR])
    assert one["call_intent_match"]["kappa"] == pytest.approx(1.0)
    assert outcome(one) == "incomplete"
    assert not any(line.startswith("callqa calibration: pass") for line in calibration_lines(
        one, judge="openai", model="human", min_kappa=0.6))


def test_a_failing_metric_fails_the_calibration_whatever_else_is_unknown() -> None:
    found = _judged([MetricResult(0.0), MetricResult(1.0), MetricResult(0.0), JUDGE_ERROR])
    assert outcome(found) == "fail"
    lines = calibration_lines(found, judge="openai", model="human", min_kappa=0.6)
    assert any(line.startswith("callqa calibration: FAIL — call_intent_match: kappa")
               for line in lines)
    assert any(line.startswith("callqa calibration: INCOMPLETE — ") for line in lines)


def test_the_heuristic_judge_abstaining_is_not_a_judge_error() -> None:
    """Not scored is the judge's answer (it cannot estimate): left out, as documented, and
    the calibration passes on what it scored."""
    found = _judged([MetricResult(1.0), MetricResult(0.0), MetricResult(1.0),
                     MetricResult.not_scored("no shared key word")])
    assert incomplete(found) == [] and outcome(found) == "pass"
    # Every label not scored: nothing was compared, which fails as before.
    assert outcome(_judged([MetricResult.not_scored("no shared key word")] * 4)) == "fail"


RAISED = MetricResult.not_scored("custom metric raised ConnectionError: timed out",
                                 raised="ConnectionError")


def test_labels_a_metric_raised_on_make_the_calibration_incomplete() -> None:
    # They were counted "not scored", as if the judge had abstained, and the calibration
    # passed on the labels left.
    found = _judged([MetricResult(1.0), MetricResult(0.0), RAISED, RAISED])
    assert found["call_intent_match"]["left_out"] == {
        "not_scored": 0, "judge_error": 0, "code_error": 2, "not_evaluated": 0, "case_bar": 0}
    assert incomplete(found) == [
        "call_intent_match: 2 of 4 labels left out for metric code errors (the metric's code "
        "raised on them or returned no number): its agreement on them is unknown"]
    assert outcome(found) == "incomplete"
    lines = calibration_lines(found, judge="heuristic", model="human", min_kappa=0.6)
    assert lines[-1] == ("callqa calibration: incomplete — not a pass: metric code errors "
                         "left labels out; fix the metric's code and run it again")
    # Nothing compared because the code raised on every label: the tool's failure, not "no
    # labelled output was scored".
    assert verdict(_judged([RAISED] * 4)) == []
    # Returning no number (NaN, text, a truth value) is the same error of the code.
    returned = MetricResult.not_scored("custom metric returned nan, not a finite number",
                                       returned="nan, not a finite number")
    assert _judged([MetricResult(1.0), MetricResult(0.0), returned, returned])[
        "call_intent_match"]["left_out"]["code_error"] == 2
    both = _judged([MetricResult(1.0), MetricResult(0.0), RAISED, JUDGE_ERROR])
    assert calibration_lines(both, judge="openai", model="human", min_kappa=0.6)[-1] == (
        "callqa calibration: incomplete — not a pass: judge errors and metric code errors "
        "left labels out; run it again once the judge answers; fix the metric's code and "
        "run it again")


def test_labels_whose_output_was_not_evaluated_make_the_calibration_incomplete() -> None:
    # Before: they were only counted: a run over one labelled output in four passed on it.
    cases = [GoldenCase.model_validate({"id": f"c{i}", "task": "text", "expected_outcome": {},
                                        "human_labels": {"call_intent_match": h}})
             for i, h in enumerate([1.0, 0.0, 1.0, 0.0])]
    results = [_result("c0", {"call_intent_match": MetricResult(1.0)}),
               _result("c1", {"call_intent_match": MetricResult(0.0)})]
    found = calibrate(results, cases, {"text": default_registry().metrics_for("text")},
                      "human", not_run={"c2": "without an output"})
    assert found["call_intent_match"]["not_evaluated_why"] == {
        "whose tests were not selected": 1, "without an output": 1}
    assert verdict(found) == []
    assert incomplete(found) == [
        "call_intent_match: 2 of 4 labels left out for labelled outputs not evaluated (1 whose "
        "tests were not selected, 1 without an output): its agreement on them is unknown"]
    assert outcome(found) == "incomplete"
    assert calibration_lines(found, judge="heuristic", model="human", min_kappa=0.6)[-1] == (
        "callqa calibration: incomplete — not a pass: labelled outputs not evaluated left "
        "labels out; run every labelled case, each with its labelled output")
    # No output evaluated at all (usually the wrong labelled model) still fails.
    assert outcome(calibrate([], cases, {"text": default_registry().metrics_for("text")},
                             "human")) == "fail"
