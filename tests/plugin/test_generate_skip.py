"""A project's ``pytest_callqa_generate`` that skips (or xfails) one (model, case) pair while
the outputs are produced in a batch: the word is that pair's alone, and every other pair of
the batch is produced, scored and listed as usual."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from .conftest import CASES, LLMProject, MiniProject

REASON = "no key for beta's endpoint"
# Every call is noted, so a pair asked for twice shows.
STOPS_FOR_BETA_QA = """
import pytest

def pytest_callqa_generate(model, case, config):
    with open("generated.txt", "a", encoding="utf-8") as notes:
        notes.write(f"{{model}}-{{case.id}}\\n")
    if (model, case.id) == ("beta", "qa-refund"):
        pytest.{word}({reason!r})
    return None  # the recorded output
"""
# One test a pair: a pair whose test is skipped is not scored at all.
ONE_TEST_A_PAIR = """
def test_scored(callqa_result):
    pass
"""
PAIRS = {(model, case_id) for model in ("alpha", "beta") for case_id in CASES}
STOPPED = ("beta", "qa-refund")


def junit_outcomes(project: MiniProject) -> dict[str, tuple[str, str, str] | None]:
    """Each test's id in the JUnit file: None when it passed, else its outcome element's
    (tag, type, message)."""
    outcomes: dict[str, tuple[str, str, str] | None] = {}
    for case in ET.parse(project.root / "junit.xml").iter("testcase"):
        outcome = next((e for e in case if e.tag in ("skipped", "error", "failure")), None)
        outcomes[case.get("name", "")] = None if outcome is None else (
            outcome.tag, outcome.get("type", ""), outcome.get("message", ""))
    return outcomes


def scored_pairs(report: dict[str, object]) -> set[tuple[str, str]]:
    cases = report["cases"]
    assert isinstance(cases, list)
    return {(c["model"], c["case_id"]) for c in cases}


@pytest.mark.parametrize("word", ["skip", "xfail"])
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_pair_the_generate_hook_skips_is_skipped_alone(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str],
        word: str) -> None:
    # Before, in one process: the first test's batch of outputs reached beta's qa-refund,
    # whose skip stopped the batch and skipped that first test (alpha's entity-transfer)
    # with beta's reason; alpha's entity-transfer was never scored, and beta's qa-refund
    # was asked for again by its own test (6 passed, 2 skipped, 6 outputs scored). An xdist
    # worker produces the heuristic judge's pairs one by one, each in its own test: right
    # before too, and kept so.
    pytester.makeconftest(STOPS_FOR_BETA_QA.format(word=word, reason=REASON))
    project.write_tests(ONE_TEST_A_PAIR)
    result = pytester.runpytest("--callqa-report=report.json", "--junitxml=junit.xml",
                                *workers)
    assert junit_outcomes(project) == {
        f"test_scored[{model}-{case_id}]": None for model, case_id in PAIRS
    } | {"test_scored[beta-qa-refund]": ("skipped", f"pytest.{word}", REASON)}
    result.stdout.fnmatch_lines(["results: 7 outputs scored (2 models, 4 cases)"])
    report = project.report()
    assert scored_pairs(report) == PAIRS - {STOPPED}
    assert report["not_evaluated"] == []  # a skip is the project's word, no error
    generated = (project.root / "generated.txt").read_text(encoding="utf-8").split()
    assert Counter(generated) == {f"{model}-{case_id}": 1 for model, case_id in PAIRS}


INTERRUPTED = ("callqa: the evaluation of model 'beta' on case 'qa-refund' was interrupted "
               f"(Failed: {REASON})")


@pytest.mark.parametrize(("word", "workers", "outcome", "not_evaluated"), [
    ("skip", [], ("skipped", "pytest.skip", REASON), []),
    ("skip", ["-n", "2"], ("skipped", "pytest.skip", REASON), []),
    # What a hook raises for a pair before the first test can interrupt no test: the pair's
    # error alone. (Under xdist a pair of the other worker's share may be asked for in a
    # test's batch, where pytest.fail is that test's interruption, as a time limit is.)
    ("fail", [], ("error", "", f'failed on setup with "Failed: {INTERRUPTED}"'),
     [(*STOPPED, INTERRUPTED)]),
], ids=["skip-one-process", "skip-xdist", "fail-one-process"])
def test_a_pair_the_generate_hook_stops_before_the_first_test_is_its_own_outcome(
        llm: LLMProject, pytester: pytest.Pytester, word: str, workers: list[str],
        outcome: tuple[str, str, str], not_evaluated: list[tuple[str, str, str]]) -> None:
    # Before: the LLM judge's up-front batch, outside any test, let the hook's exception out
    # of pytest's test loop: INTERNALERROR, no test ran.
    pytester.makeconftest(STOPS_FOR_BETA_QA.format(word=word, reason=REASON))
    llm.project.write_tests(ONE_TEST_A_PAIR)
    result = pytester.runpytest("--callqa-report=report.json", "--junitxml=junit.xml",
                                *workers)
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if not_evaluated
                          else pytest.ExitCode.OK)
    assert junit_outcomes(llm.project) == {
        f"test_scored[{model}-{case_id}]": None for model, case_id in PAIRS
    } | {"test_scored[beta-qa-refund]": outcome}
    report = llm.project.report()
    assert scored_pairs(report) == PAIRS - {STOPPED}
    assert [(e["model"], e["case_id"], e["reason"])
            for e in report["not_evaluated"]] == not_evaluated
