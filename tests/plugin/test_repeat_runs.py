"""Repeated runs in the plugin: a judge that answers the second run (seed 1000) differently
from the first and third makes a test's runs disagree, and the pass rule decides the test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_callqa.testing.fake_replies import default_judge_reply, first_user_json, judge_items

from .conftest import PYPROJECT, LLMProject, MiniProject

SUITE = """
import pytest

@pytest.mark.callqa(task="qa")
def test_evidence(callqa_result):
    assert callqa_result.metric("evidence_backed_reasoning").value >= 0.5
"""
# The seed of run 2's judge calls: the default seed 0 plus one run step (judges/llm.py).
RUN_2_SEED = 1000


def second_run_fails(body: dict[str, Any]) -> str | None:
    """Every verdict at the top of its scale, except in run 2: at the bottom."""
    items = judge_items(first_user_json(body))
    if not items:
        return None
    low = body.get("seed") == RUN_2_SEED
    tops = {"likert5": 5.0, "rubric0_5": 5.0}
    return default_judge_reply(
        items, lambda item: (1.0 if item.get("scale") == "likert5" else 0.0) if low
        else tops.get(str(item.get("scale")), 1.0))


def setup(llm: LLMProject, extra: str = "") -> None:
    llm.serve(reply=second_run_fails)
    llm.ini('callqa_models = ["alpha"]\ncallqa_benchmarks = false\n'
            'callqa_report = "report.json"\n' + extra)
    llm.project.write_tests(SUITE)


def test_rule_all_fails_a_test_whose_runs_disagree(llm: LLMProject,
                                                   pytester: pytest.Pytester) -> None:
    setup(llm)
    single = pytester.runpytest("-v")
    single.assert_outcomes(passed=1)
    one_run = llm.server.unique_requests
    assert one_run > 0

    llm.server.reset_counters()
    result = pytester.runpytest("-v", "--callqa-runs", "3")
    result.assert_outcomes(failed=1)
    # Run 1 keeps the single run's requests (read back from its cache); runs 2 and 3 are
    # requests of their own.
    assert llm.server.requests == 2 * one_run
    result.stdout.fnmatch_lines([
        "*test_evidence?alpha-qa-refund? FAILED (flaky 2/3)*",
        "*callqa runs*",
        "2 of 3 runs passed (run 1 passed, run 2 failed, run 3 passed); pass rule all: "
        "failed — flaky: its runs disagree",
    ])
    result.stdout.fnmatch_lines(["runs: up to 3 per (model, case), pass rule all; 1 flaky case "
                                 "(runs disagree)"])
    [record] = [c for c in llm.project.report()["cases"] if c["run"] == 1]
    assert record["passed"] is False and record["runs"] == 3 and record["flaky"] is True
    assert record["pass_rate"] == pytest.approx(2 / 3)
    evidence = record["metrics"]["evidence_backed_reasoning"]
    # Runs 1..3 scored 1, 0, 1: mean 2/3, sample sd sqrt(((1/3)^2 * 2 + (2/3)^2) / 2).
    assert evidence["mean"] == pytest.approx(2 / 3)
    assert evidence["sd"] == pytest.approx(0.5773503)
    runs = llm.project.report()["models"]["alpha"]["runs"]
    assert runs == {"runs": 3, "k": 3, "cases": 1, "pass_rate": pytest.approx(2 / 3),
                    "pass_hat_k": 0.0, "pass_at_k": 1.0, "flaky": ["qa/qa-refund"]}


@pytest.mark.parametrize(("rule", "outcome"), [("majority", "passed"), ("mean", "passed")])
def test_majority_and_mean_pass_two_good_runs_of_three(
        llm: LLMProject, pytester: pytest.Pytester, rule: str, outcome: str) -> None:
    setup(llm, f'callqa_pass_rule = "{rule}"\ncallqa_runs = "3"\n')
    result = pytester.runpytest("-v")
    result.assert_outcomes(**{outcome: 1})
    result.stdout.fnmatch_lines(["*test_evidence?alpha-qa-refund? PASSED (flaky 2/3)*"])


def test_mean_rule_judges_the_mean_of_the_runs(llm: LLMProject,
                                               pytester: pytest.Pytester) -> None:
    setup(llm, 'callqa_pass_rule = "mean"\n')
    llm.project.write_tests(SUITE.replace(">= 0.5", ">= 0.7"))
    # The runs score 1, 0, 1: their mean 0.667 is under 0.7, though two runs passed.
    result = pytester.runpytest("--callqa-runs", "3")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pass rule mean: failed*"])


def test_the_marker_sets_a_tests_runs(llm: LLMProject, pytester: pytest.Pytester) -> None:
    setup(llm, 'callqa_pass_rule = "majority"\n')
    llm.project.write_tests(SUITE.replace('task="qa"', 'task="qa", runs=2'))
    result = pytester.runpytest("-v")
    # Runs 1 and 2 of 2: one pass is no majority.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*1 of 2 runs passed (run 1 passed, run 2 failed)*"])


def test_a_judge_error_in_one_run_is_an_error_not_a_failure(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    setup(llm)
    llm.serve(fault_for=lambda _i, body: "garbage" if body.get("seed") == RUN_2_SEED
              else None)
    result = pytester.runpytest("--callqa-runs", "3")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the judge could not score*"])


def test_runs_of_a_recorded_output_with_the_heuristic_judge_agree(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    (project.root / "pyproject.toml").write_text(
        PYPROJECT + 'callqa_models = ["alpha", "beta"]\ncallqa_report = "report.json"\n',
        encoding="utf-8")
    project.write_tests(SUITE)
    result = pytester.runpytest("--callqa-runs", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["runs: up to 2 per (model, case), pass rule all; 0 flaky "
                                 "cases (runs disagree); 2 runs copied from run 1 (a recorded "
                                 "output the offline judge scores alike: no sample) left out"])
    data = project.report()
    assert sorted((c["model"], c["run"]) for c in data["cases"]) == [
        ("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1)]
    for model in ("alpha", "beta"):
        # A copy is no second sample either of the runs' figures: pass^2 read 1.0, and each
        # metric an sd of 0 over "2 scored runs", from one.
        assert "runs" not in data["models"][model]
        # Run 2 is run 1's result again (a recorded output cannot score differently under
        # the offline judge): no sample of how the model varies. Its Consistency Score read 1,
        # a benchmark measured on nothing that lifted Final Score A; now it has no value.
        assert data["models"][model]["benchmarks"]["consistency"] == {
            "value": None, "passed": None, "scored_cases": 0, "judge_errors": 0}
    assert [c.get("copied_run") for c in data["cases"] if c["run"] == 1] == [True, True]
    for case in data["cases"]:
        assert "pass_rate" not in case
        assert all("sd" not in m for m in case["metrics"].values())


@pytest.mark.parametrize(("args", "message"), [
    (["--callqa-runs", "0"], "*--callqa-runs '0': expected a whole number >= 1*"),
    (["--callqa-runs", "two"], "*--callqa-runs 'two': expected a whole number >= 1*"),
    (["--callqa-judge-repeats", "100"], "*--callqa-judge-repeats: expected at most 99, got 100*"),
    # A mistyped count held every run's result until the test ended: the run hung.
    (["--callqa-runs", "1000000000"],
     "*--callqa-runs: expected at most 1000, got 1000000000*"),
    (["--callqa-pass-rule", "most"], "*argument --callqa-pass-rule: invalid choice: 'most'*"),
])
def test_bad_run_options_stop_the_run(project: MiniProject, pytester: pytest.Pytester,
                                      args: list[str], message: str) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_bad_pass_rule_in_the_ini_file_is_named(project: MiniProject,
                                                  pytester: pytest.Pytester) -> None:
    (project.root / "pyproject.toml").write_text(
        PYPROJECT + 'callqa_pass_rule = "most"\n', encoding="utf-8")
    project.write_tests(SUITE)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*callqa_pass_rule = 'most'*expected one of all, majority, "
                                 "mean*"])


@pytest.mark.parametrize(("runs", "problem"), [
    ("0", "a whole number >= 1"), ("'3'", "a whole number >= 1"),
    ("True", "a whole number >= 1"), ("1001", "at most 1000")])
def test_a_bad_runs_marker_is_a_collection_error(project: MiniProject,
                                                 pytester: pytest.Pytester, runs: str,
                                                 problem: str) -> None:
    project.write_tests(SUITE.replace('task="qa"', f'task="qa", runs={runs}'))
    result = pytester.runpytest()
    result.stdout.fnmatch_lines([f"*@pytest.mark.callqa on *test_evidence: runs must be "
                                 f"{problem}, got {runs}*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_the_report_reads_back(project: MiniProject, pytester: pytest.Pytester) -> None:
    """A run's result with ``passed`` survives the report (a merge rebuilds from it)."""
    from pytest_callqa.engine.core.results import TaskResult

    (project.root / "pyproject.toml").write_text(
        PYPROJECT + 'callqa_models = ["alpha"]\ncallqa_report = "report.json"\n',
        encoding="utf-8")
    project.write_tests(SUITE)
    pytester.runpytest("--callqa-runs", "2").assert_outcomes(passed=1)
    records = project.report()["cases"]
    rebuilt = [TaskResult.from_dict(r) for r in records]
    assert [(r.run, r.passed) for r in rebuilt] == [(0, True), (1, True)]
    assert json.loads(json.dumps(records)) == records


