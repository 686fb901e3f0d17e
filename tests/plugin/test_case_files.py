"""Case files that cannot pass empty fail as collection errors; ``--callqa-case-schema``
writes the case-file schema and exits."""

from __future__ import annotations

import copy

import pytest

from pytest_callqa.engine.case_schema import case_file_schema_text

from .conftest import MiniProject


def test_empty_cases_are_errors_naming_file_and_field_and_the_rest_runs(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    silent = copy.deepcopy(project.cases["qa-refund"])
    silent["id"] = "qa-silent"
    del silent["transcript"], silent["config"]
    project.write_case(silent)
    untargeted = copy.deepcopy(project.cases["translation-fever"])
    untargeted["id"] = "translation-untargeted"
    untargeted["config"] = {"source_language": "en"}
    project.write_case(untargeted)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("-m", "eval", "-p", "no:randomly")
    result.assert_outcomes(passed=8, errors=2)
    result.stdout.fnmatch_lines([
        "invalid golden case file */cases/qa/qa-silent.json:",
        "  - transcript: no turn (every qa case needs one)",
        "  - config.questions: Field required",
    ])
    result.stdout.fnmatch_lines([
        "invalid golden case file */cases/translation/translation-untargeted.json:",
        "  - config.target_language: Field required",
    ])


def test_case_schema_option_writes_the_schema_and_runs_nothing(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("def test_r(callqa_result):\n    raise AssertionError('evaluated')\n")
    result = pytester.runpytest("--callqa-case-schema", "schemas/case.schema.json")
    assert result.ret == 0
    target = project.root / "schemas" / "case.schema.json"
    result.stdout.fnmatch_lines([f"callqa: wrote the golden case schema to {target}"])
    assert target.read_text(encoding="utf-8") == case_file_schema_text()
    result.stdout.fnmatch_lines(["*no tests ran*"])
    assert "evaluated" not in result.stdout.str()
    # Written beside the cases, the schema is not read as a case file.
    (project.root / "cases" / "callqa-case.schema.json").write_text(
        target.read_text(encoding="utf-8"), encoding="utf-8")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    pytester.runpytest("-m", "eval").assert_outcomes(passed=8)


def test_case_schema_option_that_cannot_write_is_a_usage_error(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    (project.root / "taken").mkdir()
    result = pytester.runpytest("--callqa-case-schema", "taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["callqa: cannot write the case schema to */taken: *"])
