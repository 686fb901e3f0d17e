"""--callqa-calibrate end to end: the per-metric table after the scorecard, the report's
``calibration`` section, the kappa gate in both directions (option and ini key), labels of
another model, a bad label, and the example project's calibration set."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE_SET = Path(__file__).resolve().parents[2] / "example_project" / "calibration"
PYPROJECT = """
[tool.pytest.ini_options]
callqa_cases = "cases"
callqa_outputs = "outputs"
callqa_judge = "heuristic"
callqa_embeddings = "tfidf"
callqa_benchmarks = false
callqa_report = "report.json"
"""
SCORED = "def test_scored(callqa_result):\n    assert callqa_result.task == 'text'\n"
# (case id, expected purpose, the labelled output's purpose, what people said). The heuristic
# judge answers 1 (same words), 0.5 (some key words), or not scored (none of them).
ITEMS = [
    ("a", "Check an account balance.", "Check an account balance.", 1.0),
    ("b", "Transfer money between accounts.", "I want to transfer money", 0.5),
    ("c", "Replace a lost debit card.", "Replace a lost debit card.", 0.5),
    ("d", "Schedule an appointment.", "Ask about branch hours", 0.0),
    ("e", "Get the opening hours of the branch.", "what are the branch hours", 0.0),
]


def _summary(purpose: str) -> dict[str, Any]:
    return {"sentiment": [], "emotion": {},
            "summary": {"call_purpose": purpose, "highlights": [], "call_extracted_info": {}}}


@pytest.fixture
def labelled(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".toml", pyproject=PYPROJECT)
    cases = pytester.path / "cases"
    cases.mkdir()
    for case_id, expected, given, label in ITEMS:
        case = {"id": case_id, "task": "text",
                "transcript": [{"speaker": "customer", "text": "I need some help today."}],
                "expected_outcome": _summary(expected),
                "human_labels": {"call_intent_match": {"value": label, "labeler": "QA lead"}}}
        (cases / f"{case_id}.json").write_text(json.dumps(case), encoding="utf-8")
        out = pytester.path / "outputs" / "human" / f"{case_id}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(_summary(given)), encoding="utf-8")
    pytester.makepyfile(test_eval=SCORED)
    return pytester


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "report.json").read_text("utf-8"))
    return data


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_calibration_table_report_and_a_passing_gate(labelled: pytest.Pytester,
                                                     xdist: list[str]) -> None:
    """Pairs (people, judge): a (1, 1), b (0.5, 0.5), c (0.5, 1), e (0, 0.5); d not scored.
    Categories 2 2, 1 1, 1 2, 0 1: agreement 2/4. Linear kappa: weighted disagreement 2;
    marginals people 1 2 1, judge 0 2 2, chance (1·2·1 + 1·2·2 + 2·2·1 + 1·2·1)/4 = 3;
    kappa 1 − 2/3. Bias (0 + 0 + 0.5 + 0.5)/4 = 0.25. Spearman: ranks 4 2.5 2.5 1 against
    3.5 1.5 3.5 1.5, rho = 3 / √(4.5 · 4) = 0.707."""
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate",
                                "--callqa-min-kappa", "0.3", *xdist)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*= callqa calibration =*",
        "callqa calibration: judge heuristic * against human_labels on the outputs of "
        "'human' (pass: kappa >= 0.3)",
        "call_intent_match * text * 4 * 1 * 0.50 * 0.33 * linear * 0.71 * 0.250",
        "  call_intent_match: left out of n: 1 not scored (of 5 labels)",
        "  call_intent_match: confusion, rows people / columns judge [0 0.5 1]: "
        "0: 0 1 0; 0.5: 0 1 1; 1: 0 0 1",
        "callqa calibration: pass — every metric the judge scored reaches kappa >= 0.3",
    ])
    report = _report(labelled)
    entry = report["calibration"]["call_intent_match"]
    assert entry["n"] == 4 and entry["labels"] == 5
    assert entry["pairs"] == [[1.0, 1.0], [0.5, 0.5], [0.5, 1.0], [0.0, 0.5]]
    assert entry["cases"] == ["a", "b", "c", "e"]
    assert entry["agreement"] == pytest.approx(0.5)
    assert entry["kappa"] == pytest.approx(1 / 3)
    assert entry["spearman"] == pytest.approx(3 / 18 ** 0.5)
    assert entry["bias"] == pytest.approx(0.25)
    assert entry["left_out"] == {"not_scored": 1, "judge_error": 0, "code_error": 0,
                                 "not_evaluated": 0, "case_bar": 0}
    assert report["run"]["calibration"] == {"model": "human", "min_kappa": 0.3,
                                            "verdict": "pass", "problems": [],
                                            "incomplete": [], "unread_case_files": []}


def test_kappa_below_the_ini_minimum_fails_the_run(labelled: pytest.Pytester) -> None:
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate",
                                "-o", "callqa_min_kappa=0.4")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*5 passed*"])
    assert ("callqa calibration: FAIL — call_intent_match: kappa 0.33 < 0.4 on 4 pairs"
            in result.stdout.lines)
    assert _report(labelled)["run"]["calibration"]["verdict"] == "fail"


def test_without_calibrate_nothing_is_compared(labelled: pytest.Pytester) -> None:
    result = labelled.runpytest("-p", "no:cacheprovider", "-o", "callqa_min_kappa=0.99")
    assert result.ret == 0
    assert "callqa calibration" not in result.stdout.str()
    assert "calibration" not in _report(labelled)


def test_labels_of_a_model_the_run_did_not_score_fail_the_gate(
        labelled: pytest.Pytester) -> None:
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate",
                                "--callqa-calibration-model", "northwind-large")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "  call_intent_match: left out of n: 5 not evaluated (of 5 labels)",
        "callqa calibration: FAIL — no labelled output was scored: nothing to calibrate*"])


def test_a_bad_label_is_an_error_naming_file_case_and_metric(
        labelled: pytest.Pytester) -> None:
    path = labelled.path / "cases" / "a.json"
    case = json.loads(path.read_text(encoding="utf-8"))
    case["human_labels"] = {"call_intent_match": 0.7, "faithfulness": 1}
    path.write_text(json.dumps(case), encoding="utf-8")
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate",
                                "--callqa-min-kappa", "0")
    result.stdout.fnmatch_lines([
        "*human_labels.call_intent_match: 0.7 is not one of 0/0.5/1, the scale of "
        "call_intent_match (0/0.5/1)*",
        "*human_labels.faithfulness: task 'text' has no metric 'faithfulness'*",
    ])
    result.assert_outcomes(passed=4, errors=1)
    assert _report(labelled)["calibration"]["call_intent_match"]["labels"] == 4


@pytest.mark.parametrize("value", ["1.5", "much"])
def test_a_min_kappa_that_is_no_kappa_is_a_usage_error(labelled: pytest.Pytester,
                                                       value: str) -> None:
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-min-kappa", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "callqa_min_kappa" in result.stderr.str() or "--callqa-min-kappa" in \
        result.stderr.str()


@pytest.fixture(scope="module")
def example_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The call-intent half of the set (40 cases, 80 labels): the heuristic judge needs no
    embeddings for these metrics, so a run takes seconds. The translation half is removed,
    not deselected: labelled cases a run leaves out make its calibration incomplete."""
    root = tmp_path_factory.mktemp("calibration")
    shutil.copytree(EXAMPLE_SET, root, dirs_exist_ok=True)
    (root / "cases" / "translation-hi.yaml").unlink()
    return root


