"""The pair an xdist worker died evaluating, told from the test's id when the model name or
the case id holds what also separates a node id's parts (``::``) or a test's parameters
(``-``)."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from pytest_callqa.gather import ResultsGatherer

from .conftest import QA_CASE, MiniProject
from .test_interop import NOTES_CRASH_REPORTS

# beta's billing::qa-refund dies with its worker.
CRASHING_SUITE = """
import os

def test_scored(callqa_result):
    if callqa_result.model == "beta" and callqa_result.case_id == "billing::qa-refund":
        os._exit(1)
"""


def test_a_worker_that_dies_on_a_case_id_with_colons_leaves_that_pair_not_evaluated(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before, the id was cut at the case id's "::": no pair was found, and the crash stayed
    # a plain failure, as if beta had failed the case, with nothing in not_evaluated.
    case = copy.deepcopy(QA_CASE)
    case["id"] = "billing::qa-refund"
    project.write_case(case, name="billing-qa-refund.json")
    for model in ("alpha", "beta"):
        project.write_output(model, case["id"], case["expected_outcome"])
    project.write_tests(CRASHING_SUITE)
    pytester.makeconftest(NOTES_CRASH_REPORTS)
    result = pytester.runpytest("-n", "2", "--callqa-report=report.json")
    result.stdout.fnmatch_lines(["*test errors, not evaluated: beta: billing::qa-refund*"])
    [entry] = project.report()["not_evaluated"]
    assert (entry["model"], entry["case_id"], entry["kind"]) == (
        "beta", "billing::qa-refund", "test_error")
    crashed = (project.root / "crashed.txt").read_text(encoding="utf-8").split()
    assert crashed == ["test_eval.py::test_scored[beta-billing::qa-refund]"]


def _gatherer(models: list[str], case_ids: list[str]) -> ResultsGatherer:
    cases = [SimpleNamespace(id=case_id, task="qa") for case_id in case_ids]
    state = SimpleNamespace(
        summary=SimpleNamespace(configured_models=lambda: models),
        catalog=SimpleNamespace(files=lambda: SimpleNamespace(cases=cases)))
    return ResultsGatherer(state)  # type: ignore[arg-type]


def _pair(gatherer: ResultsGatherer, nodeid: str) -> tuple[str, str] | None:
    payload = gatherer._crashed_pair(nodeid, "crashed")
    return None if payload is None else (payload["error"]["model"],
                                         payload["error"]["case_id"])


def test_a_crashed_tests_pair_is_read_whole_when_its_names_hold_colons() -> None:
    gatherer = _gatherer(["ollama::llama3", "beta"], ["refund", "billing::refund"])
    assert _pair(gatherer, "t.py::test[beta-billing::refund]") == ("beta", "billing::refund")
    assert _pair(gatherer, "t.py::TestX::test[ollama::llama3-refund]") == (
        "ollama::llama3", "refund")
    assert _pair(gatherer, "t.py::test[ollama::llama3-billing::refund-1]") == (
        "ollama::llama3", "billing::refund")


def test_a_crashed_tests_pair_is_read_under_the_name_pytest_escaped() -> None:
    # pytest writes a model name that is not ASCII escaped into the test's id (unless its
    # ini option keeps ids as they are): looked for as configured alone, it was never found.
    gatherer = _gatherer(["modèle", "beta"], ["refund"])
    assert _pair(gatherer, "t.py::test[mod\\xe8le-refund]") == ("modèle", "refund")
    assert _pair(gatherer, "t.py::test[modèle-refund]") == ("modèle", "refund")


def test_a_crashed_test_pytest_numbered_blames_no_pair() -> None:
    # (gpt, 4-x) and (gpt-4, x) both read "gpt-4-x": pytest names their tests "gpt-4-x0" and
    # "gpt-4-x1". Before, "gpt-4" was read off the first as the pair (gpt, 4), another test's.
    gatherer = _gatherer(["gpt", "gpt-4"], ["4", "4-x", "x"])
    assert _pair(gatherer, "t.py::test[gpt-4-x0]") is None
    assert _pair(gatherer, "t.py::test[gpt-4-x1-other]") is None
    # Names that hold "-" (and case ids that end with a number) but no id two pairs share
    # are read as before.
    assert _pair(_gatherer(["gpt-4o", "gpt"], ["q-1", "q-10"]),
                 "t.py::test[gpt-4o-q-10]") == ("gpt-4o", "q-10")


def test_a_crashed_tests_pair_is_its_whole_id_when_a_shorter_case_id_is_part_of_it() -> None:
    # "beta-qa-refund-b" holds (beta, qa-refund) too: two pairs, so before, no pair was
    # blamed, the crash read as the model's failure and the pair vanished from the report.
    gatherer = _gatherer(["alpha", "beta"], ["qa-refund", "qa-refund-b"])
    assert _pair(gatherer, "t.py::test[beta-qa-refund-b]") == ("beta", "qa-refund-b")
    assert _pair(gatherer, "t.py::test[beta-qa-refund]") == ("beta", "qa-refund")
    # Beside other parameters the id is read as before: two pairs, neither told apart.
    assert _pair(gatherer, "t.py::test[beta-qa-refund-b-x]") is None


SETUP_ERROR_SUITE = """
import pytest

