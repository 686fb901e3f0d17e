"""Collection: the eval marker, case selection, parametrization ids, bad case files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_callqa.run import catalog as catalog_module

from .conftest import MiniProject

MIXED = """
import pytest

def test_unit():
    assert 1 + 1 == 2

def test_result(callqa_result):
    assert callqa_result.case_id

def test_model_only(callqa_model):
    assert callqa_model

@pytest.mark.callqa(task="qa")
def test_qa_case(callqa_case):
    assert callqa_case.task == "qa"
"""


def collected(result: pytest.RunResult) -> list[str]:
    return [line.split("::", 1)[1] for line in result.stdout.lines
            if line.startswith("test_eval.py::")]


def test_eval_marker_selects_exactly_the_tests_that_use_callqa_fixtures(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(MIXED)
    evals = collected(pytester.runpytest("--co", "-q", "-m", "eval"))
    assert "test_unit" not in evals
    assert sum(name.startswith("test_result[") for name in evals) == 8
    assert sum(name.startswith("test_model_only[") for name in evals) == 2
    assert evals.count("test_qa_case[qa-refund]") == 1
    assert len(evals) == 11
    assert collected(pytester.runpytest("--co", "-q", "-m", "not eval")) == ["test_unit"]


def test_ids_read_model_then_case(project: MiniProject, pytester: pytest.Pytester) -> None:
    project.write_tests("def test_x(callqa_result):\n    pass\n")
    assert collected(pytester.runpytest("--co", "-q")) == [
        f"test_x[{model}-{case_id}]"
        for model in ("alpha", "beta")
        for case_id in ("entity-transfer", "qa-refund", "text-appointment", "translation-fever")
    ]


def test_callqa_marker_filters_by_task_and_tags(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("""
        import pytest

        @pytest.mark.callqa(task=["entity", "text"])
        def test_tasks(callqa_case):
            pass

        @pytest.mark.callqa(tags=["banking"])
        def test_banking(callqa_case):
            pass

        @pytest.mark.callqa(task="qa", tags=["billing", "refund"])
        def test_both(callqa_model, callqa_case):
            pass

        @pytest.mark.callqa(task="qa")
        class TestClassLevel:
            def test_in_class(self, callqa_case):
                pass
    """)
    assert collected(pytester.runpytest("--co", "-q")) == [
        "test_tasks[entity-transfer]", "test_tasks[text-appointment]",
        "test_banking[entity-transfer]", "test_banking[text-appointment]",
        "test_both[alpha-qa-refund]", "test_both[beta-qa-refund]",
        "TestClassLevel::test_in_class[qa-refund]",
    ]


def test_markers_at_several_levels_give_each_keyword_from_the_closest(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # The function's runs=2 replaced the module's task="qa": test_runs got every task's
    # cases; and the class's tags replaced the module's task as well.
    project.write_tests("""
        import pytest

        pytestmark = pytest.mark.callqa(task="qa")

        @pytest.mark.callqa(runs=2)
        def test_runs(callqa_case):
            pass

        @pytest.mark.callqa(tags=["banking"])
        class TestTagged:
            def test_tagged(self, callqa_case):
                pass

        @pytest.mark.callqa(task="entity")
        def test_closest_task(callqa_case):
            pass
    """)
    assert collected(pytester.runpytest("--co", "-q")) == [
        "test_runs[qa-refund]",
        "TestTagged::test_tagged[no-case]",
        "test_closest_task[entity-transfer]",
    ]
    # TestTagged asks for QA cases tagged banking: there is none, and the skip says so.
    result = pytester.runpytest("-rs", "-k", "Tagged")
    result.stdout.fnmatch_lines(["*no golden case matches callqa(tags=[[]'banking'[]], "
                                 "task='qa')"])


def test_two_markers_of_one_test_that_disagree_are_a_collection_error(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # The second was ignored without a word: the test got the QA cases alone.
    project.write_tests("""
        import pytest

        @pytest.mark.callqa(task="translation")
        @pytest.mark.callqa(task="qa")
        def test_twice(callqa_case):
            pass
    """)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*ERROR collecting test_eval.py*",
                                 "*callqa on test_eval.py::test_twice: two callqa markers "
                                 "of this test set task: 'qa' and 'translation'"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_subclass_marker_overrides_its_bases(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # pytest gives a class its bases' marks too: the subclass's own task read as a second
    # marker of the same class, a conflict that stopped the collection of every test.
    project.write_tests("""
        import pytest

        @pytest.mark.callqa(task="qa")
        class TestBase:
            def test_it(self, callqa_case):
                pass

        @pytest.mark.callqa(task="entity")
        class TestEntity(TestBase):
            pass
    """)
    assert collected(pytester.runpytest("--co", "-q")) == [
        "TestBase::test_it[qa-refund]", "TestEntity::test_it[entity-transfer]"]


def test_a_marker_that_matches_no_case_skips_with_the_reason(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("""
        import pytest

        @pytest.mark.callqa(task="qa", tags=["nope"])
        def test_none(callqa_result):
            raise AssertionError("never runs")
    """)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no golden case matches callqa(task='qa', tags=[[]'nope'[]])"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('callqa(task="billing")', "*unknown task(s) 'billing'; known: qa, entity, text, "
                                   "translation*"),
        ('callqa("qa")', "*use keywords, e.g. callqa(task='qa', tags=[[]'billing'[]])"),
        ('callqa(model="alpha")', "*unknown keyword(s) model; known: task, tags*"),
        # Before, a raw TypeError from inside the plugin ('int' object is not iterable).
        ("callqa(task=5)", "*callqa on test_eval.py::test_x: task must be a name or a list of "
                           "names, got int 5"),
        ('callqa(task="qa", tags=5)', "*tags must be a name or a list of names, got int 5"),
    ],
)
def test_a_wrong_marker_is_a_collection_error(
    project: MiniProject, pytester: pytest.Pytester, marker: str, message: str
) -> None:
    project.write_tests(f"import pytest\n\n@pytest.mark.{marker}\n"
                        "def test_x(callqa_case):\n    pass\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*ERROR collecting test_eval.py*", message])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_malformed_case_file_is_an_error_naming_file_and_field_and_others_run(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    broken = dict(project.cases["qa-refund"], id="qa-broken")
    broken["expected_outcome"] = {"questions": [
        {"question_id": "Q1", "score": "five", "max_score": 5, "type": "PASS_FAIL",
         "reason": "x"}]}
    project.write_case(broken)
    (project.root / "cases" / "qa" / "garbled.yaml").write_text("id: [unclosed\n")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("-m", "eval", "-p", "no:randomly")
    result.assert_outcomes(passed=8, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*ERROR at setup of golden case file cases/qa/garbled.yaml*",
        "invalid golden case file */cases/qa/garbled.yaml:",
        "  - (file) cannot be parsed*",
    ])
    result.stdout.fnmatch_lines([
        "invalid golden case file */cases/qa/qa-broken.json:",
        "  - expected_outcome.questions[[]0[]].score: *",
    ])
    result.stdout.fnmatch_lines([
        "ERROR cases/qa/garbled.yaml::callqa-case-file*",
        "ERROR cases/qa/qa-broken.json::callqa-case-file*",
    ])
    assert "invalid case files, not evaluated: cases/qa/garbled.yaml, cases/qa/qa-broken.json" \
        in result.stdout.str()
    # -k deselects the bad files' tests: the scorecard still names them (it said nothing,
    # and the cases in them may be ones the selection asked for).
    result = pytester.runpytest("-m", "eval", "-p", "no:randomly", "-k", "alpha",
                                "--callqa-report=r.json")
    result.assert_outcomes(passed=4)
    assert "invalid case files, not evaluated: cases/qa/garbled.yaml, cases/qa/qa-broken.json" \
        in result.stdout.str()
    one = project.report("r.json")
    assert [e["path"] for e in one["not_evaluated"]] == [
        "cases/qa/garbled.yaml", "cases/qa/qa-broken.json"]
    # So does an xdist controller, which reads no case file: its workers hand over the bad
    # files and the catalogue's fingerprint (the merge of shards compares it).
    pytester.runpytest("-m", "eval", "-p", "no:randomly", "-k", "alpha", "-n", "2",
                       "--callqa-report=x.json").assert_outcomes(passed=4)
    two = project.report("x.json")
    assert two["not_evaluated"] == one["not_evaluated"]
    assert two["run"]["settings"]["catalogue"] == one["run"]["settings"]["catalogue"] \
        == f"{len(project.cases)} cases, " + one["run"]["settings"]["catalogue"][-16:]
    # Not an eval run: the bad files do not concern it.
    pytester.makepyfile(test_unit="def test_unit():\n    pass\n")
    pytester.runpytest("-m", "not eval").assert_outcomes(passed=1)


def test_duplicate_case_id_across_files_is_an_error_naming_both(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_case(project.cases["qa-refund"], name="copy.json")
    project.write_tests("def test_c(callqa_case):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*cases/qa/qa-refund.json:*",
                                 "*id: 'qa-refund' is already used by a case in "
                                 "cases/qa/copy.json*"])


# The scorecard of a run in which beta has no output for translation-fever, skipped or an
# error alike.
BETA_WITHOUT_AN_OUTPUT = [
    "E beta: final scores unknown: an output is missing in translation, benchmarks (not "
    "evaluated: neither a pass nor a failure; not renormalised around it)",
    "*not ranked, what it would be ranked on being unknown — beta: final score * unknown "
    "(an output is missing in translation*",
    "E beta: translation: 1 case not evaluated, no output (translation-fever): left out of "
    "the task score"]


def test_missing_output_skips_naming_model_case_and_file(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.remove_output("beta", "translation-fever")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=7, skipped=1)
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1[]] *no output of model 'beta' for case 'translation-fever' (expected "
        "outputs/beta/translation-fever.json, and no pytest_callqa_generate implementation "
        "returned one)",
    ])
    result.stdout.fnmatch_lines(["no output, not evaluated: beta: translation-fever"])
    # Not read as a case never asked: its score is unknown, and so is beta's rank.
    result.stdout.fnmatch_lines(BETA_WITHOUT_AN_OUTPUT)


def test_missing_output_can_be_an_error(project: MiniProject, pytester: pytest.Pytester) -> None:
    project.remove_output("beta", "translation-fever")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("--callqa-missing=error")
    result.assert_outcomes(passed=7, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_r[[]beta-translation-fever[]]*",
        "no output of model 'beta' for case 'translation-fever' (expected "
        "outputs/beta/translation-fever.json, *",
    ])
    result.stdout.fnmatch_lines(["no output, not evaluated: beta: translation-fever"])
    # The error changes the test's outcome, not the scorecard: beta is not ranked either way.
    result.stdout.fnmatch_lines(BETA_WITHOUT_AN_OUTPUT)


def test_no_cases_configured_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_eval="def test_c(callqa_case):\n    pass\n",
                        test_unit="def test_unit():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*ERROR collecting test_eval.py*",
        "*callqa: no golden cases configured: pass --callqa-cases DIR or set callqa_cases in "
        "[[]tool.pytest.ini_options[]]*",
    ])


def test_no_models_is_a_collection_error(project: MiniProject, pytester: pytest.Pytester) -> None:
    project.write_tests("def test_m(callqa_model):\n    pass\n")
    result = pytester.runpytest("--callqa-outputs=nowhere")
    result.stdout.fnmatch_lines(["*callqa: no models to evaluate (no model directory under "
                                 "*nowhere): pass --callqa-models a,b*"])


@pytest.mark.parametrize(("args", "where"), [
    (["--callqa-models=alpha,gamma"], "no directory 'gamma' in outputs; it has alpha, beta"),
    (["--callqa-models=alpha,beta", "--callqa-outputs=nowhere"], "nowhere is not a directory"),
])
def test_a_named_model_with_nothing_recorded_is_a_collection_error(
    project: MiniProject, pytester: pytest.Pytester, args: list[str], where: str
) -> None:
    # Every one of its tests would have been skipped and the run passed (exit 0) having
    # measured nothing of the model: a typo in a model's name or in --callqa-outputs.
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n"
                        "\ndef test_unit():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*ERROR collecting test_eval.py*",
        f"*callqa: no recorded outputs of model(s) * ({where}), and no pytest_callqa_generate "
        "implementation: none of their tests could be evaluated.*"])


@pytest.mark.parametrize(("files", "problem"), [
    ({"QA-Refund.json": "{}", "_usage.json": "{}"},
     "its file names differ from the case ids in letter case, e.g. 'QA-Refund.json' for "
     "case 'qa-refund'"),
    ({"_usage.json": "{}"}, "no .json file"),
    ({"qa-refund.JSON": "{}"}, "no .json file, e.g. 'qa-refund.JSON'"),
])
def test_a_model_whose_directory_holds_no_cases_output_is_a_collection_error(
    project: MiniProject, pytester: pytest.Pytester, files: dict[str, str], problem: str
) -> None:
    # Every test of gamma was skipped and the run passed (exit 0) having measured nothing of
    # it: its directory existed, but no file in it was <case_id>.json.
    for name, text in files.items():
        path = project.root / "outputs" / "gamma" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=alpha,gamma")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*ERROR collecting test_eval.py*",
        f"*callqa: the recorded outputs of model(s) 'gamma' (outputs*gamma: {problem}) hold "
        "no golden case's output, and no pytest_callqa_generate implementation: none of "
        "their tests could be evaluated. An output is read from "
        "<outputs>/<model>/<case_id>.json*"])


def test_a_model_with_one_cases_output_is_evaluated(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # One recorded case of the catalogue is enough: a model recorded for some families only
    # is a choice, and its tests of the others are skipped, as a single missing file is.
    project.write_output("gamma", "qa-refund", project.cases["qa-refund"]["expected_outcome"])
    project.write_tests("import pytest\n\n@pytest.mark.callqa(task='translation')\n"
                        "def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=alpha,gamma")
    result.assert_outcomes(passed=1, skipped=1)
    # So is an output of a case the catalogue, narrowed to other families, does not hold
    # (the first version of the check stopped this run).
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=alpha,gamma", "--callqa-cases=cases/translation")
    result.assert_outcomes(passed=1, skipped=1)


def test_a_model_whose_directory_is_empty_is_left_to_the_projects_generate_hook(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    (project.root / "outputs" / "delta").mkdir()
    pytester.makeconftest("""
        def pytest_callqa_generate(model, case, config):
            return case.expected_outcome if model == "delta" else None
    """)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=delta")
    result.assert_outcomes(passed=4)


def test_a_case_insensitive_file_system_finds_an_output_named_in_another_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "QA-Refund.json").write_text("{}", encoding="utf-8")
    assert catalog_module._none_recorded(tmp_path, {"qa-refund"}) is not None
    # What such a file system answers for the case's own name.
    monkeypatch.setattr(Path, "is_file", lambda self: self.name.casefold() == "qa-refund.json")
    assert catalog_module._none_recorded(tmp_path, {"qa-refund"}) is None


@pytest.mark.parametrize("args", [[], ["--callqa-models=alpha,m\x1b[2J"]])
def test_a_model_name_with_a_control_character_is_a_collection_error(
    project: MiniProject, pytester: pytest.Pytester, args: list[str]
) -> None:
    # The name reached the terminal's scorecard as it was (the escape cleared the screen)
    # and JUnit property names, which XML cannot hold: the file did not parse.
    project.write_output("m\x1b[2J", "qa-refund", project.cases["qa-refund"]["expected_outcome"])
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest(*args, "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*callqa: model name 'm\\x1b[[]2J' holds a control or "
                                 "invisible character ('\\x1b')*"])
    assert "\x1b" not in result.stdout.str()


def test_a_model_without_a_directory_is_left_to_the_projects_generate_hook(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("""
        def pytest_callqa_generate(model, case, config):
            if model == "gamma" and case.task == "qa":
                return case.expected_outcome
            return None
    """)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-models=alpha,gamma")
    # The hook answers gamma's qa case; the rest of gamma is missing, as any output may be.
    result.assert_outcomes(passed=5, skipped=3)


def test_a_run_without_evaluation_tests_never_reads_the_models(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_unit():\n    pass\n")
    pytester.runpytest("--callqa-models=gamma").assert_outcomes(passed=1)


def test_getfixturevalue_is_refused_with_an_explanation(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_x(request):\n    request.getfixturevalue('callqa_case')\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*callqa_case is parametrized at collection: request it as an "
                                 "argument*"])



@pytest.mark.parametrize(("files", "holds"), [
    ({}, "it holds no file"),
    ({"qa.jsonl": "{}", "notes/readme.md": "x", "a.yaml.txt": "x"},
     "it holds 3 other file(s), e.g. 'a.yaml.txt', 'notes/readme.md', 'qa.jsonl'"),
])
def test_a_cases_directory_without_a_case_file_is_a_collection_error(
    pytester: pytest.Pytester, files: dict[str, str], holds: str
) -> None:
    # Every evaluation test was one "no golden case" skip, and the run passed (exit 0)
    # having evaluated nothing.
    (pytester.path / "cases").mkdir()
    for name, text in files.items():
        path = pytester.path / "cases" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    pytester.makepyfile(test_eval="def test_c(callqa_case):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--callqa-cases=cases")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*ERROR collecting test_eval.py*",
        f"*callqa: no golden case file under cases (a case file's name ends in .yaml, .yml, "
        f".json): {holds}*"])