def _run_example(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-q",
         "-p", "no:cacheprovider", "--callqa-embeddings=tfidf", "--callqa-calibrate", *args],
        cwd=root, capture_output=True, text=True, timeout=300)


def test_the_example_calibration_set_gates_on_kappa(example_set: Path) -> None:
    """The heuristic judge reaches kappa 0.19 on call intent (19 of 40 labels not scored)
    and 1.00 on fabrication: the default minimum 0.6 fails the run, 0.15 passes it."""
    failed = _run_example(example_set)
    assert failed.returncode == 1, failed.stdout[-3000:]
    lines = failed.stdout.splitlines()
    intent = next(line for line in lines if line.startswith("call_intent_match "))
    assert intent.split() == ["call_intent_match", "text", "21", "19", "0.57", "0.19",
                              "linear", "0.33", "-0.167"]
    fabrication = next(line for line in lines if line.startswith("fabrication_free_rate "))
    assert fabrication.split()[2:6] == ["40", "0", "1.00", "1.00"]
    assert "callqa calibration: FAIL — call_intent_match: kappa 0.19 < 0.6 on 21 pairs" in lines
    assert "40 passed" in failed.stdout
    passed = _run_example(example_set, "--callqa-min-kappa=0.15")
    assert passed.returncode == 0, passed.stdout[-3000:]
    assert ("callqa calibration: pass — every metric the judge scored reaches kappa >= 0.15"
            in passed.stdout.splitlines())