@pytest.fixture
def crm(callqa_model):
    if callqa_model == "beta":
        raise ConnectionError("CRM sandbox down")
    return object()

def test_scored(crm, callqa_result):
    assert callqa_result.valid
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_test_that_errors_in_setup_before_its_result_leaves_its_pair_not_evaluated(
    project: MiniProject, pytester: pytest.Pytester, workers: list[str]
) -> None:
    # Before: beta's tests errored in a project fixture before callqa_result ran, sent no
    # payload, and beta vanished from the scorecard and the report without a word.
    project.write_tests(SETUP_ERROR_SUITE)
    result = pytester.runpytest("--callqa-report=report.json", *workers)
    cases = sorted(project.cases)
    result.assert_outcomes(passed=len(cases), errors=len(cases))
    result.stdout.fnmatch_lines([f"*test errors, not evaluated: beta: {', '.join(cases)}*"])
    entries = project.report()["not_evaluated"]
    assert sorted((e["model"], e["case_id"], e["kind"]) for e in entries) == [
        ("beta", case_id, "test_error") for case_id in cases]
    assert all(e["reason"] == "ConnectionError raised in the test's setup (its message is "
                              "in the test's error)" for e in entries)


def test_a_run_xdist_stopped_after_a_crashed_worker_says_its_scorecard_is_partial(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: with worker restarts disabled, the tests after the crash never ran, yet
    # run.stopped_early was null and the header did not say the scorecard was partial.
    project.write_tests(CRASHING_SUITE.replace("billing::qa-refund", "qa-refund")
                        + "\ndef test_after(callqa_result):\n    pass\n")
    # syrupy warns that a worker sent no snapshot report, which this suite's warning filter
    # would make an error of its own.
    result = pytester.runpytest("-n", "2", "--max-worker-restart", "0", "-p", "no:randomly",
                                "-p", "no:syrupy", "--callqa-report=report.json")
    stopped = project.report()["run"]["stopped_early"]
    assert stopped == "worker gw0 crashed and worker restarting disabled" or \
        stopped == "worker gw1 crashed and worker restarting disabled"
    result.stdout.fnmatch_lines(["run stopped early (worker gw? crashed and worker restarting "
                                 "disabled): the scorecard holds only the results of the "
                                 "tests that ran before it stopped"])


def test_a_pair_whose_test_errored_leaves_its_models_rank_and_blocker_unknown(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # One of beta's pairs errored: computed from the pairs left, beta read "no blocker" and
    # took a rank, though the errored case might have been blocked and its score is unknown.
    first = sorted(project.cases)[0]
    project.write_tests(SETUP_ERROR_SUITE.replace(
        'if callqa_model == "beta":',
        f'if callqa_model == "beta" and request.node.callspec.id.endswith("{first}"):').replace(
        "def crm(callqa_model):", "def crm(callqa_model, request):"))
    result = pytester.runpytest("--callqa-report=report.json")
    result.assert_outcomes(passed=2 * len(project.cases) - 1, errors=1)
    beta = project.report()["models"]["beta"]
    task = project.cases[first]["task"]
    assert (beta["final_score_a"], beta["cost_adjusted_rank"]) == (None, None)
    assert task in beta["incomplete_tasks"]
    result.stdout.fnmatch_lines([
        f"E beta: final scores unknown: a test errored in {task}, benchmarks (a failure of the "
        "tool, not a model failure; not renormalised around it)"])
    result.stdout.fnmatch_lines([
        f"*not ranked, what it would be ranked on being unknown — beta: final score A unknown "
        f"(a test errored in {task}, benchmarks)*"])