def test_judge_repeats_ask_every_verdict_k_times(llm: LLMProject,
                                                 pytester: pytest.Pytester) -> None:
    llm.serve(judge_noise=1.0, seed=5)
    llm.ini('callqa_models = ["alpha"]\ncallqa_benchmarks = false\n'
            'callqa_report = "report.json"\n')
    llm.project.write_tests(SUITE.replace(">= 0.5", ">= 0.0"))
    pytester.runpytest("--callqa-cache", "off").assert_outcomes(passed=1)
    once = llm.server.requests
    llm.server.reset_counters()
    result = pytester.runpytest("--callqa-cache", "off", "--callqa-judge-repeats", "3")
    result.assert_outcomes(passed=1)
    assert llm.server.requests == 3 * once
    repeats = llm.project.report()["run"]["judge_repeats"]
    assert repeats["repeats"] == 3 and repeats["tolerance"] == 0.25
    evidence = repeats["metrics"]["evidence_backed_reasoning"]
    assert evidence["n"] >= 1 and 0.0 <= evidence["exact"] <= 1.0
    [record] = llm.project.report()["cases"]
    asked = [r for r in record["judge_records"] if r["metric"] == "evidence_backed_reasoning"]
    assert asked and all(len(r["repeats"]) == 3 for r in asked)
    result.stdout.fnmatch_lines(["judge repeats: 3 per verdict (median; majority on 0/1); "
                                 "repeats all agreeing, per metric: *evidence_backed_reasoning*"])