def test_the_llm_judge_is_calibrated_the_same_way(
        labelled: pytest.Pytester, fake: Any, monkeypatch: pytest.MonkeyPatch,
        _openai_imported: None) -> None:
    """The fake LLM judge answers the middle of every scale (0.5 on call intent) and garbage
    for case e, whose label is left out as a judge error. Pairs (1, .5), (.5, .5), (.5, .5),
    (0, .5): categories people 2 1 1 0, judge 1 1 1 1; weighted disagreement 2, chance
    (1·4·1 + 1·4·1)/4 = 2, so kappa 1 − 2/2 = 0; agreement 2/4; bias 0; Spearman undefined
    (the judge is constant). Kappa 0 < 0.6 fails the run."""
    def fault(index: int, body: dict[str, Any]) -> str | None:
        return "garbage" if "what are the branch hours" in body["messages"][1]["content"] \
            else None

    server = fake(fault_for=fault)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-calibration-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (labelled.path / "pyproject.toml").write_text(
        PYPROJECT.replace('"heuristic"', '"openai"')
        + f'callqa_judge_base_url = "{server.base_url}"\n',
        encoding="utf-8")
    labelled.makepyfile(test_eval="def test_intent(callqa_result):\n"
                                  "    assert callqa_result.metric('call_intent_match')\n")
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines([
        "call_intent_match * text * 4 * 1 * 0.50 * 0.00 * linear * — * 0.000",
        "  call_intent_match: left out of n: 1 judge error (of 5 labels)",
        "callqa calibration: FAIL — call_intent_match: kappa 0.00 < 0.6 on 4 pairs",
    ])
    entry = _report(labelled)["calibration"]["call_intent_match"]
    assert entry["pairs"] == [[1.0, 0.5], [0.5, 0.5], [0.5, 0.5], [0.0, 0.5]]
    assert entry["kappa"] == pytest.approx(0.0) and entry["spearman"] is None
    assert entry["left_out"] == {"not_scored": 0, "judge_error": 1, "code_error": 0,
                                 "not_evaluated": 0, "case_bar": 0}


