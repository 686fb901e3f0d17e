"""Repeated runs in which the tool failed in one run while the model failed in another: when
the runs of known outcome already fail the test under its pass rule, whatever the unknown run
would have said, the test fails (the model's failure), the unknown run still named in its runs
section. Before, any unknown run made the test an error. When the known runs do not decide it
— or would only decide a pass — the test stays an error: a failure of the tool is never a pass
nor a failure the known runs do not imply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_callqa.testing.fake_replies import default_judge_reply, first_user_json, judge_items

from .conftest import LLMProject
from .test_repeat_runs import RUN_2_SEED, SUITE

# The seeds of runs 1 and 3's judge calls (judges/llm.py: the base seed 0, one step a run).
RUN_1_SEED, RUN_3_SEED = 0, 2 * RUN_2_SEED


def bottom_in(seeds: set[int]) -> Callable[[dict[str, Any]], str | None]:
    """Every verdict at the top of its scale, except in the runs of ``seeds``: at the bottom
    (test_evidence fails those runs on the model's account)."""
    def reply(body: dict[str, Any]) -> str | None:
        items = judge_items(first_user_json(body))
        if not items:
            return None
        low = body.get("seed") in seeds
        return default_judge_reply(
            items, lambda item: (1.0 if item.get("scale") == "likert5" else 0.0) if low
            else (5.0 if item.get("scale") in ("likert5", "rubric0_5") else 1.0))
    return reply


def run_2_unknown(llm: LLMProject, rule: str, failing: set[int]) -> None:
    """Three runs of test_evidence: run 2's judge replies are unusable (a judge error, its
    outcome unknown), the runs of ``failing`` score at the bottom."""
    llm.serve(reply=bottom_in(failing),
              fault_for=lambda _i, body: "garbage" if body.get("seed") == RUN_2_SEED else None)
    llm.ini('callqa_models = ["alpha"]\ncallqa_benchmarks = false\n'
            f'callqa_report = "report.json"\ncallqa_pass_rule = "{rule}"\ncallqa_runs = "3"\n')
    llm.project.write_tests(SUITE)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_rule_all_fails_on_a_failed_run_whatever_an_unknown_run_says(
        llm: LLMProject, pytester: pytest.Pytester, workers: list[str]) -> None:
    run_2_unknown(llm, "all", {RUN_3_SEED})
    result = pytester.runpytest("-v", *workers)
    result.assert_outcomes(failed=1)
    # The failure shown is run 3's, the model's, not the judge error of run 2; the runs
    # section still names run 2 as unknown.
    result.stdout.fnmatch_lines([
        "*assert 0.0 >= 0.5*",
        "*callqa runs*",
        "1 of the 2 runs of known outcome passed, 1 unknown (run 1 passed, run 2 unknown (the "
        "tool failed in it), run 3 failed); pass rule all: failed, whatever the unknown run "
        "says — flaky: its runs disagree",
    ])
    result.stdout.no_fnmatch_line("*JudgeUnavailable*")
    result.stdout.fnmatch_lines(["FAILED (flaky 1/2) test_eval.py::test_evidence?alpha-qa-refund? "
                                 "- Assertion*"])
    assert [c["passed"] for c in llm.project.report()["cases"]] == [True, None, False]


def test_rule_majority_fails_when_the_unknown_run_could_not_make_a_majority(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    # Runs 1 and 3 failed: with run 2 a pass, one of three is still no majority.
    run_2_unknown(llm, "majority", {RUN_1_SEED, RUN_3_SEED})
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pass rule majority: failed, whatever the unknown run says*"])


@pytest.mark.parametrize(("rule", "failing"), [
    # One pass, one failure: run 2 would make the majority either way.
    ("majority", {RUN_3_SEED}),
    # Two passes already are a majority of three, but a pass must not hide the tool's failure.
    ("majority", set()),
    # The mean of the runs takes run 2's values, which the judge never gave.
    ("mean", {RUN_3_SEED}),
], ids=["majority-undecided", "majority-would-pass", "mean"])
def test_an_unknown_run_the_known_runs_do_not_outweigh_keeps_the_test_an_error(
        llm: LLMProject, pytester: pytest.Pytester, rule: str, failing: set[int]) -> None:
    run_2_unknown(llm, rule, failing)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*JudgeUnavailable: the judge could not score*",
                                 f"*pass rule {rule}: undecided (the outcome of a run is "
                                 "unknown)*"])