def test_judge_repeats_with_the_heuristic_judge_say_so(project: MiniProject,
                                                       pytester: pytest.Pytester) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest("--callqa-judge-repeats", "2")
    result.stdout.fnmatch_lines(["judge repeats: 2 asked, none made: the heuristic judge is "
                                 "deterministic"])


def test_live_models_are_generated_again_in_each_run(llm: LLMProject,
                                                     pytester: pytest.Pytester) -> None:
    (llm.root / "pyproject.toml").write_text(PYPROJECT + 'callqa_report = "report.json"\n',
                                             encoding="utf-8")
    url = llm.server.base_url
    llm.project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n"
                            "\ndef test_o(callqa_output):\n    assert callqa_output\n")
    args = [f"--callqa-models=alpha,fast=gpt-4o-mini@{url}", "--callqa-runs", "2"]
    result = pytester.runpytest(*args)
    # 2 models x 4 cases x 2 tests, each over two runs.
    result.assert_outcomes(passed=16)
    # One generation per case and run: run 1 as a single run sends it (no seed), run 2
    # with seed 1; recorded alpha is read, not generated.
    assert llm.server.requests == llm.server.unique_requests == 8
    assert sum("seed" not in body for body in llm.server.bodies) == 4
    assert sorted(body["seed"] for body in llm.server.bodies if "seed" in body) == [1] * 4
    report = llm.project.report()
    fast = sorted((c["case_id"], c["run"]) for c in report["cases"] if c["model"] == "fast")
    assert [run for _case, run in fast] == [0, 1] * 4
    warm = pytester.runpytest(*args)
    warm.assert_outcomes(passed=16)
    assert llm.server.requests == 8


