"""What a CI job reads of a run: JUnit properties, a terminal that ends with the scorecard in
the configured model order and width, short failure messages, and shards that split the
(model, case) pairs."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from pytest_callqa.run.shard import in_shard

from .conftest import PYPROJECT, LLMProject, MiniProject
from .test_judge_errors import closed_port, judge_at
from .test_scorecard import SUITE


def properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_junit_carries_every_evaluation_tests_metrics(
    project: MiniProject, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    project.write_tests(SUITE)
    pytester.runpytest("--junitxml=out.xml", *xdist)
    tree = ET.parse(project.root / "out.xml")
    cases = {f"{c.get('classname')}::{c.get('name')}": c for c in tree.iter("testcase")}
    evaluated = {k: properties(c) for k, c in cases.items()
                 if "[" in k and c.find("skipped") is None}
    assert len(evaluated) == 10  # every evaluation test: 8 pairs, and the qa test of both
    for name, props in evaluated.items():
        assert props["callqa.model"] in ("alpha", "beta"), name
        assert "callqa.metric.response_structure_compliance" in props, name
    qa = evaluated["test_eval::test_qa[beta-qa-refund]"]
    assert qa["callqa.blockers"] == "compliance_false_pass_rate"
    assert qa["callqa.rating.compliance_false_pass_rate"] == "blocker"
    assert float(qa["callqa.metric.question_score_accuracy"]) == pytest.approx(2 / 3)
    assert "callqa.model" not in properties(cases["test_eval::test_unit"])
    suite = {p.get("name"): p.get("value") for p in tree.getroot().iter("property")
             if p.get("name", "").startswith(("callqa.alpha", "callqa.beta"))}
    assert suite["callqa.alpha.any_blocker"] == suite["callqa.alpha.disqualified"] == "False"
    # beta's blocked qa case disqualifies it (the default tolerance, 0).
    assert suite["callqa.beta.any_blocker"] == suite["callqa.beta.disqualified"] == "True"


def test_the_scorecard_follows_the_configured_order_and_ends_the_output(
    project: MiniProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    (project.root / "pyproject.toml").write_text(
        PYPROJECT + 'callqa_models = ["beta", "alpha"]\n', encoding="utf-8")
    project.write_tests(SUITE)
    out = pytester.runpytest("-rA").stdout.str()
    header = next(line for line in scorecard_of(out).splitlines() if line.startswith("Metric"))
    assert header.index("beta") < header.index("alpha")
    lines = out.splitlines()
    card = max(i for i, line in enumerate(lines) if "callqa scorecard" in line)
    short = max(i for i, line in enumerate(lines) if "short test summary info" in line)
    assert short < card  # the scorecard comes after the failures and their summary
    assert "failed" in lines[-1] and card > len(lines) - 150


def test_a_narrow_terminal_gets_the_table_in_blocks(golden: dict[str, object]) -> None:
    from pytest_callqa.engine.evaluate import evaluate_many
    from pytest_callqa.engine.report import render_scorecard
    from pytest_callqa.engine.scorecard import build_scorecard

    case = golden["qa-refund"]
    results = evaluate_many([(case, case.expected_outcome, name)  # type: ignore[attr-defined]
                             for name in ("gamma", "alpha", "beta")])
    card = build_scorecard(results)
    whole = render_scorecard(card, order=["gamma", "alpha", "beta"])
    [head] = [line for line in whole.splitlines() if line.startswith("Metric ")]
    assert head.index("gamma") < head.index("alpha") < head.index("beta")
    narrow = render_scorecard(card, order=["gamma", "alpha", "beta"], width=100)
    heads = [line for line in narrow.splitlines() if line.startswith("Metric ")]
    assert len(heads) > 1 and "gamma" in heads[0] and "beta" in heads[-1]
    widths = {len(line) for line in narrow.splitlines() if " | " in line}
    assert max(widths) < max(len(line) for line in whole.splitlines() if " | " in line)


def test_a_helpers_failure_is_its_message_without_a_traceback(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE)
    out = pytester.runpytest().stdout.str()
    failure = out[out.index("test_qa[beta-qa-refund] _"):]
    failure = re.split(r"\n[=_]{3}", failure.split("\n", 1)[1])[0]
    assert "QA score 0.700 < 0.900 for model 'beta', case 'qa-refund'" in failure
    assert "assertions.py" not in failure and "def test_qa" not in failure


def test_shards_split_the_pairs_without_overlap(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE)
    ran: list[set[str]] = []
    for shard in ("1/2", "2/2"):
        result = pytester.runpytest("-rA", f"--callqa-shard={shard}")
        ran.append({line.split()[1] for line in result.stdout.lines
                    if line.startswith(("PASSED ", "FAILED "))})
    whole = pytester.runpytest("-rA").stdout.lines
    everything = {line.split()[1] for line in whole if line.startswith(("PASSED ", "FAILED "))}
    assert ran[0] and ran[1] and not ran[0] & ran[1]
    assert ran[0] | ran[1] == everything
    assert "test_eval.py::test_unit" in ran[0]
    bad = pytester.runpytest("--callqa-shard=3/2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--callqa-shard*3/2*"])
    # A calibration's kappa is over every label: a shard's, over its share, is not it.
    calibrating = pytester.runpytest("--callqa-shard=1/2", "--callqa-calibrate")
    assert calibrating.ret == pytest.ExitCode.USAGE_ERROR
    calibrating.stderr.fnmatch_lines(["*--callqa-calibrate compares the judge with every "
                                      "labelled case in one run: it cannot be combined with "
                                      "--callqa-shard*"])


def test_a_report_that_cannot_be_written_is_named_and_the_run_still_ends_with_its_card(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before, each raised in the end of the run: a traceback, and no scorecard.
    project.write_tests("def test_ok(callqa_result):\n    assert callqa_result.case_id\n")
    (project.root / "taken").mkdir()
    (project.root / "afile").write_text("x")
    result = pytester.runpytest("--callqa-report=taken", "--callqa-html=afile/r.html",
                                "--callqa-markdown=summary.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=8)
    output = result.stdout.str()
    assert f"callqa: cannot write the JSON report to {project.root / 'taken'}: Is a " \
           "directory" in output
    # A parent that is a file: mkdir's own words for it.
    assert f"callqa: cannot write the HTML report to {project.root / 'afile' / 'r.html'}: " \
           "File exists" in output
    assert f"callqa markdown summary: {project.root / 'summary.md'}" in output
    assert "callqa report: " not in output and "callqa HTML report: " not in output
    assert "callqa scorecard" in output and "Traceback" not in output
    # What could be written was: the summary, and no temporary file left beside any.
    assert (project.root / "summary.md").is_file()
    assert sorted(p.name for p in project.root.iterdir() if p.name.startswith(".")) == []


def test_a_shard_given_no_pair_passes_and_writes_the_report_the_merge_needs(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # One pair, two shards: one of them has nothing to run. It exited 5 ("no tests ran",
    # failing its CI job) and wrote no report, so the merge refused the set as incomplete.
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n    assert callqa_result.valid\n")
    empty = 2 if in_shard("qa-refund", 1, 2) else 1
    for index in (1, 2):
        for workers in ([], ["-n", "2"]):
            result = pytester.runpytest("--callqa-models=alpha", f"--callqa-shard={index}/2",
                                        f"--callqa-report=shard-{index}.json", *workers)
            assert result.ret == pytest.ExitCode.OK
            result.assert_outcomes(passed=0 if index == empty else 1)
    assert project.report(f"shard-{empty}.json")["cases"] == []
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_callqa", "merge", "shard-1.json", "shard-2.json",
         "--report", "merged.json"], cwd=project.root, capture_output=True, text=True,
        timeout=120)
    assert merged.returncode == 0, merged.stderr
    assert [c["case_id"] for c in project.report("merged.json")["cases"]] == ["qa-refund"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_shards_whose_selection_left_no_test_fail_as_the_unsharded_run_and_merge(
    project: MiniProject, pytester: pytest.Pytester, workers: list[str]
) -> None:
    # Before, every shard of `-m evl` (a typo) passed as a shard the split gave no test, and
    # their merge passed with "0 outputs scored": a CI run green end to end, unsharded exit 5.
    project.write_tests(SUITE)
    for selection in (["-m", "evl"], ["-k", "nothing"]):
        assert pytester.runpytest(*selection, *workers).ret == pytest.ExitCode.NO_TESTS_COLLECTED
        for index in (1, 2):
            result = pytester.runpytest(*selection, f"--callqa-shard={index}/2",
                                        f"--callqa-report=shard-{index}.json", *workers)
            assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, selection
        merged = subprocess.run(
            [sys.executable, "-m", "pytest_callqa", "merge", "shard-1.json", "shard-2.json",
             "--report", "merged.json"], cwd=project.root, capture_output=True, text=True,
            timeout=120)
        assert merged.returncode == 5, merged.stdout
        assert "no report holds a scored output or a pair left unevaluated: no job " \
               f"evaluated anything (selection: {selection[0]} {selection[1]!r}); nothing " \
               "written" in merged.stderr
        assert not (project.root / "merged.json").exists()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_selection_that_left_no_test_writes_its_empty_reports_over_the_last_runs(
    project: MiniProject, pytester: pytest.Pytester, workers: list[str]
) -> None:
    # Before, `-k nothing` exited 5 and wrote nothing: the last run's report, HTML and
    # summary stayed in place, and a CI step uploaded them as this run's.
    project.write_tests(SUITE)
    files = ["--callqa-report=r.json", "--callqa-html=r.html", "--callqa-markdown=r.md"]
    pytester.runpytest(*files)
    (project.root / "base.json").write_bytes((project.root / "r.json").read_bytes())
    last = {name: (project.root / name).read_text(encoding="utf-8")
            for name in ("r.json", "r.html", "r.md")}
    # --collect-only runs no test: it leaves the last run's files as they are.
    listed = pytester.runpytest("--collect-only", "-k", "nothing", *files)
    assert listed.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert all((project.root / n).read_text(encoding="utf-8") == t for n, t in last.items())
    result = pytester.runpytest("-k", "nothing", "--callqa-baseline=base.json", *files,
                                *workers)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    report = project.report("r.json")
    assert report["cases"] == [] and report["run"]["selection"]["keyword"] == "nothing"
    # No gate's pass over no result in the report of a run that ran nothing.
    assert "gate" not in report
    result.stdout.fnmatch_lines(["callqa gate: not run against base.json: no test was selected",
                                 "callqa report: *r.json"])
    assert "0 outputs scored" in (project.root / "r.md").read_text(encoding="utf-8")
    assert (project.root / "r.html").read_text(encoding="utf-8") != last["r.html"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_run_that_stopped_early_says_its_scorecard_is_partial(
    project: MiniProject, pytester: pytest.Pytester, workers: list[str]
) -> None:
    # -x after beta's first failure: the scorecard ranked the models on what had run, and
    # nothing in the terminal or the report said the run had stopped.
    project.write_tests(SUITE)
    result = pytester.runpytest("-x", "--callqa-report=report.json", "--callqa-markdown=x.md",
                                "--callqa-html=x.html", *workers)
    # Under xdist both workers may fail before the controller stops them.
    said = ("run stopped early (stopping after ? failures): the scorecard holds only the "
            "results of the tests that ran before it stopped")
    result.stdout.fnmatch_lines([said])
    # The pull-request summary and the HTML report said nothing of it: they read as whole.
    for name, line in (("x.md", "⚠️ {}"), ("x.html", '<p class="partial">{}</p>')):
        text = (project.root / name).read_text(encoding="utf-8")
        pytest.LineMatcher(text.splitlines()).fnmatch_lines([line.format(said)])
    assert project.report()["run"]["stopped_early"] in ("stopping after 1 failures",
                                                        "stopping after 2 failures")
    whole = pytester.runpytest("--callqa-report=whole.json", *workers)
    assert "run stopped early" not in whole.stdout.str()
    assert project.report("whole.json")["run"]["stopped_early"] is None


def test_a_selection_of_the_suite_says_its_scorecard_holds_the_selected_tests(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest("-k", "qa", "--deselect", "test_eval.py::test_unit",
                                "--callqa-markdown=k.md")
    said = ("selection: -k 'qa', --deselect test_eval.py::test_unit: the scorecard holds only "
            "the results of the selected tests")
    result.stdout.fnmatch_lines([said])
    assert f"⚠️ {said}\n" in (project.root / "k.md").read_text(encoding="utf-8")
    assert "selection:" not in pytester.runpytest().stdout.str()


def test_a_stop_after_the_last_test_and_an_lf_with_nothing_failed_are_whole_runs(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE)
    # -x met at the one selected test, the last: everything selected ran.
    last = pytester.runpytest("-x", "-k", "test_qa and beta")
    last.assert_outcomes(failed=1)
    assert "run stopped early" not in last.stdout.str()
    # --lf with no failure on record runs the whole suite (pytest's cache, which the mini
    # project switches off, is needed for --lf).
    project.with_pytest_cache()
    first = pytester.runpytest("--lf")
    assert "selection: --lf" not in first.stdout.str()
    again = pytester.runpytest("--lf")
    again.stdout.fnmatch_lines(["selection: --lf: the scorecard holds only the results of "
                                "the selected tests"])


def _cached_suite(project: MiniProject) -> None:
    """The suite with pytest's cache on (--lf needs its record of failures)."""
    project.with_pytest_cache()
    project.write_tests(SUITE)