def _judge_down(labelled: pytest.Pytester, fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM judge answers no call usably: every label is left out as a judge error."""
    server = fake(fault_for=lambda _index, _body: "garbage")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-calibration-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (labelled.path / "pyproject.toml").write_text(
        PYPROJECT.replace('"heuristic"', '"openai"')
        + f'callqa_judge_base_url = "{server.base_url}"\n', encoding="utf-8")


def test_a_calibration_the_judge_could_not_answer_is_incomplete_not_a_pass(
        labelled: pytest.Pytester, fake: Any, monkeypatch: pytest.MonkeyPatch,
        _openai_imported: None) -> None:
    # It printed "callqa calibration: pass" with n 0 and every label a judge error.
    _judge_down(labelled, fake, monkeypatch)
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate")
    result.assert_outcomes(passed=5)
    # Every test passed and the calibration gates the run: it exited 0, as a pass.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        "call_intent_match * text * 0 * 5 * — * — * linear * — * —",
        "  call_intent_match: left out of n: 5 judge error (of 5 labels)",
        "callqa calibration: INCOMPLETE — call_intent_match: 5 of 5 labels left out for judge "
        "errors (the judge could not answer them): its agreement on them is unknown",
        "callqa calibration: incomplete — not a pass: judge errors left labels out; run it "
        "again once the judge answers",
    ])
    assert "callqa calibration: pass" not in result.stdout.str()
    assert "FAIL" not in result.stdout.str()
    assert _report(labelled)["run"]["calibration"] == {
        "model": "human", "min_kappa": 0.6, "verdict": "incomplete", "problems": [],
        "incomplete": ["call_intent_match: 5 of 5 labels left out for judge errors (the judge "
                       "could not answer them): its agreement on them is unknown"],
        "unread_case_files": []}


PROJECT_METRIC = """
import pytest
from pytest_callqa.engine.core.metrics import Bands, MetricSpec


@pytest.hookimpl(optionalhook=True)
def pytest_callqa_register_metrics(registry, config):
    def mentions_purpose(case, output, result):
        return 1.0 if output["summary"]["call_purpose"] else 0.0

    registry.register_metric(MetricSpec(
        id="states_purpose", task="text", name="States Purpose", description="a purpose given",
        scale="0/1", threshold="= 1", bands=Bands(good=1.0)), mentions_purpose)
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_labels_of_a_projects_own_metric_are_calibrated(labelled: pytest.Pytester,
                                                        xdist: list[str]) -> None:
    # Before: every case file labelling the project's metric was refused at load ("task
    # 'text' has no metric 'states_purpose'"), and the calibration found nothing to compare.
    labelled.makeconftest(PROJECT_METRIC)
    for case_id, *_ in ITEMS:
        path = labelled.path / "cases" / f"{case_id}.json"
        case = json.loads(path.read_text(encoding="utf-8"))
        case["human_labels"]["states_purpose"] = {"value": 1, "labeler": "QA lead"}
        path.write_text(json.dumps(case), encoding="utf-8")
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate", *xdist)
    assert "has no metric" not in result.stdout.str()
    entry = _report(labelled)["calibration"]["states_purpose"]
    assert entry["labels"] == 5 and entry["agreement"] == 1.0


FAILING_METRIC = """
import pytest
from pytest_callqa.engine.core.metrics import Bands, MetricSpec


@pytest.hookimpl(optionalhook=True)
def pytest_callqa_register_metrics(registry, config):
    def mentions_account(case, output, result):
        if case.id in ("c", "d", "e"):
            FAILING
        return 1.0 if "account" in output["summary"]["call_purpose"] else 0.0

    registry.register_metric(MetricSpec(
        id="mentions_account", task="text", name="Mentions Account",
        description="the purpose names an account", scale="0/1", threshold="= 1",
        bands=Bands(good=1.0)), mentions_account)
"""


@pytest.mark.parametrize("failing", [
    'raise ConnectionError("checker service timed out")',
    # Returned rather than raised, the same bug of the metric's code was counted "not
    # scored" (the judge abstaining), and the calibration passed on the two labels left.
    'return float("nan")', 'return "n/a"', "return True",
], ids=["raises", "nan", "text", "bool"])
def test_labels_a_projects_metric_failed_on_make_the_calibration_incomplete(
        labelled: pytest.Pytester, failing: str) -> None:
    # Before: the three labels were counted "not scored", as if the judge had abstained, and
    # the calibration passed on the two left (exit 0, verdict "pass").
    labelled.makeconftest(FAILING_METRIC.replace("FAILING", failing))
    for case_id, *_ in ITEMS:
        path = labelled.path / "cases" / f"{case_id}.json"
        case = json.loads(path.read_text(encoding="utf-8"))
        case["human_labels"] = {"mentions_account": 1 if case_id == "a" else 0}
        path.write_text(json.dumps(case), encoding="utf-8")
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate")
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        "  mentions_account: left out of n: 3 code error (of 5 labels)",
        "callqa calibration: INCOMPLETE — mentions_account: 3 of 5 labels left out for metric "
        "code errors (the metric's code raised on them or returned no number): its agreement "
        "on them is unknown",
        "callqa calibration: incomplete — not a pass: metric code errors left labels out; fix "
        "the metric's code and run it again",
    ])
    report = _report(labelled)
    assert report["calibration"]["mentions_account"]["left_out"] == {
        "not_scored": 0, "judge_error": 0, "code_error": 3, "not_evaluated": 0, "case_bar": 0}
    assert report["run"]["calibration"]["verdict"] == "incomplete"