def test_a_generation_that_fails_in_a_later_run_is_an_error_not_a_failure(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    # Run 2's generations (seed 1) are refused: the tool could not produce the output the
    # test needed, which is not the model failing the test (it was a failure before).
    llm.serve(fault_for=lambda _i, body: "400" if body.get("seed") == 1 else None)
    (llm.root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    url = llm.server.base_url
    llm.project.write_tests("def test_o(callqa_output):\n    assert callqa_output\n")
    result = pytester.runpytest(f"--callqa-models=fast=gpt-4o-mini@{url}", "--callqa-runs", "2")
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(["*generating the output of model 'fast' for case*failed*"])


def live_runs(llm: LLMProject, pytester: pytest.Pytester, run_2_reply: str,
              models: str) -> tuple[pytest.RunResult, dict[tuple[str, int], Any]]:
    """QA cases over two runs of ``models``, the heuristic judging; live ``fast``'s run 2
    (seed 1) answers ``run_2_reply``. The run, and its case records by (model, run)."""
    llm.serve(reply=lambda body: run_2_reply if body.get("seed") == 1 else None)
    # The heuristic judge (serve() pointed the judge at the server): generation calls only.
    (llm.root / "pyproject.toml").write_text(PYPROJECT + 'callqa_report = "report.json"\n',
                                             encoding="utf-8")
    llm.project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                            "def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest(
        f"--callqa-models={models.replace('FAST', 'fast=gpt-4o-mini@' + llm.server.base_url)}",
        "--callqa-runs", "2")
    return result, {(c["model"], c["run"]): c for c in llm.project.report()["cases"]}


def test_a_later_run_of_a_live_model_reports_its_own_output(llm: LLMProject,
                                                            pytester: pytest.Pytester) -> None:
    # Run 2 (seed 1) answers differently: its record showed run 1's output beside the
    # verdicts of run 2's. A recorded model's output, the same in every run, is not repeated.
    _, records = live_runs(llm, pytester, "second answer", "alpha,FAST")
    assert records[("fast", 1)]["output"] == "second answer"
    assert records[("fast", 0)]["output"] != "second answer"
    assert records[("alpha", 1)]["output"] == records[("alpha", 0)]["output"]


def test_a_later_runs_output_is_kept_as_the_report_keeps_run_1s(llm: LLMProject,
                                                                pytester: pytest.Pytester) -> None:
    # Run 2 answers with a NaN (json.loads reads it): kept raw, it ended the session in an
    # INTERNALERROR when the report was written (JSON has no NaN).
    result, records = live_runs(llm, pytester, '{"answer": NaN}', "FAST")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    assert records[("fast", 1)]["output"] == {"answer": None}


CUTS_ITS_OUTPUT = """
import pytest

pytestmark = pytest.mark.callqa(task="qa")

@pytest.fixture
def first_question(callqa_output):
    del callqa_output["questions"][1:]
    return callqa_output["questions"][0]

def test_a_cuts_its_output(callqa_output, callqa_result):
    assert len(callqa_output["questions"]) == 3
    del callqa_output["questions"][1:]

def test_b_score(first_question, callqa_result):
    assert first_question["question_id"] == "Q1"
    assert callqa_result.score >= 0.9
"""


@pytest.mark.parametrize("args", [
    [], ["--callqa-runs", "2"], ["--callqa-runs", "2", "--callqa-pass-rule", "mean"],
    ["-n", "2"]], ids=["one-run", "two-runs", "mean-of-two-runs", "xdist"])
def test_a_test_that_changes_its_output_changes_nothing_else(
        project: MiniProject, pytester: pytest.Pytester, args: list[str]) -> None:
    # Before: the test was given the very output its pair was scored on and reported: cut
    # down by test_a (or by a fixture), it lowered test_b's score, and the report kept what
    # was left; under two runs, run 2 of test_a (and its call on the runs' mean) saw what
    # run 1 had cut.
    (project.root / "pyproject.toml").write_text(
        PYPROJECT + 'callqa_models = ["alpha"]\ncallqa_report = "report.json"\n',
        encoding="utf-8")
    project.write_tests(CUTS_ITS_OUTPUT)
    result = pytester.runpytest("-p", "no:randomly", *args)
    result.assert_outcomes(passed=2)
    records = project.report()["cases"]
    assert records and all(len(r["output"]["questions"]) == 3 for r in records)


@pytest.mark.parametrize(("rule", "check", "outcome", "runs_line"), [
    ("all", "callqa_result.run != 0", {"failed": 1},
     "1 of the 2 runs of known outcome passed, 1 skipped (run 1 failed, run 2 skipped, run 3 "
     "passed); pass rule all: failed — flaky: its runs disagree"),
    ("majority", "callqa_result.run != 0", {"failed": 1},
     "1 of the 2 runs of known outcome passed, 1 skipped (run 1 failed, run 2 skipped, run 3 "
     "passed); pass rule majority: failed — flaky: its runs disagree"),
    ("all", "callqa_result.valid", {"passed": 1},
     "2 of the 2 runs of known outcome passed, 1 skipped (run 1 passed, run 2 skipped, run 3 "
     "passed); pass rule all: passed"),
    ("mean", "callqa_result.valid", {"passed": 1},
     "2 of the 2 runs of known outcome passed, 1 skipped (run 1 passed, run 2 skipped, run 3 "
     "passed); pass rule mean: passed"),
], ids=["all-fails", "majority-fails", "all-passes", "mean-passes"])
def test_a_run_the_test_skips_is_left_out_of_the_pass_rule(
        project: MiniProject, pytester: pytest.Pytester, rule: str, check: str,
        outcome: dict[str, int], runs_line: str) -> None:
    # Before: a skip in run 2 (an assertion helper's on a metric n/a for that run's output)
    # skipped the whole test at once: run 1's failure was hidden, run 3 never called, the
    # session passed, and the report lost runs 2 and 3.
    (project.root / "pyproject.toml").write_text(
        PYPROJECT + f'callqa_models = ["alpha"]\ncallqa_report = "report.json"\n'
        f'callqa_pass_rule = "{rule}"\n', encoding="utf-8")
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n"
                        "    if callqa_result.run == 1:\n"
                        "        pytest.skip('does not apply to this run')\n"
                        f"    assert {check}\n")
    result = pytester.runpytest("-rA", "--callqa-runs", "3")
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines([runs_line])
    records = sorted(project.report()["cases"], key=lambda c: c["run"])
    # The run skipped has no outcome (its later runs are copies of run 1: no run figures).
    assert [(c["run"], c.get("passed")) for c in records] == [
        (0, "run != 0" not in check), (1, None), (2, True)]


