"""Repeated runs in which the tool failed: a run a test of the pair could not decide (a
verdict the judge could not give) has an unknown outcome. It is left out of the pass rate,
pass^k, pass@k and the flaky count, counted apart in the report and the scorecard, and a pair
without two known runs has no run figures — before, the pair's other tests made such runs
passes, and a run whose judge was down read as a pass rate of 1.0."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from pytest_callqa.run.repeated import run_outcome

from .conftest import LLMProject, MiniProject
from .test_judge_errors import closed_port, judge_at
from .test_repeat_runs import RUN_2_SEED

# Evidence-backed reasoning needs the judge; the output's structure does not.
SUITE = """
import pytest

@pytest.mark.callqa(task="qa")
def test_evidence(callqa_result):
    assert callqa_result.metric("evidence_backed_reasoning").value >= 0.5

@pytest.mark.callqa(task="qa")
def test_structure(callqa_result):
    assert callqa_result.valid
"""


def run_2_garbled(llm: LLMProject) -> None:
    """The judge answers every run but run 2, whose replies are unusable (judge errors)."""
    llm.serve(fault_for=lambda _i, body: "garbage" if body.get("seed") == RUN_2_SEED
              else None)
    llm.ini('callqa_models = ["alpha"]\ncallqa_benchmarks = false\n'
            'callqa_report = "report.json"\n')
    llm.project.write_tests(SUITE)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_run_the_judge_could_not_score_is_unknown_not_passed(
        llm: LLMProject, pytester: pytest.Pytester, workers: list[str],
        scorecard_of: Callable[[str], str]) -> None:
    run_2_garbled(llm)
    result = pytester.runpytest("--callqa-runs", "3", *workers)
    result.assert_outcomes(passed=1, errors=1)
    report = llm.project.report()
    records = {c["run"]: c for c in report["cases"]}
    # test_structure passed run 2; test_evidence could not say: the run is unknown.
    assert [records[run]["passed"] for run in (0, 1, 2)] == [True, None, True]
    assert records[1]["unknown_runs"] == 1 and records[1]["pass_rate"] == 1.0
    assert report["models"]["alpha"]["runs"] == {
        "runs": 2, "k": 2, "cases": 1, "pass_rate": 1.0, "pass_hat_k": 1.0, "pass_at_k": 1.0,
        "flaky": [], "unknown_runs": 1, "unknown_cases": []}
    result.stdout.fnmatch_lines([
        "2 of the 2 runs of known outcome passed, 1 unknown (run 1 passed, run 2 unknown (the "
        "tool failed in it), run 3 passed); pass rule all: undecided (the outcome of a run is "
        "unknown)"])
    card = scorecard_of(result.stdout.str())
    assert "runs: up to 3 per (model, case), pass rule all; 0 flaky cases (runs disagree); " \
           "1 run of unknown outcome (the tool failed in a test of it, or a test skipped it) " \
           "left out" in card
    assert "E alpha: 1 run of unknown outcome left out of the repeated runs' figures" in card


def test_a_pair_with_no_known_run_has_no_pass_figures(
        llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]) -> None:
    # The judge is down for every run: every test_evidence errors, every test_structure
    # passes. The runs read as passed (pass rate, pass^k and pass@k 1.0, no flaky case).
    judge_at(llm, f"http://127.0.0.1:{closed_port()}/v1",
             'callqa_benchmarks = false\ncallqa_report = "report.json"\ncallqa_timeout = "2"\n')
    llm.project.write_tests(SUITE)
    result = pytester.runpytest("--callqa-runs", "3", "--no-callqa-preflight")
    result.assert_outcomes(passed=1, errors=1)
    report = llm.project.report()
    assert [c["passed"] for c in report["cases"]] == [None, None, None]
    assert {c["pass_rate"] for c in report["cases"]} == {None}
    assert report["models"]["alpha"]["runs"] == {
        "runs": 0, "k": None, "cases": 0, "pass_rate": None, "pass_hat_k": None, "pass_at_k": None,
        "flaky": [], "unknown_runs": 3, "unknown_cases": ["qa/qa-refund"]}
    card = scorecard_of(result.stdout.str())
    assert "REPEATED RUNS" not in card  # no figure of 1.0, nor any other
    assert "E alpha: 3 runs of unknown outcome left out of the repeated runs' figures (pass " \
           "rate, pass^k, pass@k, flaky): a test of the case errored in them — the tool " \
           "failed (a judge error, a run that could not be produced), not the model — or " \
           "skipped them; 1 case " \
           "with fewer than two known runs, without run figures (qa/qa-refund)" in card
    result.stdout.fnmatch_lines(["no run of 3 has a known outcome (run 1 unknown*"])


def test_a_run_a_test_failed_is_failed_whatever_another_test_could_not_say(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    run_2_garbled(llm)
    # test_structure fails run 2 on the model's account; test_evidence errors in it.
    llm.project.write_tests(SUITE.replace("assert callqa_result.valid",
                                          "assert callqa_result.run != 1"))
    result = pytester.runpytest("--callqa-runs", "3")
    result.assert_outcomes(failed=1, errors=1)
    report = llm.project.report()
    assert [c["passed"] for c in report["cases"]] == [True, False, True]
    runs = report["models"]["alpha"]["runs"]
    assert runs["pass_rate"] == pytest.approx(2 / 3) and runs["flaky"] == ["qa/qa-refund"]
    assert "unknown_runs" not in runs


@pytest.mark.parametrize(("one", "other", "both"), [
    (True, True, True), (True, False, False), (False, None, False), (None, False, False),
    (True, None, None), (None, True, None), (None, None, None)])
def test_a_runs_outcome_over_two_tests(one: bool | None, other: bool | None,
                                       both: bool | None) -> None:
    assert run_outcome(one, other) is both


def test_a_generate_hook_that_raises_on_a_later_run_is_the_tools_error(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # A live model is generated again in each run. The hook's error in run 1 is a setup
    # error; in run 2 (produced in the call phase) it read as a failure of the model.
    answer = json.dumps(project.cases["qa-refund"]["expected_outcome"])
    pytester.makeconftest(f"""
        import pytest

        calls = []

        @pytest.hookimpl(optionalhook=True)
        def pytest_callqa_generate(model, case, config):
            if case.id != "qa-refund":
                return None
            calls.append(case.id)
            if len(calls) > 1:
                raise ConnectionError("the model's server went away")
            return {answer!r}
    """)
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=live=m@http://127.0.0.1:9/v1",
                                "--no-callqa-preflight", "--callqa-runs=2", "-p", "no:xdist",
                                "-k", "qa-refund")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ConnectionError*the model's server went away*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_later_run_that_could_not_be_produced_is_listed_as_not_evaluated(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str],
        scorecard_of: Callable[[str], str]) -> None:
    # Before: run 2's result was dropped with run 3's failure, and the scorecard read as a
    # single run of the pair with nothing missing ("1 output scored", no word of runs).
    answer = json.dumps(project.cases["qa-refund"]["expected_outcome"])
    pytester.makeconftest(f"""
        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_callqa_generate(model, case, config):
            if case.id != "qa-refund":
                return None
            if config.callqa_runs_seen >= 2:
                raise ConnectionError("the model's server went away")
            config.callqa_runs_seen += 1
            return {answer!r}

        def pytest_configure(config):
            config.callqa_runs_seen = 0
    """)
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=live=m@http://127.0.0.1:9/v1",
                                "--no-callqa-preflight", "--callqa-runs=3", "-k", "qa-refund",
                                "--callqa-report=report.json", *workers)
    result.assert_outcomes(errors=1)
    card = scorecard_of(result.stdout.str())
    assert "results: 2 outputs scored (1 model, 1 case)" in card
    assert ("runs not produced (the tool failed), not evaluated: live: qa-refund run 3 of 3"
            in card)
    report = project.report()
    assert sorted(c["run"] for c in report["cases"]) == [0, 1]
    [entry] = report["not_evaluated"]
    assert {k: entry[k] for k in ("kind", "model", "case_id", "run", "runs")} == {
        "kind": "unproduced_run", "model": "live", "case_id": "qa-refund", "run": 3,
        "runs": 3}
    assert "ConnectionError" in entry["reason"]


def test_merged_shards_keep_the_unknown_runs_note_and_header_line(
        llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]) -> None:
    # Before: the merged report's notes and the merge's scorecard lacked the unknown-runs
    # note and runs line one run over every shard writes, and read as nothing dropped.
    from pytest_callqa.run.merge import merge_reports, merged_scorecard_text

    run_2_garbled(llm)
    whole = pytester.runpytest("--callqa-runs", "3", "--callqa-report", "full.json")
    full = llm.project.report("full.json")
    shards = []
    for i in (1, 2):
        pytester.runpytest("--callqa-runs", "3", f"--callqa-shard={i}/2",
                           "--callqa-report", f"s{i}.json")
        shards.append(llm.project.report(f"s{i}.json"))
    merged = merge_reports(shards, ["s1.json", "s2.json"])
    assert any("1 run of unknown outcome" in note for note in full["notes"])
    assert merged["notes"] == full["notes"]
    runs_line = next(line for line in scorecard_of(whole.stdout.str()).splitlines()
                     if line.startswith("runs: "))
    assert runs_line in merged_scorecard_text(merged, width=400).splitlines()


def test_one_known_run_gives_no_pass_rate_and_one_scored_run_no_spread() -> None:
    # Runs 2 and 3 left the metric without a value and their outcome unknown: the case record
    # said pass_rate 1.0 (from run 1 alone) and sd 0.0, read as perfectly stable.
    from pytest_callqa.engine.core.results import MetricResult, TaskResult
    from pytest_callqa.run.repeated import run_fields

    def run(number: int, value: float | None, passed: bool | None) -> TaskResult:
        metric = (MetricResult(value) if value is not None
                  else MetricResult.not_scored("not scored: the heuristic judge abstained"))
        result = TaskResult(task="text", case_id="c", score=0.9, valid=True, blocked=False,
                            blockers=[], metrics={"call_intent_match": metric}, model="m",
                            run=number)
        result.passed = passed
        return result

    runs = [run(0, 1.0, True), run(1, None, None), run(2, None, None)]
    record = {"model": "m", "task": "text", "case_id": "c",
              "metrics": {"call_intent_match": {"value": 1.0}}}
    run_fields(record, {("m", "text", "c"): runs}, {})
    assert (record["runs"], record["pass_rate"], record["flaky"], record["unknown_runs"]) == (
        3, None, None, 2)
    assert record["metrics"]["call_intent_match"] == {
        "value": 1.0, "mean": 1.0, "sd": None, "scored_runs": 1}


def test_a_generate_hook_is_asked_once_per_run_and_told_which(
        project: MiniProject, pytester: pytest.Pytester,
        scorecard_of: Callable[[str], str]) -> None:
    # Before: a model the project's hook generated (no base URL) was asked once per pair and
    # its one output copied to every run: the Consistency Score read 1 and no case flaky,
    # measured on nothing. Now each run asks, with the run, as a live model's does.
    right = json.dumps(project.cases["qa-refund"]["expected_outcome"])
    pytester.makeconftest(f"""
        import pytest

        asked = []

        @pytest.hookimpl(optionalhook=True)
        def pytest_callqa_generate(model, case, config, run):
            if case.id != "qa-refund":
                return None
            asked.append(run)
            return {right!r} if run != 1 else "not a scorecard"

        def pytest_sessionfinish(session):
            print("asked runs", sorted(asked))
    """)
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-runs=3", "-p", "no:xdist", "-k", "alpha and qa-refund",
                                "-s")
    result.stdout.fnmatch_lines(["*asked runs [[]0, 1, 2[]]*"])
    # Run 2's output is invalid: the test fails on it, flaky across its runs.
    result.assert_outcomes(failed=1)
    assert "1/1" in next(line for line in scorecard_of(result.stdout.str()).splitlines()
                         if line.startswith("Flaky Cases"))


def generated_but_run_2(project: MiniProject, pytester: pytest.Pytester, run_2: str,
                        check: str) -> None:
    """A generate hook answering qa-refund's truth but in run 2, where it runs ``run_2``,
    and a QA test asserting ``check`` of callqa_result."""
    answer = json.dumps(project.cases["qa-refund"]["expected_outcome"])
    pytester.makeconftest(f"""
        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_callqa_generate(model, case, config, run):
            if case.id != "qa-refund":
                return None
            if run == 1:
                {run_2}
            return {answer!r}
    """)
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        f"def test_r(callqa_result):\n    assert {check}\n")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
@pytest.mark.parametrize(("check", "outcome", "runs_line", "passed"), [
    ("callqa_result.valid", {"errors": 1},
     "2 of the 2 runs of known outcome passed, 1 unknown (run 1 passed, run 2 unknown (the "
     "tool failed in it), run 3 passed); pass rule all: undecided*", [True, True]),
    ("callqa_result.run != 0", {"failed": 1},
     "1 of the 2 runs of known outcome passed, 1 unknown (run 1 failed, run 2 unknown (the "
     "tool failed in it), run 3 passed); pass rule all: failed, whatever the unknown run "
     "says*", [False, True]),
], ids=["known-runs-pass", "a-known-run-fails"])
def test_a_run_that_could_not_be_produced_leaves_the_others_called(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str], check: str,
        outcome: dict[str, int], runs_line: str, passed: list[bool],
        scorecard_of: Callable[[str], str]) -> None:
    # Before: run 2's failure stopped the production, the test function was called in no
    # run, and run 1 (produced, scored) and run 3 (never asked for) were both unknown: a
    # run the model failed could not fail the test.
    generated_but_run_2(project, pytester,
                        "raise ConnectionError(\"the model's server went away\")", check)
    result = pytester.runpytest("--callqa-models=live=m@http://127.0.0.1:9/v1",
                                "--no-callqa-preflight", "--callqa-runs=3", "-k", "qa-refund",
                                "--callqa-report=report.json", *workers)
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines([runs_line])
    report = project.report()
    assert [(c["run"], c["passed"]) for c in sorted(report["cases"], key=lambda c: c["run"])] \
        == [(0, passed[0]), (2, passed[1])]
    [entry] = report["not_evaluated"]
    assert {k: entry[k] for k in ("kind", "case_id", "run", "runs")} == {
        "kind": "unproduced_run", "case_id": "qa-refund", "run": 2, "runs": 3}
    # Before: the run not produced was in no run figure's count, as if the pair ran twice.
    assert {(c["runs"], c["unknown_runs"]) for c in report["cases"]} == {(3, 1)}
    runs = report["models"]["live"]["runs"]
    assert (runs["unknown_runs"], runs["unknown_cases"]) == (1, [])
    card = scorecard_of(result.stdout.str())
    assert "runs: up to 3 per (model, case)" in card
    assert "1 run of unknown outcome (the tool failed in a test of it, or a test skipped " \
           "it) left out" in card
    assert "E live: 1 run of unknown outcome left out of the repeated runs' figures" in card


def test_merged_shards_count_a_run_that_could_not_be_produced(
        project: MiniProject, pytester: pytest.Pytester,
        scorecard_of: Callable[[str], str]) -> None:
    # Before: the merge, like the run, left the run not produced out of the header's runs
    # line, the unknown-runs note and the models' runs section.
    from pytest_callqa.run.merge import merge_reports, merged_scorecard_text

    generated_but_run_2(project, pytester,
                        "raise ConnectionError(\"the model's server went away\")",
                        "callqa_result.valid")
    args = ("--callqa-models=live=m@http://127.0.0.1:9/v1", "--no-callqa-preflight",
            "--callqa-runs=3", "-k", "qa-refund")
    whole = pytester.runpytest(*args, "--callqa-report=full.json")
    full = project.report("full.json")
    for i in (1, 2):
        pytester.runpytest(*args, f"--callqa-shard={i}/2", f"--callqa-report=s{i}.json")
    merged = merge_reports([project.report(f"s{i}.json") for i in (1, 2)],
                           ["s1.json", "s2.json"])
    assert any(note.startswith("E live: 1 run of unknown outcome") for note in merged["notes"])
    assert merged["notes"] == full["notes"]
    assert merged["models"]["live"]["runs"] == full["models"]["live"]["runs"]
    assert full["models"]["live"]["runs"]["unknown_runs"] == 1
    runs_line = next(line for line in scorecard_of(whole.stdout.str()).splitlines()
                     if line.startswith("runs: "))
    assert "1 run of unknown outcome" in runs_line
    assert runs_line in merged_scorecard_text(merged, width=400).splitlines()


@pytest.mark.parametrize(("hook_run_1", "outcome"), [
    ("pytest.xfail('the model cannot do this yet')", {"xfailed": 1}),
    ("return None", {"skipped": 1}),
], ids=["xfail", "no-output"])
def test_a_projects_word_on_a_later_run_is_kept(
        project: MiniProject, pytester: pytest.Pytester, hook_run_1: str,
        outcome: dict[str, int]) -> None:
    # Taken for a run that could not be produced: an xfail read as skipped, and a run
    # without an output raised KeyError in a test of callqa_result.
    generated_but_run_2(project, pytester, hook_run_1, "callqa_result.valid")
    # A recorded model without outputs: the hook's output or none.
    result = pytester.runpytest("--callqa-models=gamma", "--callqa-runs=3", "-k", "qa-refund",
                                "-rsxE")
    result.assert_outcomes(**outcome)
    assert "KeyError" not in result.stdout.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_run_one_test_skips_takes_the_outcome_another_test_gave_it(
        llm: LLMProject, pytester: pytest.Pytester, workers: list[str]) -> None:
    # Before: test_b's skip of run 2 was taken for an unknown outcome, and combined with
    # test_a's pass of that run it left run 2 unknown: "1 run of unknown outcome", a note
    # naming the tool, and the run dropped from the pass figures.
    llm.project.write_tests("""
import pytest

@pytest.mark.callqa(task="qa")
def test_a(callqa_result):
    assert callqa_result.valid

@pytest.mark.callqa(task="qa")
def test_b(callqa_result):
    if callqa_result.run == 1:
        pytest.skip("does not apply to run 2")
    assert callqa_result.valid
""")
    result = pytester.runpytest("--callqa-runs", "3", "--callqa-models=alpha",
                                "--callqa-report=report.json", *workers)
    assert result.ret == pytest.ExitCode.OK
    report = llm.project.report()
    assert {(c["run"], c["passed"]) for c in report["cases"]} == {(0, True), (1, True),
                                                                  (2, True)}
    runs = report["models"]["alpha"]["runs"]
    assert (runs["runs"], runs["pass_rate"]) == (3, 1.0) and "unknown_runs" not in runs
    assert not any("unknown outcome" in note for note in report["notes"])
