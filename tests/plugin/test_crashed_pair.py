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