def test_a_test_skipped_in_every_run_is_skipped(project: MiniProject,
                                                pytester: pytest.Pytester) -> None:
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n"
                        "    pytest.skip(f'not for run {callqa_result.run + 1}')\n")
    result = pytester.runpytest("-rs", "--callqa-runs", "2", "-k", "alpha")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not for run 1*"])


THROUGH_A_FIXTURE = """
import pytest

@pytest.fixture
def extraction(callqa_result):
    return callqa_result

@pytest.mark.callqa(task="qa")
def test_via_fixture(extraction):
    assert extraction.valid

@pytest.mark.callqa(task="qa", runs=1)
def test_via_fixture_once(extraction):
    assert extraction.valid

@pytest.mark.callqa(task="qa")
def test_direct(extraction, callqa_result):
    assert callqa_result.valid
"""


def test_a_test_that_takes_the_result_only_through_a_fixture_is_an_error_over_runs(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # Before: its fixture was set up once, with run 1's result, and the test, called again
    # for run 2 on the same fixture, was recorded as "2 of 2 runs passed", run 2 unchecked.
    project.write_tests(THROUGH_A_FIXTURE)
    result = pytester.runpytest("-rA", "--callqa-runs", "2", "-k", "alpha")
    result.assert_outcomes(errors=1, passed=2)
    result.stdout.fnmatch_lines([
        "*ERROR at call of test_via_fixture?alpha-qa-refund?*",
        "callqa: this test runs 2 times "
        "(--callqa-runs or callqa(runs=...)) but takes callqa_result only through its "
        "fixtures, which are set up once, with run 1's: run 2 would not be checked. Take "
        "callqa_result as an argument of the test function, or give it "
        "@pytest.mark.callqa(runs=1)"])
    assert "2 of 2 runs passed" in result.stdout.str()  # test_direct, over both runs
    pytester.runpytest("-k", "alpha").assert_outcomes(passed=3)