def test_labelled_outputs_the_run_did_not_evaluate_make_the_calibration_incomplete(
        labelled: pytest.Pytester) -> None:
    # Before: with d's output missing and c deselected, the calibration passed on the three
    # labels left ("pass — every metric the judge scored reaches kappa >= 0.3", exit 0),
    # though a calibration is one run over every labelled case.
    (labelled.path / "outputs" / "human" / "d.json").unlink()
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate",
                                "--callqa-min-kappa", "0.3", "-k", "not human-c")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        "  call_intent_match: left out of n: 2 not evaluated (of 5 labels)",
        "callqa calibration: INCOMPLETE — call_intent_match: 2 of 5 labels left out for "
        "labelled outputs not evaluated (1 whose tests were not selected, 1 without an "
        "output): its agreement on them is unknown",
        "callqa calibration: incomplete — not a pass: labelled outputs not evaluated left "
        "labels out; run every labelled case, each with its labelled output",
    ])
    assert "callqa calibration: pass" not in result.stdout.str()
    report = _report(labelled)
    entry = report["calibration"]["call_intent_match"]
    assert (entry["n"], entry["left_out"]["not_evaluated"]) == (3, 2)
    assert entry["not_evaluated_why"] == {"whose tests were not selected": 1,
                                          "without an output": 1}
    assert report["run"]["calibration"]["verdict"] == "incomplete"


def test_a_case_file_the_run_could_not_read_makes_the_calibration_incomplete(
        labelled: pytest.Pytester) -> None:
    # Before: with e's case file cut short, the four labels left passed ("pass — every metric
    # the judge scored reaches kappa >= 0.3"), the report's verdict "pass" — though the file
    # may have held labels (it did), and no report says which cases it held.
    case_file = labelled.path / "cases" / "e.json"
    case_file.write_text(case_file.read_text("utf-8")[:-5], encoding="utf-8")
    result = labelled.runpytest("-p", "no:cacheprovider", "--callqa-calibrate",
                                "--callqa-min-kappa", "0.3")
    result.stdout.fnmatch_lines([
        "callqa calibration: INCOMPLETE — 1 case file could not be read (cases/e.json): the "
        "labels it may hold were not compared",
        "callqa calibration: incomplete — not a pass: case files that could not be read left "
        "labels out; fix the case files the run names",
    ])
    assert "callqa calibration: pass" not in result.stdout.str()
    decided = _report(labelled)["run"]["calibration"]
    assert (decided["verdict"], decided["unread_case_files"]) == ("incomplete", ["cases/e.json"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_labels_a_run_rated_by_the_case_s_own_bar_are_left_out(
        pytester: pytest.Pytester, xdist: list[str]) -> None:
    # The engine marks such a result (details.case_bar), but the results the scorecard
    # reads kept no such detail: a hallucination the case's own bar blocked was sorted by
    # the metric's bands and compared with the people's label as if rated by them.
    pytester.makefile(".toml", pyproject=PYPROJECT)
    turns = [{"speaker": "agent", "text": "Overnight shipping is 39.99 for items under 5 lbs."}]
    for case_id, label in (("g0", 0.0), ("g1", 1.0)):
        case = {"id": case_id, "task": "grounding", "transcript": turns,
                "config": {"query": "How much is overnight shipping?",
                           "hallucination_fail_above": 0.1},
                "expected_outcome": {"answer": "Overnight shipping is 39.99."},
                "human_labels": {"hallucination": label}}
        pytester.makefile(".json", **{f"cases/{case_id}": json.dumps(case)})
        pytester.makefile(".json", **{f"outputs/human/{case_id}": json.dumps(
            {"answer": "Overnight shipping is $89.99 and free over $200."})})
    pytester.makepyfile(test_eval="def test_scored(callqa_result):\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider", "--callqa-calibrate", *xdist)
    entry = _report(pytester)["calibration"]["hallucination"]
    assert entry["n"] == 0 and entry["labels"] == 2
    assert entry["left_out"]["case_bar"] == 2