def _assert_lf_narrowed(result: pytest.RunResult, project: MiniProject) -> None:
    result.stdout.fnmatch_lines(["selection: --lf: the scorecard holds only the results of "
                                 "the selected tests"])
    assert project.report()["run"]["selection"]["last_failed"] is True


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_an_lf_whose_failures_on_record_are_not_among_the_tests_is_a_whole_run(
    project: MiniProject, pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    # A plain test failed, then was deleted: pytest ran every test ("known failures not in
    # selected tests"), and the scorecard still said it held only the selected ones.
    _cached_suite(project)
    pytester.makepyfile(test_gone="def test_gone():\n    assert False\n")
    pytester.runpytest("test_gone.py").assert_outcomes(failed=1)
    (pytester.path / "test_gone.py").unlink()
    rerun = pytester.runpytest("--lf", "--callqa-report=report.json", *workers)
    rerun.assert_outcomes(passed=9, failed=2)
    assert "selection: --lf" not in rerun.stdout.str()
    selection = project.report()["run"]["selection"]
    assert (selection["lf"], selection["last_failed"]) == (True, False)
    # The two failures it left are on record now: --lf reruns them alone.
    again = pytester.runpytest("--lf", "--callqa-report=report.json", *workers)
    again.assert_outcomes(failed=2)
    _assert_lf_narrowed(again, project)


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_an_lf_after_a_collection_error_is_mended_reruns_that_module(
    project: MiniProject, pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    # The record held the module's id when the run began; pytest swapped it for the
    # module's tests as it collected them, and reran only those: the scorecard called it a
    # whole run ("N evaluation tests deselected" at best).
    _cached_suite(project)
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    (pytester.path / "test_eval.py").write_text(SUITE + "\nimport not_a_module_xyz\n",
                                                encoding="utf-8")
    pytester.runpytest("--continue-on-collection-errors").assert_outcomes(passed=1, errors=1)
    project.write_tests(SUITE)
    rerun = pytester.runpytest("--lf", "--callqa-report=report.json", *workers)
    rerun.assert_outcomes(passed=9, failed=2)
    _assert_lf_narrowed(rerun, project)


JUDGED_SUITE = """
import pytest
from pytest_callqa import assert_metric, assert_no_blockers

@pytest.mark.callqa(task="qa")
def test_evidence(callqa_result):
    assert_metric(callqa_result, "evidence_backed_reasoning", min=0.4)

@pytest.mark.callqa(task="qa")
def test_blockers(callqa_result):
    assert_no_blockers(callqa_result)
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_junit_records_a_test_the_tool_stopped_as_an_error_not_a_failure(
    llm: LLMProject, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # The judge is down: the evidence tests error in their call (the tool's failure), and the
    # terminal said so, but the JUnit file had them as <failure>s of the model.
    judge_at(llm, f"http://127.0.0.1:{closed_port()}/v1", 'callqa_timeout = "2"\n')
    llm.project.write_tests(JUDGED_SUITE)
    result = pytester.runpytest("--junitxml=out.xml", "--callqa-models=alpha,beta",
                                "--no-callqa-benchmarks", "--no-callqa-preflight", *xdist)
    # beta's blocker needs no judge: a failure of the model, as before.
    result.assert_outcomes(passed=1, failed=1, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    root = ET.parse(llm.root / "out.xml").getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures"), suite.get("tests")) == ("2", "1", "4")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    for model in ("alpha", "beta"):
        case = cases[f"test_evidence[{model}-qa-refund]"]
        [error] = case.findall("error")
        assert case.find("failure") is None
        assert "the judge could not score evidence_backed_reasoning" in error.get("message", "")
    blocker = cases["test_blockers[beta-qa-refund]"]
    assert blocker.find("error") is None and blocker.find("failure") is not None
    passed = cases["test_blockers[alpha-qa-refund]"]
    assert passed.find("error") is None and passed.find("failure") is None
